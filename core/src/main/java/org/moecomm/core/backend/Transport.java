package org.moecomm.core.backend;

import java.util.List;
import org.moecomm.kernels.api.Buf;

/**
 * What the host does for the protocol's communication, and what its communicating kernels need
 * from the host. The puts, signals and waits themselves are not here: each step of the protocol
 * is one kernel that puts, signals and waits through {@code KernelContext}'s one-sided methods
 * (NVSHMEM device functions on the GPU, the cluster's {@code PeerMemory} on the JVM).
 *
 * <p>The host's part: symmetric allocation (collective), a bounded barrier of all ranks, and
 * releasing the symmetric memory at {@link #close()} (collective on the GPU). The kernels' part: the error context their bounded
 * waits record a timeout in ({@link #waitErrors}), the names of the signals waited for
 * ({@link #registerWaits}), and whether a peer's memory can be stored to directly
 * ({@link #mapped}).
 *
 * <p><b>Abort.</b> Each transport holds an abort word in symmetric memory (allocated when it is
 * made, so first on every rank). {@link #raiseAbort} sets it on every rank; every bounded wait
 * that goes through {@link #waitErrors} (the kernels') and the {@link #barrier} check it as well
 * as their own signal, and fail at once with a {@link org.moecomm.core.PeerAbortedException}
 * naming the rank that raised it (docs/protocol.md, "Failure and abort").
 *
 * <p>Signals are 64-bit words in symmetric memory. The protocol writes {@code round << 32 | count}:
 * rounds only grow, so a wait for {@code >= round << 32} never mistakes an old signal for a new
 * one, and no signal is ever reset.
 */
public interface Transport extends AutoCloseable {
    int rank();

    int worldSize();

    /** Collective: every rank allocates the same sizes in the same order. Zeroed. */
    SymmetricBuffer allocateSymmetric(long bytes);

    // ---- what kernels that communicate need from the host ----

    /**
     * The error context the kernels' bounded waits record a timeout in (the {@code errors}
     * argument of {@code KernelContext.waitAtLeast}); the transport raises a recorded timeout as a
     * {@link org.moecomm.core.WaitTimeoutException} naming the signal ({@link #registerWaits}).
     */
    Buf waitErrors();

    /**
     * Names the signals of consecutive wait tags for error messages: returns the tag of
     * {@code names.get(0)}; {@code names.get(i)} has that tag {@code + i}.
     */
    int registerWaits(List<String> names);

    /**
     * Whether this rank's kernels can load and store {@code peer}'s copy of {@code buffer}
     * directly ({@code KernelContext.peerBuf}: NVLink or P2P; never over a network transport).
     */
    boolean mapped(SymmetricBuffer buffer, int peer);

    /**
     * The byte offset of {@code peer}'s copy of {@code buffer} from this rank's, as this rank's
     * kernels address them: what {@code KernelContext.peerBuf(symmetric, pe, peerOffsets)} adds
     * (the GPU: {@code nvshmem_ptr} minus the local address). 0 where the peer is not
     * {@link #mapped}, and on a backend whose kernels reach peers otherwise (the JVM's).
     */
    long peerOffset(SymmetricBuffer buffer, int peer);

    /** Collective and bounded by the transport's timeout: all ranks arrive before any leaves. */
    void barrier();

    /**
     * Sets the abort word of every rank (this one too) to {@code word}
     * ({@link org.moecomm.core.AbortReason#word}) unless this rank's word is set already (the
     * first abort a rank hears of is the one it passes on). Never waits for a peer, also not
     * when this rank's own queued work is stuck; a word that cannot be delivered (a dead peer)
     * is dropped.
     */
    void raiseAbort(long word);

    /** This rank's abort word: 0, or the word a rank raised. */
    long abortWord();

    @Override
    void close();
}
