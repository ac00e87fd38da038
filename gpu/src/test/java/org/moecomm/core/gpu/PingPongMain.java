package org.moecomm.core.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.moecomm.bridge.nvshmem.Nvshmem;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.comm.CommKernels;

/**
 * A rank of the NVSHMEM endpoint's GPU test, started by {@link org.moecomm.core.launch.LocalLauncher}.
 * Prints {@code CHECK <name> ok} lines the test looks for; any failure throws (exit code 1). The
 * communication is done by Java kernels ({@link CommKernels}) on the endpoint's runner; the
 * all-to-all exchange with counts read on the device is {@link OneSidedKernelsMain}'s.
 *
 * <ol>
 *   <li>peer pointers: {@code nvshmem_ptr} is non-null for every peer (one node);</li>
 *   <li>ping-pong between ranks 0 and 1: {@link CommKernels#pingPong}, the round trips in one
 *       launch (put-with-signal, bounded wait on the device), checked and timed;</li>
 *   <li>errors (on an endpoint with a 500 ms bound): a kernel's wait nobody answers reports rank,
 *       peer, signal, expected and seen as a {@link WaitTimeoutException} at the next
 *       synchronisation, after the bound; a wait launched behind it returns at once instead of
 *       waiting its bound too; the failure stays reported (a later launch throws it) until
 *       recovered; after recovery the endpoint works.</li>
 * </ol>
 */
public final class PingPongMain {
    private static final int PING_PONGS = 200;
    private static final long PING_BYTES = 64;
    private static final long TIMEOUT_NS = 30_000_000_000L;
    private static final long ERROR_BOUND_MS = 500;
    private static final Kernel PING_PONG = new Kernel(CommKernels.class, "pingPong");
    private static final Kernel COUNT = new Kernel(CommKernels.class, "count");

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
            check(ep.transport().mapped(probe, p), "rank " + rank + ": peer " + p + " has a pointer but is not mapped");
        }
        System.out.println("CHECK peer-pointers ok rank " + rank);
    }

    /**
     * Two launches of {@link CommKernels#pingPong}: a warm-up (the first launch loads the module)
     * and a timed one; then each side checks the other's bytes and the last signal.
     */
    private static void pingPong(GpuEndpoint ep, int rank) {
        GpuTransport t = ep.transport();
        GpuDeviceMemory mem = ep.memory();
        SymmetricBuffer data = t.allocateSymmetric(2 * PING_BYTES);
        SymmetricBuffer signals = t.allocateSymmetric(16);
        Buf src = mem.allocate(PING_BYTES);
        mem.fill(src, (byte) (rank + 1));
        int tag = ep.tagFor(rank == 0 ? "pong" : "ping");
        t.barrier();
        if (rank <= 1) {
            ep.runner().launch(PING_PONG, Grid.of(1, 128), data.local(), src, signals.local(), ep.errorContext(),
                    PING_BYTES, 0L, PING_PONGS, TIMEOUT_NS, rank, tag);
            ep.runner().synchronize();
            long start = System.nanoTime();
            ep.runner().launch(PING_PONG, Grid.of(1, 128), data.local(), src, signals.local(), ep.errorContext(),
                    PING_BYTES, (long) PING_PONGS, PING_PONGS, TIMEOUT_NS, rank, tag);
            ep.runner().synchronize();
            double us = (System.nanoTime() - start) / 1e3 / PING_PONGS;
            int peer = 1 - rank;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment bytes = arena.allocate(PING_BYTES, 16);
                MemorySegment word = arena.allocate(8, 8);
                mem.copyToHost(data.local(), peer * PING_BYTES, bytes);
                for (long i = 0; i < PING_BYTES; i++) {
                    byte b = bytes.get(ValueLayout.JAVA_BYTE, i);
                    check(b == peer + 1, "rank " + rank + ": byte " + i + " from " + peer + " is " + b);
                }
                mem.copyToHost(signals.local(), 8L * peer, word);
                long sig = word.get(ValueLayout.JAVA_LONG, 0);
                check(sig == 2L * PING_PONGS, "rank " + rank + ": the last signal from " + peer + " is " + sig
                        + ", expected " + 2L * PING_PONGS);
            }
            System.out.printf("CHECK ping-pong ok rank %d: %d round trips, %.2f us each (%d B put-with-signal + wait,"
                    + " all in one kernel)%n", rank, PING_PONGS, us, PING_BYTES);
        }
        t.barrier();
    }

    /** {@code ep} has the short bound; {@code sync} (long bound) lines the ranks up between the steps. */
    private static void errors(GpuEndpoint ep, GpuEndpoint sync, int rank, int world) {
        GpuTransport t = ep.transport();
        SymmetricBuffer counter = t.allocateSymmetric(8);
        Buf arrived = ep.memory().allocate(4);
        long boundNs = ERROR_BOUND_MS * 1_000_000L;
        long expected = (5L << 32) | 3;
        String name = "never[" + rank + "]";
        int tag = ep.tagFor(name);
        int second = ep.tagFor(name + "-second");

        // 1. two waits nobody answers (each launch adds 0 everywhere, then waits), back to back:
        //    the first runs out and is reported with everything needed to find the culprit; the
        //    second returns at once
        long t0 = System.nanoTime();
        ep.runner().launch(COUNT, Grid.of(1, 64), counter.local(), arrived, ep.errorContext(), 0L, expected, 0,
                boundNs, rank, world, tag);
        ep.runner().launch(COUNT, Grid.of(1, 64), counter.local(), arrived, ep.errorContext(), 0L, expected + 1, 0,
                boundNs, rank, world, second);
        WaitTimeoutException e = expectTimeout(t::synchronize, "synchronize after the unanswered waits");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        check(e.rank() == rank, "rank " + e.rank());
        check(e.peer() == -1, "peer " + e.peer());
        check(e.signal().equals(name), "signal " + e.signal());
        check(e.expected() == expected, "expected " + e.expected());
        check(e.seen() == 0, "seen " + e.seen());
        check(ms >= ERROR_BOUND_MS - 50, "the wait ended after " + ms + " ms, before its bound of " + ERROR_BOUND_MS);
        check(ms < 2 * ERROR_BOUND_MS - 100, "two waits took " + ms + " ms: the second one waited too");
        System.out.println("CHECK wait-timeout ok rank " + rank + " (" + ms + " ms): " + e.getMessage());

        // 2. the failure sticks until recovered: the next launch throws it
        WaitTimeoutException again = expectTimeout(() -> ep.runner().launch(COUNT, Grid.of(1, 64), counter.local(),
                arrived, ep.errorContext(), 0L, 0L, 0, boundNs, rank, world, tag), "a launch after the failure");
        check(again.signal().equals(name) && again.expected() == expected,
                "the launch after the failure reports " + again.getMessage() + ", not the first failure");
        ep.recover();
        sync.transport().barrier();
        System.out.println("CHECK sticky-failure ok rank " + rank);

        // 3. after recovery the endpoint works: every rank adds 1 to every rank's counter and
        //    waits for all of them
        ep.runner().launch(COUNT, Grid.of(1, 64), counter.local(), arrived, ep.errorContext(), 1L, (long) world, 0,
                TIMEOUT_NS, rank, world, ep.tagFor("after-recovery"));
        t.synchronize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment flag = arena.allocate(4, 4);
            ep.memory().copyToHost(arrived, 0, flag);
            // the count kernel's arrived: the low half of the value its wait returned, -1 if none
            int seen = flag.get(ValueLayout.JAVA_INT, 0);
            check(seen == world, "rank " + rank + ": after recovery the wait returned " + seen + ", expected " + world);
        }
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
