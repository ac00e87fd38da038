package org.moecomm.kernels.cpu;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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
    /** The calls of one team (its first thread, its width, the kind of call) in order, and each member's next. */
    private static final class Team {
        final List<Object> calls = new ArrayList<>();
        final int[] next;

        Team(int width) {
            next = new int[width];
        }
    }

    private record Key(int kind, int firstThread, int width) {
    }

    private final Map<Key, Team> teams = new HashMap<>();
    private Key lastKey;
    private Team lastTeam;

    /**
     * Member {@code member} (0 to {@code width - 1}) of the team of {@code width} threads from
     * thread {@code firstThread} makes its next call of {@code kind}, with arguments {@code call}
     * (compared with {@code equals}). Returns true when it is the team's first member to make that
     * call: it then does the work of the whole team.
     *
     * @throws IllegalStateException if an earlier member made a different call in that place
     */
    boolean arrive(int kind, int firstThread, int width, int member, Object call) {
        Team team = team(new Key(kind, firstThread, width));
        int index = team.next[member]++;
        if (index == team.calls.size()) {
            team.calls.add(call);
            return true;
        }
        Object first = team.calls.get(index);
        if (!first.equals(call)) {
            throw new IllegalStateException("member " + member + " of the team of " + width + " threads from thread "
                    + firstThread + " calls " + call + " where an earlier member called " + first
                    + ": every member of a team must make the same collective calls in the same order");
        }
        return false;
    }

    private Team team(Key key) {
        if (key.equals(lastKey)) {
            return lastTeam;
        }
        Team team = teams.computeIfAbsent(key, k -> new Team(k.width()));
        lastKey = key;
        lastTeam = team;
        return team;
    }

    /**
     * Ends the stretch between two barriers: every member of every team must have made all of its
     * team's calls.
     *
     * @throws IllegalStateException naming a member that missed a call
     */
    void close() {
        if (teams.isEmpty()) {
            return;
        }
        try {
            for (Map.Entry<Key, Team> e : teams.entrySet()) {
                Team team = e.getValue();
                for (int m = 0; m < team.next.length; m++) {
                    if (team.next[m] != team.calls.size()) {
                        Key k = e.getKey();
                        throw new IllegalStateException("member " + m + " (thread " + (k.firstThread() + m)
                                + ") of the team of " + k.width() + " threads from thread " + k.firstThread()
                                + " made " + team.next[m] + " of its team's " + team.calls.size() + " calls of "
                                + team.calls.getFirst() + " before a barrier: every member of a team must make"
                                + " every collective call");
                    }
                }
            }
        } finally {
            teams.clear();
            lastKey = null;
            lastTeam = null;
        }
    }
}
