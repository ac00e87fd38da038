package org.moecomm.core;

/**
 * Why a rank raised its handle's abort word on every peer ({@link PeerAbortedException}). The
 * code travels in the word itself ({@link #word(int)}): rank + 1 in the high 32 bits, the code in
 * the low ones, so a word of 0 means "no abort".
 */
public enum AbortReason {
    /** The application called {@link MoeAllToAll#abort}. */
    CALLER(1, "its caller aborted the handle"),
    /** Its dispatch found a bad input on the device (a bad expert id or count). */
    INPUT_ERROR(2, "a bad input found on the device"),
    /** One of its bounded waits ran out (a peer of its own fell silent). */
    WAIT_TIMEOUT(3, "a bounded wait of its own ran out"),
    /** Any other failure of a call whose work had started (a kernel or driver error). */
    CALL_FAILED(4, "a call failed");

    private final int code;
    private final String description;

    AbortReason(int code, String description) {
        this.code = code;
        this.description = description;
    }

    public String description() {
        return description;
    }

    /** The abort word {@code rank} raises for this reason (never 0). */
    public long word(int rank) {
        return (long) (rank + 1) << 32 | code;
    }

    /** The rank that raised {@code word} (not 0). */
    public static int rankOf(long word) {
        return (int) (word >>> 32) - 1;
    }

    /** The reason {@code word} carries ({@link #CALL_FAILED} for a code this version does not know). */
    public static AbortReason of(long word) {
        int code = (int) word;
        for (AbortReason r : values()) {
            if (r.code == code) {
                return r;
            }
        }
        return CALL_FAILED;
    }
}
