package org.moecomm.core.protocol;

/**
 * Where a handle stands in the call sequence {@code dispatchSend -> dispatchRecv -> combineSend
 * -> combineRecv -> dispatchSend ...}; each phase names the one call it accepts ({@code dispatch}
 * takes a handle from IDLE to DISPATCHED, {@code combine} from DISPATCHED to IDLE).
 */
public enum Phase {
    /** Ready for {@code dispatchSend}. */
    IDLE("dispatchSend"),
    /** Ready for {@code dispatchRecv}. */
    DISPATCH_SENT("dispatchRecv"),
    /** Ready for {@code combineSend}. */
    DISPATCHED("combineSend"),
    /** Ready for {@code combineRecv}. */
    COMBINE_SENT("combineRecv"),
    /** A call failed after its work had started; the handle can only be closed. */
    FAILED(null),
    /** Closed. */
    CLOSED(null);

    private final String expectedCall;

    Phase(String expectedCall) {
        this.expectedCall = expectedCall;
    }

    /** The call this phase accepts, or null if none. */
    public String expectedCall() {
        return expectedCall;
    }
}
