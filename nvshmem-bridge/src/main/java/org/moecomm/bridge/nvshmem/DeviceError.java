package org.moecomm.bridge.nvshmem;

/**
 * A failure a kernel recorded in an {@link ErrorBuffer} instead of hanging: a bounded wait of a
 * kernel ({@code mnvd_wait_ge}) or the bridge's barrier that ran out, or that found the abort
 * word it watches raised.
 *
 * @param kind       what failed
 * @param rank       the PE that recorded it
 * @param peer       the peer waited for (the PE that never arrived)
 * @param tag        the caller's tag of the failing operation (names the signal on the Java side)
 * @param expected   the value waited for
 * @param seen       the last value seen
 * @param waitedNanos GPU time spent waiting
 * @param detail     0 (reserved)
 */
public record DeviceError(Kind kind, int rank, int peer, int tag, long expected, long seen, long waitedNanos,
                          long detail) {

    public enum Kind {
        /** A bounded wait for a peer's signal ran out. */
        WAIT_TIMEOUT,
        /** The bounded barrier ran out: {@code peer} did not arrive. */
        BARRIER_TIMEOUT,
        /**
         * A wait (a kernel's or the barrier's) found the abort word its context watches raised:
         * {@code peer} and {@code tag} are the wait's, {@code seen} is the abort word.
         */
        PEER_ABORTED,
        /** A kind this Java code does not know (the native library is newer). */
        UNKNOWN
    }

    static DeviceError fromSlots(long[] s) {
        Kind kind = switch ((int) s[0]) {
            case NvshmemNative.ERROR_WAIT_TIMEOUT -> Kind.WAIT_TIMEOUT;
            case NvshmemNative.ERROR_BARRIER_TIMEOUT -> Kind.BARRIER_TIMEOUT;
            case NvshmemNative.ERROR_PEER_ABORTED -> Kind.PEER_ABORTED;
            default -> Kind.UNKNOWN;
        };
        return new DeviceError(kind, (int) s[1], (int) s[2], (int) s[3], s[4], s[5], s[6], s[7]);
    }
}
