package org.moecomm.bridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/**
 * Runs everywhere (no GPU needed): probing for CUDA never throws or crashes, and where CUDA is
 * missing every entry point fails with {@link CudaUnavailableException} carrying the reason.
 */
class CudaAvailabilityTest {

    @Test
    void probingNeverThrowsAndExplainsItself() {
        Cuda.Availability a = Cuda.availability();
        assertNotNull(a);
        assertFalse(a.reason().isBlank(), "availability must carry a reason or description");
        System.out.println("CUDA availability: " + a);
        if (a.available()) {
            assertTrue(a.deviceCount() > 0);
            assertTrue(a.driverVersion() > 0);
        } else {
            assertNotNull(a.errorName());
        }
        assertEquals(a, Cuda.availability(), "the probe runs once");
    }

    @Test
    void withoutCudaEveryEntryPointFailsWithTheReason() {
        Cuda.Availability a = Cuda.availability();
        assumeFalse(a.available(), "CUDA is available here: the GPU tests cover the entry points");
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, Cuda::require);
        assertTrue(e.getMessage().contains(a.reason()), e.getMessage());
        assertEquals(a.errorName(), e.errorName());
        CudaUnavailableException context = assertThrows(CudaUnavailableException.class, () -> CudaContext.open(0));
        assertTrue(context.getMessage().contains(a.reason()), context.getMessage());
        CudaUnavailableException runner = assertThrows(CudaUnavailableException.class, GpuKernelRunner::new);
        assertTrue(runner.getMessage().contains(a.reason()), runner.getMessage());
    }

    @Test
    void missingDriverIsReportedByName() {
        Cuda.Availability a = Cuda.availability();
        assumeFalse(a.available(), "CUDA is available here: nothing is missing");
        if (!Cuda.nativeLibraryLoaded()) {
            assertTrue(a.reason().contains(Cuda.JNI_LIBRARY), a.reason());
            return;
        }
        assumeTrue(a.errorName().equals("MC_ERROR_NO_DRIVER"),
                "the bridge loaded and the driver is there but failed otherwise: " + a.errorName());
        assertTrue(a.reason().contains("libcuda.so.1"), a.reason());
    }

    @Test
    void exceptionCarriesCallNameAndLog() {
        CudaException e = new CudaException("cuLinkComplete(x.ptx)", 218, "CUDA_ERROR_INVALID_PTX",
                "a PTX JIT compilation failed", "ptxas fatal: bad");
        assertEquals("CUDA_ERROR_INVALID_PTX", e.errorName());
        assertEquals(218, e.code());
        assertEquals("cuLinkComplete(x.ptx)", e.call());
        assertTrue(e.getMessage().startsWith("cuLinkComplete(x.ptx) failed: CUDA_ERROR_INVALID_PTX (218)"), e.getMessage());
        assertTrue(e.getMessage().contains("ptxas fatal: bad"));
    }
}
