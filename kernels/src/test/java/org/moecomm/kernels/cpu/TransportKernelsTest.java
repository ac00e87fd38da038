package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.moe.TransportKernels;

/** {@link TransportKernels} on the JVM: the batched puts, waits and signals of a protocol step between 3 ranks. */
class TransportKernelsTest {
    private static final int WORLD = 3;
    private static final long ROW = 48;
    private static final int MAX_ROWS = 5;
    private static final long REGION = ROW * MAX_ROWS;
    private static final long SECOND = 1_000_000_000L;
    private static final Kernel PUT_EACH = new Kernel(TransportKernels.class, "putEach");
    private static final Kernel WAIT_EACH = new Kernel(TransportKernels.class, "waitEach");
    private static final Kernel SIGNAL_EACH = new Kernel(TransportKernels.class, "signalEach");

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        arena.close();
    }

    private static void allRanks(IntConsumer rank) throws InterruptedException {
        allRanks(WORLD, rank);
    }

    private static void allRanks(int world, IntConsumer rank) throws InterruptedException {
        try (var pool = Executors.newFixedThreadPool(world)) {
            List<Future<?>> f = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int me = r;
                f.add(pool.submit(() -> rank.accept(me)));
            }
            for (Future<?> x : f) {
                try {
                    x.get();
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
                }
            }
        }
    }

    /**
     * The put table of rank {@code r} in an all-to-all exchange: put d moves region d of the send
     * buffer to region r of rank d's receive buffer, count d, signal word r.
     */
    private Buf exchangeTable(int r, int world, long region) {
        long[] table = new long[world * TransportKernels.PUT_COLUMNS];
        for (int d = 0; d < world; d++) {
            int at = d * TransportKernels.PUT_COLUMNS;
            table[at + TransportKernels.PUT_SRC_OFFSET] = d * region;
            table[at + TransportKernels.PUT_DST_OFFSET] = r * region;
            table[at + TransportKernels.PUT_COUNT_INDEX] = d;
            table[at + TransportKernels.PUT_SIGNAL_INDEX] = r;
            table[at + TransportKernels.PUT_PEER] = d;
            table[at + TransportKernels.PUT_MAX_BYTES] = region;
        }
        return longs(table);
    }

    private Buf longs(long... values) {
        Buf b = Buf.allocate(arena, 8L * values.length);
        for (int i = 0; i < values.length; i++) {
            b.setLong(i, values[i]);
        }
        return b;
    }

    /**
     * Rank r puts region d of its send buffer (rows[r][d] rows) to region r of rank d with signal
     * word r; every rank then waits for all words; then every rank sets word WORLD on all ranks.
     * A put whose count does not fit sends nothing: the poison stays and its signal is not raised.
     */
    @Test
    void putWaitAndSignalBatchesBetweenRanks() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            TestPeerMemory heap = new TestPeerMemory(WORLD, arena);
            Buf[] recv = heap.allocate(WORLD * REGION);
            Buf[] signals = heap.allocate(8L * (WORLD + 1));
            Random random = new Random(5);
            int[][] rows = new int[WORLD][WORLD];
            Buf[] send = new Buf[WORLD];
            Buf[] counts = new Buf[WORLD];
            for (int r = 0; r < WORLD; r++) {
                send[r] = Buf.allocate(arena, WORLD * REGION);
                counts[r] = Buf.allocate(arena, 4L * WORLD);
                for (int d = 0; d < WORLD; d++) {
                    rows[r][d] = random.nextInt(MAX_ROWS + 1);
                    counts[r].setInt(d, rows[r][d]);
                }
                for (long i = 0; i < WORLD * REGION; i++) {
                    send[r].setByte(i, (byte) random.nextInt());
                }
                recv[r].segment().fill((byte) 0x5A);
            }
            counts[2].setInt(1, MAX_ROWS + 1); // rank 2's put to rank 1 does not fit
            long base = 3L << 32;
            allRanks(r -> {
                CpuKernelRunner runner = new CpuKernelRunner(2, heap.rank(r));
                runner.launch(PUT_EACH, Grid.of(WORLD, 64), send[r], recv[r], counts[r], signals[r],
                        exchangeTable(r, WORLD, REGION), ROW, base);
                if (r != 1) { // rank 1 would wait in vain for rank 2
                    long[] waits = new long[WORLD * TransportKernels.WAIT_COLUMNS];
                    for (int s = 0; s < WORLD; s++) {
                        waits[s * TransportKernels.WAIT_COLUMNS + TransportKernels.WAIT_SIGNAL_INDEX] = s;
                        waits[s * TransportKernels.WAIT_COLUMNS + TransportKernels.WAIT_PEER] = s;
                    }
                    runner.launch(WAIT_EACH, Grid.of(1, 32), signals[r], longs(waits), WORLD, base, 10 * SECOND,
                            signals[r], r);
                }
                Buf peers = Buf.allocate(arena, 4L * WORLD);
                for (int p = 0; p < WORLD; p++) {
                    peers.setInt(p, p);
                }
                runner.launch(SIGNAL_EACH, Grid.of(1, 32), signals[r], peers, WORLD, (long) WORLD, 40L + r, 1);
            });
            for (int r = 0; r < WORLD; r++) {
                for (int s = 0; s < WORLD; s++) {
                    boolean refused = s == 2 && r == 1;
                    long sent = refused ? 0 : rows[s][r] * ROW;
                    assertEquals(refused ? 0L : base + rows[s][r], signals[r].getLong(s), "signal " + s + " at " + r);
                    for (long i = 0; i < REGION; i++) {
                        byte want = i < sent ? send[s].getByte(r * REGION + i) : (byte) 0x5A;
                        assertEquals(want, recv[r].getByte(s * REGION + i), "rank " + r + " region " + s + " byte " + i);
                    }
                }
                assertEquals(40L + 41 + 42, signals[r].getLong(WORLD), "added signal at rank " + r);
            }
        });
    }

    /**
     * Puts of megabytes split over 4 blocks each: over rounds with growing and shrinking counts
     * every byte arrives and every signal word ends at exactly {@code round << 32 | count}.
     */
    @Test
    void chunkedPutsEndAtTheSignalOfTheRound() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            int world = 2;
            long row = 4096;
            int maxRows = 256;
            long region = row * maxRows;
            TestPeerMemory heap = new TestPeerMemory(world, arena);
            Buf[] recv = heap.allocate(world * region);
            Buf[] signals = heap.allocate(8L * world);
            Buf[] send = new Buf[world];
            Buf[] counts = new Buf[world];
            Buf[] tables = new Buf[world];
            Random random = new Random(9);
            for (int r = 0; r < world; r++) {
                send[r] = Buf.allocate(arena, world * region);
                for (long i = 0; i < world * region; i += 8) {
                    send[r].setLong(i / 8, random.nextLong());
                }
                counts[r] = Buf.allocate(arena, 4L * world);
                tables[r] = exchangeTable(r, world, region);
            }
            int[] rowsPerRound = {256, 3, 0, 100, 255};
            for (int round = 1; round <= rowsPerRound.length; round++) {
                long base = (long) round << 32;
                int rows = rowsPerRound[round - 1];
                for (int r = 0; r < world; r++) {
                    recv[r].segment().fill((byte) 0x5A);
                    for (int d = 0; d < world; d++) {
                        counts[r].setInt(d, Math.max(0, rows - d));
                    }
                }
                allRanks(world, r -> new CpuKernelRunner(4, heap.rank(r)).launch(PUT_EACH, Grid.of(world, 4, 32),
                        send[r], recv[r], counts[r], signals[r], tables[r], row, base));
                for (int r = 0; r < world; r++) {
                    for (int s = 0; s < world; s++) {
                        int sent = Math.max(0, rows - r);
                        assertEquals(base + sent, signals[r].getLong(s), "round " + round + ": signal " + s + " at " + r);
                        for (long i = 0; i < region; i += 8) {
                            long want = i < sent * row ? send[s].getLong((r * region + i) / 8) : 0x5A5A5A5A5A5A5A5AL;
                            assertEquals(want, recv[r].getLong((s * region + i) / 8), "round " + round + " rank " + r
                                    + " region " + s + " byte " + i);
                        }
                    }
                }
            }
        });
    }

    @Test
    void aWaitOfTheBatchThatRunsOutNamesItsPeerAndTag() {
        TestPeerMemory heap = new TestPeerMemory(2, arena);
        Buf[] signals = heap.allocate(16);
        Buf table = longs(1, 1, 99); // word 1, peer 1, tag 99
        var e = assertThrows(KernelExecutionException.class, () -> new CpuKernelRunner(1, heap.rank(0)).launch(
                WAIT_EACH, Grid.of(1, 32), signals[0], table, 1, 5L, SECOND / 10, signals[0], 0));
        assertTrue(e.getCause().getMessage().contains("wait for peer 1 (tag 99)"), e.getCause().getMessage());
    }
}
