package org.moecomm.core.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.moecomm.core.AbortReason;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.PeerAbortedException;
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
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private final CpuCluster cluster;
    private final int rank;
    private final long timeoutNanos;
    private final CpuRankRunner runner;
    private final List<CpuSymmetricBuffer> owned = new ArrayList<>();
    /** This rank's abort word (symmetric, 8 bytes); on the JVM it is also the kernels' error context. */
    private final CpuSymmetricBuffer abortWord;
    private boolean closed;

    /** Collective (allocates the abort word): every rank makes its transport of a handle in the same order. */
    CpuTransport(CpuCluster cluster, int rank, Duration timeout, CpuRankRunner runner) {
        this.cluster = cluster;
        this.rank = rank;
        this.timeoutNanos = timeout.toNanos();
        this.runner = runner;
        this.abortWord = (CpuSymmetricBuffer) allocateSymmetric(Long.BYTES);
    }

    /** The abort word: a kernel's wait on the JVM fails at once when it is set. */
    @Override
    public Buf waitErrors() {
        return abortWord.local();
    }

    @Override
    public void raiseAbort(long word) {
        if (word == 0) {
            throw new IllegalArgumentException("an abort word is never 0");
        }
        if (abortWord() != 0) {
            return;
        }
        MemorySegment local = abortWord.local().segment();
        for (int pe = 0; pe < cluster.worldSize(); pe++) {
            try {
                WORD.setRelease(cluster.heap().onPeer(rank, local, pe), 0L, word);
            } catch (IllegalStateException e) {
                // the heap is gone (the cluster closed): nobody is left to tell
            }
        }
        // ranks waiting in the barrier leave it now and find the word
        cluster.barrier().reset();
    }

    @Override
    public long abortWord() {
        return (long) WORD.getAcquire(abortWord.local().segment(), 0L);
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

    /** 0: the CPU kernel context reaches a peer's copy through {@code PeerMemory}, not by an offset. */
    @Override
    public long peerOffset(SymmetricBuffer buffer, int peer) {
        checkPeer(peer);
        sym(buffer);
        return 0;
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
            throw aborted(new MoeCommException("rank " + rank + ": barrier timed out after "
                    + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms: not every rank arrived", e));
        } catch (BrokenBarrierException e) {
            throw aborted(new MoeCommException("rank " + rank + ": barrier broken (another rank timed out, was"
                    + " interrupted or aborted)", e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MoeCommException("rank " + rank + ": interrupted in barrier", e);
        }
    }

    /** {@code failure}, or the abort that explains it when this rank's abort word is set. */
    private MoeCommException aborted(MoeCommException failure) {
        long word = abortWord();
        if (word == 0) {
            return failure;
        }
        PeerAbortedException e = new PeerAbortedException(rank, AbortReason.rankOf(word), AbortReason.of(word),
                "the barrier");
        e.initCause(failure);
        return e;
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
