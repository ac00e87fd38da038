package org.moecomm.bench;

import java.util.List;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.protocol.BufferLayout;

/**
 * Bytes each phase's kernels read and write in device memory (host memory on the CPU backend),
 * summed over the W ranks, which share one device in every mode the runners have. The model is
 * the kernels' data traffic as the algorithm needs it, each access counted once (caches not
 * modelled), as the kernel benchmark's {@code bytesFormula}; rows go straight into the peers'
 * receive buffers (direct stores: every peer on one GPU is mapped); signal words, counters and
 * expert counts (tens of bytes per rank) are left out. Whole dispatch and whole combine are their
 * two halves' sums.
 */
record DeviceBytes(long dispatchSend, long dispatchRecv, long combineSend, long combineRecv) {
    /** Per rank, for the halves in {@link Phases} order; the whole operations are the sums. */
    static final List<String> FORMULAS = List.of(
            "m*K*4 (ids read) + m*K*4 (pairLocation written) + R*(xBytes + 4*S) (token and scales read per row)"
                    + " + R*rowBytes (rows stored into the destinations' dispatchRecv); R = rows the rank sends",
            "R*align16(4*(2+K)) (row meta read) + P*(xBytes + 4*S) (tokens and scales read) + P*(xBytes + 4*S + 4)"
                    + " (expert rows, scales and origins written); R, P = rows and pairs the rank receives",
            "P*(yBytes + 4) (expert outputs and origins read) + P*G*yBytes (stored into the combineRecv of every member"
                    + " of the pair's group); P = pairs the rank received",
            "m*K*8 (pairLocation and weights read) + V*yBytes (combine rows read) + m*H*outBytes (out written);"
                    + " V = pairs of the rank's tokens");

    /** The model in one sentence, as the JSON lines record it. */
    static final String MODEL = "bytes read + written in device memory by the phase's kernels, summed over the ranks;"
            + " per rank: dispatch send = " + FORMULAS.get(0) + "; dispatch recv = " + FORMULAS.get(1)
            + "; combine send = " + FORMULAS.get(2) + "; combine recv = " + FORMULAS.get(3)
            + "; dispatch = send + recv, combine = send + recv; signals and counters left out";

    /**
     * The bytes of a round of {@code config}: {@code tokens} summed over every rank (each member of
     * a group numbers and reduces all of its group's tokens), {@code pairs} and {@code rows} the
     * (token, expert) pairs and (token, destination) rows of all groups, each group counted once
     * ({@link TrafficModel}).
     */
    static DeviceBytes of(MoeConfig config, BufferLayout layout, long tokens, long pairs, long rows) {
        long k = config.topK();
        long token = layout.xBytes() + (long) layout.scaleBytes();
        long y = layout.yBytes();
        long members = config.groupSize();
        long send = 8 * k * tokens + rows * (token + layout.rowBytes());
        long recv = rows * BufferLayout.align16(4 * (2 + config.topK())) + pairs * (2 * token + 4);
        long combineSend = pairs * (y + 4) + members * pairs * y;
        long combineRecv = 8 * k * tokens + members * pairs * y
                + tokens * config.hidden() * config.outType().bytes();
        return new DeviceBytes(send, recv, combineSend, combineRecv);
    }

    /** The bytes of phase {@code p} ({@link Phases}). */
    long of(int p) {
        return switch (p) {
            case Phases.DISPATCH_SEND -> dispatchSend;
            case Phases.DISPATCH_RECV -> dispatchRecv;
            case Phases.COMBINE_SEND -> combineSend;
            case Phases.COMBINE_RECV -> combineRecv;
            case Phases.DISPATCH -> dispatchSend + dispatchRecv;
            case Phases.COMBINE -> combineSend + combineRecv;
            default -> throw new IllegalArgumentException("no phase " + p);
        };
    }
}
