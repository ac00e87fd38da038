package org.moecomm.core.reference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.kernels.api.Numerics;

/** The reference's quantisation of tokens on hand-made blocks whose codes and scales are known. */
class Fp8QuantizationTest {
    private static final int B = MoeConfig.SCALE_BLOCK;

    /** One bf16 token of {@code blocks} blocks, every value {@code fill} except those set afterwards. */
    private static float[] token(int blocks, float fill) {
        float[] v = new float[blocks * B];
        Arrays.fill(v, fill);
        return v;
    }

    private static Fp8Quantization.Tokens quantize(DType dtype, float[] values) {
        byte[] x = new byte[values.length * dtype.bytes()];
        Reference.encodeAll(dtype, values, x, 0);
        return Fp8Quantization.of(dtype, x, 1, values.length);
    }

    @Test
    void zerosGetScaleOneAndKeepTheirSigns() {
        float[] v = token(2, 0f);
        v[B + 5] = -0f;
        Fp8Quantization.Tokens q = quantize(DType.BF16, v);
        assertArrayEquals(new float[] {1f, 1f}, q.scales());
        assertEquals((byte) 0x80, q.codes()[B + 5], "negative zero");
        assertEquals((byte) 0x00, q.codes()[B + 6]);
    }

    @Test
    void aBlockReachingFp8sLargestValueHasScaleOneAndTiesGoToEven() {
        float[] v = token(1, 1f);
        v[0] = 448f;
        v[1] = -1.0625f;  // halfway between 1 and 1.125: the even code is 1 (0x38)
        v[2] = 1.1875f;   // halfway between 1.125 and 1.25: the even code is 1.25 (0x3a)
        v[3] = 0x1p-10f;  // half the smallest subnormal: ties to 0
        v[4] = 3 * 0x1p-10f;
        Fp8Quantization.Tokens q = quantize(DType.BF16, v);
        assertEquals(1f, q.scales()[0]);
        assertArrayEquals(new byte[] {0x7e, (byte) 0xb8, 0x3a, 0x00, 0x02, 0x38}, Arrays.copyOf(q.codes(), 6));
    }

    @Test
    void theScaleIsTheLargestMagnitudeOver448AndSmallValuesBecomeSubnormalCodes() {
        float[] v = token(1, 0f);
        v[7] = -3f;
        v[8] = 3f * 0x1p-9f / 448 * 3; // 3 smallest subnormals' worth of the scale
        v[9] = 1e-7f;                  // far below the smallest code: rounds to zero
        v[10] = -1e-7f;
        Fp8Quantization.Tokens q = quantize(DType.FP16, v);
        assertEquals(3f / 448, q.scales()[0]);
        assertEquals((byte) 0xfe, q.codes()[7], "-448");
        assertEquals(Numerics.floatToFp8e4m3(Numerics.fp16ToFloat(Numerics.floatToFp16(v[8])) / (3f / 448)),
                q.codes()[8]);
        assertTrue(q.codes()[8] > 0 && q.codes()[8] < 8, "a subnormal code: " + q.codes()[8]);
        assertEquals((byte) 0x00, q.codes()[9]);
        assertEquals((byte) 0x80, q.codes()[10], "a tiny negative value rounds to -0");
    }

    @Test
    void aQuotientAboveTheLargestValueSaturates() {
        // a magnitude whose rounded scale is a little small: its quotient exceeds 448
        float amax = 0;
        for (int bits = 0x3f80; bits < 0x4000; bits++) {
            float a = Numerics.bf16ToFloat((short) bits);
            if (a / (a / 448f) > 448f) {
                amax = a;
                break;
            }
        }
        assertTrue(amax > 0, "some bf16 magnitude has a quotient above 448");
        float[] v = token(1, 0.5f);
        v[3] = -amax;
        Fp8Quantization.Tokens q = quantize(DType.BF16, v);
        assertEquals((byte) 0xfe, q.codes()[3], "saturates to -448");
    }

    @Test
    void nanIsIgnoredByTheScaleAndCodedAs0x7fAndAnInfinityMakesAnInfiniteScale() {
        float[] v = token(2, 0.25f);
        v[3] = Float.NaN;
        v[4] = 2f;
        v[B + 1] = Float.NEGATIVE_INFINITY;
        Fp8Quantization.Tokens q = quantize(DType.BF16, v);
        assertEquals(2f / 448, q.scales()[0], "NaN does not count");
        assertEquals((byte) 0x7f, q.codes()[3]);
        assertEquals(Float.POSITIVE_INFINITY, q.scales()[1]);
        assertEquals((byte) 0x7f, q.codes()[B + 1], "infinity over an infinite scale is NaN");
        assertEquals((byte) 0x00, q.codes()[B + 2], "a finite value over an infinite scale is 0");
    }

    @Test
    void bf16SubnormalsGiveASubnormalScale() {
        float[] v = token(1, -0x1p-133f);
        v[0] = 0x7fp-133f;
        Fp8Quantization.Tokens q = quantize(DType.BF16, v);
        assertEquals(0x7fp-133f / 448, q.scales()[0]);
        assertTrue(q.scales()[0] < Float.MIN_NORMAL);
        assertEquals((byte) 0x7e, q.codes()[0], "the largest value still maps to 448");
    }

    @Test
    void onlyWholeBlocksOfBf16OrFp16AreQuantised() {
        assertRefused(IllegalArgumentException.class, () -> Fp8Quantization.of(DType.FP8_E4M3, new byte[128], 1, 128),
                "only bf16 and fp16 tokens are quantised, got FP8_E4M3");
        assertRefused(IllegalArgumentException.class, () -> Fp8Quantization.of(DType.BF16, new byte[2 * 144], 1, 144),
                "hidden 144 is not a multiple of 128");
    }
}
