package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.cpu.CpuKernelRunner.Execution;

/**
 * Many launches of a kernel with barriers and signal waits, from four ranks at once, with more
 * blocks than the block pool has threads: no launch may hang (the test is bounded) or fail. The
 * waits cover every source of a signal: another rank's concurrent launch, another block of the
 * same grid, and a later thread of the same block.
 */
class LoopStressTest {
    private static final int WORLD = 4;
    private static final int BLOCKS = 8;
    private static final int LAUNCHES = 150;
    private static final long TIMEOUT = 20_000_000_000L;
    private static final Kernel RING = new Kernel(Kernels.class, "ring");

    static final class Kernels {
        static final int MAX_THREADS = 256;

        /**
         * Launch {@code n} of rank {@code rank}: block x reverses its values through shared memory
         * {@code rounds} times (barriers), raises word x of the next rank's {@code ring} to n and
         * waits for its own word x (raised by the previous rank); block 0 also waits for the last
         * block of its own grid ({@code grid} word 0); thread 1 waits for a word that the block's
         * last thread raises afterwards. Writes each thread's final value to {@code out}.
         */
        public static void ring(KernelContext ctx, Buf ring, Buf grid, Buf local, Buf out, Buf errors, long n,
                                int rounds, int rank, int world) {
            int tid = ctx.localIdx();
            int threads = ctx.localGroupSizeX();
            int x = ctx.groupIdx();
            int[] shared = ctx.allocateIntLocalArray(MAX_THREADS);
            int v = tid + x;
            for (int r = 0; r < rounds; r++) {
                shared[tid] = v;
                ctx.localBarrier();
                v = shared[threads - 1 - tid] + 1;
                ctx.localBarrier();
            }
            if (tid == 0) {
                ctx.signalSet(ring.slice(8L * x, 8), n, (rank + 1) % world);
                if (x == ctx.numGroupsX() - 1) {
                    ctx.signalSet(grid, n, rank);
                }
            }
            if (tid == threads / 2) {
                ctx.waitAtLeast(ring.slice(8L * x, 8), n, TIMEOUT, errors, rank, (rank + world - 1) % world, x);
            }
            if (tid == 0 && x == 0) {
                ctx.waitAtLeast(grid, n, TIMEOUT, errors, rank, rank, -1);
            }
            ctx.localBarrier();
            if (tid == 1) {
                ctx.waitAtLeast(local.slice(8L * x, 8), n, TIMEOUT, errors, rank, rank, -2);
            }
            if (tid == threads - 1) {
                ctx.signalSet(local.slice(8L * x, 8), n, rank);
            }
            out.setInt((long) x * threads + tid, v);
        }
    }

    @Test
    void manyLaunchesWithBarriersAndWaitsNeverHang() {
        assertEquals(Optional.empty(), CpuKernelRunner.loopFormRefusal(RING));
        assertTimeoutPreemptively(Duration.ofSeconds(120), () -> {
            try (Arena arena = Arena.ofShared()) {
                TestPeerMemory heap = new TestPeerMemory(WORLD, arena);
                Buf[] ring = heap.allocate(8L * BLOCKS);
                Buf[] grid = heap.allocate(8);
                Buf[] local = heap.allocate(8L * BLOCKS);
                Buf[] errors = heap.allocate(64);
                Buf[] out = heap.allocate(4L * BLOCKS * Kernels.MAX_THREADS);
                TestPeerMemory.allRanks(WORLD, r -> {
                    CpuKernelRunner runner = new CpuKernelRunner(Runtime.getRuntime().availableProcessors(),
                            heap.rank(r), Execution.LOOPS);
                    for (int n = 1; n <= LAUNCHES; n++) {
                        int threads = 32 << (n % 4);
                        int rounds = n % 3;
                        out[r].segment().fill((byte) 0xA5); // no launch passes on the one before's values
                        runner.launch(RING, Grid.of(BLOCKS, threads), ring[r], grid[r], local[r], out[r], errors[r],
                                (long) n, rounds, r, WORLD);
                        for (int x = 0; x < BLOCKS; x++) {
                            for (int t = 0; t < threads; t++) {
                                int expected = rounds == 0 ? t + x : (rounds % 2 == 0 ? t + x : threads - 1 - t + x) + rounds;
                                int seen = out[r].getInt((long) x * threads + t);
                                assertTrue(seen == expected, "rank " + r + " launch " + n + " block " + x + " thread " + t
                                        + ": " + seen + " != " + expected);
                            }
                        }
                    }
                });
            }
        });
    }
}
