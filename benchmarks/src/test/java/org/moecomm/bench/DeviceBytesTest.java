package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.check.Workload;
import org.moecomm.core.protocol.BufferLayout;
import org.moecomm.core.reference.RankInputs;

/** The device-memory byte model of the phases ({@link DeviceBytes}), by hand and rank by rank. */
class DeviceBytesTest {
    /**
     * deepseek-v3, W = 4, G = 1, from counts: token 7168 + 4 * 56 = 7392 bytes, row 7168 + 224 +
     * align16(40) = 7440 (BufferLayoutTest), combine row 7168 * 2 = 14336, out bf16.
     */
    @Test
    void theFormulasByHand() {
        DeviceBytes b = model(Preset.DEEPSEEK_V3.config(4, 1, 1).build());
        assertEquals(8 * 8 * 4 + 15 * (7392 + 7440), b.dispatchSend());
        assertEquals(15 * 48 + 32 * (2 * 7392 + 4), b.dispatchRecv());
        assertEquals(32 * (14336 + 4) + 32 * 14336, b.combineSend());
        assertEquals(8 * 8 * 4 + 32 * 14336 + 4 * 7168 * 2, b.combineRecv());
        assertEquals(b.dispatchSend() + b.dispatchRecv(), b.of(Phases.DISPATCH));
        assertEquals(b.combineSend() + b.combineRecv(), b.of(Phases.COMBINE));
        assertEquals(b.dispatchRecv(), b.of(Phases.DISPATCH_RECV));
        assertEquals(b.combineSend(), b.of(Phases.COMBINE_SEND));
        assertThrows(IllegalArgumentException.class, () -> b.of(Phases.COUNT));
        // groups of two: every member of a pair's group gets its expert output, and reduces it
        DeviceBytes g = model(Preset.DEEPSEEK_V3.config(4, 2, 1).build());
        assertEquals(32 * (14336 + 4) + 2 * 32 * 14336, g.combineSend());
        assertEquals(8 * 8 * 4 + 2 * 32 * 14336 + 4 * 7168 * 2, g.combineRecv());
        assertTrue(DeviceBytes.MODEL.contains("dispatch recv = " + DeviceBytes.FORMULAS.get(1)), DeviceBytes.MODEL);
    }

    /** 4 tokens, 32 pairs and 15 rows of {@code config}. */
    private static DeviceBytes model(MoeConfig config) {
        return DeviceBytes.of(config, new BufferLayout(config), 4, 32, 15);
    }

    /**
     * The world's sums equal the per-rank formulas ({@link DeviceBytes#FORMULAS}) evaluated rank by
     * rank from the routing (what each rank sends, receives and reduces), with m differing between
     * the groups, skewed routing, and groups of one and of two.
     */
    @Test
    void theSumsAreThoseOfEveryRank() {
        for (int group : new int[] {1, 2}) {
            MoeConfig c = Preset.DEEPSEEK_V2_LITE.config(4, group, 8).build();
            int[] tokens = group == 1 ? new int[] {8, 5, 0, 3} : new int[] {8, 5};
            Workload w = Workload.generate(c, 3, Workload.Options.defaults().tokensPerGroup(tokens).skewedTo(1));
            BufferLayout l = new BufferLayout(c);
            int k = c.topK();
            long token = l.xBytes() + l.scaleBytes();
            long y = l.yBytes();
            long[] perPhase = new long[4];
            for (int r = 0; r < c.worldSize(); r++) {
                RankInputs own = w.rank(r);
                int member = r % group;
                long rowsSent = 0;
                long ownPairs = 0;
                for (int t = 0; t < own.m(); t++) {
                    Set<Integer> destinations = new HashSet<>();
                    for (int j = 0; j < k; j++) {
                        int e = own.indices()[t * k + j];
                        ownPairs++;
                        if (c.rankOfExpert(e) % group == member) {
                            destinations.add(c.rankOfExpert(e));
                        }
                    }
                    rowsSent += destinations.size();
                }
                long rowsIn = 0;
                long pairsIn = 0;
                for (int g = 0; g < c.numGroups(); g++) {
                    RankInputs in = w.rank(g * group);
                    for (int t = 0; t < in.m(); t++) {
                        boolean row = false;
                        for (int j = 0; j < k; j++) {
                            if (c.rankOfExpert(in.indices()[t * k + j]) == r) {
                                pairsIn++;
                                row = true;
                            }
                        }
                        rowsIn += row ? 1 : 0;
                    }
                }
                long m = own.m();
                perPhase[0] += 4L * m * k + 4L * m * k + rowsSent * (token + l.rowBytes());
                perPhase[1] += rowsIn * BufferLayout.align16(4 * (2 + k)) + pairsIn * token + pairsIn * (token + 4);
                perPhase[2] += pairsIn * (y + 4) + pairsIn * group * y;
                perPhase[3] += 8L * m * k + ownPairs * y + m * c.hidden() * c.outType().bytes();
            }
            DeviceBytes model = TrafficModel.of(w, l).device();
            assertEquals(perPhase[0], model.dispatchSend(), "G=" + group);
            assertEquals(perPhase[1], model.dispatchRecv(), "G=" + group);
            assertEquals(perPhase[2], model.combineSend(), "G=" + group);
            assertEquals(perPhase[3], model.combineRecv(), "G=" + group);
        }
    }
}
