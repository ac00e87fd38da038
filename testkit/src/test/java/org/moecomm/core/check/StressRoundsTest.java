package org.moecomm.core.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerWrites;
import org.moecomm.core.testing.Harness;
import org.moecomm.kernels.moe.MoeKernels;

/**
 * The stress run on the CPU backend: a short one in every build, the long one (10,000 rounds)
 * when {@code -Dmoecomm.stress.rounds=N} asks for it.
 */
class StressRoundsTest {
    private static MoeConfig config(int w, int g, DType in) {
        return Harness.config().worldSize(w).groupSize(g).numExperts(16).topK(4).hidden(256).maxTokensPerRank(12)
                .inType(in).expertOutType(DType.BF16).outType(DType.BF16).build();
    }

    private static List<StressRounds.Result> run(MoeConfig config, StressRounds.Options options) {
        return StressRounds.runOnCpu(config, options, done -> { });
    }

    private static void assertAllRoundsRight(List<StressRounds.Result> results, int rounds) {
        for (StressRounds.Result r : results) {
            assertTrue(r.ok(), () -> "rank " + r.rank() + ": " + r.failedRounds() + " failed round(s): " + r.problems());
            assertEquals(rounds, r.rounds());
            assertTrue(r.rowsChecked() > 0, "rank " + r.rank() + " compared no rows");
        }
    }

    @Test
    void manyRoundsOnOneHandleAreAllRight() {
        StressRounds.Options options = new StressRounds.Options(60, 11, 0.3, 50);
        assertAllRoundsRight(run(config(4, 1, DType.FP8_E4M3), options), 60);
    }

    @Test
    void manyRoundsWithGroupsAndPutsAreAllRight() {
        MoeConfig config = config(4, 2, DType.BF16).toBuilder().peerWrites(PeerWrites.PUTS).build();
        assertAllRoundsRight(run(config, new StressRounds.Options(40, 12, 0.3, 50)), 40);
    }

    /** The kernels at the GPU's block size on the JVM (the suite's other rounds run one thread per block). */
    @Test
    void manyRoundsAtTheGpusBlockSizeAreAllRight() {
        MoeConfig config = config(4, 2, DType.FP8_E4M3).toBuilder().peerWrites(PeerWrites.PUTS).build();
        StressRounds.Options options = new StressRounds.Options(30, 14, 0.3, 50);
        assertAllRoundsRight(StressRounds.runOnCpu(config, options, MoeKernels.THREADS, done -> { }), 30);
        MoeConfig direct = config(4, 1, DType.BF16).toBuilder().expertInType(DType.FP8_E4M3).build();
        assertAllRoundsRight(StressRounds.runOnCpu(direct, options, MoeKernels.THREADS, done -> { }), 30);
    }

    /** A quantising dispatch, each round's tokens drawn from the quantisation's edge cases. */
    @Test
    void manyQuantisingRoundsAreAllRight() {
        MoeConfig config = config(4, 1, DType.BF16).toBuilder().expertInType(DType.FP8_E4M3).build();
        assertTrue(StressRounds.workload(config, new StressRounds.Options(1, 13, 0.3, 0), 0).options().edgeValues());
        assertAllRoundsRight(run(config, new StressRounds.Options(30, 13, 0.3, 50)), 30);
    }

    @Test
    void theRoundsCoverEmptyAndFullRanksDropsAndSkew() {
        MoeConfig config = config(4, 1, DType.BF16);
        StressRounds.Options options = new StressRounds.Options(60, 11, 0.3, 0);
        Set<Integer> counts = new HashSet<>();
        boolean skewed = false;
        boolean uniform = false;
        boolean dropped = false;
        for (int round = 0; round < options.rounds(); round++) {
            Workload w = StressRounds.workload(config, options, round);
            assertEquals(w.options(), StressRounds.workload(config, options, round).options(), "not reproducible");
            w.ranks().forEach(in -> counts.add(in.m()));
            skewed |= w.options().routing() == Workload.Routing.SKEWED;
            uniform |= w.options().routing() == Workload.Routing.UNIFORM;
            dropped |= w.ranks().stream().anyMatch(in -> java.util.Arrays.stream(in.indices()).anyMatch(id -> id == -1));
        }
        assertTrue(counts.contains(0) && counts.contains(config.maxTokensPerRank()) && counts.size() > 4,
                "m values seen: " + counts);
        assertTrue(skewed && uniform && dropped, "skewed " + skewed + ", uniform " + uniform + ", -1 ids " + dropped);
    }

    @Test
    void badOptionsAreRefused() {
        assertRefused(IllegalArgumentException.class, () -> new StressRounds.Options(0, 1, 0.1, 0),
                "rounds must be positive, got 0");
        assertRefused(IllegalArgumentException.class, () -> new StressRounds.Options(10, 1, 1.5, 0),
                "maxDrop must be in [0, 1], got 1.5");
        assertRefused(IllegalArgumentException.class, () -> new StressRounds.Options(10, 1, 0.1, -1),
                "maxSkewMicros must be >= 0, got -1");
    }

    /** {@code -Dmoecomm.stress.rounds=10000}: the long run of issue-level stress testing (minutes on 2 cores). */
    @Test
    @EnabledIfSystemProperty(named = "moecomm.stress.rounds", matches = "\\d+",
            disabledReason = "the long run takes minutes: give -Dmoecomm.stress.rounds=N to run it")
    void longRun() {
        int rounds = Integer.parseInt(System.getProperty("moecomm.stress.rounds"));
        List<StressRounds.Result> results = run(config(4, 1, DType.FP8_E4M3), new StressRounds.Options(rounds, 1, 0.3,
                100));
        results.forEach(r -> System.out.printf("stress rank %d: %d rounds, %d rows checked, %d failed, %.1f s%n",
                r.rank(), r.rounds(), r.rowsChecked(), r.failedRounds(), r.nanos() / 1e9));
        assertAllRoundsRight(results, rounds);
    }
}
