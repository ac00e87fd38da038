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
import java.util.concurrent.locks.LockSupport;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.core.backend.Transport;
import org.moecomm.kernels.api.Buf;

/**
 * {@link Transport} between the rank threads of one {@link CpuCluster}, with NVSHMEM's
 * semantics: a put copies the bytes into the peer's segment and then stores the peer's signal
 * word with release semantics; a wait reads its own signal word with acquire semantics, so
 * everything written before the signal is visible once the wait returns.
 *
 * <p>A wait spins briefly, then parks with a growing back-off; a rank that raises a peer's
 * signal also unparks that peer's waiting thread, so a parked wait usually ends within
 * microseconds of the signal while an idle rank burns no CPU (the machines running the
 * tests may have fewer cores than ranks).
 */
final class CpuTransport implements Transport {
    private static final VarHandle SIGNAL = ValueLayout.JAVA_LONG.varHandle();
    private static final int SPINS = 256;
    private static final long MIN_PARK_NANOS = 10_000;
    private static final long MAX_PARK_NANOS = 1_000_000;

    private final CpuCluster cluster;
    private final int rank;
    private final long timeoutNanos;
    private final List<CpuSymmetricBuffer> owned = new ArrayList<>();
    private boolean closed;

    CpuTransport(CpuCluster cluster, int rank, Duration timeout) {
        this.cluster = cluster;
        this.rank = rank;
        this.timeoutNanos = timeout.toNanos();
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
    public void putWithSignal(Buf src, long srcOffset, SymmetricBuffer dst, long dstOffset, Buf countBuf,
                              long countIndex, long bytesPerCount, SymmetricBuffer signals, int signalIndex,
                              long signalBase, int peer) {
        checkPeer(peer);
        int count = countBuf.getInt(countIndex);
        if (count < 0) {
            throw new MoeCommException("rank " + rank + ": negative count " + count + " in put to peer " + peer);
        }
        long bytes = Math.multiplyExact((long) count, bytesPerCount);
        if (bytes > 0) {
            MemorySegment.copy(src.segment(), srcOffset, sym(dst).peer(peer), dstOffset, bytes);
        }
        SIGNAL.setRelease(sym(signals).peer(peer), signalOffset(signals, signalIndex), signalBase + count);
        cluster.wake(peer);
    }

    @Override
    public void signal(SymmetricBuffer signals, int index, long value, SignalOp op, int peer) {
        checkPeer(peer);
        MemorySegment word = sym(signals).peer(peer);
        long offset = signalOffset(signals, index);
        switch (op) {
            case SET -> SIGNAL.setRelease(word, offset, value);
            case ADD -> {
                long unused = (long) SIGNAL.getAndAddRelease(word, offset, value);
            }
        }
        cluster.wake(peer);
    }

    @Override
    public void waitAtLeast(SymmetricBuffer signals, int index, long value, int peer, String signalName) {
        MemorySegment word = signals.local().segment();
        long offset = signalOffset(signals, index);
        if ((long) SIGNAL.getAcquire(word, offset) >= value) {
            return;
        }
        long start = System.nanoTime();
        for (int i = 0; i < SPINS; i++) {
            Thread.onSpinWait();
            if ((long) SIGNAL.getAcquire(word, offset) >= value) {
                return;
            }
        }
        Thread me = Thread.currentThread();
        cluster.registerWaiter(rank, me);
        try {
            long park = MIN_PARK_NANOS;
            while (true) {
                long seen = (long) SIGNAL.getAcquire(word, offset);
                if (seen >= value) {
                    return;
                }
                long now = System.nanoTime();
                long left = start + timeoutNanos - now;
                if (left <= 0) {
                    throw new WaitTimeoutException(rank, peer, signalName, value, seen,
                            TimeUnit.NANOSECONDS.toMillis(now - start));
                }
                LockSupport.parkNanos(this, Math.min(park, left));
                park = Math.min(park * 2, MAX_PARK_NANOS);
                if (Thread.interrupted()) {
                    me.interrupt();
                    throw new MoeCommException("rank " + rank + ": interrupted while waiting for peer " + peer
                            + " on signal " + signalName);
                }
            }
        } finally {
            cluster.unregisterWaiter(rank, me);
        }
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

    private static long signalOffset(SymmetricBuffer signals, int index) {
        long offset = 8L * index;
        if (index < 0 || offset + 8 > signals.byteSize()) {
            throw new IllegalArgumentException("signal index " + index + " is outside " + signals);
        }
        return offset;
    }

    private static CpuSymmetricBuffer sym(SymmetricBuffer b) {
        if (b instanceof CpuSymmetricBuffer c) {
            return c;
        }
        throw new IllegalArgumentException(b + " was not allocated by a CPU transport");
    }
}
