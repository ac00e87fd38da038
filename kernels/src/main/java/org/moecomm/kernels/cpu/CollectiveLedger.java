package org.moecomm.kernels.cpu;

import java.util.ArrayList;
import java.util.List;

/**
 * The collective calls ({@link CollectiveHelpers}) that the threads of one loop block made since
 * its last barrier. A collective call is one that every member of a team of threads makes with the
 * same arguments between the same two barriers, each doing its share; on the CPU the first member
 * to arrive does the whole work and the others only check in. The ledger tells a member whether it
 * is the first for its next call, checks that the others make the same calls in the same order,
 * and, when the block passes a barrier or ends ({@link #close}), that every member made every call
 * of its team: a member that skipped one would otherwise have had its share done for it.
 *
 * <p>Not thread-safe: one pool thread at a time runs a loop block.
 */
final class CollectiveLedger {
    /** The calls of one team (its kind of call, first thread and width) in order, and each member's next. */
    private static final class Team {
        final int kind;
        final int firstThread;
        final int width;
        final List<Object> calls = new ArrayList<>();
        final int[] next;

        Team(int kind, int firstThread, int width) {
            this.kind = kind;
            this.firstThread = firstThread;
            this.width = width;
            this.next = new int[width];
        }
    }

    /**
     * Teams by first thread: {@code byFirst[firstThread]} is the last team seen that starts there
     * (a block's teams of one stretch rarely share a first thread; those that do are in {@link #all}
     * too and found there). Indexed, since members arrive once per row or token.
     */
    private final Team[] byFirst;
    /** Every team of the stretch, for {@link #close}. */
    private final List<Team> all = new ArrayList<>();

    CollectiveLedger(int threads) {
        byFirst = new Team[threads];
    }

    /**
     * Member {@code member} (0 to {@code width - 1}) of the team of {@code width} threads from
     * thread {@code firstThread} (the team lies in the block) makes its next call of {@code kind},
     * with arguments {@code call} (compared with {@code equals}). Returns true when it is the
     * team's first member to make that call: it then does the work of the whole team.
     *
     * @throws IllegalStateException if an earlier member made a different call in that place
     */
    boolean arrive(int kind, int firstThread, int width, int member, Object call) {
        Team team = team(kind, firstThread, width);
        int index = team.next[member]++;
        if (index == team.calls.size()) {
            team.calls.add(call);
            return true;
        }
        Object first = team.calls.get(index);
        if (first != call && !first.equals(call)) {
            throw new IllegalStateException("member " + member + " of the team of " + width + " threads from thread "
                    + firstThread + " calls " + call + " where an earlier member called " + first
                    + ": every member of a team must make the same collective calls in the same order");
        }
        return false;
    }

    private Team team(int kind, int firstThread, int width) {
        Team t = byFirst[firstThread];
        if (t != null && t.kind == kind && t.width == width) {
            return t;
        }
        for (Team other : all) {
            if (other.kind == kind && other.firstThread == firstThread && other.width == width) {
                byFirst[firstThread] = other;
                return other;
            }
        }
        t = new Team(kind, firstThread, width);
        all.add(t);
        byFirst[firstThread] = t;
        return t;
    }

    /**
     * Ends the stretch between two barriers: every member of every team must have made all of its
     * team's calls.
     *
     * @throws IllegalStateException naming a member that missed a call
     */
    void close() {
        if (all.isEmpty()) {
            return;
        }
        try {
            for (Team team : all) {
                for (int m = 0; m < team.width; m++) {
                    if (team.next[m] != team.calls.size()) {
                        throw new IllegalStateException("member " + m + " (thread " + (team.firstThread + m)
                                + ") of the team of " + team.width + " threads from thread " + team.firstThread
                                + " made " + team.next[m] + " of its team's " + team.calls.size() + " calls of "
                                + team.calls.getFirst() + " before a barrier: every member of a team must make"
                                + " every collective call");
                    }
                }
            }
        } finally {
            for (Team team : all) {
                byFirst[team.firstThread] = null;
            }
            all.clear();
        }
    }
}
