package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import org.junit.jupiter.api.Test;
import org.moecomm.bridge.nvshmem.Nvshmem;
import org.moecomm.bridge.nvshmem.NvshmemException;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.MoeConfig;

/**
 * Where the NVSHMEM bridge is not built (every machine without NVSHMEM, CI included), its classes
 * load and say why they cannot work, and using them fails with that reason, not with a linkage error.
 */
class BridgeUnavailableTest {

    @Test
    void theBridgeExplainsWhyItIsUnavailable() {
        Nvshmem.Availability a = Nvshmem.availability();
        assumeFalse(a.available(), "the NVSHMEM bridge is available here; its unavailable path cannot be tested");
        assertFalse(Nvshmem.isAvailable());
        assertTrue(a.reason().contains("gpu-nvshmem-build.sh") || a.reason().contains("CUDA"), a.reason());
        NvshmemException e = assertThrows(NvshmemException.class, Nvshmem::uniqueId);
        assertTrue(e.getMessage().contains("not available"), e.getMessage());
        assertFalse(Nvshmem.isInitialized());
    }

    @Test
    void theGpuBackendRefusesToStartWithTheReason() {
        GpuBackend.Availability a = GpuBackend.availability();
        assumeFalse(a.available(), "a GPU with NVSHMEM is available here");
        assertFalse(a.reason().isBlank());
        MoeConfig c = MoeConfig.builder().worldSize(2).build();
        MoeCommException e = assertThrows(MoeCommException.class, () -> GpuBackend.start(c));
        assertTrue(e.getMessage().contains("cannot run here"), e.getMessage());
        assertTrue(GpuBackend.current() == null);
    }
}
