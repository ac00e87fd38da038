package org.moecomm.core.cpu;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.protocol.AllToAllProtocol;
import org.moecomm.kernels.api.KernelRunner;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * The CPU backend: {@code W} ranks as threads of one JVM. The cluster owns every rank's
 * symmetric heap (off-heap segments), a barrier shared by the ranks and one kernel runner per
 * rank; {@link #createHandle} gives a rank its dispatch/combine handle, which runs the same
 * protocol and the same Java kernels as the GPU backend.
 *
 * <pre>{@code
 * try (CpuCluster cluster = CpuCluster.create(4)) {
 *     cluster.runOnAllRanks(rank -> {
 *         try (MoeAllToAll h = cluster.createHandle(rank, config)) {
 *             ... h.dispatch(in, out); ... h.combine(combineIn, y);
 *         }
 *         return null;
 *     });
 * }
 * }</pre>
 */
public final class CpuCluster implements AutoCloseable {
    private final int worldSize;
    private final SymmetricHeap heap;
    private final CyclicBarrier barrier;
    private final AtomicReferenceArray<CpuRankRunner> runners;
    private final int maxBlockThreads;
    private volatile boolean closed;

    private CpuCluster(int worldSize, int maxBlockThreads) {
        this.worldSize = worldSize;
        this.maxBlockThreads = maxBlockThreads;
        this.heap = new SymmetricHeap(worldSize);
        this.barrier = new CyclicBarrier(worldSize);
        this.runners = new AtomicReferenceArray<>(worldSize);
    }

    /**
     * A cluster of {@code worldSize} ranks (ranks are the threads that call {@link #createHandle})
     * whose kernels run with {@link CpuKernelRunner#defaultBlockThreads()} threads per block at most.
     */
    public static CpuCluster create(int worldSize) {
        return create(worldSize, CpuKernelRunner.defaultBlockThreads());
    }

    /**
     * A cluster whose kernels run with at most {@code maxBlockThreads} threads per block
     * ({@link CpuKernelRunner#blockThreads(int)}): a value of at least the GPU's block size runs
     * the protocol's kernels at that size, as on a GPU.
     */
    public static CpuCluster create(int worldSize, int maxBlockThreads) {
        if (worldSize < 1) {
            throw new IllegalArgumentException("worldSize must be positive, got " + worldSize);
        }
        if (maxBlockThreads < 1) {
            throw new IllegalArgumentException("maxBlockThreads must be positive, got " + maxBlockThreads);
        }
        return new CpuCluster(worldSize, maxBlockThreads);
    }

    public int worldSize() {
        return worldSize;
    }

    /**
     * Collective: every rank's thread calls this with the same config, and handles are created
     * in the same order on every rank. Returns when every rank has its handle (bounded by the
     * config's wait timeout).
     */
    public MoeAllToAll createHandle(int rank, MoeConfig config) {
        Objects.requireNonNull(config, "config");
        ensureOpen();
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is outside [0, " + worldSize + ")");
        }
        if (config.worldSize() != worldSize) {
            throw new IllegalArgumentException("config.worldSize " + config.worldSize() + " differs from the cluster's "
                    + worldSize);
        }
        CpuTransport transport = new CpuTransport(this, rank, config.waitTimeout(), runner(rank));
        CpuDeviceMemory memory = new CpuDeviceMemory();
        AllToAllProtocol handle;
        try {
            handle = new AllToAllProtocol(config, transport, runner(rank), memory, memory::close);
        } catch (RuntimeException | Error e) {
            transport.close();
            memory.close();
            throw e;
        }
        try {
            transport.barrier();
        } catch (RuntimeException e) {
            handle.close();
            throw e;
        }
        return handle;
    }

    /**
     * Runs {@code body(rank)} on one new platform thread per rank ({@code moecomm-rank-<r>}), waits
     * for all of them and returns their results by rank. If any rank fails, rethrows the first
     * failure (in time) with the other ranks' failures attached as suppressed exceptions.
     */
    public <T> List<T> runOnAllRanks(IntFunction<T> body) {
        Objects.requireNonNull(body, "body");
        Object[] results = new Object[worldSize];
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>(worldSize);
        for (int r = 0; r < worldSize; r++) {
            int rank = r;
            threads.add(Thread.ofPlatform().name("moecomm-rank-" + rank).unstarted(() -> {
                try {
                    results[rank] = body.apply(rank);
                } catch (Throwable t) {
                    failures.add(t);
                }
            }));
        }
        threads.forEach(Thread::start);
        boolean interrupted = false;
        for (Thread t : threads) {
            while (true) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                    threads.forEach(Thread::interrupt);
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        Throwable first = failures.poll();
        if (first != null) {
            for (Throwable other : failures) {
                if (other != first) {
                    first.addSuppressed(other);
                }
            }
            if (first instanceof RuntimeException re) {
                throw re;
            }
            if (first instanceof Error err) {
                throw err;
            }
            throw new MoeCommException("a rank failed", first);
        }
        @SuppressWarnings("unchecked")
        List<T> list = (List<T>) Arrays.asList(results);
        return list;
    }

    /** Frees every symmetric buffer still allocated and the kernel runners. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        heap.closeAll();
        for (int r = 0; r < worldSize; r++) {
            CpuRankRunner runner = runners.getAndSet(r, null);
            if (runner != null) {
                runner.close();
            }
        }
    }

    // ---- used by the transport ----

    SymmetricHeap heap() {
        return heap;
    }

    CyclicBarrier barrier() {
        return barrier;
    }

    /** The rank's kernel runner (made at its first handle, kept until the cluster closes). */
    private CpuRankRunner runner(int rank) {
        CpuRankRunner r = runners.get(rank);
        if (r == null) {
            CpuRankRunner created = new CpuRankRunner(heap, rank, worldSize, maxBlockThreads);
            if (runners.compareAndSet(rank, null, created)) {
                r = created;
            } else {
                created.close();
                r = runners.get(rank);
            }
        }
        return r;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("cluster is closed");
        }
    }
}
