package org.moecomm.core.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.moecomm.bridge.nvshmem.Nvshmem;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.core.backend.Transport;
import org.moecomm.kernels.api.Buf;

/**
 * A rank of the NVSHMEM transport's GPU test, started by {@link org.moecomm.core.launch.LocalLauncher}.
 * Prints {@code CHECK <name> ok} lines the test looks for; any failure throws (exit code 1).
 *
 * <ol>
 *   <li>peer pointers: {@code nvshmem_ptr} is non-null for every peer (one node);</li>
 *   <li>ring: for rounds n = 1..R every rank puts a variable number of 1 KiB rows (the count read
 *       on the GPU) to the next rank with signal {@code n << 32 | count}, waits for the previous
 *       rank's signal, and checks the rows and the signal word;</li>
 *   <li>ping-pong between ranks 0 and 1 (put-with-signal, wait), timed;</li>
 *   <li>errors (on an endpoint with a 500 ms bound): a wait nobody answers reports rank, peer,
 *       signal, expected and seen as a {@link WaitTimeoutException} at the next synchronisation,
 *       after the bound, and stays reported; a wait enqueued behind it returns at once instead of
 *       waiting its bound too; a put whose count does not fit is refused; after recovery the
 *       endpoint works.</li>
 * </ol>
 */
public final class PingPongMain {
    private static final int ROW = 1024;
    private static final int MAX_ROWS = 16;
    private static final int ROUNDS = 12;
    private static final int PING_PONGS = 200;
    private static final long ERROR_BOUND_MS = 500;

    private PingPongMain() {
    }

    public static void main(String[] args) {
        GpuBackend.Options opts = new GpuBackend.Options(64L << 20, -1, GpuBackend.Bootstrap.AUTO, Duration.ofMinutes(2));
        try (GpuBackend gpu = GpuBackend.start(opts)) {
            int rank = gpu.rank();
            int world = gpu.worldSize();
            System.out.println("rank " + rank + " of " + world + ": " + Nvshmem.initStatus() + ", " + gpu);
            try (GpuEndpoint ep = gpu.openEndpoint(Duration.ofSeconds(60))) {
                peerPointers(ep, rank, world);
                ring(ep, rank, world);
                if (world >= 2) {
                    pingPong(ep, rank);
                }
                ep.transport().barrier();
            }
            try (GpuEndpoint sync = gpu.openEndpoint(Duration.ofSeconds(60));
                 GpuEndpoint ep = gpu.openEndpoint(Duration.ofMillis(ERROR_BOUND_MS))) {
                errors(ep, sync, rank, world);
            }
            System.out.println("CHECK all ok rank " + rank);
        }
    }

    private static void peerPointers(GpuEndpoint ep, int rank, int world) {
        SymmetricBuffer probe = ep.transport().allocateSymmetric(256);
        for (int p = 0; p < world; p++) {
            long a = ep.transport().peerAddress(probe, p);
            if (a == 0) {
                throw new IllegalStateException("rank " + rank + ": nvshmem_ptr is null for peer " + p
                        + " on one node (is P2P disabled?)");
            }
        }
        System.out.println("CHECK peer-pointers ok rank " + rank);
    }

    private static void ring(GpuEndpoint ep, int rank, int world) {
        GpuTransport t = ep.transport();
        GpuDeviceMemory mem = ep.memory();
        SymmetricBuffer data = t.allocateSymmetric((long) world * MAX_ROWS * ROW);
        SymmetricBuffer signals = t.allocateSymmetric(8L * world);
        Buf src = mem.allocate((long) MAX_ROWS * ROW);
        Buf count = mem.allocate(16);
        int next = (rank + 1) % world;
        int prev = (rank + world - 1) % world;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate((long) MAX_ROWS * ROW, 16);
            MemorySegment word = arena.allocate(8, 8);
            MemorySegment c = arena.allocate(4, 4);
            for (int n = 1; n <= ROUNDS; n++) {
                int rows = rowsOf(rank, n);
                fill(host, rank, n);
                mem.copyFromHost(host, src, 0);
                c.set(ValueLayout.JAVA_INT, 0, rows);
                mem.copyFromHost(c, count, 0);
                t.putWithSignal(src, 0, data, (long) rank * MAX_ROWS * ROW, count, 0, ROW, signals, rank,
                        (long) n << 32, next);
                t.waitAtLeast(signals, prev, (long) n << 32, prev, "ring[" + prev + "]");
                // check what prev sent this round
                int expectRows = rowsOf(prev, n);
                mem.copyToHost(signals.local(), 8L * prev, word);
                long sig = word.get(ValueLayout.JAVA_LONG, 0);
                long want = ((long) n << 32) | expectRows;
                if (sig != want) {
                    throw new IllegalStateException("rank " + rank + " round " + n + ": signal from " + prev + " is 0x"
                            + Long.toHexString(sig) + ", expected 0x" + Long.toHexString(want));
                }
                MemorySegment got = host.asSlice(0, (long) expectRows * ROW);
                mem.copyToHost(data.local(), (long) prev * MAX_ROWS * ROW, got);
                for (long i = 0; i < (long) expectRows * ROW; i++) {
                    byte b = got.get(ValueLayout.JAVA_BYTE, i);
                    if (b != pattern(prev, n, i)) {
                        throw new IllegalStateException("rank " + rank + " round " + n + ": byte " + i + " from " + prev
                                + " is " + b + ", expected " + pattern(prev, n, i));
                    }
                }
                // every rank has read its region before anyone overwrites it next round
                t.barrier();
            }
        }
        System.out.println("CHECK ring ok rank " + rank + " (" + ROUNDS + " rounds, " + world + " ranks)");
    }

    private static int rowsOf(int rank, int round) {
        return (rank * 5 + round * 3) % (MAX_ROWS + 1); // 0 rows happens: the signal alone must arrive
    }

    private static byte pattern(int rank, int round, long i) {
        return (byte) (rank * 31 + round * 7 + i * 13 + (i >> 10));
    }

    private static void fill(MemorySegment host, int rank, int round) {
        for (long i = 0; i < host.byteSize(); i++) {
            host.set(ValueLayout.JAVA_BYTE, i, pattern(rank, round, i));
        }
    }

    private static void pingPong(GpuEndpoint ep, int rank) {
        GpuTransport t = ep.transport();
        GpuDeviceMemory mem = ep.memory();
        SymmetricBuffer data = t.allocateSymmetric(2L * 64);
        SymmetricBuffer signals = t.allocateSymmetric(16);
        Buf src = mem.allocate(64);
        Buf one = mem.allocate(16);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = arena.allocate(4, 4);
            c.set(ValueLayout.JAVA_INT, 0, 1);
            mem.copyFromHost(c, one, 0);
        }
        t.barrier();
        if (rank <= 1) {
            int peer = 1 - rank;
            long start = System.nanoTime();
            for (int n = 1; n <= PING_PONGS; n++) {
                long base = (long) n << 32;
                if (rank == 0) {
                    t.putWithSignal(src, 0, data, 0, one, 0, 64, signals, 0, base, peer);
                    t.waitAtLeast(signals, 1, base, peer, "pong");
                } else {
                    t.waitAtLeast(signals, 0, base, peer, "ping");
                    t.putWithSignal(src, 0, data, 64, one, 0, 64, signals, 1, base, peer);
                }
            }
            t.synchronize();
            double us = (System.nanoTime() - start) / 1e3 / PING_PONGS;
            System.out.printf("CHECK ping-pong ok rank %d: %d round trips, %.1f us each (64 B put-with-signal + wait;"
                    + " host enqueue included)%n", rank, PING_PONGS, us);
        }
        t.barrier();
    }

    /** {@code ep} has the short bound; {@code sync} (long bound) lines the ranks up between the steps. */
    private static void errors(GpuEndpoint ep, GpuEndpoint sync, int rank, int world) {
        GpuTransport t = ep.transport();
        GpuDeviceMemory mem = ep.memory();
        SymmetricBuffer signals = t.allocateSymmetric(8L * world);
        int peer = (rank + 1) % world;
        long expected = (5L << 32) | 3;
        String name = "never[" + rank + "]";

        // 1. two waits nobody answers, enqueued back to back: the first runs out and is reported
        //    with everything needed to find the culprit; the second returns at once
        long t0 = System.nanoTime();
        t.waitAtLeast(signals, rank, expected, peer, name);
        t.waitAtLeast(signals, rank, expected + 1, peer, name + "-second");
        WaitTimeoutException e = expectTimeout(t::synchronize, "synchronize after the unanswered waits");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        check(e.rank() == rank, "rank " + e.rank());
        check(e.peer() == peer, "peer " + e.peer());
        check(e.signal().equals(name), "signal " + e.signal());
        check(e.expected() == expected, "expected " + e.expected());
        check(e.seen() == 0, "seen " + e.seen());
        check(ms >= ERROR_BOUND_MS - 50, "the wait ended after " + ms + " ms, before its bound of " + ERROR_BOUND_MS);
        check(ms < 2 * ERROR_BOUND_MS - 100, "two waits took " + ms + " ms: the second one waited too");
        System.out.println("CHECK wait-timeout ok rank " + rank + " (" + ms + " ms): " + e.getMessage());

        // 2. the failure sticks until recovered
        expectTimeout(() -> t.signal(signals, rank, 1, Transport.SignalOp.SET, rank), "a call after the failure");
        ep.recover();
        sync.transport().barrier();
        System.out.println("CHECK sticky-failure ok rank " + rank);

        // 3. a put whose count does not fit in the destination is refused on the GPU
        Buf src = mem.allocate(4096);
        Buf count = mem.allocate(16);
        SymmetricBuffer small = t.allocateSymmetric(4096);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = arena.allocate(4, 4);
            c.set(ValueLayout.JAVA_INT, 0, 1 << 20);
            mem.copyFromHost(c, count, 0);
        }
        t.putWithSignal(src, 0, small, 0, count, 0, 1024, signals, 0, 1L << 32, peer);
        try {
            t.synchronize();
            throw new IllegalStateException("rank " + rank + ": an oversized put was not refused");
        } catch (WaitTimeoutException x) {
            throw x;
        } catch (MoeCommException x) {
            check(x.getMessage().contains("room for 4096 bytes"), x.getMessage());
            System.out.println("CHECK put-count ok rank " + rank + ": " + x.getMessage());
        }
        ep.recover();
        sync.transport().barrier();

        // 4. after recovery the endpoint works: a signal to every peer and a wait for all of them
        for (int p = 0; p < world; p++) {
            t.signal(signals, rank, 7L << 32, Transport.SignalOp.SET, p);
        }
        for (int p = 0; p < world; p++) {
            t.waitAtLeast(signals, p, 7L << 32, p, "after-recovery[" + p + "]");
        }
        t.synchronize();
        sync.transport().barrier();
        System.out.println("CHECK recovery ok rank " + rank);
    }

    private static WaitTimeoutException expectTimeout(Runnable r, String what) {
        try {
            r.run();
        } catch (WaitTimeoutException e) {
            return e;
        }
        throw new IllegalStateException(what + " did not report the timed-out wait");
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("check failed: " + what);
        }
    }
}
