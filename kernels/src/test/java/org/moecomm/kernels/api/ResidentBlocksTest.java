package org.moecomm.kernels.api;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/** {@link KernelRunner#residentBlocks}'s default, which the JVM runner uses (a GPU runner asks the driver). */
class ResidentBlocksTest {
    @Test
    void theDefaultFillsTheThreadsOfEachUnit() {
        try (CpuKernelRunner runner = new CpuKernelRunner(3)) {
            Kernel any = new Kernel(ResidentBlocksTest.class, "noop");
            assertEquals(3 * 8, runner.residentBlocks(any, 256));
            assertEquals(3 * 2, runner.residentBlocks(any, 1024));
            // a block larger than a unit's threads still gets one slot per unit
            assertEquals(3, runner.residentBlocks(any, 4096));
        }
    }

    public static void noop(KernelContext ctx) {
    }
}
