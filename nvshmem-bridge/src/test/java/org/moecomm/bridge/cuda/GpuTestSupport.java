package org.moecomm.bridge.cuda;

import org.junit.jupiter.api.Assumptions;

/** Shared by the GPU tests: skip, with the reason, where CUDA cannot be used. */
final class GpuTestSupport {
    private GpuTestSupport() {
    }

    /** Aborts the calling test (or class, from {@code @BeforeAll}) unless a CUDA GPU can be used. */
    static void assumeGpu() {
        Cuda.Availability a = Cuda.availability();
        Assumptions.assumeTrue(a.available(), () -> "no CUDA GPU available, GPU test skipped: " + a.reason());
    }
}
