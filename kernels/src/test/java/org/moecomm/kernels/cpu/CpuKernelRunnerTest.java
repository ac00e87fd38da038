package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.LaunchBounds;

class CpuKernelRunnerTest {
    private static final Duration NO_HANG = Duration.ofSeconds(20);

    private final Arena arena = Arena.ofShared();
    private final CpuKernelRunner runner = new CpuKernelRunner();

    @AfterEach
    void close() {
        runner.close();
        arena.close();
    }

    /** Kernels under test. */
    static final class Kernels {
        static final int BLOCK = 1024;

        @LaunchBounds(maxThreads = 64)
        public static void bounded(KernelContext ctx, Buf out) {
            out.setInt(ctx.globalIdx(), 1);
        }

        /** Records every id a thread sees, in the thread's own 8-int slot, and counts visits. */
        public static void ids(KernelContext ctx, Buf out, Buf visits) {
            int block = ctx.groupIdy() * ctx.numGroupsX() + ctx.groupIdx();
            int slot = block * ctx.localGroupSizeX() + ctx.localIdx();
            ctx.atomicAdd(visits, slot, 1);
            out.setInt(slot * 8L, ctx.globalIdx());
            out.setInt(slot * 8L + 1, ctx.localIdx());
            out.setInt(slot * 8L + 2, ctx.groupIdx());
            out.setInt(slot * 8L + 3, ctx.groupIdy());
            out.setInt(slot * 8L + 4, ctx.localGroupSizeX());
            out.setInt(slot * 8L + 5, ctx.numGroupsX());
            out.setInt(slot * 8L + 6, ctx.numGroupsY());
            out.setInt(slot * 8L + 7, ctx.globalGroupSizeX());
        }

        /**
         * Reverses each block's slice {@code rounds} times through shared memory; any missing
         * barrier lets a thread read a stale or future value.
         */
        public static void reverse(KernelContext ctx, Buf in, Buf out, int rounds) {
            int[] shared = ctx.allocateIntLocalArray(BLOCK);
            int n = ctx.localGroupSizeX();
            int tid = ctx.localIdx();
            int base = ctx.groupIdx() * n;
            int v = in.getInt(base + tid);
            for (int r = 0; r < rounds; r++) {
                shared[tid] = v;
                ctx.localBarrier();
                v = shared[n - 1 - tid] + 1;
                ctx.localBarrier();
            }
            out.setInt(base + tid, v);
        }

        /** Every thread adds one to counter 0 with atomicAdd and to counter 1 with a CAS loop. */
        public static void count(KernelContext ctx, Buf counters, Buf perBlock) {
            int[] local = ctx.allocateIntLocalArray(1);
            ctx.atomicAdd(counters, 0, 1);
            int old = counters.getInt(1);
            int seen = ctx.atomicCas(counters, 1, old, old + 1);
            while (seen != old) {
                old = seen;
                seen = ctx.atomicCas(counters, 1, old, old + 1);
            }
            ctx.atomicAdd(local, 0, 1);
            ctx.globalFence();
            ctx.localBarrier();
            if (ctx.localIdx() == 0) {
                perBlock.setInt(ctx.groupIdx(), local[0]);
            }
        }

        /** Same as count, without a barrier (the block stays sequential); the last thread reports. */
        public static void countNoBarrier(KernelContext ctx, Buf counters, Buf perBlock) {
            int[] local = ctx.allocateIntLocalArray(1);
            ctx.atomicAdd(counters, 0, 1);
            int n = ctx.atomicAdd(local, 0, 1) + 1;
            if (n == ctx.localGroupSizeX()) {
                perBlock.setInt(ctx.groupIdx(), n);
            }
        }

        /** Thread {@code thread} of block {@code block} throws after the first barrier; the others wait at the second. */
        public static void failAfterBarrier(KernelContext ctx, int block, int thread) {
            ctx.localBarrier();
            if (ctx.groupIdx() == block && ctx.localIdx() == thread) {
                throw new ArithmeticException("injected failure");
            }
            ctx.localBarrier();
        }

        /** Thread {@code thread} of block {@code block} throws before any barrier. */
        public static void failBeforeBarrier(KernelContext ctx, Buf data, int block, int thread) {
            if (ctx.groupIdx() == block && ctx.localIdx() == thread) {
                data.setInt(-1, 0);
            }
            ctx.localBarrier();
        }

        /** Thread {@code thread} returns early while the others go to a barrier. */
        public static void earlyReturn(KernelContext ctx, int thread) {
            if (ctx.localIdx() == thread) {
                return;
            }
            ctx.localBarrier();
        }

        /** Only thread {@code thread} goes to a barrier. */
        public static void loneBarrier(KernelContext ctx, int thread) {
            if (ctx.localIdx() == thread) {
                ctx.localBarrier();
            }
        }

        /** Checks that all threads share the block's arrays of every type, in allocation order. */
        public static void localArrays(KernelContext ctx, Buf out) {
            int[] a = ctx.allocateIntLocalArray(4);
            float[] b = ctx.allocateFloatLocalArray(3);
            long[] c = ctx.allocateLongLocalArray(2);
            int tid = ctx.localIdx();
            ctx.atomicAdd(a, 1, 1);
            if (tid == 0) {
                b[2] = 0.5f;
                c[1] = 1L << 40;
            }
            ctx.localBarrier();
            if (tid == ctx.localGroupSizeX() - 1) {
                out.setInt(ctx.groupIdx() * 3L, a[1] + a.length + b.length + c.length);
                out.setFloat(ctx.groupIdx() * 3L + 1, b[2]);
                out.setInt(ctx.groupIdx() * 3L + 2, (int) (c[1] >>> 32));
            }
        }

        /** Thread 0 allocates a different size than the others. */
        public static void mismatchedArrays(KernelContext ctx) {
            int[] a = ctx.allocateIntLocalArray(ctx.localIdx() == 0 ? 4 : 8);
            a[0] = 1;
        }

        /** Tracks how many blocks run at once (counter 0 = running, 1 = most seen). */
        public static void concurrency(KernelContext ctx, Buf counters) {
            if (ctx.localIdx() == 0) {
                int now = ctx.atomicAdd(counters, 0, 1) + 1;
                int most = counters.getInt(1);
                while (now > most) {
                    int seen = ctx.atomicCas(counters, 1, most, now);
                    if (seen == most) {
                        break;
                    }
                    most = seen;
                }
            }
            for (int i = 0; i < 4; i++) {
                ctx.localBarrier();
            }
            if (ctx.localIdx() == 0) {
                ctx.atomicAdd(counters, 0, -1);
            }
        }

        public static void scalars(KernelContext ctx, Buf out, int i, long l, float f) {
            if (ctx.globalIdx() == 0) {
                out.setInt(0, i);
                out.setLong(1, l);
                out.setFloat(4, f);
            }
        }
    }

    private static Kernel kernel(String name) {
        return new Kernel(Kernels.class, name);
    }

    private Buf ints(int n) {
        return Buf.allocate(arena, 4L * n);
    }

    @Test
    void aLaunchAboveTheKernelsLaunchBoundsIsRefusedBeforeItRuns() {
        Buf out = ints(128);
        runner.launch(kernel("bounded"), Grid.of(2, 64), out);
        assertEquals(1, out.getInt(127));
        out.setInt(0, 0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> runner.launch(kernel("bounded"), Grid.of(1, 128), out));
        assertTrue(e.getMessage().contains("Kernels.bounded") && e.getMessage().contains("128 threads per block")
                && e.getMessage().contains("(64, its @LaunchBounds)"), e.getMessage());
        assertEquals(0, out.getInt(0), "nothing ran");
    }

    @Test
    void blockThreadsAreTheDevicesAtMostTheRunnersCap() {
        assertEquals(CpuKernelRunner.DEFAULT_BLOCK_THREADS, runner.maxBlockThreads());
        assertEquals(1, runner.blockThreads(256), "one thread per block by default");
        try (CpuKernelRunner capped = new CpuKernelRunner(2, null, CpuKernelRunner.Execution.LOOPS, 64);
             CpuKernelRunner asOnAGpu = new CpuKernelRunner(2, null, CpuKernelRunner.Execution.LOOPS, 256)) {
            assertEquals(64, capped.blockThreads(256));
            assertEquals(32, capped.blockThreads(32), "never more than the device's size");
            assertEquals(256, asOnAGpu.blockThreads(256));
        }
        IllegalArgumentException cap = assertThrows(IllegalArgumentException.class,
                () -> new CpuKernelRunner(2, null, CpuKernelRunner.Execution.LOOPS, 0));
        assertTrue(cap.getMessage().contains("maxBlockThreads must be positive, got 0"), cap.getMessage());
        IllegalArgumentException device = assertThrows(IllegalArgumentException.class, () -> runner.blockThreads(0));
        assertTrue(device.getMessage().contains("deviceThreads must be positive"), device.getMessage());
    }

    @Test
    void theBlockThreadsPropertyIsReadAndABadValueNamed() {
        String key = "moecomm.cpu.blockThreads";
        String before = System.getProperty(key);
        try {
            System.setProperty(key, "16");
            assertEquals(16, CpuKernelRunner.defaultBlockThreads());
            for (String bad : new String[] {"0", "-3", "many"}) {
                System.setProperty(key, bad);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        CpuKernelRunner::defaultBlockThreads);
                assertTrue(e.getMessage().contains(key) && e.getMessage().contains("'" + bad + "'"), e.getMessage());
            }
        } finally {
            if (before == null) {
                System.clearProperty(key);
            } else {
                System.setProperty(key, before);
            }
        }
    }

    @Test
    void idsCoverTheGrid() {
        Grid grid = Grid.of(3, 2, 70);
        int total = (int) grid.totalThreads();
        Buf out = ints(total * 8);
        out.segment().fill((byte) 0xA5); // many ids are 0: an id never written must not read as one
        Buf visits = ints(total);
        runner.launch(kernel("ids"), grid, out, visits);
        for (int by = 0; by < 2; by++) {
            for (int bx = 0; bx < 3; bx++) {
                for (int t = 0; t < 70; t++) {
                    int slot = (by * 3 + bx) * 70 + t;
                    assertEquals(1, visits.getInt(slot), "visits of " + slot);
                    int[] expected = {bx * 70 + t, t, bx, by, 70, 3, 2, 3 * 70};
                    int[] actual = new int[8];
                    for (int i = 0; i < 8; i++) {
                        actual[i] = out.getInt(slot * 8L + i);
                    }
                    assertArrayEquals(expected, actual, "ids of block (" + bx + ", " + by + ") thread " + t);
                }
            }
        }
    }

    @Test
    void barriersOrderSharedMemory() {
        int blocks = 16;
        int threads = 256;
        int rounds = 9;
        Buf in = ints(blocks * threads);
        Buf out = ints(blocks * threads);
        for (int i = 0; i < blocks * threads; i++) {
            in.setInt(i, i * 1000);
        }
        runner.launch(kernel("reverse"), Grid.of(blocks, threads), in, out, rounds);
        for (int b = 0; b < blocks; b++) {
            for (int t = 0; t < threads; t++) {
                // an odd number of reversals lands on the mirrored element, plus one per round
                int source = b * threads + (threads - 1 - t);
                assertEquals(source * 1000 + rounds, out.getInt(b * threads + t), "block " + b + " thread " + t);
            }
        }
    }

    @Test
    void oddBlockSizesAndSingleThreadBlocks() {
        for (int threads : new int[] {1, 3, 33, 1000}) {
            Buf in = ints(2 * threads);
            Buf out = ints(2 * threads);
            for (int i = 0; i < 2 * threads; i++) {
                in.setInt(i, i);
            }
            runner.launch(kernel("reverse"), Grid.of(2, threads), in, out, 1);
            for (int b = 0; b < 2; b++) {
                for (int t = 0; t < threads; t++) {
                    assertEquals(b * threads + threads - 1 - t + 1, out.getInt(b * threads + t));
                }
            }
        }
    }

    @Test
    void atomicsUnderContentionCountExactly() {
        int blocks = 64;
        int threads = 256;
        Buf counters = ints(2);
        Buf perBlock = ints(blocks);
        runner.launch(kernel("count"), Grid.of(blocks, threads), counters, perBlock);
        assertEquals(blocks * threads, counters.getInt(0));
        assertEquals(blocks * threads, counters.getInt(1));
        for (int b = 0; b < blocks; b++) {
            assertEquals(threads, perBlock.getInt(b));
        }
        Buf counters2 = ints(1);
        Buf perBlock2 = ints(blocks);
        runner.launch(kernel("countNoBarrier"), Grid.of(blocks, threads), counters2, perBlock2);
        assertEquals(blocks * threads, counters2.getInt(0));
        for (int b = 0; b < blocks; b++) {
            assertEquals(threads, perBlock2.getInt(b));
        }
    }

    @Test
    void localArraysAreSharedPerBlockInAllocationOrder() {
        int blocks = 5;
        Buf out = ints(blocks * 3);
        runner.launch(kernel("localArrays"), Grid.of(blocks, 40), out);
        for (int b = 0; b < blocks; b++) {
            assertEquals(40 + 4 + 3 + 2, out.getInt(b * 3L), "block " + b);
            assertEquals(0.5f, out.getFloat(b * 3L + 1));
            assertEquals(1 << 8, out.getInt(b * 3L + 2));
        }
        KernelExecutionException e = assertThrows(KernelExecutionException.class,
                () -> runner.launch(kernel("mismatchedArrays"), Grid.of(1, 4)));
        assertInstanceOf(IllegalStateException.class, e.getCause());
    }

    @Test
    void exceptionInAKernelThreadFailsTheLaunchWithoutHanging() {
        assertTimeoutPreemptively(NO_HANG, () -> {
            KernelExecutionException e = assertThrows(KernelExecutionException.class,
                    () -> runner.launch(kernel("failAfterBarrier"), Grid.of(8, 256), 3, 37));
            assertInstanceOf(ArithmeticException.class, e.getCause());
            assertEquals("injected failure", e.getCause().getMessage());
            assertTrue(e.getMessage().contains("failAfterBarrier"), e.getMessage());
            assertTrue(e.getMessage().contains("block (3, 0) thread 37"), e.getMessage());

            // thread 0 failing while every other thread waits at the second barrier
            e = assertThrows(KernelExecutionException.class,
                    () -> runner.launch(kernel("failAfterBarrier"), Grid.of(4, 128), 0, 0));
            assertInstanceOf(ArithmeticException.class, e.getCause());

            // a failure before any barrier (sequential phase), from a Buf bounds check
            Buf data = ints(1);
            e = assertThrows(KernelExecutionException.class,
                    () -> runner.launch(kernel("failBeforeBarrier"), Grid.of(4, 64), data, 2, 5));
            assertInstanceOf(IndexOutOfBoundsException.class, e.getCause());
            e = assertThrows(KernelExecutionException.class,
                    () -> runner.launch(kernel("failBeforeBarrier"), Grid.of(4, 64), data, 1, 0));
            assertInstanceOf(IndexOutOfBoundsException.class, e.getCause());
        });
        // the runner is still usable
        Buf counters = ints(2);
        runner.launch(kernel("count"), Grid.of(2, 32), counters, ints(2));
        assertEquals(64, counters.getInt(0));
    }

    @Test
    void brokenBarrierRulesFailInsteadOfHanging() {
        assertTimeoutPreemptively(NO_HANG, () -> {
            for (int thread : new int[] {0, 1, 5, 255}) {
                KernelExecutionException e = assertThrows(KernelExecutionException.class,
                        () -> runner.launch(kernel("earlyReturn"), Grid.of(3, 256), thread));
                assertInstanceOf(IllegalStateException.class, e.getCause(), "early return of thread " + thread);
                e = assertThrows(KernelExecutionException.class,
                        () -> runner.launch(kernel("loneBarrier"), Grid.of(3, 256), thread));
                assertInstanceOf(IllegalStateException.class, e.getCause(), "lone barrier of thread " + thread);
            }
        });
    }

    @Test
    void blocksRunConcurrentlyUpToTheBound() {
        CpuKernelRunner bounded = new CpuKernelRunner(3);
        Buf counters = ints(2);
        bounded.launch(kernel("concurrency"), Grid.of(24, 64), counters);
        assertEquals(0, counters.getInt(0));
        int most = counters.getInt(1);
        assertTrue(most >= 1 && most <= 3, "most blocks at once: " + most);
        assertEquals(3, bounded.maxConcurrentBlocks());
        assertThrows(IllegalArgumentException.class, () -> new CpuKernelRunner(0));
    }

    @Test
    void argumentsAreCheckedAgainstTheParameters() {
        Buf out = ints(8);
        runner.launch(kernel("scalars"), Grid.of(1, 1), out, 7, 1L << 40, 2.5f);
        assertEquals(7, out.getInt(0));
        assertEquals(1L << 40, out.getLong(1));
        assertEquals(2.5f, out.getFloat(4));

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> runner.launch(kernel("scalars"), Grid.of(1, 1), out, 7, 1L << 40));
        assertTrue(e.getMessage().contains("Kernels.scalars") && e.getMessage().contains("4 arguments"),
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> runner.launch(kernel("scalars"), Grid.of(1, 1), out, 7, 5, 2.5f));
        assertTrue(e.getMessage().contains("Kernels.scalars") && e.getMessage().contains("parameter 3")
                && e.getMessage().contains("Long") && e.getMessage().contains("Integer"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> runner.launch(kernel("scalars"), Grid.of(1, 1), null, 7, 5L, 2.5f));
        assertTrue(e.getMessage().contains("parameter 1") && e.getMessage().contains("null"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> runner.launch(kernel("scalars"), Grid.of(1, 1), out, 7, 5L, 2.5));
        assertTrue(e.getMessage().contains("parameter 4") && e.getMessage().contains("Double"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> runner.launch(new Kernel(Kernels.class, "noSuchKernel"), Grid.of(1, 1)));
    }

    @Test
    void aLaunchOf64BlocksOf256ThreadsEndsWithinASecond() {
        int blocks = 64;
        int threads = 256;
        Buf in = ints(blocks * threads);
        Buf out = ints(blocks * threads);
        Buf counters = ints(2);
        Buf perBlock = ints(blocks);
        runner.launch(kernel("reverse"), Grid.of(blocks, threads), in, out, 2); // warm-up
        long best = Long.MAX_VALUE;
        long bestNoBarrier = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            long t0 = System.nanoTime();
            runner.launch(kernel("reverse"), Grid.of(blocks, threads), in, out, 2);
            best = Math.min(best, System.nanoTime() - t0);
            t0 = System.nanoTime();
            runner.launch(kernel("countNoBarrier"), Grid.of(blocks, threads), counters, perBlock);
            bestNoBarrier = Math.min(bestNoBarrier, System.nanoTime() - t0);
        }
        // generous bounds (shared CI machines); typical values are a few milliseconds
        assertTrue(best < 1_000_000_000L, "launch with barriers took " + best / 1e6 + " ms");
        assertTrue(bestNoBarrier < 1_000_000_000L, "launch without barriers took " + bestNoBarrier / 1e6 + " ms");
        System.out.printf("64x256 launch: %.2f ms with barriers, %.2f ms without%n", best / 1e6, bestNoBarrier / 1e6);
    }

    @Test
    void failureKeepsTheCause() {
        KernelExecutionException e = assertThrows(KernelExecutionException.class,
                () -> runner.launch(kernel("failAfterBarrier"), Grid.of(1, 1), 0, 0));
        assertSame(ArithmeticException.class, e.getCause().getClass());
    }
}
