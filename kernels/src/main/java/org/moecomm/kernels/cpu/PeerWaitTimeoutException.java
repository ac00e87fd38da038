package org.moecomm.kernels.cpu;

/**
 * A {@link org.moecomm.kernels.api.KernelContext#waitAtLeast} on the {@link CpuKernelRunner} ran
 * out: this rank's signal word did not reach {@link #expected()} within the wait's bound (see
 * {@link PeerWaitException}).
 */
public final class PeerWaitTimeoutException extends PeerWaitException {
    private static final long serialVersionUID = 1L;

    private final long expected;
    private final long seen;
    private final long waitedNanos;

    /**
     * @param rank        the waiting rank, as the kernel passed it
     * @param peer        the peer waited for, as the kernel passed it
     * @param tag         the kernel's tag of the wait
     * @param expected    the value the signal word had to reach ({@code >=})
     * @param seen        the signal word's value when the wait gave up
     * @param waitedNanos how long the wait lasted
     */
    public PeerWaitTimeoutException(int rank, int peer, int tag, long expected, long seen, long waitedNanos) {
        super("rank " + rank + ": wait for peer " + peer + " (tag " + tag + ") ran out after "
                + waitedNanos / 1_000_000 + " ms: expected >= " + expected + ", seen " + seen, rank, peer, tag);
        this.expected = expected;
        this.seen = seen;
        this.waitedNanos = waitedNanos;
    }

    /** The value the signal word had to reach. */
    public long expected() {
        return expected;
    }

    /** The signal word's last value seen. */
    public long seen() {
        return seen;
    }

    /** How long the wait lasted, in nanoseconds. */
    public long waitedNanos() {
        return waitedNanos;
    }
}
