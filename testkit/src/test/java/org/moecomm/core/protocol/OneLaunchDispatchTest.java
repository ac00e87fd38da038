package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.testing.Harness;

/**
 * {@code MoeAllToAll.dispatch} in one launch ({@code AllToAllKernels.dispatch}: dispatch send's
 * blocks and the source-order receive's in one grid) at decode sizes: the receive blocks' own
 * rounds (kept per source group and part) stay in step with the send's across the wrap-around of
 * the signal words, and larger rounds keep two launches. {@link SlotOrderTest} runs the decode
 * configurations with one- and two-launch rounds in turn.
 */
@Timeout(120)
class OneLaunchDispatchTest {
    /**
     * From just before round 2^32, where a dispatch signal's {@code round << 32} passes 2^64, with
     * the last rank late to every round: a receive block that took an old signal word for this
     * round's, or whose own round fell out of step with the send's, would scatter stale rows.
     */
    @Test
    void oneLaunchRoundsAcrossTheSignalWordsWrapAround() {
        MoeConfig config = Harness.config().worldSize(4).groupSize(2).numExperts(16).topK(4).hidden(256)
                .maxTokensPerRank(8).build();
        List<Workload> workloads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            workloads.add(Workload.generate(config, 1200 + i, Workload.Options.defaults().drop(0.1)));
        }
        Harness.assertAllOk(Harness.onAllRanks(config, (h, b) -> {
            ((AllToAllProtocol) h).resumeAfter((1L << 32) - 2);
            assertTrue(((AllToAllProtocol) h).dispatchesInOneLaunch(), "rank " + h.rank() + ": two launches");
            List<ResultCheck.Report> mine = new ArrayList<>();
            for (int i = 0; i < workloads.size(); i++) {
                if (h.rank() == config.worldSize() - 1) {
                    RoundsTest.sleep(30);
                }
                mine.add(CheckedRound.runWhole(b, workloads.get(i), i % 2 == 1));
            }
            return mine;
        }));
    }

    /** Beyond decode sizes dispatch send has several blocks per destination: two launches, as before. */
    @Test
    void largerRoundsDispatchInTwoLaunches() {
        MoeConfig config = Harness.config().worldSize(4).groupSize(2).numExperts(16).topK(4).hidden(256)
                .maxTokensPerRank(16).build();
        List<Boolean> oneLaunch = Harness.onAllRanks(config,
                (h, b) -> ((AllToAllProtocol) h).dispatchesInOneLaunch());
        assertFalse(oneLaunch.contains(true), "one launch at M = 16: " + oneLaunch);
    }
}
