package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.testing.Harness;

/**
 * {@code MoeAllToAll.dispatch} in one launch ({@code AllToAllKernels.dispatch}: dispatch send's
 * blocks and the source-order receive's in one grid) at decode sizes. Rounds on one handle take
 * the one launch and the two launches of the halves called apart in turn, on fresh inputs with
 * poisoned outputs, m as a Java int and in device memory: every round matches the reference, the
 * slots come in source order, and the receive blocks' own rounds (kept per source group) stay in
 * step with the send's, also across the wrap-around of the signal words.
 */
@Timeout(120)
class OneLaunchDispatchTest {
    /** The decode configurations of {@link SlotOrderTest}, at one thread per block and at the GPU's block size. */
    static Stream<Arguments> decodeConfigs() {
        return SlotOrderTest.decodeConfigs();
    }

    @ParameterizedTest(name = "{0}, {2} threads per block")
    @MethodSource("decodeConfigs")
    void oneAndTwoLaunchRoundsInTurnMatchTheReference(String name, MoeConfig config, int threads) {
        List<Workload> workloads = List.of(Workload.generate(config, 1100),
                Workload.generate(config, 1101, Workload.Options.defaults().drop(0.2).randomTokens()),
                Workload.generate(config, 1102, Workload.Options.defaults().skewedTo(config.worldSize() - 1)),
                Workload.generate(config, 1103, Workload.Options.defaults().randomTokens()));
        List<List<String>> problems = Harness.onAllRanks(config, threads, (h, b) -> {
            List<String> p = new ArrayList<>();
            if (!((AllToAllProtocol) h).dispatchesInOneLaunch()) {
                p.add("rank " + h.rank() + ": dispatch is two launches at a decode size");
            }
            for (int i = 0; i < workloads.size(); i++) {
                Workload w = workloads.get(i);
                ResultCheck.Report report = i % 2 == 0 ? CheckedRound.runWhole(b, w, i % 4 >= 2)
                        : CheckedRound.run(b, w, i % 4 >= 2);
                if (!report.ok()) {
                    p.add("round " + i + (i % 2 == 0 ? " (one launch): " : " (two launches): ") + report);
                }
                p.addAll(SlotOrderTest.sourceOrderProblems(h, b, w.reference(), "round " + i));
            }
            return p;
        });
        List<String> all = problems.stream().flatMap(List::stream).toList();
        assertTrue(all.isEmpty(), name + ": " + String.join("\n", all));
    }

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
