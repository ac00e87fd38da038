package org.moecomm.core.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.AbortReason;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.Workload;
import org.moecomm.core.testing.Harness;

/** A peer that never arrives makes every waiting rank fail within the bound; nothing hangs. */
@Timeout(value = 30)
class TimeoutTest {
    private static final long BOUND_MS = 500;
    /** Slack for a loaded 2-core machine; the point is "bounded", not "precise". */
    private static final long SLACK_MS = 4000;
    private static final MoeConfig CONFIG = MoeConfig.builder().worldSize(4).numExperts(8).topK(2).hidden(256)
            .maxTokensPerRank(8).waitTimeout(Duration.ofMillis(BOUND_MS)).build();

    private record Outcome(Throwable failure, long elapsedMs) {
    }

    /**
     * One checked round with a long bound first, so that class loading, logging set-up and the
     * first (interpreted) kernel launches do not eat into the 500 ms bound of the tests.
     */
    @BeforeAll
    static void warmUp() {
        MoeConfig patient = CONFIG.toBuilder().waitTimeout(Harness.TEST_TIMEOUT).build();
        Harness.checkedRounds(patient, 2, round -> Workload.generate(patient, round), false);
    }

    /** Rank 3 creates its handle but never calls dispatch. */
    @Test
    void ranksWaitingForADeadPeerInDispatchTimeOut() {
        List<Outcome> outcomes = run(h -> {
            if (h.rank() == 3) {
                return; // gone
            }
            RankBuffers b = RankBuffers.allocate(h);
            h.dispatch(b.upload(Workload.generate(CONFIG, 1).rank(h.rank()), false), b.dispatchOutput());
        });
        assertNull(outcomes.get(3).failure());
        int timedOut = 0;
        for (int r = 0; r < 3; r++) {
            assertTrue(outcomes.get(r).elapsedMs() < BOUND_MS + SLACK_MS, "took " + outcomes.get(r).elapsedMs() + " ms");
            if (releasedByAnAbort(outcomes.get(r).failure(), r)) {
                continue;
            }
            timedOut++;
            assertTrue(outcomes.get(r).elapsedMs() >= BOUND_MS, "timed out early: " + outcomes.get(r).elapsedMs() + " ms");
            WaitTimeoutException e = assertInstanceOf(WaitTimeoutException.class, outcomes.get(r).failure());
            assertEquals(r, e.rank());
            assertEquals(3, e.peer());
            assertEquals("dispatch[3]", e.signal());
            assertEquals(1L << 32, e.expected());
            assertEquals(0, e.seen());
            assertTrue(e.getMessage().contains("peer 3") && e.getMessage().contains("dispatch[3]"), e.getMessage());
        }
        assertTrue(timedOut >= 1, "no rank timed out itself: " + outcomes);
    }

    /**
     * Whether rank {@code r}'s failure is the abort of another live rank that timed out first
     * (that rank raises the abort word, which ends the others' waits before their own bounds).
     */
    private static boolean releasedByAnAbort(Throwable failure, int r) {
        if (!(failure instanceof PeerAbortedException a)) {
            return false;
        }
        assertEquals(r, a.rank());
        assertEquals(AbortReason.WAIT_TIMEOUT, a.reason());
        assertTrue(a.abortedBy() != r && a.abortedBy() != 3, a.getMessage());
        return true;
    }

    /** Rank 3 dispatches but never combines: the others time out in combine recv waiting for its rows. */
    @Test
    void ranksWaitingForADeadPeerInCombineTimeOut() {
        List<Outcome> outcomes = run(h -> {
            RankBuffers b = RankBuffers.allocate(h);
            h.dispatch(b.upload(Workload.generate(CONFIG, 2).rank(h.rank()), false), b.dispatchOutput());
            if (h.rank() == 3) {
                return;
            }
            b.runExperts();
            h.combine(b.combineInput(), b.out());
        });
        assertNull(outcomes.get(3).failure());
        int timedOut = 0;
        for (int r = 0; r < 3; r++) {
            assertTrue(outcomes.get(r).elapsedMs() < BOUND_MS + SLACK_MS, "took " + outcomes.get(r).elapsedMs() + " ms");
            if (releasedByAnAbort(outcomes.get(r).failure(), r)) {
                continue;
            }
            timedOut++;
            assertTrue(outcomes.get(r).elapsedMs() >= BOUND_MS, "timed out early: " + outcomes.get(r).elapsedMs() + " ms");
            WaitTimeoutException e = assertInstanceOf(WaitTimeoutException.class, outcomes.get(r).failure());
            assertEquals(r, e.rank());
            assertEquals(3, e.peer());
            assertEquals("combine[3]", e.signal());
            assertTrue(e.seen() < e.expected(), e.getMessage());
            assertTrue(e.getMessage().contains("peer 3") && e.getMessage().contains("combine[3]"), e.getMessage());
        }
        assertTrue(timedOut >= 1, "no rank timed out itself: " + outcomes);
    }

    /** After a timeout the handle refuses further calls (its peers' state is unknown) but closes cleanly. */
    @Test
    void aHandleThatTimedOutCanOnlyBeClosed() {
        List<Outcome> outcomes = run(h -> {
            if (h.rank() == 3) {
                return;
            }
            RankBuffers b = RankBuffers.allocate(h);
            var in = b.upload(Workload.generate(CONFIG, 3).rank(h.rank()), false);
            h.dispatchSend(in);
            RuntimeException failed = assertThrows(RuntimeException.class, () -> h.dispatchRecv(b.dispatchOutput()));
            assertTrue(failed instanceof WaitTimeoutException || failed instanceof PeerAbortedException, failed::toString);
            assertTrue(h.isFailed());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> h.dispatchSend(in));
            assertTrue(e.getMessage().contains("failed"), e.getMessage());
        });
        outcomes.forEach(o -> assertNull(o.failure()));
    }

    private interface RankBody {
        void run(MoeAllToAll h);
    }

    private static List<Outcome> run(RankBody body) {
        try (CpuCluster cluster = CpuCluster.create(4)) {
            return cluster.runOnAllRanks(rank -> {
                try (MoeAllToAll h = cluster.createHandle(rank, CONFIG)) {
                    long start = System.nanoTime();
                    try {
                        body.run(h);
                        return new Outcome(null, (System.nanoTime() - start) / 1_000_000);
                    } catch (RuntimeException e) {
                        return new Outcome(e, (System.nanoTime() - start) / 1_000_000);
                    }
                }
            });
        }
    }
}
