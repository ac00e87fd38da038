package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;

/**
 * Regression tests for a false "thread N reached localBarrier() but another thread of its block
 * has returned" failure of correct kernels. A thread that had counted itself in at the block's
 * last barrier, and was descheduled before its check for exited threads, found that the other
 * threads had meanwhile completed the barrier, passed it and returned.
 *
 * <p>{@link #stress()} reproduces it the natural way (about one launch in a few thousand on two
 * cores before the fix); run it with {@code -Dmoecomm.stress=true}, and
 * {@code -Dmoecomm.stress.seconds=N} for its length (default 60).
 */
class BarrierExitRaceTest {
    private static final Kernel LOOP = new Kernel(Kernels.class, "barrierLoop");

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        BlockExecution.afterArrival = null;
        arena.close();
    }

    /** Kernels under test. */
    static final class Kernels {
        static final int MAX_THREADS = 256;

        /**
         * Like MoeKernels.pack: a loop of barriers whose trip count every thread reads from
         * {@code trips[0]}, returning right after the last one. Each round reverses the block's
         * values through shared memory and adds one.
         */
        public static void barrierLoop(KernelContext ctx, Buf trips, Buf out) {
            int tid = ctx.localIdx();
            int n = ctx.localGroupSizeX();
            int m = trips.getInt(0);
            int[] shared = ctx.allocateIntLocalArray(MAX_THREADS);
            int v = tid;
            for (int i = 0; i < m; i++) {
                shared[tid] = v;
                ctx.localBarrier();
                v = shared[n - 1 - tid] + 1;
                ctx.localBarrier();
            }
            out.setInt(ctx.globalIdx(), v);
        }
    }

    private Buf ints(int n) {
        return Buf.allocate(arena, 4L * n);
    }

    private static void checkLoop(Buf out, Grid grid, int trips) {
        int n = grid.threads();
        for (int g = 0; g < grid.totalThreads(); g++) {
            int tid = g % n;
            int want = (trips % 2 == 0 ? tid : n - 1 - tid) + trips;
            assertEquals(want, out.getInt(g), "thread " + g + " after " + trips + " rounds");
        }
    }

    /**
     * Deterministic form of the race: the first thread to arrive at each block's last barrier
     * is held, after counting itself in and before its exit check, until every other thread of
     * its block has passed that barrier and returned. The barrier completed, so the launch must
     * succeed.
     */
    @Test
    void aThreadHeldAtTheLastBarrierWhileTheOthersReturnPassesIt() {
        int trips = 3;
        int lastBarrier = 2 * trips;
        Grid grid = Grid.of(4, 64);
        Map<BlockExecution, AtomicInteger> firstArrivals = new ConcurrentHashMap<>();
        AtomicInteger held = new AtomicInteger();
        AtomicInteger othersReturned = new AtomicInteger();
        BlockExecution.afterArrival = (block, arrivedCount) -> {
            // Exactly one thread per barrier (generation) counts itself in first.
            if (!block.launch.kernel.equals(LOOP) || arrivedCount != 1
                    || firstArrivals.computeIfAbsent(block, b -> new AtomicInteger()).incrementAndGet() != lastBarrier) {
                return;
            }
            held.incrementAndGet();
            // generous: on a loaded 2-core machine the JIT threads compete with the block's threads
            long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (block.exited.get() < block.threads - 1 && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(1); // unmounts this virtual thread: the others need the carriers
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            if (block.exited.get() == block.threads - 1) {
                othersReturned.incrementAndGet();
            }
        };
        Buf tripsBuf = ints(1);
        tripsBuf.setInt(0, trips);
        Buf out = ints((int) grid.totalThreads());
        assertTimeoutPreemptively(Duration.ofSeconds(60),
                () -> threads(2).launch(LOOP, grid, tripsBuf, out));
        assertEquals(grid.blocksX(), held.get(), "blocks whose first arrival at the last barrier was held");
        assertEquals(grid.blocksX(), othersReturned.get(), "blocks whose other threads returned meanwhile");
        checkLoop(out, grid, trips);
    }

    /** Concurrent launches from several threads, as the CPU backend makes them (one per rank). */
    @Test
    void concurrentLaunchesOfBarrierLoops() throws InterruptedException {
        Result r = launchConcurrently(Duration.ofSeconds(2));
        assertEquals(0, r.failures(), () -> "failed launches of " + r.launches() + "; first: " + r.first());
    }

    /** The natural reproduction: many launches of barrier loops for a while; no launch may fail. */
    @Test
    @EnabledIfSystemProperty(named = "moecomm.stress", matches = "true")
    void stress() throws InterruptedException {
        Duration length = Duration.ofSeconds(Long.getLong("moecomm.stress.seconds", 60));
        Result r = launchConcurrently(length);
        System.out.println("BarrierExitRaceTest.stress: " + r.launches() + " launches in " + length + " on "
                + Runtime.getRuntime().availableProcessors() + " cores, " + r.failures() + " failed"
                + (r.first() == null ? "" : "; first: " + r.first()));
        assertEquals(0, r.failures(), () -> "failed launches; first: " + r.first());
    }

    /** The race is one of the virtual-thread execution; the loop form has no such window. */
    private static CpuKernelRunner threads(int blocks) {
        return new CpuKernelRunner(blocks, null, CpuKernelRunner.Execution.THREADS);
    }

    private record Result(long launches, long failures, String first) {
    }

    /**
     * Four launcher threads (two share a runner, two have their own) launch the barrier loop
     * with 0 to 3 rounds over 4 to 8 blocks of 64 to 256 threads until {@code length} is up.
     */
    private Result launchConcurrently(Duration length) throws InterruptedException {
        long end = System.nanoTime() + length.toNanos();
        CpuKernelRunner sharedRunner = threads(Runtime.getRuntime().availableProcessors());
        AtomicLong launches = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        List<Thread> launchers = new ArrayList<>();
        for (int l = 0; l < 4; l++) {
            CpuKernelRunner runner = l < 2 ? sharedRunner : threads(Runtime.getRuntime().availableProcessors());
            SplittableRandom random = new SplittableRandom(l);
            launchers.add(Thread.ofPlatform().start(() -> {
                try (Arena own = Arena.ofShared()) {
                    Buf trips = Buf.allocate(own, 4);
                    Buf out = Buf.allocate(own, 4L * 8 * Kernels.MAX_THREADS);
                    while (System.nanoTime() < end) {
                        int rounds = random.nextInt(4);
                        Grid grid = Grid.of(4 + random.nextInt(5), 64 << random.nextInt(3));
                        trips.setInt(0, rounds);
                        out.segment().fill((byte) 0xA5); // no launch passes on the one before's values
                        launches.incrementAndGet();
                        try {
                            runner.launch(LOOP, grid, trips, out);
                            checkLoop(out, grid, rounds);
                        } catch (KernelExecutionException | AssertionError e) {
                            failures.incrementAndGet();
                            errors.add(e);
                        }
                    }
                } catch (Throwable e) {
                    failures.incrementAndGet();
                    errors.add(e);
                }
            }));
        }
        for (Thread t : launchers) {
            t.join();
        }
        Throwable first = errors.peek();
        return new Result(launches.get(), failures.get(), first == null ? null : first.toString());
    }
}
