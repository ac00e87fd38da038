package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.comm.PeerAccessKernels;

/**
 * {@code peerBuf}, {@code systemFence}, {@code putBlockNbi}, {@code putWarpNbi} and {@code quiet}
 * on the JVM: several ranks, each a {@link CpuKernelRunner} with its view of one
 * {@link TestPeerMemory}, run the same kernel at once and check what arrived on fresh random data
 * over poisoned destinations.
 */
class PeerAccessTest {
    private static final Duration NO_HANG = Duration.ofSeconds(60);
    private static final long ROW = 64;
    private static final int MAX_ROWS = 8;
    private static final long REGION = ROW * MAX_ROWS;
    private static final long SECOND = 1_000_000_000L;
    private static final int TAG = 9;
    private static final byte POISON = (byte) 0x5A;
    private static final int ROUNDS = 3;
    private static final Kernel STORE = new Kernel(PeerAccessKernels.class, "storeThroughPeer");
    private static final Kernel PUT_BLOCK = new Kernel(PeerAccessKernels.class, "putBlock");
    private static final Kernel PUT_WARPS = new Kernel(PeerAccessKernels.class, "putWarps");

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        arena.close();
    }

    /** One round's per-rank inputs and outputs. */
    private final class Round {
        final Buf[] send;
        final Buf[] counts;
        final Buf[] arrived;
        final int[][] count;

        Round(int world, Buf[] recv, Random random, int maxCount) {
            send = new Buf[world];
            counts = new Buf[world];
            arrived = new Buf[world];
            count = new int[world][world];
            for (int r = 0; r < world; r++) {
                send[r] = Buf.allocate(arena, world * REGION);
                counts[r] = Buf.allocate(arena, 4L * world);
                arrived[r] = Buf.allocate(arena, 4L * world);
                for (int d = 0; d < world; d++) {
                    count[r][d] = random.nextInt(maxCount + 1);
                    counts[r].setInt(d, count[r][d]);
                    arrived[r].setInt(d, -1);
                }
                for (long i = 0; i < world * REGION; i++) {
                    send[r].setByte(i, (byte) random.nextInt());
                }
                recv[r].segment().fill(POISON);
            }
        }

        /**
         * Region {@code s} of rank {@code r}'s recv holds the first {@code sentBytes(s, r)} bytes of
         * region {@code r} of {@code s}'s send (each byte mapped by {@code map}), poison after.
         */
        void check(int world, Buf[] recv, Buf[] signals, long base, long bytesPerCount, LongByteMap map, int round) {
            for (int r = 0; r < world; r++) {
                for (int s = 0; s < world; s++) {
                    assertEquals(1, arrived[r].getInt(s), "rank " + r + " saw no signal from " + s);
                    assertEquals(base, signals[r].getLong(s), "signal word " + s + " of rank " + r);
                    long sent = count[s][r] * bytesPerCount;
                    for (long i = 0; i < REGION; i++) {
                        byte expected = i < sent ? map.apply(i, send[s].getByte(r * REGION + i)) : POISON;
                        assertEquals(expected, recv[r].getByte(s * REGION + i), "rank " + r + " region " + s
                                + " byte " + i + " (round " + round + ")");
                    }
                }
            }
        }
    }

    @FunctionalInterface
    private interface LongByteMap {
        byte apply(long index, byte b);
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4})
    void storesThroughPeerBufThenSystemFenceAndSignalArrive(int world) {
        assertTimeoutPreemptively(NO_HANG, () -> {
            TestPeerMemory heap = new TestPeerMemory(world, arena);
            Buf[] recv = heap.allocate(world * REGION);
            Buf[] signals = heap.allocate(8L * world);
            Random random = new Random(31 + world);
            for (int round = 1; round <= ROUNDS; round++) {
                long base = round;
                // counts are words of 8 bytes: up to the whole region
                Round io = new Round(world, recv, random, (int) (REGION / 8));
                TestPeerMemory.allRanks(world, r -> new CpuKernelRunner(2, heap.rank(r)).launch(STORE, Grid.of(world, 64), recv[r],
                        io.send[r], scaled(io.counts[r], world, 8), signals[r], io.arrived[r], TestPeerMemory.NO_ABORT, REGION,
                        base, 10 * SECOND, r, TAG));
                io.check(world, recv, signals, base, 8, (i, b) -> b, round);
            }
        });
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4})
    void putBlockNbiThenQuietAndSignalArrives(int world) {
        assertTimeoutPreemptively(NO_HANG, () -> {
            TestPeerMemory heap = new TestPeerMemory(world, arena);
            Buf[] recv = heap.allocate(world * REGION);
            Buf[] signals = heap.allocate(8L * world);
            Random random = new Random(41 + world);
            for (int round = 1; round <= ROUNDS; round++) {
                long base = round;
                // counts are bytes: any length up to the region, odd ones included
                Round io = new Round(world, recv, random, (int) REGION);
                TestPeerMemory.allRanks(world, r -> new CpuKernelRunner(2, heap.rank(r)).launch(PUT_BLOCK, Grid.of(world, 96),
                        recv[r], io.send[r], io.counts[r], signals[r], io.arrived[r], TestPeerMemory.NO_ABORT, REGION, base,
                        10 * SECOND, r, TAG));
                io.check(world, recv, signals, base, 1, (i, b) -> b, round);
            }
        });
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4})
    void putWarpNbiFromSeveralWarpsOfRowsWrittenBeforeABarrierArrives(int world) {
        assertTimeoutPreemptively(NO_HANG, () -> {
            TestPeerMemory heap = new TestPeerMemory(world, arena);
            Buf[] recv = heap.allocate(world * REGION);
            Buf[] signals = heap.allocate(8L * world);
            Random random = new Random(51 + world);
            for (int round = 1; round <= ROUNDS; round++) {
                long base = round;
                long key = random.nextLong();
                // counts are rows; 3 warps per block, so a warp puts up to 3 rows
                Round io = new Round(world, recv, random, MAX_ROWS);
                Buf[] stage = new Buf[world];
                for (int r = 0; r < world; r++) {
                    stage[r] = Buf.allocate(arena, world * REGION);
                    stage[r].segment().fill((byte) 0xC3);
                }
                TestPeerMemory.allRanks(world, r -> new CpuKernelRunner(2, heap.rank(r)).launch(PUT_WARPS, Grid.of(world, 96),
                        recv[r], io.send[r], stage[r], io.counts[r], signals[r], io.arrived[r], TestPeerMemory.NO_ABORT, ROW,
                        REGION, key, base, 10 * SECOND, r, TAG));
                // little-endian longs: byte i of a long is xor the key's byte i % 8
                io.check(world, recv, signals, base, ROW, (i, b) -> (byte) (b ^ (key >>> (8 * (i % 8)))), round);
            }
        });
    }

    @Test
    void aPutLongerThanItsBuffersFailsTheLaunch() {
        TestPeerMemory heap = new TestPeerMemory(2, arena);
        Buf[] recv = heap.allocate(2 * REGION);
        Buf[] signals = heap.allocate(16);
        Buf send = Buf.allocate(arena, 2 * REGION);
        Buf counts = Buf.allocate(arena, 8);
        counts.setInt(0, (int) REGION + 1);
        counts.setInt(1, 0);
        Buf arrived = Buf.allocate(arena, 8);
        KernelExecutionException e = assertThrows(KernelExecutionException.class, () -> new CpuKernelRunner(1,
                heap.rank(0)).launch(PUT_BLOCK, Grid.of(1, 32), recv[0], send, counts, signals[0], arrived, TestPeerMemory.NO_ABORT,
                REGION, 1L, SECOND, 0, TAG));
        IllegalArgumentException cause = assertInstanceOf(IllegalArgumentException.class, e.getCause());
        assertTrue(cause.getMessage().startsWith("putBlockNbi of " + (REGION + 1) + " bytes"), cause.getMessage());
    }

    @Test
    void peerBufOfMemoryOutsideTheSymmetricHeapIsRefused() {
        TestPeerMemory heap = new TestPeerMemory(2, arena);
        heap.allocate(8);
        Buf local = Buf.allocate(arena, 2 * REGION);
        Buf signals = Buf.allocate(arena, 16);
        Buf counts = Buf.allocate(arena, 8);
        Buf arrived = Buf.allocate(arena, 8);
        KernelExecutionException e = assertThrows(KernelExecutionException.class, () -> new CpuKernelRunner(1,
                heap.rank(0)).launch(STORE, Grid.of(1, 32), local, local, counts, signals, arrived, TestPeerMemory.NO_ABORT, REGION,
                1L, SECOND, 0, TAG));
        assertTrue(e.getCause().getMessage().contains("is not symmetric memory of rank 0"), e.getCause().getMessage());
    }

    /** A copy of the {@code world} ints of {@code counts}, each times {@code factor}. */
    private Buf scaled(Buf counts, int world, int factor) {
        Buf b = Buf.allocate(arena, 4L * world);
        for (int d = 0; d < world; d++) {
            b.setInt(d, counts.getInt(d) * factor);
        }
        return b;
    }
}
