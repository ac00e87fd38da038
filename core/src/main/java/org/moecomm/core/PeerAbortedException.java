package org.moecomm.core;

/**
 * A peer aborted the round (its call failed, or its caller called {@link MoeAllToAll#abort}): a
 * bounded wait of this rank saw the peer's abort word instead of waiting out its timeout. Names
 * the rank that aborted and why; the handle has failed and can only be closed.
 */
public final class PeerAbortedException extends MoeCommException {
    private final int rank;
    private final int abortedBy;
    private final AbortReason reason;
    private final String seenIn;

    /**
     * @param rank      the rank that saw the abort
     * @param abortedBy the rank that raised it
     * @param reason    why it raised it
     * @param seenIn    where this rank saw it: "the wait for dispatch[2]", "the barrier", a call's name
     */
    public PeerAbortedException(int rank, int abortedBy, AbortReason reason, String seenIn) {
        super("rank " + rank + ": rank " + abortedBy + " aborted (" + reason.description() + "), seen in " + seenIn
                + "; the handle has failed: close it");
        this.rank = rank;
        this.abortedBy = abortedBy;
        this.reason = reason;
        this.seenIn = seenIn;
    }

    public int rank() { return rank; }
    public int abortedBy() { return abortedBy; }
    public AbortReason reason() { return reason; }
    public String seenIn() { return seenIn; }
}
