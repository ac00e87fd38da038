package org.moecomm.core.backend;

import java.util.List;
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

    // ---- batches: the puts, waits or signals of one protocol step, issued together ----
    //
    // A batch is described once (per handle) and issued every round. The defaults issue its
    // operations one by one; a GPU transport issues each batch as one kernel launch.

    /** One put of a {@link PutBatch}: the per-put arguments of {@link #putWithSignal}. */
    record Put(long srcOffset, long dstOffset, long countIndex, int signalIndex, int peer) {
    }

    /** Puts that share their buffers: the shared arguments of {@link #putWithSignal} and the per-put ones. */
    record PutBatch(Buf src, SymmetricBuffer dst, Buf countBuf, long bytesPerCount, SymmetricBuffer signals,
                    List<Put> puts) {
        public PutBatch {
            puts = List.copyOf(puts);
        }
    }

    /** One wait of a {@link WaitBatch}: the signal word, the peer expected to raise it, its name. */
    record Wait(int index, int peer, String signalName) {
    }

    record WaitBatch(SymmetricBuffer signals, List<Wait> waits) {
        public WaitBatch {
            waits = List.copyOf(waits);
        }
    }

    /** The same signal word raised on several peers. */
    record SignalBatch(SymmetricBuffer signals, int index, SignalOp op, List<Integer> peers) {
        public SignalBatch {
            peers = List.copyOf(peers);
        }
    }

    /** Every put of {@code batch}, with {@code signalBase}; as {@link #putWithSignal} for each. */
    default void putWithSignal(PutBatch batch, long signalBase) {
        for (Put p : batch.puts()) {
            putWithSignal(batch.src(), p.srcOffset(), batch.dst(), p.dstOffset(), batch.countBuf(), p.countIndex(),
                    batch.bytesPerCount(), batch.signals(), p.signalIndex(), signalBase, p.peer());
        }
    }

    /** Every wait of {@code batch} for {@code value}; as {@link #waitAtLeast} for each. */
    default void waitAtLeast(WaitBatch batch, long value) {
        for (Wait w : batch.waits()) {
            waitAtLeast(batch.signals(), w.index(), value, w.peer(), w.signalName());
        }
    }

    /** {@code value} to the batch's signal word on each of its peers; as {@link #signal} for each. */
    default void signal(SignalBatch batch, long value) {
        for (int peer : batch.peers()) {
            signal(batch.signals(), batch.index(), value, batch.op(), peer);
        }
    }

    /** All ranks arrive before any leaves. */
    void barrier();

    @Override
    void close();

    enum SignalOp { SET, ADD }
}
