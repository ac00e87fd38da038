package org.moecomm.kernels.cpu;

/**
 * A {@link org.moecomm.kernels.api.KernelContext#waitAtLeast} on the {@link CpuKernelRunner} found
 * the abort word it watches ({@code errors}, see there) set by some rank: it gave up at once (see
 * {@link PeerWaitException}; the word's meaning is the backend's).
 */
public final class PeerWaitAbortedException extends PeerWaitException {
    private static final long serialVersionUID = 1L;

    private final long abortWord;

    /**
     * @param rank      the waiting rank, as the kernel passed it
     * @param peer      the peer waited for, as the kernel passed it
     * @param tag       the kernel's tag of the wait
     * @param abortWord the abort word's value (not 0)
     */
    public PeerWaitAbortedException(int rank, int peer, int tag, long abortWord) {
        super("rank " + rank + ": wait for peer " + peer + " (tag " + tag + ") gave up: abort word "
                + Long.toHexString(abortWord), rank, peer, tag);
        this.abortWord = abortWord;
    }

    /** The abort word's value (not 0). */
    public long abortWord() {
        return abortWord;
    }
}
