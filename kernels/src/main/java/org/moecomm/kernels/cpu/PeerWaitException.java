package org.moecomm.kernels.cpu;

/**
 * A {@link org.moecomm.kernels.api.KernelContext#waitAtLeast} on the {@link CpuKernelRunner} that
 * gave up: it ran out ({@link PeerWaitTimeoutException}) or found its abort word set
 * ({@link PeerWaitAbortedException}). The launch fails with a {@link KernelExecutionException}
 * whose cause is this exception; it carries the wait's facts as the kernel passed them, so that a
 * backend can turn it into an exception of its own that names the signal.
 */
public abstract sealed class PeerWaitException extends RuntimeException
        permits PeerWaitTimeoutException, PeerWaitAbortedException {
    private static final long serialVersionUID = 1L;

    private final int rank;
    private final int peer;
    private final int tag;

    PeerWaitException(String message, int rank, int peer, int tag) {
        super(message);
        this.rank = rank;
        this.peer = peer;
        this.tag = tag;
    }

    /** The waiting rank (the kernel's {@code rank} argument). */
    public int rank() {
        return rank;
    }

    /** The peer waited for (the kernel's {@code peer} argument). */
    public int peer() {
        return peer;
    }

    /** The kernel's tag of the wait. */
    public int tag() {
        return tag;
    }
}
