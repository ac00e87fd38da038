package org.moecomm.core.gpu;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.moecomm.bridge.cuda.CudaStream;
import org.moecomm.bridge.nvshmem.Nvshmem;
import org.moecomm.bridge.nvshmem.NvshmemException;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.core.backend.Transport;
import org.moecomm.kernels.api.Buf;

/**
 * {@link Transport} over NVSHMEM for one PE (one process, one rank): symmetric memory, a bounded
 * barrier, the abort word, and what the handle's communicating kernels need from the host. It
 * issues no puts, signals or waits of the protocol: the four kernels of a round
 * ({@code AllToAllKernels}) call the bridge's device functions themselves ({@code KernelContext}'s
 * one-sided methods, linked into their modules by {@link CheckedKernelRunner}), and the round
 * state, the token count included, lives on the device.
 *
 * <ul>
 *   <li>{@link #allocateSymmetric}: collective {@code nvshmem_malloc}, zeroed on the stream and
 *       followed by {@code nvshmem_barrier_all} (no peer writes into a block before every PE zeroed
 *       its copy), rounded to 256 bytes and counted against the symmetric heap
 *       ({@link SymmetricAccounting}: running out names what this rank holds and what
 *       {@code NVSHMEM_SYMMETRIC_SIZE} to set). The transport's own words come first: one barrier
 *       word per PE, then the abort word;</li>
 *   <li>{@link #waitErrors} / {@link #registerWaits}: the error record the kernels' bounded waits
 *       report to (page-locked host memory mapped into the GPU), and the names of those waits (a
 *       timed-out wait is raised as a {@link org.moecomm.core.WaitTimeoutException} naming the peer
 *       and the signal at the next {@link #synchronize} or {@link #checkErrors});</li>
 *   <li>{@link #barrier}: a bounded barrier kernel over the barrier words, then a stream
 *       synchronisation ({@link #barrierOnStream} enqueues it without waiting); a PE that does not
 *       arrive within the handle's timeout is raised the same way;</li>
 *   <li>{@link #raiseAbort} / {@link #abortWord}: sets the abort word on every PE from a stream of
 *       its own (the handle's may be stuck in a wait that this word ends) and never waits; every
 *       bounded wait, the barrier's too, watches the word and fails with
 *       {@link org.moecomm.core.PeerAbortedException};</li>
 *   <li>{@link #peerAddress} / {@link #mapped}: {@code nvshmem_ptr}, which decides whether a peer is
 *       written by direct stores or by staged non-blocking puts;</li>
 *   <li>{@link #stream}: the rank's stream, on which everything is enqueued (and which
 *       {@code RoundGraph} captures).</li>
 * </ul>
 *
 * <p>{@link #close()} is collective: after the stream drained, a bounded barrier (which an abort
 * also ends), then {@code nvshmem_free} of the buffers in reverse order. After a recorded failure
 * or an abort it frees nothing (a collective call could wait forever for a dead or aborted peer)
 * and leaves the memory to {@code nvshmem_finalize}.
 */
public final class GpuTransport implements Transport {
    private static final Logger LOG = LogManager.getLogger(GpuTransport.class);

    private final GpuExecution exec;
    private final SymmetricAccounting accounting;
    private final int rank;
    private final int worldSize;
    private final List<GpuSymmetricBuffer> owned = new ArrayList<>();
    private final GpuSymmetricBuffer barrierWords;
    private final GpuSymmetricBuffer abortWord;
    /** The word this rank raised (0: none); then no collective call is made again. */
    private long raised;
    /** Where the abort is enqueued: not the handle's stream, which may be stuck in a wait. */
    private CudaStream abortStream;
    private long barrierEpoch;
    private boolean closed;

    GpuTransport(GpuExecution exec, SymmetricAccounting accounting) {
        this.exec = Objects.requireNonNull(exec, "exec");
        this.accounting = Objects.requireNonNull(accounting, "accounting");
        exec.enter();
        this.rank = Nvshmem.myPe();
        this.worldSize = Nvshmem.nPes();
        if (rank != exec.rank()) {
            throw new IllegalStateException("NVSHMEM says this is PE " + rank + " but the handle was made for rank "
                    + exec.rank());
        }
        this.barrierWords = (GpuSymmetricBuffer) allocateSymmetric(8L * worldSize);
        this.abortWord = (GpuSymmetricBuffer) allocateSymmetric(Long.BYTES);
        exec.errors().watchAbortWord(abortWord.address());
    }

    /**
     * Sets the abort word of every PE ({@code nvshmemx_signal_op}, on a stream of its own) and
     * returns without waiting for it: the handle's stream may be stuck in a wait that this very
     * word ends. Skipped when this rank raised one already or saw one raised.
     */
    @Override
    public synchronized void raiseAbort(long word) {
        if (word == 0) {
            throw new IllegalArgumentException("an abort word is never 0");
        }
        if (closed || abortWord() != 0) {
            return;
        }
        raised = word;
        exec.noteAbortRaised();
        exec.context().bind();
        if (abortStream == null) {
            abortStream = exec.context().createStream();
        }
        call(() -> Nvshmem.raiseAbort(abortStream.handle(), abortWord.address(), word, worldSize), "abort");
    }

    /** The word this rank raised, else the one a wait of its own found raised, else 0. */
    @Override
    public synchronized long abortWord() {
        return raised != 0 ? raised : exec.abortWordSeen();
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    /** Collective: {@code nvshmem_malloc}, zeroed, followed by a barrier of all PEs. */
    @Override
    public synchronized SymmetricBuffer allocateSymmetric(long bytes) {
        ensureOpen();
        if (bytes < 1) {
            throw new IllegalArgumentException("symmetric allocation of " + bytes + " bytes");
        }
        exec.enter();
        long rounded = (bytes + 255) & ~255L;
        accounting.reserve(rounded, rank);
        long address;
        try {
            address = Nvshmem.mallocZeroed(rounded, exec.streamHandle());
        } catch (NvshmemException e) {
            accounting.release(rounded);
            if (e.outOfSymmetricMemory()) {
                throw new MoeCommException(accounting.describeShortage(rounded, rank), e);
            }
            throw new MoeCommException("rank " + rank + ": symmetric allocation of " + bytes + " bytes failed: "
                    + e.getMessage(), e);
        }
        GpuSymmetricBuffer b = new GpuSymmetricBuffer(address, rounded);
        owned.add(b);
        return b;
    }

    @Override
    public Buf waitErrors() {
        return exec.errorContext();
    }

    @Override
    public int registerWaits(List<String> names) {
        return exec.registerConsecutive(names);
    }

    /** {@code nvshmem_ptr} minus this PE's address of {@code buffer}; 0 where the peer is not mapped. */
    @Override
    public long peerOffset(SymmetricBuffer buffer, int peer) {
        long address = peerAddress(buffer, peer);
        return address == 0 ? 0 : address - sym(buffer).address();
    }

    /** {@code nvshmem_ptr} is not null: the peer is on this GPU or reached over NVLink / P2P. */
    @Override
    public boolean mapped(SymmetricBuffer buffer, int peer) {
        return peerAddress(buffer, peer) != 0;
    }

    /** Bounded barrier of all PEs (completes this PE's puts first), then waits for the stream. */
    @Override
    public void barrier() {
        barrierOnStream();
        exec.synchronize();
    }

    /**
     * Enqueues the bounded barrier of all PEs on the stream and returns at once: work enqueued
     * after it starts when every PE has reached it (a barrier that runs out is recorded as a
     * failure, raised by the next synchronisation).
     */
    public void barrierOnStream() {
        ensureOpen();
        enqueueBarrier();
    }

    private void enqueueBarrier() {
        exec.enter();
        long epoch = ++barrierEpoch;
        int tag = exec.register("barrier #" + epoch);
        call(() -> Nvshmem.barrier(exec.streamHandle(), barrierWords.address(), epoch, worldSize, rank,
                exec.timeoutNanos(), exec.errors(), tag), "barrier");
    }

    /** Waits for everything enqueued so far; throws a failure a kernel recorded (a wait that ran out). */
    public void synchronize() {
        exec.synchronize();
    }

    /** Throws a failure a kernel recorded so far, without waiting. */
    public void checkErrors() {
        exec.check();
    }

    /**
     * {@code nvshmem_ptr}: the address at which this process's kernels can load and store
     * {@code peer}'s copy of {@code buffer}, or 0 when the peer is reachable only over the network.
     */
    public long peerAddress(SymmetricBuffer buffer, int peer) {
        checkPeer(peer);
        exec.enter();
        return Nvshmem.peerPointer(sym(buffer).address(), peer);
    }

    /** The stream this transport enqueues on ({@code CUstream}). */
    public long stream() {
        return exec.streamHandle();
    }

    /**
     * Frees the symmetric buffers (collective {@code nvshmem_free}, in reverse order of allocation)
     * after the stream drained and a bounded barrier (which an abort also ends). After a recorded failure or an abort this rank raised, frees
     * nothing (a collective call could wait forever for a dead or aborted peer); NVSHMEM releases
     * the heap at finalisation.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        boolean failed;
        try {
            exec.synchronize();
            failed = raised != 0;
            if (!failed) {
                // bounded, and it watches the abort word: a peer that aborted or died makes every
                // rank skip the collective free below instead of waiting in it forever
                enqueueBarrier();
                exec.synchronize();
            }
        } catch (RuntimeException e) {
            failed = true;
            // whatever failed here (a CUDA call, the barrier's launch), the backend must not
            // finalise collectively either
            exec.noteFailure("rank " + rank + ": closing the transport failed: " + e.getMessage());
            LOG.warn("rank {}: closing a failed transport: {} symmetric buffers are left to nvshmem_finalize ({})",
                    rank, owned.size(), e.getMessage());
        }
        if (raised != 0) {
            // the peers skip the collective free too (they saw the word): freeing alone would hang
            LOG.warn("rank {}: closing an aborted transport: {} symmetric buffers are left to nvshmem_finalize",
                    rank, owned.size());
        }
        if (abortStream != null) {
            CudaStream s = abortStream;
            abortStream = null;
            try {
                s.synchronize(); // the abort kernel only signals: it never waits
                s.close();
            } catch (RuntimeException e) {
                LOG.warn("rank {}: the abort stream did not close cleanly: {}", rank, e.getMessage());
            }
        }
        if (!failed) {
            for (int i = owned.size() - 1; i >= 0; i--) {
                GpuSymmetricBuffer b = owned.get(i);
                b.markFreed();
                Nvshmem.free(b.address());
                accounting.release(b.byteSize());
            }
        }
        owned.clear();
    }

    private void call(Runnable launch, String what) {
        try {
            launch.run();
        } catch (NvshmemException e) {
            throw new MoeCommException("rank " + rank + ": " + what + " failed: " + e.getMessage(), e);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("rank " + rank + ": transport is closed");
        }
    }

    private void checkPeer(int peer) {
        if (peer < 0 || peer >= worldSize) {
            throw new IllegalArgumentException("peer " + peer + " is outside [0, " + worldSize + ")");
        }
    }

    private GpuSymmetricBuffer sym(SymmetricBuffer b) {
        if (b instanceof GpuSymmetricBuffer g) {
            if (g.freed()) {
                throw new IllegalStateException(g + " was freed");
            }
            return g;
        }
        throw new IllegalArgumentException(b + " was not allocated by a GPU transport");
    }
}
