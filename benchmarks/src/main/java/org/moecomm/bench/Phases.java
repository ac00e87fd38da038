package org.moecomm.bench;

import java.util.List;

/**
 * The timed phases of a round, in the order every runner, sample file, table and JSON line
 * uses: the four halves, then each whole operation (send and receive back to back).
 */
final class Phases {
    static final int DISPATCH_SEND = 0;
    static final int DISPATCH_RECV = 1;
    static final int COMBINE_SEND = 2;
    static final int COMBINE_RECV = 3;
    static final int DISPATCH = 4;
    static final int COMBINE = 5;
    static final int COUNT = 6;

    /** Names printed in tables. */
    static final List<String> NAMES = List.of("dispatch send", "dispatch recv", "combine send", "combine recv",
            "dispatch", "combine");
    /** Keys of the JSON fields ({@code <key>MedianUs}, {@code <key>P90Us}). */
    static final List<String> KEYS = List.of("dispatchSend", "dispatchRecv", "combineSend", "combineRecv",
            "dispatch", "combine");

    private Phases() {
    }

    /** Whether phase {@code p} is the send or the recv of a half (not timed in graph replays), not a whole half. */
    static boolean isSendOrRecv(int p) {
        return p != DISPATCH && p != COMBINE;
    }

    /**
     * The six phase durations of one round from six instants: before dispatch send, after
     * dispatch send, after dispatch recv, before combine send, after combine send, after combine
     * recv (the experts run between the third and the fourth, untimed).
     */
    static long[] fromInstants(long[] t) {
        if (t.length != 6) {
            throw new IllegalArgumentException("six instants needed, got " + t.length);
        }
        return new long[] {t[1] - t[0], t[2] - t[1], t[4] - t[3], t[5] - t[4], t[2] - t[0], t[5] - t[3]};
    }
}
