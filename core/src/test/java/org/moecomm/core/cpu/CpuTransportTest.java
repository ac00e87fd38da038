package org.moecomm.core.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.comm.CommKernels;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * The CPU transport's host part (symmetric allocation, barrier, close) and what it gives the
 * kernels (the names of their waits); the kernels' puts, signals and waits themselves are tested
 * with the kernels (OneSidedCommunicationTest) and through the protocol.
 */
@Timeout(60)
class CpuTransportTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final Kernel EXCHANGE = new Kernel(CommKernels.class, "exchange");

    /** A rank's transport with a runner of its own (a CPU runner holds no resources: not closed here). */
    private static CpuTransport transport(CpuCluster cluster, int rank, Duration timeout) {
        return new CpuTransport(cluster, rank, timeout, new CpuRankRunner(cluster.heap(), rank, cluster.worldSize(),
                CpuKernelRunner.DEFAULT_BLOCK_THREADS));
    }

    @Test
    void symmetricAllocationsMatchByOrderAndAreZeroed() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            CpuTransport t0 = transport(cluster, 0, TIMEOUT);
            CpuTransport t1 = transport(cluster, 1, TIMEOUT);
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

    /**
     * Every peer is mapped on the JVM, at offset 0: the CPU kernel context finds a peer's copy
     * through its PeerMemory, not by adding an offset. A rank outside the world is refused.
     */
    @Test
    void everyPeerIsMappedAtOffsetZeroAndAnUnknownPeerIsRefused() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            CpuTransport t0 = transport(cluster, 0, TIMEOUT);
            SymmetricBuffer a0 = t0.allocateSymmetric(64);
            for (int peer = 0; peer < 2; peer++) {
                assertTrue(t0.mapped(a0, peer));
                assertEquals(0, t0.peerOffset(a0, peer));
            }
            assertRefused(IllegalArgumentException.class, () -> t0.peerOffset(a0, 2), "peer 2 is outside [0, 2)");
            assertRefused(IllegalArgumentException.class, () -> t0.peerOffset(a0, -1), "peer -1 is outside [0, 2)");
        }
    }

    /** A buffer is freed when the last rank's transport closes; a closed transport allocates nothing. */
    @Test
    void closeReleasesTheRanksShareAndRefusesAllocationsAfterwards() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            CpuTransport t0 = transport(cluster, 0, TIMEOUT);
            CpuTransport t1 = transport(cluster, 1, TIMEOUT);
            SymmetricBuffer a0 = t0.allocateSymmetric(64);
            t1.allocateSymmetric(64);
            t0.close();
            t0.close(); // idempotent
            assertTrue(a0.local().segment().scope().isAlive(), "freed while rank 1 still holds it");
            t1.close();
            assertFalse(a0.local().segment().scope().isAlive(), "not freed when the last rank closed");
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> t0.allocateSymmetric(16));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
    }

    /**
     * A kernel's bounded wait that runs out fails the launch on the rank's runner with the
     * exception the GPU backend raises: the peer, the signal named through the transport's
     * {@code registerWaits}, the expected and the seen value.
     */
    @Test
    void aKernelWaitThatRunsOutNamesPeerRegisteredSignalAndValues() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            SymmetricHeap heap = cluster.heap();
            try (CpuRankRunner runner = new CpuRankRunner(heap, 0, 2, CpuKernelRunner.DEFAULT_BLOCK_THREADS)) {
                CpuTransport t0 = new CpuTransport(cluster, 0, TIMEOUT, runner);
                CpuTransport t1 = transport(cluster, 1, TIMEOUT);
                SymmetricBuffer recv = t0.allocateSymmetric(2 * 64);
                SymmetricBuffer signals = t0.allocateSymmetric(16);
                t1.allocateSymmetric(2 * 64);
                t1.allocateSymmetric(16);
                int tag = t0.registerWaits(List.of("dispatch[0]", "dispatch[1]"));
                signals.local().setLong(1, 3L << 32 | 9);
                Buf send = Buf.of(Arena.ofAuto().allocate(2 * 64));
                Buf rows = Buf.of(Arena.ofAuto().allocate(8));
                Buf arrived = Buf.of(Arena.ofAuto().allocate(8));
                // rank 0 alone: block d puts to d and waits for d's signal word; rank 1 never signals
                long start = System.nanoTime();
                WaitTimeoutException e = assertThrows(WaitTimeoutException.class, () -> runner.launch(EXCHANGE,
                        Grid.of(2, 32), recv.local(), send, rows, signals.local(), arrived, t0.waitErrors(), 64L, 64L,
                        4L << 32, 200_000_000L, 0, tag + 1));
                long ms = (System.nanoTime() - start) / 1_000_000;
                assertTrue(ms >= 190 && ms < 5000, "waited " + ms + " ms");
                assertEquals(0, e.rank());
                assertEquals(1, e.peer());
                assertEquals("dispatch[1]", e.signal());
                assertEquals(4L << 32, e.expected());
                assertEquals(3L << 32 | 9, e.seen());
                assertTrue(e.getMessage().contains("peer 1") && e.getMessage().contains("dispatch[1]")
                        && e.getMessage().contains("halves 3 : 9"), e.getMessage());
            }
        }
    }

    @Test
    void barrierTimesOutWhenARankIsMissing() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            CpuTransport t0 = transport(cluster, 0, Duration.ofMillis(100));
            MoeCommException e = assertThrows(MoeCommException.class, t0::barrier);
            assertTrue(e.getMessage().contains("barrier"), e.getMessage());
            // the barrier is usable again afterwards
            cluster.runOnAllRanks(rank -> {
                transport(cluster, rank, TIMEOUT).barrier();
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
