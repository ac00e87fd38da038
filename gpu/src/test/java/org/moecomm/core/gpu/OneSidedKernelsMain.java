package org.moecomm.core.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Random;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelRunner;
import org.moecomm.kernels.comm.CommKernels;

/**
 * A rank of the GPU test of Java kernels calling the bridge's device functions (form b: the
 * kernel's module linked with {@code moe_nvshmem_devfns.fatbin} and {@code libnvshmem_device.a},
 * registered with {@code nvshmemx_cumodule_init}). Prints {@code CHECK <name> ok} lines; any
 * failure throws (exit code 1).
 *
 * <ol>
 *   <li>exchange: for several rounds every rank runs {@link CommKernels#exchange}, whose block
 *       {@code d} puts a count of rows read on the device to rank {@code d} with
 *       {@code putSignalBlock} and waits for {@code d}'s signal with {@code waitAtLeast}; the
 *       received regions (poisoned first), the signal words and the arrival flags are checked
 *       against what every sender's seeded data must give;</li>
 *   <li>count: {@code signalAdd} to every rank, then {@code signalSet};</li>
 *   <li>timeout: a wait nobody answers, on an endpoint with a short bound, is raised as a
 *       {@link WaitTimeoutException} naming the rank, the signal, the expected and the seen value.</li>
 * </ol>
 */
public final class OneSidedKernelsMain {
    private static final long ROW = 256;
    private static final int MAX_ROWS = 12;
    private static final long REGION = ROW * MAX_ROWS;
    private static final int ROUNDS = 5;
    private static final long TIMEOUT_NS = 30_000_000_000L;
    private static final long SHORT_BOUND_MS = 500;
    private static final byte POISON = 0x5A;
    private static final Kernel EXCHANGE = new Kernel(CommKernels.class, "exchange");
    private static final Kernel COUNT = new Kernel(CommKernels.class, "count");

    private OneSidedKernelsMain() {
    }

    public static void main(String[] args) {
        GpuBackend.Options opts = new GpuBackend.Options(64L << 20, -1, GpuBackend.Bootstrap.AUTO, Duration.ofMinutes(2));
        try (GpuBackend gpu = GpuBackend.start(opts)) {
            int rank = gpu.rank();
            int world = gpu.worldSize();
            try (GpuEndpoint ep = gpu.openEndpoint(Duration.ofSeconds(60))) {
                exchange(ep, rank, world);
                count(ep, rank, world);
                ep.transport().barrier();
            }
            try (GpuEndpoint sync = gpu.openEndpoint(Duration.ofSeconds(60));
                 GpuEndpoint ep = gpu.openEndpoint(Duration.ofMillis(SHORT_BOUND_MS))) {
                timeout(ep, sync, rank, world);
            }
            System.out.println("CHECK all ok rank " + rank);
        }
    }

    /** What {@code sender} sends in {@code round}: its whole send buffer and its row count per destination. */
    private record Sent(byte[] bytes, int[] rows) {
        static Sent of(int sender, int round, int world) {
            Random r = new Random(1_000_003L * sender + round);
            byte[] b = new byte[(int) (world * REGION)];
            r.nextBytes(b);
            int[] rows = new int[world];
            for (int d = 0; d < world; d++) {
                rows[d] = r.nextInt(MAX_ROWS + 1); // 0 happens: the signal alone must arrive
            }
            return new Sent(b, rows);
        }
    }

    private static void exchange(GpuEndpoint ep, int rank, int world) {
        GpuTransport t = ep.transport();
        GpuDeviceMemory mem = ep.memory();
        KernelRunner runner = ep.runner();
        SymmetricBuffer recv = t.allocateSymmetric(world * REGION);
        SymmetricBuffer signals = t.allocateSymmetric(8L * world);
        Buf send = mem.allocate(world * REGION);
        Buf rows = mem.allocate(4L * world);
        Buf arrived = mem.allocate(4L * world);
        int tag = ep.tagFor("exchange signal");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(world * REGION, 16);
            MemorySegment ints = arena.allocate(4L * world, 4);
            MemorySegment words = arena.allocate(8L * world, 8);
            for (int round = 1; round <= ROUNDS; round++) {
                Sent mine = Sent.of(rank, round, world);
                host.copyFrom(MemorySegment.ofArray(mine.bytes()));
                mem.copyFromHost(send, 0, host);
                ints.copyFrom(MemorySegment.ofArray(mine.rows()));
                mem.copyFromHost(rows, 0, ints);
                mem.fill(recv.local(), POISON);
                mem.fill(arrived, (byte) 0xFF);
                t.barrier(); // every rank poisoned before anyone puts
                long base = (long) round << 32;
                runner.launch(EXCHANGE, Grid.of(world, 256), recv.local(), send, rows, signals.local(), arrived,
                        ep.errorContext(), ROW, REGION, base, TIMEOUT_NS, rank, tag);
                runner.synchronize();
                mem.copyToHost(recv.local(), 0, host);
                mem.copyToHost(signals.local(), 0, words);
                mem.copyToHost(arrived, 0, ints);
                for (int s = 0; s < world; s++) {
                    Sent from = Sent.of(s, round, world);
                    check(ints.getAtIndex(ValueLayout.JAVA_INT, s) == 1, "rank " + rank + " round " + round
                            + ": no arrival flag for sender " + s);
                    long want = base + from.rows()[rank];
                    long sig = words.getAtIndex(ValueLayout.JAVA_LONG, s);
                    check(sig == want, "rank " + rank + " round " + round + ": signal from " + s + " is 0x"
                            + Long.toHexString(sig) + ", expected 0x" + Long.toHexString(want));
                    long sent = from.rows()[rank] * ROW;
                    for (long i = 0; i < REGION; i++) {
                        byte expected = i < sent ? from.bytes()[(int) (rank * REGION + i)] : POISON;
                        byte got = host.get(ValueLayout.JAVA_BYTE, s * REGION + i);
                        check(got == expected, "rank " + rank + " round " + round + ": byte " + i + " from " + s
                                + " is " + got + ", expected " + expected);
                    }
                }
                t.barrier(); // everyone checked before the next round's puts
            }
        }
        System.out.println("CHECK one-sided-exchange ok rank " + rank + " (" + ROUNDS + " rounds, " + world + " ranks)");
    }

    private static void count(GpuEndpoint ep, int rank, int world) {
        GpuTransport t = ep.transport();
        GpuDeviceMemory mem = ep.memory();
        SymmetricBuffer counter = t.allocateSymmetric(8);
        Buf arrived = mem.allocate(4);
        int tag = ep.tagFor("counter");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(8, 8);
            ep.runner().launch(COUNT, Grid.of(1, 64), counter.local(), arrived, ep.errorContext(), 3L, 3L * world, 0,
                    TIMEOUT_NS, rank, world, tag);
            ep.runner().synchronize();
            mem.copyToHost(counter.local(), 0, word);
            check(word.get(ValueLayout.JAVA_LONG, 0) == 3L * world, "rank " + rank + ": counter after the adds is "
                    + word.get(ValueLayout.JAVA_LONG, 0) + ", expected " + 3L * world);
            checkReturned(mem, arrived, 3 * world, rank);
            t.barrier(); // every rank saw the sum before anyone sets
            ep.runner().launch(COUNT, Grid.of(1, 64), counter.local(), arrived, ep.errorContext(), 0L, 1000L, 1,
                    TIMEOUT_NS, rank, world, tag);
            ep.runner().synchronize();
            mem.copyToHost(counter.local(), 0, word);
            check(word.get(ValueLayout.JAVA_LONG, 0) == 1000L, "rank " + rank + ": counter after the sets is "
                    + word.get(ValueLayout.JAVA_LONG, 0));
            checkReturned(mem, arrived, 1000, rank);
        }
        System.out.println("CHECK one-sided-count ok rank " + rank);
    }

    /** The count kernel's {@code arrived}: the low half of the value its wait returned. */
    private static void checkReturned(GpuDeviceMemory mem, Buf arrived, int expected, int rank) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(4, 4);
            mem.copyToHost(arrived, 0, got);
            int value = got.get(ValueLayout.JAVA_INT, 0);
            check(value == expected, "rank " + rank + ": the wait returned " + value + ", expected " + expected);
        }
    }

    private static void timeout(GpuEndpoint ep, GpuEndpoint sync, int rank, int world) {
        SymmetricBuffer counter = ep.transport().allocateSymmetric(8);
        Buf arrived = ep.memory().allocate(4);
        int tag = ep.tagFor("never[" + rank + "]");
        long target = 1L << 40;
        long t0 = System.nanoTime();
        // adds 0 everywhere, then waits for a value nobody sends
        ep.runner().launch(COUNT, Grid.of(1, 64), counter.local(), arrived, ep.errorContext(), 0L, target, 0,
                SHORT_BOUND_MS * 1_000_000L, rank, world, tag);
        WaitTimeoutException e;
        try {
            ep.runner().synchronize();
            throw new IllegalStateException("rank " + rank + ": a wait nobody answers did not time out");
        } catch (WaitTimeoutException w) {
            e = w;
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        check(e.rank() == rank, "rank " + e.rank());
        check(e.peer() == -1, "peer " + e.peer());
        check(e.signal().equals("never[" + rank + "]"), "signal " + e.signal());
        check(e.expected() == target, "expected " + e.expected());
        check(e.seen() == 0, "seen " + e.seen());
        check(ms >= SHORT_BOUND_MS - 50, "the wait ended after " + ms + " ms, before its bound of " + SHORT_BOUND_MS);
        System.out.println("CHECK one-sided-timeout ok rank " + rank + " (" + ms + " ms): " + e.getMessage());
        ep.recover();
        sync.transport().barrier();
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what);
        }
    }
}
