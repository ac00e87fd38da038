package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.moecomm.kernels.testing.Refusals.assertRefused;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostSpinBarrierTest {
    private static final Duration BOUND = Duration.ofSeconds(30);

    /** Each rank maps the file on its own, as a process does; none leaves a barrier before all arrived. */
    @Test
    void noRankLeavesBeforeEveryRankArrived(@TempDir Path dir) throws Exception {
        int world = 3;
        int rounds = 300;
        Path file = HostSpinBarrier.create(dir.resolve("start.bin"), world);
        AtomicIntegerArray arrived = new AtomicIntegerArray(rounds);
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<Integer>> ranks = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int rank = r;
                ranks.add(pool.submit(() -> {
                    int early = 0;
                    try (HostSpinBarrier b = HostSpinBarrier.open(file, rank, world, BOUND)) {
                        for (int i = 0; i < rounds; i++) {
                            if ((i + rank) % 7 == 0) {
                                Thread.sleep(1); // a late rank, a different one each time
                            }
                            arrived.incrementAndGet(i);
                            b.await();
                            if (arrived.get(i) != world) {
                                early++;
                            }
                        }
                    }
                    return early;
                }));
            }
            for (Future<Integer> f : ranks) {
                assertEquals(0, f.get(60, TimeUnit.SECONDS), "rounds a rank left before every rank arrived");
            }
        } finally {
            pool.shutdownNow();
        }
        for (int i = 0; i < rounds; i++) {
            assertEquals(world, arrived.get(i), "arrivals at barrier " + i);
        }
    }

    @Test
    void aRankThatDoesNotArriveIsNamed(@TempDir Path dir) throws Exception {
        Path file = HostSpinBarrier.create(dir.resolve("start.bin"), 3);
        Duration bound = Duration.ofMillis(300);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (HostSpinBarrier rank0 = HostSpinBarrier.open(file, 0, 3, bound);
             HostSpinBarrier rank1 = HostSpinBarrier.open(file, 1, 3, bound)) {
            // rank 1 arrives at #1 (and times out too); rank 2 never arrives
            Future<?> other = pool.submit(rank1::await);
            IllegalStateException e = assertThrows(IllegalStateException.class, rank0::await);
            assertTrue(e.getMessage().startsWith("rank 0: host start barrier #1 not reached within"), e.getMessage());
            assertTrue(e.getMessage().endsWith(" ms by rank 2 (at #0)"), e.getMessage());
            ExecutionException e1 = assertThrows(ExecutionException.class, () -> other.get(10, TimeUnit.SECONDS));
            assertTrue(e1.getCause().getMessage().startsWith("rank 1: "), e1.getCause().getMessage());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void refusesBadArgumentsBeforeMapping(@TempDir Path dir) throws Exception {
        Path file = HostSpinBarrier.create(dir.resolve("start.bin"), 2);
        assertRefused(IllegalArgumentException.class, () -> HostSpinBarrier.open(file, 2, 2, BOUND),
                "rank 2 is not in a world of 2");
        assertRefused(IllegalArgumentException.class, () -> HostSpinBarrier.open(file, 0, 2, Duration.ZERO),
                "the bound must be positive, got PT0S");
        IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                () -> HostSpinBarrier.open(file, 0, 4, BOUND));
        assertTrue(size.getMessage().contains("a world of 4"), size.getMessage());
        assertRefused(IllegalArgumentException.class, () -> HostSpinBarrier.create(dir.resolve("none.bin"), 0),
                "a world has at least one rank, got 0");
        assertEquals(2L * HostSpinBarrier.STRIDE, Files.size(file));
    }
}
