package org.moecomm.bridge.nvshmem;

/**
 * A failure a bridge kernel recorded in an {@link ErrorBuffer} instead of hanging or writing out
 * of bounds.
 *
 * @param kind       what failed
 * @param rank       the PE that recorded it
 * @param peer       the peer waited for (the PE that never arrived), or the put's destination
 * @param tag        the caller's tag of the failing operation (names the signal on the Java side)
 * @param expected   wait: the value waited for; put: the most bytes the destination had room for
 * @param seen       wait: the last value seen; put: the count read
 * @param waitedNanos wait: GPU time spent waiting
 * @param detail     put: bytes per count
 */
public record DeviceError(Kind kind, int rank, int peer, int tag, long expected, long seen, long waitedNanos,
                          long detail) {

    public enum Kind {
        /** A bounded wait for a peer's signal ran out. */
        WAIT_TIMEOUT,
        /** A put read a negative count, or one too large for its destination: nothing was sent. */
        PUT_COUNT,
        /** The bounded barrier ran out: {@code peer} did not arrive. */
        BARRIER_TIMEOUT,
        /** A kind this Java code does not know (the native library is newer). */
        UNKNOWN
    }

    static DeviceError fromSlots(long[] s) {
        Kind kind = switch ((int) s[0]) {
            case NvshmemNative.ERROR_WAIT_TIMEOUT -> Kind.WAIT_TIMEOUT;
            case NvshmemNative.ERROR_PUT_COUNT -> Kind.PUT_COUNT;
            case NvshmemNative.ERROR_BARRIER_TIMEOUT -> Kind.BARRIER_TIMEOUT;
            default -> Kind.UNKNOWN;
        };
        return new DeviceError(kind, (int) s[1], (int) s[2], (int) s[3], s[4], s[5], s[6], s[7]);
    }
}
