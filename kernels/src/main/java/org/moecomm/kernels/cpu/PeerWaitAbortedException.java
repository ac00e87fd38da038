package org.moecomm.kernels.cpu;

/**
 * A {@link org.moecomm.kernels.api.KernelContext#waitAtLeast} on the {@link CpuKernelRunner} found
 * the abort word it watches ({@code errors}, see there) set by some rank: it gave up at once. The
 * launch fails with a {@link KernelExecutionException} whose cause is this exception, so that a
 * backend can say which rank aborted and why (the word's meaning is the backend's).
 */
public final class PeerWaitAbortedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int rank;
    private final int peer;
    private final int tag;
    private final long abortWord;

    /**
     * @param rank      the waiting rank, as the kernel passed it
     * @param peer      the peer waited for, as the kernel passed it
     * @param tag       the kernel's tag of the wait
     * @param abortWord the abort word's value (not 0)
     */
    public PeerWaitAbortedException(int rank, int peer, int tag, long abortWord) {
        super("rank " + rank + ": wait for peer " + peer + " (tag " + tag + ") gave up: abort word "
                + Long.toHexString(abortWord));
        this.rank = rank;
        this.peer = peer;
        this.tag = tag;
        this.abortWord = abortWord;
    }

    public int rank() {
        return rank;
    }

    public int peer() {
        return peer;
    }

    public int tag() {
        return tag;
    }

    /** The abort word's value (not 0). */
    public long abortWord() {
        return abortWord;
    }
}
