package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.moecomm.core.gpu.GpuBackend;

/** The backend choice, with the GPU probe replaced (and the real probe where no GPU is present). */
class BackendChoiceTest {
    private static final Supplier<GpuBackend.Availability> NONE =
            () -> new GpuBackend.Availability(false, "CUDA: no CUDA driver (test)");
    private static final Supplier<GpuBackend.Availability> PRESENT =
            () -> new GpuBackend.Availability(true, "CUDA 13.0, 1 device; NVSHMEM 3.4 (test)");
    private static final Supplier<GpuBackend.Availability> NEVER_ASKED = () -> {
        throw new AssertionError("the GPU probe must not run for --backend cpu");
    };

    @Test
    void autoFallsBackToTheCpuWithTheReason() {
        BackendChoice.Choice c = BackendChoice.choose("auto", NONE);
        assertEquals(BackendChoice.Backend.CPU, c.backend());
        assertTrue(c.reason().contains("no CUDA driver (test)"), c.reason());
    }

    @Test
    void autoTakesTheGpuWhenUsable() {
        assertEquals(BackendChoice.Backend.GPU, BackendChoice.choose("auto", PRESENT).backend());
        assertEquals(BackendChoice.Backend.GPU, BackendChoice.choose(" AUTO ", PRESENT).backend());
    }

    @Test
    void gpuForcedWithoutOneIsAClearError() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BackendChoice.choose("gpu", NONE));
        assertTrue(e.getMessage().startsWith("--backend gpu: the GPU backend cannot run here: CUDA: no CUDA driver (test)"),
                e.getMessage());
        assertTrue(e.getMessage().contains("NVSHMEM"), e.getMessage());
        assertEquals(BackendChoice.Backend.GPU, BackendChoice.choose("gpu", PRESENT).backend());
    }

    @Test
    void cpuNeverProbes() {
        assertEquals(BackendChoice.Backend.CPU, BackendChoice.choose("cpu", NEVER_ASKED).backend());
    }

    @Test
    void unknownNamesAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> BackendChoice.choose("tpu", PRESENT));
        assertTrue(e.getMessage().contains("'tpu'") && e.getMessage().contains("auto, cpu, gpu"), e.getMessage());
    }

    @Test
    void theRealProbeNeverThrowsAndAutoFollowsIt() {
        GpuBackend.Availability a = GpuBackend.availability();
        BackendChoice.Choice c = BackendChoice.choose("auto");
        assertEquals(a.available() ? BackendChoice.Backend.GPU : BackendChoice.Backend.CPU, c.backend());
        if (!a.available()) {
            assertFalse(a.reason().isBlank());
            assertThrows(IllegalArgumentException.class, () -> BackendChoice.choose("gpu"));
        }
    }
}
