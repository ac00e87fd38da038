package org.moecomm.core.backend;

import org.moecomm.kernels.api.Buf;

/**
 * The communication primitives the protocol needs, with NVSHMEM's semantics: symmetric
 * allocation, put-with-signal (the data is visible at the peer before the signal), signal
 * operations, and a bounded wait on a local signal. Sizes may live in memory the kernels
 * wrote ({@code countBuf}), so a GPU transport reads them on the device without a host sync.
 *
 * <p>Signals are 64-bit words. The protocol writes {@code round << 32 | count}: rounds only
 * grow, so a wait for {@code >= round << 32} never mistakes an old signal for a new one, and no
 * signal is ever reset.
 */
public interface Transport extends AutoCloseable {
    int rank();

    int worldSize();

    /** Collective: every rank allocates the same sizes in the same order. Zeroed. */
    SymmetricBuffer allocateSymmetric(long bytes);

    /**
     * Copies {@code count * bytesPerCount} bytes from {@code src[srcOffset..]} to {@code dst[dstOffset..]}
     * on {@code peer}, where {@code count} is the int32 element {@code countIndex} of {@code countBuf}
     * read when the put executes; then sets long element {@code signalIndex} of {@code signals} on the
     * peer to {@code signalBase + count}.
     */
    void putWithSignal(Buf src, long srcOffset, SymmetricBuffer dst, long dstOffset, Buf countBuf, long countIndex,
                       long bytesPerCount, SymmetricBuffer signals, int signalIndex, long signalBase, int peer);

    /** Sets (or adds to) long element {@code index} of {@code signals} on {@code peer}. */
    void signal(SymmetricBuffer signals, int index, long value, SignalOp op, int peer);

    /**
     * Waits, bounded by the transport's timeout, until this rank's long element {@code index} of
     * {@code signals} is {@code >= value}; acquire semantics. On timeout throws
     * {@link org.moecomm.core.WaitTimeoutException} naming {@code peer} and {@code signalName}
     * (a GPU transport may report it at the next call instead).
     */
    void waitAtLeast(SymmetricBuffer signals, int index, long value, int peer, String signalName);

    /** All ranks arrive before any leaves. */
    void barrier();

    @Override
    void close();

    enum SignalOp { SET, ADD }
}
