package org.moecomm.kernels.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * {@link KernelRunner#residentBlocks}'s default, which the JVM runner uses (a GPU runner asks the
 * driver), and {@link KernelRunner#blocksMayWaitForEachOther}: by default a grid within the
 * resident blocks; on the JVM any grid.
 */
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

    @Test
    void blocksMayWaitForEachOtherWhenTheGridIsResidentOrOnTheJvm() {
        Kernel any = new Kernel(ResidentBlocksTest.class, "noop");
        KernelRunner device = new KernelRunner() {
            @Override
            public void launch(Kernel kernel, Grid grid, Object... args) {
                throw new UnsupportedOperationException();
            }

            @Override
            public int concurrentBlocks() {
                return 3;
            }

            @Override
            public int blockThreads(int deviceThreads) {
                return deviceThreads;
            }
        };
        assertTrue(device.blocksMayWaitForEachOther(any, Grid.of(12, 2, 256)));
        assertFalse(device.blocksMayWaitForEachOther(any, Grid.of(25, 1, 256)), "25 blocks, 24 resident");
        try (CpuKernelRunner runner = new CpuKernelRunner(3)) {
            assertTrue(runner.blocksMayWaitForEachOther(any, Grid.of(1000, 4, 256)),
                    "the JVM runner requeues a block whose threads all wait");
        }
    }

    public static void noop(KernelContext ctx) {
    }
}
