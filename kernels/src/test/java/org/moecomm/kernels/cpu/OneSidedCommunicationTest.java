package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.comm.CommKernels;

/**
 * The one-sided communication methods of {@code KernelContext} on the JVM: several ranks, each a
 * {@link CpuKernelRunner} with its view of one {@link TestPeerMemory}, run the same kernel at once.
 */
class OneSidedCommunicationTest {
    private static final Duration NO_HANG = Duration.ofSeconds(60);
    private static final long ROW = 64;
    private static final int MAX_ROWS = 8;
    private static final long REGION = ROW * MAX_ROWS;
    private static final long SECOND = 1_000_000_000L;
    private static final int TAG = 7;
    private static final byte POISON = (byte) 0xA5;
    private static final Kernel EXCHANGE = new Kernel(CommKernels.class, "exchange");
    private static final Kernel COUNT = new Kernel(CommKernels.class, "count");
    private static final Kernel PUT_SHARES = new Kernel(CommKernels.class, "putShares");
    private static final Kernel PING_PONG = new Kernel(CommKernels.class, "pingPong");

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        arena.close();
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void exchangeMovesCountsReadOnTheDeviceWithTheirSignals(int world) {
        assertTimeoutPreemptively(NO_HANG, () -> {
            TestPeerMemory heap = new TestPeerMemory(world, arena);
            Buf[] recv = heap.allocate(world * REGION);
            Buf[] signals = heap.allocate(8L * world);
            Random random = new Random(11 + world);
            int rounds = 3;
            for (int round = 1; round <= rounds; round++) {
                long base = (long) round << 32;
                int[][] rows = new int[world][world];
                Buf[] send = new Buf[world];
                Buf[] rowsBuf = new Buf[world];
                Buf[] arrived = new Buf[world];
                for (int r = 0; r < world; r++) {
                    send[r] = Buf.allocate(arena, world * REGION);
                    rowsBuf[r] = Buf.allocate(arena, 4L * world);
                    arrived[r] = Buf.allocate(arena, 4L * world);
                    for (int d = 0; d < world; d++) {
                        rows[r][d] = random.nextInt(MAX_ROWS + 1);
                        rowsBuf[r].setInt(d, rows[r][d]);
                        arrived[r].setInt(d, -1);
                    }
                    for (long i = 0; i < world * REGION; i++) {
                        send[r].setByte(i, (byte) random.nextInt());
                    }
                    // poison: bytes a put did not write stay 0x5A
                    recv[r].segment().fill((byte) 0x5A);
                }
                TestPeerMemory.allRanks(world, r -> new CpuKernelRunner(2, heap.rank(r)).launch(EXCHANGE, Grid.of(world, 32),
                        recv[r], send[r], rowsBuf[r], signals[r], arrived[r], TestPeerMemory.NO_ABORT, ROW, REGION, base, 10 * SECOND, r,
                        TAG));
                for (int r = 0; r < world; r++) {
                    for (int s = 0; s < world; s++) {
                        assertEquals(1, arrived[r].getInt(s), "rank " + r + " saw no signal from " + s);
                        assertEquals(base + rows[s][r], signals[r].getLong(s), "signal word " + s + " of rank " + r);
                        long sent = rows[s][r] * ROW;
                        for (long i = 0; i < REGION; i++) {
                            byte expected = i < sent ? send[s].getByte(r * REGION + i) : (byte) 0x5A;
                            assertEquals(expected, recv[r].getByte(s * REGION + i), "rank " + r + " region " + s
                                    + " byte " + i + " (round " + round + ")");
                        }
                    }
                }
            }
        });
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void signalAddAndSetReachEveryRank(int world) {
        assertTimeoutPreemptively(NO_HANG, () -> {
            TestPeerMemory heap = new TestPeerMemory(world, arena);
            Buf[] counter = heap.allocate(8);
            Buf[] arrived = new Buf[world];
            for (int r = 0; r < world; r++) {
                arrived[r] = Buf.allocate(arena, 4);
            }
            // every rank adds 3 to every counter: each ends at 3 * world
            TestPeerMemory.allRanks(world, r -> new CpuKernelRunner(1, heap.rank(r)).launch(COUNT, Grid.of(1, 32), counter[r],
                    arrived[r], TestPeerMemory.NO_ABORT, 3L, 3L * world, 0, 10 * SECOND, r, world, TAG));
            for (int r = 0; r < world; r++) {
                assertEquals(3L * world, counter[r].getLong(0), "counter of rank " + r);
                assertEquals(3 * world, arrived[r].getInt(0), "the value the wait of rank " + r + " returned");
            }
            // every rank sets every counter to 1000: the value, not a sum
            TestPeerMemory.allRanks(world, r -> new CpuKernelRunner(1, heap.rank(r)).launch(COUNT, Grid.of(1, 32), counter[r],
                    arrived[r], TestPeerMemory.NO_ABORT, 0L, 1000L, 1, 10 * SECOND, r, world, TAG));
            for (int r = 0; r < world; r++) {
                assertEquals(1000L, counter[r].getLong(0), "counter of rank " + r);
                assertEquals(1000, arrived[r].getInt(0), "the value the wait of rank " + r + " returned");
            }
        });
    }

    /**
     * A message split over 4 blocks, each putting its part and adding its share to the signal
     * ({@code putSignalAddBlock}): over rounds every part arrives and every word ends at exactly
     * the sum of the shares.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    void putSignalAddBlockPartsAddTheirSharesToTheSignal(int world) {
        assertTimeoutPreemptively(NO_HANG, () -> {
            int chunks = 4;
            long chunkBytes = 4096;
            long region = chunks * chunkBytes;
            long delta = 1L << 30;
            TestPeerMemory heap = new TestPeerMemory(world, arena);
            Buf[] recv = heap.allocate(world * region);
            Buf[] signals = heap.allocate(8L * world);
            Random random = new Random(17 + world);
            for (int round = 1; round <= 3; round++) {
                Buf[] send = new Buf[world];
                for (int r = 0; r < world; r++) {
                    send[r] = Buf.allocate(arena, world * region);
                    for (long i = 0; i < world * region / 8; i++) {
                        send[r].setLong(i, random.nextLong());
                    }
                    recv[r].segment().fill((byte) 0x5A);
                }
                TestPeerMemory.allRanks(world, r -> new CpuKernelRunner(4, heap.rank(r)).launch(PUT_SHARES,
                        Grid.of(world, chunks, 32), recv[r], send[r], signals[r], chunkBytes, region, delta, r));
                for (int r = 0; r < world; r++) {
                    for (int s = 0; s < world; s++) {
                        assertEquals(round * chunks * delta, signals[r].getLong(s), "round " + round + ": signal " + s
                                + " at " + r);
                        for (long i = 0; i < region / 8; i++) {
                            assertEquals(send[s].getLong((r * region) / 8 + i), recv[r].getLong((s * region) / 8 + i),
                                    "round " + round + " rank " + r + " region " + s + " word " + i);
                        }
                    }
                }
            }
        });
    }

    /** Round trips between ranks 0 and 1 in one launch each (a third rank takes no part). */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    void pingPongRoundTripsInOneLaunch(int world) {
        assertTimeoutPreemptively(NO_HANG, () -> {
            int rounds = 50;
            long bytes = 256;
            TestPeerMemory heap = new TestPeerMemory(world, arena);
            Buf[] data = heap.allocate(2 * bytes);
            Buf[] signals = heap.allocate(16);
            Buf[] src = new Buf[world];
            for (int r = 0; r < world; r++) {
                src[r] = Buf.allocate(arena, bytes);
            }
            for (int launch = 0; launch < 2; launch++) {
                long base = (long) launch * rounds;
                for (int r = 0; r < world; r++) { // new bytes every launch into poisoned landing areas
                    src[r].segment().fill((byte) (10 * launch + r + 1));
                    data[r].segment().fill(POISON);
                }
                TestPeerMemory.allRanks(world, r -> new CpuKernelRunner(1, heap.rank(r)).launch(PING_PONG, Grid.of(1, 32), data[r],
                        src[r], signals[r], TestPeerMemory.NO_ABORT, bytes, base, rounds, 10 * SECOND, r, TAG));
                assertEquals(base + rounds, signals[1].getLong(0), "ping word at rank 1");
                assertEquals(base + rounds, signals[0].getLong(1), "pong word at rank 0");
                for (long i = 0; i < bytes; i++) {
                    assertEquals(10 * launch + 1, data[1].getByte(i), "launch " + launch + ": rank 1 byte " + i);
                    assertEquals(10 * launch + 2, data[0].getByte(bytes + i), "launch " + launch + ": rank 0 byte " + i);
                }
                if (world > 2) {
                    assertEquals(-1L, data[2].segment().mismatch(
                            MemorySegment.ofArray(new byte[(int) (2 * bytes)]).fill(POISON)), "rank 2 takes no part");
                }
            }
            assertEquals(0, signals[0].getLong(0));
            assertEquals(0, signals[1].getLong(1));
            if (world > 2) {
                assertEquals(0, signals[2].getLong(0));
            }
        });
    }

    /**
     * A counter that counts up past the top of the signed (and, on the GPU, unsigned) range: a wait
     * compares modulo 2^64, so a target just past the wrap is not met by the value before it, and
     * is met once the count reaches it.
     */
    @Test
    void aWaitComparesModulo2To64SoCountersMayWrapAround() {
        TestPeerMemory heap = new TestPeerMemory(1, arena);
        Buf[] counter = heap.allocate(8);
        Buf arrived = Buf.allocate(arena, 4);
        long before = Long.MAX_VALUE - 1;
        long after = before + 5; // Long.MIN_VALUE + 3
        new CpuKernelRunner(1, heap.rank(0)).launch(COUNT, Grid.of(1, 32), counter[0], arrived,
                TestPeerMemory.NO_ABORT, 0L, before, 1, SECOND, 0, 1, TAG);
        assertEquals(before, counter[0].getLong(0));
        // nobody adds (world 0): a plain signed comparison would take MAX - 1 for >= MIN + 3
        KernelExecutionException e = assertThrows(KernelExecutionException.class, () -> new CpuKernelRunner(1,
                heap.rank(0)).launch(COUNT, Grid.of(1, 32), counter[0], arrived, TestPeerMemory.NO_ABORT, 0L, after, 0,
                SECOND / 20, 0, 0, TAG));
        PeerWaitTimeoutException cause = assertInstanceOf(PeerWaitTimeoutException.class, e.getCause());
        assertEquals(before, cause.seen());
        new CpuKernelRunner(1, heap.rank(0)).launch(COUNT, Grid.of(1, 32), counter[0], arrived,
                TestPeerMemory.NO_ABORT, 5L, after, 0, SECOND, 0, 1, TAG);
        assertEquals(after, counter[0].getLong(0));
        assertEquals((int) after, arrived.getInt(0)); // the wait returned the value past the wrap
    }

    @Test
    void aWaitThatRunsOutFailsTheLaunchNamingPeerTagAndValues() {
        TestPeerMemory heap = new TestPeerMemory(2, arena);
        Buf[] counter = heap.allocate(8);
        Buf arrived = Buf.allocate(arena, 4);
        // rank 0 alone adds 1 to both counters and waits for 5 on its own: nobody else adds
        KernelExecutionException e = assertThrows(KernelExecutionException.class, () -> new CpuKernelRunner(1,
                heap.rank(0)).launch(COUNT, Grid.of(1, 32), counter[0], arrived, TestPeerMemory.NO_ABORT, 1L, 5L, 0,
                SECOND / 5, 0, 2, TAG));
        PeerWaitTimeoutException cause = assertInstanceOf(PeerWaitTimeoutException.class, e.getCause());
        assertTrue(cause.getMessage().contains("rank 0: wait for peer -1 (tag " + TAG + ")"), cause.getMessage());
        assertTrue(cause.getMessage().contains("expected >= 5, seen 1"), cause.getMessage());
        assertEquals(0, cause.rank());
        assertEquals(-1, cause.peer());
        assertEquals(TAG, cause.tag());
        assertEquals(5, cause.expected());
        assertEquals(1, cause.seen());
        assertTrue(cause.waitedNanos() >= SECOND / 5, "waited " + cause.waitedNanos() + " ns");
    }

    @Test
    void withoutPeerMemoryTheCallFailsTheLaunchWithTheReason() {
        Buf b = Buf.allocate(arena, 64);
        KernelExecutionException e = assertThrows(KernelExecutionException.class, () -> new CpuKernelRunner(1).launch(
                COUNT, Grid.of(1, 32), b, b, b, 1L, 1L, 0, SECOND, 0, 1, TAG));
        assertTrue(e.getCause().getMessage().contains("calls KernelContext.signalAdd, but its CpuKernelRunner has no "
                + "PeerMemory"), e.getCause().getMessage());
    }

    @Test
    void aBufferOutsideTheSymmetricHeapIsRefused() {
        TestPeerMemory heap = new TestPeerMemory(2, arena);
        heap.allocate(8);
        Buf local = Buf.allocate(arena, 8);
        Buf arrived = Buf.allocate(arena, 4);
        KernelExecutionException e = assertThrows(KernelExecutionException.class, () -> new CpuKernelRunner(1,
                heap.rank(0)).launch(COUNT, Grid.of(1, 32), local, arrived, TestPeerMemory.NO_ABORT, 1L, 1L, 0, SECOND, 0, 2, TAG));
        assertTrue(e.getCause().getMessage().contains("is not symmetric memory of rank 0"), e.getCause().getMessage());
    }
}
