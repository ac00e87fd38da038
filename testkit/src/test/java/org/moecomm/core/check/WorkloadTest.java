package org.moecomm.core.check;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.reference.RankInputs;
import org.moecomm.core.reference.Reference;

class WorkloadTest {
    private static final MoeConfig CONFIG = MoeConfig.builder().worldSize(4).groupSize(2).numExperts(16).topK(4)
            .hidden(256).maxTokensPerRank(64).inType(DType.FP8_E4M3).build();

    @Test
    void groupMembersHoldIdenticalInputsAndGenerationIsSeeded() {
        Workload w = Workload.generate(CONFIG, 42);
        assertTrue(w.rank(0).sameAs(w.rank(1)));
        assertTrue(w.rank(2).sameAs(w.rank(3)));
        Workload again = Workload.generate(CONFIG, 42);
        for (int r = 0; r < 4; r++) {
            assertTrue(w.rank(r).sameAs(again.rank(r)));
        }
        assertFalse(Workload.generate(CONFIG, 43).rank(0).sameAs(w.rank(0)));
        w.reference(); // consistent global view
    }

    @Test
    void tokensPickDistinctValidExpertsAndFp8HasPositiveScales() {
        Workload w = Workload.generate(CONFIG, 7, Workload.Options.defaults().tokens(64));
        RankInputs in = w.rank(0);
        assertEquals(64, in.m());
        assertEquals(64 * 2, in.xScale().length);
        for (float s : in.xScale()) {
            assertTrue(s > 0 && Float.isFinite(s));
        }
        for (int t = 0; t < in.m(); t++) {
            Set<Integer> seen = new HashSet<>();
            for (int k = 0; k < 4; k++) {
                int id = in.indices()[t * 4 + k];
                assertTrue(id >= 0 && id < 16);
                assertTrue(seen.add(id), "duplicate expert in token " + t);
                assertTrue(in.weights()[t * 4 + k] > 0);
            }
        }
        for (int i = 0; i < 64 * 256; i++) {
            assertTrue(Float.isFinite(Reference.decode(DType.FP8_E4M3, in.x(), i)));
        }
    }

    @Test
    void skewedRoutingSendsAboutHalfOfThePicksToTheHotRank() {
        MoeConfig c = CONFIG.toBuilder().maxTokensPerRank(512).build();
        Workload w = Workload.generate(c, 3, Workload.Options.defaults().tokens(512).skewedTo(1));
        int hot = 0;
        int all = 0;
        for (int g = 0; g < 2; g++) {
            for (int id : w.rank(2 * g).indices()) {
                all++;
                if (c.rankOfExpert(id) == 1) {
                    hot++;
                }
            }
        }
        double share = (double) hot / all;
        assertTrue(share > 0.42 && share < 0.58, "hot share " + share);
    }

    @Test
    void dropReplacesAFractionOfIdsByMinusOne() {
        Workload w = Workload.generate(CONFIG, 5, Workload.Options.defaults().tokens(64).drop(0.25));
        long dropped = 0;
        for (int id : w.rank(0).indices()) {
            if (id == -1) {
                dropped++;
            }
        }
        assertTrue(dropped > 30 && dropped < 100, "dropped " + dropped);
        assertEquals(Workload.generate(CONFIG, 5, Workload.Options.defaults().tokensPerGroup(0, 3)).rank(0).m(), 0);
    }

    @Test
    void fakeExpertDependsOnTheExpertAndTheRowOnly() {
        Workload w = Workload.generate(CONFIG, 11, Workload.Options.defaults().tokens(2));
        Reference ref = w.reference();
        byte[] a = Workload.fakeExpert(CONFIG, 3, ref.tokenBytes(0, 1), ref.tokenScales(0, 1));
        assertArrayEquals(a, w.expertFunction().apply(3, 0, 1));
        assertFalse(java.util.Arrays.equals(a, Workload.fakeExpert(CONFIG, 4, ref.tokenBytes(0, 1),
                ref.tokenScales(0, 1))));
        // y = v * (1 + e/E) + e/(16E) with v the dequantised token
        float v = Reference.decode(DType.FP8_E4M3, ref.tokenBytes(0, 1), 5) * ref.tokenScales(0, 1)[0];
        float expected = v * (1f + 3f / 16) + 3f / (16f * 16);
        byte[] one = new byte[2];
        Reference.encode(DType.BF16, expected, one, 0);
        assertEquals(Reference.decode(DType.BF16, one, 0), Reference.decode(DType.BF16, a, 5));
    }

    /** The edge values give the quantising tests every case of the rule: they are in the reference's rows. */
    @Test
    void edgeValuesCoverTheQuantisationCases() {
        for (DType in : new DType[] {DType.BF16, DType.FP16}) {
            MoeConfig c = MoeConfig.builder().worldSize(2).numExperts(4).topK(2).hidden(1024).maxTokensPerRank(16)
                    .inType(in).expertInType(DType.FP8_E4M3).build();
            Workload w = Workload.generate(c, 3, Workload.Options.defaults().tokens(16).edgeValues(true));
            Set<Integer> codes = new HashSet<>();
            boolean one = false;
            boolean infinite = false;
            boolean subnormal = false;
            for (int g = 0; g < c.numGroups(); g++) {
                for (int t = 0; t < 16; t++) {
                    for (byte b : w.reference().tokenBytes(g, t)) {
                        codes.add(b & 0xff);
                    }
                    for (float s : w.reference().tokenScales(g, t)) {
                        one |= s == 1f;
                        infinite |= s == Float.POSITIVE_INFINITY;
                        subnormal |= s > 0 && s < Float.MIN_NORMAL;
                    }
                }
            }
            assertTrue(codes.containsAll(Set.of(0x00, 0x80, 0x7e, 0xfe, 0x7f, 0x01, 0x81)), in + ": " + codes);
            assertTrue(one && infinite, in + ": zero blocks and infinite scales");
            assertEquals(in == DType.BF16, subnormal, in + ": subnormal scales (bf16 only: fp16's are normal floats)");
        }
    }

    /** The reference of a generated workload (dropped slots included): expert counts are the dispatch lists' sizes. */
    @Test
    void expertCountsAreTheSizesOfTheDispatchLists() {
        MoeConfig c = MoeConfig.builder().worldSize(4).groupSize(2).numExperts(16).topK(4).hidden(16)
                .maxTokensPerRank(20).build();
        Reference ref = Workload.generate(c, 5, Workload.Options.defaults().drop(0.2)).reference();
        for (int rank = 0; rank < 4; rank++) {
            assertArrayEquals(ref.dispatch(rank).stream().mapToInt(List::size).toArray(), ref.expertCounts(rank),
                    "rank " + rank);
        }
    }
}
