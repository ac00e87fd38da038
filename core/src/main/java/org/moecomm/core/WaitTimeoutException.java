package org.moecomm.core;

/**
 * A bounded wait for a peer ran out: the peer never raised the signal to the expected value.
 * Carries everything needed to find the culprit.
 */
public final class WaitTimeoutException extends MoeCommException {
    private final int rank;
    private final int peer;
    private final String signal;
    private final long expected;
    private final long seen;

    public WaitTimeoutException(int rank, int peer, String signal, long expected, long seen, long waitedMillis) {
        super("rank " + rank + ": timed out after " + waitedMillis + " ms waiting for peer " + peer + " on signal "
                + signal + ": expected >= " + describe(expected) + ", seen " + describe(seen));
        this.rank = rank;
        this.peer = peer;
        this.signal = signal;
        this.expected = expected;
        this.seen = seen;
    }

    /**
     * The value, then its two 32-bit halves: a dispatch signal is {@code round << 32 | rows}, a
     * combine signal {@code round * 2^32} plus the rows so far, a combine-done word
     * {@code round * 2^20} (docs/protocol.md). Words count modulo 2^64.
     */
    private static String describe(long v) {
        return v + " (halves " + (v >>> 32) + " : " + (v & 0xffffffffL) + ")";
    }

    public int rank() { return rank; }
    public int peer() { return peer; }
    public String signal() { return signal; }
    public long expected() { return expected; }
    public long seen() { return seen; }
}
