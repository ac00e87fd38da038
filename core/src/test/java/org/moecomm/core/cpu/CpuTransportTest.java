package org.moecomm.core.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.core.backend.Transport;
import org.moecomm.kernels.api.Buf;

@Timeout(60)
class CpuTransportTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    @Test
    void symmetricAllocationsMatchByOrderAndAreZeroed() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            CpuTransport t0 = new CpuTransport(cluster, 0, TIMEOUT);
            CpuTransport t1 = new CpuTransport(cluster, 1, TIMEOUT);
            CpuSymmetricBuffer a0 = (CpuSymmetricBuffer) t0.allocateSymmetric(64);
            CpuSymmetricBuffer b0 = (CpuSymmetricBuffer) t0.allocateSymmetric(128);
            CpuSymmetricBuffer a1 = (CpuSymmetricBuffer) t1.allocateSymmetric(64);
            CpuSymmetricBuffer b1 = (CpuSymmetricBuffer) t1.allocateSymmetric(128);
            assertSame(a0.peer(1), a1.peer(1));
            assertSame(b1.peer(0), b0.peer(0));
            assertEquals(128, b1.byteSize());
            for (long i = 0; i < 128; i++) {
                assertEquals(0, b1.local().getByte(i));
            }
            assertEquals(0, a0.local().address() % 8);
            t1.allocateSymmetric(32);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> t0.allocateSymmetric(16));
            assertTrue(e.getMessage().contains("collective"), e.getMessage());
            t0.close();
            t1.close();
        }
    }

    @Test
    void putWithSignalCopiesCountRowsThenSignalsBasePlusCount() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            CpuTransport t0 = new CpuTransport(cluster, 0, TIMEOUT);
            CpuTransport t1 = new CpuTransport(cluster, 1, TIMEOUT);
            SymmetricBuffer data0 = t0.allocateSymmetric(256);
            SymmetricBuffer sig0 = t0.allocateSymmetric(32);
            SymmetricBuffer data1 = t1.allocateSymmetric(256);
            SymmetricBuffer sig1 = t1.allocateSymmetric(32);
            for (int i = 0; i < 256; i++) {
                data0.local().setByte(i, (byte) i);
            }
            Buf count = Buf.of(java.lang.foreign.Arena.ofAuto().allocate(16));
            count.setInt(2, 3);
            // rows of 16 bytes: 3 rows from offset 32 to peer 1's offset 64; signal word 1
            t0.putWithSignal(data0.local(), 32, data1, 64, count, 2, 16, sig1, 1, 5L << 32, 1);
            t1.waitAtLeast(sig1, 1, 5L << 32, 0, "test[1]");
            assertEquals((5L << 32) + 3, sig1.local().getLong(1));
            for (int i = 0; i < 48; i++) {
                assertEquals((byte) (32 + i), data1.local().getByte(64 + i));
            }
            assertEquals(0, data1.local().getByte(64 + 48));
            assertEquals(0, data1.local().getByte(63));
            assertEquals(0, sig0.local().getLong(1));

            t1.signal(sig0, 0, 7, Transport.SignalOp.SET, 0);
            t1.signal(sig0, 0, 5, Transport.SignalOp.ADD, 0);
            t0.waitAtLeast(sig0, 0, 12, 1, "test[0]");
            assertEquals(12, sig0.local().getLong(0));
            t1.signal(sig0, 0, 2, Transport.SignalOp.SET, 0);
            assertEquals(2, sig0.local().getLong(0));
            assertThrows(IllegalArgumentException.class,
                    () -> t1.signal(sig0, 4, 1, Transport.SignalOp.SET, 0));
            assertThrows(IllegalArgumentException.class,
                    () -> t1.signal(sig0, 0, 1, Transport.SignalOp.SET, 2));
        }
    }

    @Test
    void waitTimesOutNamingPeerSignalAndValues() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            CpuTransport t0 = new CpuTransport(cluster, 0, Duration.ofMillis(200));
            SymmetricBuffer sig = t0.allocateSymmetric(16);
            sig.local().setLong(1, 3L << 32 | 9);
            long start = System.nanoTime();
            WaitTimeoutException e = assertThrows(WaitTimeoutException.class,
                    () -> t0.waitAtLeast(sig, 1, 4L << 32, 1, "dispatch[1]"));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms >= 190 && ms < 5000, "waited " + ms + " ms");
            assertEquals(0, e.rank());
            assertEquals(1, e.peer());
            assertEquals("dispatch[1]", e.signal());
            assertEquals(4L << 32, e.expected());
            assertEquals(3L << 32 | 9, e.seen());
            assertTrue(e.getMessage().contains("peer 1") && e.getMessage().contains("dispatch[1]")
                    && e.getMessage().contains("round 3, count 9"), e.getMessage());
        }
    }

    /** Many handshakes: each side writes a block then signals; the other must see the whole block. */
    @Test
    void releaseAcquireMakesPutDataVisibleAcrossThreads() {
        int rounds = 2000;
        try (CpuCluster cluster = CpuCluster.create(2)) {
            cluster.runOnAllRanks(rank -> {
                CpuTransport t = new CpuTransport(cluster, rank, TIMEOUT);
                SymmetricBuffer data = t.allocateSymmetric(1024);
                SymmetricBuffer sig = t.allocateSymmetric(8);
                Buf src = Buf.of(java.lang.foreign.Arena.ofAuto().allocate(1024 + 16));
                Buf count = src.slice(1024, 16);
                count.setInt(0, 64);
                int peer = 1 - rank;
                for (int n = 1; n <= rounds; n++) {
                    for (int i = 0; i < 128; i++) {
                        src.setLong(i, (long) n * 1000 + i + rank);
                    }
                    t.putWithSignal(src, 0, data, 0, count, 0, 16, sig, 0, (long) n << 32, peer);
                    t.waitAtLeast(sig, 0, (long) n << 32, peer, "ping");
                    for (int i = 0; i < 128; i++) {
                        long v = data.local().segment().get(ValueLayout.JAVA_LONG, 8L * i);
                        if (v != (long) n * 1000 + i + peer) {
                            throw new AssertionError("round " + n + " word " + i + ": " + v);
                        }
                    }
                    // the peer may overwrite our data only after we said we read it
                    t.barrier();
                }
                t.close();
                return null;
            });
        }
    }

    @Test
    void barrierTimesOutWhenARankIsMissing() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            CpuTransport t0 = new CpuTransport(cluster, 0, Duration.ofMillis(100));
            MoeCommException e = assertThrows(MoeCommException.class, t0::barrier);
            assertTrue(e.getMessage().contains("barrier"), e.getMessage());
            // the barrier is usable again afterwards
            cluster.runOnAllRanks(rank -> {
                new CpuTransport(cluster, rank, TIMEOUT).barrier();
                return null;
            });
        }
    }

    @Test
    void runOnAllRanksReturnsByRankAndRethrowsTheFirstFailureWithOthersSuppressed() {
        try (CpuCluster cluster = CpuCluster.create(3)) {
            assertEquals(List.of(0, 10, 20), cluster.runOnAllRanks(r -> r * 10));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> cluster.runOnAllRanks(r -> {
                if (r == 1) {
                    throw new IllegalStateException("first");
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException ex) {
                    throw new RuntimeException(ex);
                }
                throw new IllegalArgumentException("later " + r);
            }));
            assertEquals("first", e.getMessage());
            assertEquals(2, e.getSuppressed().length);
            assertEquals("moecomm-rank-2", cluster.runOnAllRanks(r -> Thread.currentThread().getName()).get(2));
        }
    }
}
