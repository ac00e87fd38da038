package org.moecomm.core.cpu;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.core.backend.Transport;
import org.moecomm.kernels.api.Buf;

/**
 * {@link Transport} between the rank threads of one {@link CpuCluster}: symmetric allocation in
 * the cluster's heap, a bounded barrier of the ranks, and what the ranks' kernels need from the
 * host. The kernels put, signal and wait themselves, through the rank's {@link CpuRankRunner},
 * whose {@code PeerMemory} is the cluster's heap; a kernel's wait that runs out fails its launch
 * with a {@link org.moecomm.core.WaitTimeoutException} naming the signal registered here.
 */
final class CpuTransport implements Transport {
    private final CpuCluster cluster;
    private final int rank;
    private final long timeoutNanos;
    private final CpuRankRunner runner;
    private final List<CpuSymmetricBuffer> owned = new ArrayList<>();
    /** Kernels' waits take an error context on the GPU; on the JVM a wait that runs out fails the launch. */
    private final Buf waitErrors = Buf.of(MemorySegment.ofArray(new long[2]));
    private boolean closed;

    CpuTransport(CpuCluster cluster, int rank, Duration timeout, CpuRankRunner runner) {
        this.cluster = cluster;
        this.rank = rank;
        this.timeoutNanos = timeout.toNanos();
        this.runner = runner;
    }

    @Override
    public Buf waitErrors() {
        return waitErrors;
    }

    @Override
    public int registerWaits(List<String> names) {
        return runner.registerWaits(names);
    }

    /** Every rank's memory is in this process. */
    @Override
    public boolean mapped(SymmetricBuffer buffer, int peer) {
        checkPeer(peer);
        sym(buffer);
        return true;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int worldSize() {
        return cluster.worldSize();
    }

    @Override
    public synchronized SymmetricBuffer allocateSymmetric(long bytes) {
        ensureOpen();
        CpuSymmetricBuffer b = new CpuSymmetricBuffer(cluster.heap().allocate(rank, bytes), rank);
        owned.add(b);
        return b;
    }

    @Override
    public void barrier() {
        try {
            cluster.barrier().await(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            cluster.barrier().reset();
            throw new MoeCommException("rank " + rank + ": barrier timed out after "
                    + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms: not every rank arrived", e);
        } catch (BrokenBarrierException e) {
            throw new MoeCommException("rank " + rank + ": barrier broken (another rank timed out or was interrupted)",
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MoeCommException("rank " + rank + ": interrupted in barrier", e);
        }
    }

    /** Releases this rank's share of every symmetric buffer allocated here; idempotent, never waits. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            owned.forEach(CpuSymmetricBuffer::release);
            owned.clear();
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("rank " + rank + ": transport is closed");
        }
    }

    private void checkPeer(int peer) {
        if (peer < 0 || peer >= cluster.worldSize()) {
            throw new IllegalArgumentException("peer " + peer + " is outside [0, " + cluster.worldSize() + ")");
        }
    }

    private static CpuSymmetricBuffer sym(SymmetricBuffer b) {
        if (b instanceof CpuSymmetricBuffer c) {
            return c;
        }
        throw new IllegalArgumentException(b + " was not allocated by a CPU transport");
    }
}
