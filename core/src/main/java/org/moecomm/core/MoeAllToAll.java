package org.moecomm.core;

import java.util.function.Supplier;

/**
 * One rank's dispatch/combine handle. Calls are collective: every rank of the world makes the
 * same sequence of calls. Each operation is also available as a send half and a receive half
 * so other work can run between them; {@code dispatch} then {@code combine}, alternating, is
 * the only legal order (anything else throws {@link IllegalStateException} before any work).
 *
 * <p>Inputs are validated (shape, dtype, expert ids, m <= M) before any work starts;
 * {@link IllegalArgumentException} names the offending tensor. A peer that does not arrive
 * within the config's wait timeout makes the waiting rank throw {@link WaitTimeoutException}.
 */
public interface MoeAllToAll extends AutoCloseable {
    MoeConfig config();

    int rank();

    /** Memory this handle's backend computes on: allocate inputs and outputs through it. */
    DeviceMemory memory();

    /** Symmetric (communication) bytes this handle holds on each rank. */
    long symmetricBytesPerRank();

    /** Packs this rank's tokens and sends them to the ranks hosting their experts. */
    void dispatchSend(DispatchInput in);

    /** Waits for the tokens sent to this rank and writes them, expert-major, into {@code out}. */
    void dispatchRecv(DispatchOutput out);

    default void dispatch(DispatchInput in, DispatchOutput out) {
        dispatchSend(in);
        dispatchRecv(out);
    }

    /** Sends the expert outputs for the last dispatch's rows back to the tokens' ranks. */
    void combineSend(Tensor expertY);

    /** Waits for the expert outputs of this rank's tokens and writes their weighted sum into {@code out [>= m][H]}. */
    void combineRecv(Tensor weights, Tensor out);

    default void combine(CombineInput in, Tensor out) {
        combineSend(in.expertY());
        combineRecv(in.weights(), out);
    }

    /**
     * Fails this handle on purpose and releases its peers at once: raises the handle's abort word
     * on every rank, so each peer's waiting (or next) call fails within microseconds with a
     * {@link PeerAbortedException} naming this rank and {@link AbortReason#CALLER}, instead of
     * waiting out its timeout. The handle has failed afterwards ({@link #isFailed()}); calls
     * other than {@link #close()} throw {@link IllegalStateException}. Idempotent; never waits
     * for a peer. {@code reason} goes into this rank's log and its later exceptions.
     */
    void abort(String reason);

    /**
     * Runs the caller's own work on this handle (allocating its tensors, uploading inputs, making
     * its calls) and returns its result; when the work throws, the handle is {@linkplain #abort
     * aborted} with the exception before it propagates. A rank that fails outside a call (a
     * device allocation that runs out of memory, a bad file) then releases its peers at once: they
     * fail with a {@link PeerAbortedException} naming this rank instead of waiting out their
     * timeouts in a round this rank will never join, and the {@link #close()} that follows does
     * not wait for them. An exception of a call that already failed the handle (or a peer's
     * abort) passes through unchanged.
     */
    default <T> T callOrAbort(Supplier<T> work) {
        try {
            return work.get();
        } catch (RuntimeException | Error e) {
            try {
                abort(e.toString());
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** {@link #callOrAbort} for work without a result. */
    default void runOrAbort(Runnable work) {
        callOrAbort(() -> {
            work.run();
            return null;
        });
    }

    /**
     * Whether a call of this handle failed after its work had started (a wait ran out, a peer
     * aborted, a bad input found on the device, {@link #abort}): then every call but
     * {@link #close()} throws {@link IllegalStateException}, and the caller should close it (a
     * new handle can follow). A call refused for bad input checked on the host leaves the handle
     * usable: false.
     */
    boolean isFailed();

    /** Frees the handle's buffers. Collective like every other call. */
    @Override
    void close();
}
