package org.moecomm.core.reference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;

class ReferenceTest {
    private static final int H = 16;

    /** W=2, E=4 (L=2), K=2, bf16; rank 0: t0 -> {1, 2}, t1 -> {3, -1}; rank 1: t0 -> {0, 1}. */
    private static MoeConfig config(int groupSize) {
        return MoeConfig.builder().worldSize(2).groupSize(groupSize).numExperts(4).topK(2).hidden(H)
                .maxTokensPerRank(4).inType(DType.BF16).expertOutType(DType.FP32).outType(DType.BF16).build();
    }

    private static RankInputs inputs(int m, int[] ids, float[] weights, int seedValue) {
        byte[] x = new byte[m * H * 2];
        for (int i = 0; i < m * H; i++) {
            Reference.encode(DType.BF16, seedValue + i * 0.25f, x, i);
        }
        return new RankInputs(m, x, new float[0], ids, weights);
    }

    private static final RankInputs RANK0 = inputs(2, new int[] {1, 2, 3, -1}, new float[] {0.5f, 0.25f, 2f, 9f}, 0);
    private static final RankInputs RANK1 = inputs(1, new int[] {0, 1}, new float[] {1f, 3f}, 100);

    private static Set<String> pairs(List<Reference.ExpertRow> rows) {
        return rows.stream().map(r -> r.group() + ":" + r.token() + ":" + r.slot()).collect(Collectors.toSet());
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"BF16", "FP16", "FP32", "FP8_E4M3"})
    void rowsDecodeAndEncodeAsTheirElementsDo(DType dtype) {
        SplittableRandom rnd = new SplittableRandom(dtype.ordinal());
        int n = 777;
        byte[] bytes = new byte[n * dtype.bytes()];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) rnd.nextInt(256); // every bit pattern, NaNs and infinities included
        }
        float[] all = Reference.decodeAll(dtype, bytes, n);
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            assertEquals(Float.floatToRawIntBits(Reference.decode(dtype, bytes, i)), Float.floatToRawIntBits(all[i]),
                    "element " + i);
            values[i] = (float) (rnd.nextDouble() * 1e4 - 5e3);
        }
        values[0] = Float.NaN;
        values[1] = Float.POSITIVE_INFINITY;
        byte[] one = new byte[(n + 3) * dtype.bytes()];
        byte[] bulk = new byte[one.length];
        for (int i = 0; i < n; i++) {
            Reference.encode(dtype, values[i], one, 3 + i);
        }
        Reference.encodeAll(dtype, values, bulk, 3);
        assertArrayEquals(one, bulk);
        // ranges inside larger arrays: elements [5, n) decoded, values [0, n - 4) stored from element 7 on
        float[] part = new float[n];
        Reference.decodeRange(dtype, bytes, 5, part, n - 5);
        for (int i = 5; i < n; i++) {
            assertEquals(Float.floatToRawIntBits(all[i]), Float.floatToRawIntBits(part[i - 5]), "element " + i);
        }
        byte[] range = new byte[(n + 3) * dtype.bytes()];
        Reference.encodeRange(dtype, values, n - 4, range, 7);
        assertArrayEquals(Arrays.copyOfRange(one, 3 * dtype.bytes(), (n - 1) * dtype.bytes()),
                Arrays.copyOfRange(range, 7 * dtype.bytes(), (n + 3) * dtype.bytes()));
    }

    @Test
    void dispatchListsEveryPairOnItsExpertsRank() {
        Reference ref = new Reference(config(1), List.of(RANK0, RANK1));
        List<List<Reference.ExpertRow>> r0 = ref.dispatch(0);
        assertEquals(Set.of("1:0:0"), pairs(r0.get(0)));            // expert 0
        assertEquals(Set.of("0:0:0", "1:0:1"), pairs(r0.get(1)));   // expert 1
        List<List<Reference.ExpertRow>> r1 = ref.dispatch(1);
        assertEquals(Set.of("0:0:1"), pairs(r1.get(0)));            // expert 2
        assertEquals(Set.of("0:1:0"), pairs(r1.get(1)));            // expert 3 (slot 1 of token 1 is -1)
        assertArrayEquals(new int[] {1, 2}, ref.expertCounts(0));
        assertArrayEquals(ref.tokenBytes(1, 0), r0.get(0).getFirst().tokenBytes());
    }

    @Test
    void combineIsTheWeightedSumInIncreasingK() {
        Reference ref = new Reference(config(1), List.of(RANK0, RANK1));
        // expert e returns the constant (e + 1) * 1.5 in fp32, whatever the token
        Reference.ExpertFunction f = (e, g, t) -> {
            byte[] y = new byte[H * 4];
            for (int i = 0; i < H; i++) {
                Reference.encode(DType.FP32, (e + 1) * 1.5f, y, i);
            }
            return y;
        };
        byte[] out0 = ref.combine(0, f);
        assertEquals(2 * H * 2, out0.length);
        // token 0: 0.5 * 3 + 0.25 * 4.5 = 2.625; token 1: 2 * 6 = 12 (slot 1 is -1, weight 9 ignored)
        assertEquals(2.625f, Reference.decode(DType.BF16, out0, 0));
        assertEquals(12f, Reference.decode(DType.BF16, out0, H + 3));
        byte[] out1 = ref.combine(1, f);
        assertEquals(1 * 1.5f + 3 * 3f, Reference.decode(DType.BF16, out1, 5));
    }

    @Test
    void accumulationOrderIsFloat32FromZeroInIncreasingK() {
        MoeConfig c = MoeConfig.builder().worldSize(1).numExperts(3).topK(3).hidden(H).maxTokensPerRank(1)
                .expertOutType(DType.FP32).outType(DType.BF16).build();
        float[] values = {1e8f, 1f, -1e8f};
        RankInputs in = inputs(1, new int[] {0, 1, 2}, new float[] {1f, 1f, 1f}, 0);
        Reference ref = new Reference(c, List.of(in));
        byte[] out = ref.combine(0, (e, g, t) -> {
            byte[] y = new byte[H * 4];
            for (int i = 0; i < H; i++) {
                Reference.encode(DType.FP32, values[e], y, i);
            }
            return y;
        });
        // (0 + 1e8 + 1) - 1e8 == 0 in float32; any other order or a wider accumulator gives 1
        assertEquals(0f, Reference.decode(DType.BF16, out, 0));
    }

    /**
     * The two ranks of one group share its tokens: the four (token, expert) pairs are dispatched
     * once across the two, each row carrying its token's bytes, and both get the same combine
     * output, the weighted sum of the experts' outputs (expert e returns (e + 1) * its token).
     */
    @Test
    void groupMembersSeeTheSameTokensAndOutputs() {
        int[] ids = {1, 2, 3, 0};
        float[] weights = {1, 2, 3, 4};
        RankInputs a = inputs(2, ids, weights, 7);
        Reference ref = new Reference(config(2), List.of(a, a));
        Set<String> dispatched = new HashSet<>();
        for (int rank = 0; rank < 2; rank++) {
            for (List<Reference.ExpertRow> expert : ref.dispatch(rank)) {
                for (Reference.ExpertRow row : expert) {
                    assertTrue(dispatched.add(row.group() + ":" + row.token() + ":" + row.slot()), row.toString());
                    assertArrayEquals(Arrays.copyOfRange(a.x(), row.token() * H * 2, (row.token() + 1) * H * 2),
                            row.tokenBytes(), row.toString());
                }
            }
        }
        assertEquals(Set.of("0:0:0", "0:0:1", "0:1:0", "0:1:1"), dispatched);
        Reference.ExpertFunction f = (e, g, t) -> {
            byte[] token = ref.tokenBytes(g, t);
            byte[] y = new byte[H * 4];
            for (int i = 0; i < H; i++) {
                Reference.encode(DType.FP32, (e + 1) * Reference.decode(DType.BF16, token, i), y, i);
            }
            return y;
        };
        byte[] out = ref.combine(0, f);
        assertArrayEquals(out, ref.combine(1, f));
        for (int t = 0; t < 2; t++) {
            for (int i = 0; i < H; i++) {
                float x = Reference.decode(DType.BF16, a.x(), t * H + i);
                float sum = 0;
                for (int k = 0; k < 2; k++) {
                    sum += weights[t * 2 + k] * ((ids[t * 2 + k] + 1) * x);
                }
                assertEquals(DType.BF16.round(sum), Reference.decode(DType.BF16, out, t * H + i),
                        "token " + t + " element " + i);
            }
        }
    }

    @Test
    void rejectsInconsistentGlobalViews() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new Reference(config(2), List.of(RANK0, RANK1)));
        assertTrue(e.getMessage().contains("token group"), e.getMessage());
        assertRefused(IllegalArgumentException.class, () -> new Reference(config(1), List.of(RANK0)),
                "need inputs of 2 ranks, got 1");
        RankInputs badId = inputs(1, new int[] {4, 0}, new float[2], 0);
        assertRefused(IllegalArgumentException.class, () -> new Reference(config(1), List.of(badId, RANK1)),
                "rank 0: expert id 4 out of range");
    }

    @Test
    void encodeDecodeRoundTrips() {
        byte[] b = new byte[8];
        for (DType t : List.of(DType.BF16, DType.FP16, DType.FP32, DType.FP8_E4M3)) {
            Reference.encode(t, -1.5f, b, 1);
            assertEquals(-1.5f, Reference.decode(t, b, 1), t.label());
        }
    }
}
