package org.moecomm.core.check;

import java.util.SplittableRandom;
import org.moecomm.core.DType;
import org.moecomm.core.reference.Reference;
import org.moecomm.kernels.api.Numerics;

/**
 * Blocks of bf16 or fp16 values that exercise a quantising dispatch's rule (docs/contract.md,
 * "Quantising dispatch"), one case per block, picked at random: ordinary values; all +0; zeros of
 * both signs; magnitudes from 1 down to 2^-30 (subnormal fp8 codes, and codes that underflow to
 * signed zeros); the dtype's largest finite value among ordinary ones (the others then become
 * tiny codes); only the dtype's subnormals (for bf16 a subnormal float32 scale); NaNs among
 * ordinary values (ignored by the block's largest magnitude, each coded 0x7f); an infinity (an
 * infinite scale); values of one magnitude (every code at the saturation boundary); and exact
 * midpoints between fp8 values beside 448 (scale 1: ties to even).
 */
final class EdgeValues {
    private static final int CASES = 10;

    private EdgeValues() {
    }

    /** Writes {@code n} values of one random case as elements {@code first, first + 1, ...} of {@code x}. */
    static void block(DType dtype, SplittableRandom rnd, byte[] x, int first, int n) {
        int kind = rnd.nextInt(CASES);
        float largest = dtype == DType.BF16 ? Float.intBitsToFloat(0x7f7f0000) : 65504f;
        float smallest = dtype == DType.BF16 ? 0x1p-133f : 0x1p-24f; // smallest subnormal
        int subnormals = dtype == DType.BF16 ? 0x7f : 0x3ff;
        int special = rnd.nextInt(n);
        for (int i = 0; i < n; i++) {
            float ordinary = (float) (rnd.nextDouble() * 2 - 1);
            float sign = rnd.nextBoolean() ? 1f : -1f;
            float v = switch (kind) {
                case 0 -> ordinary;
                case 1 -> 0f;
                case 2 -> sign * 0f;
                case 3 -> sign * (float) Math.pow(2, -30 * rnd.nextDouble());
                case 4 -> i == special ? sign * largest : ordinary;
                case 5 -> sign * smallest * (1 + rnd.nextInt(subnormals));
                case 6 -> rnd.nextInt(8) == 0 ? Float.NaN : ordinary;
                case 7 -> i == special ? sign * Float.POSITIVE_INFINITY : ordinary;
                case 8 -> sign * 0.75f;
                default -> i == special ? Numerics.FP8_E4M3_MAX : sign * fp8Midpoint(rnd);
            };
            Reference.encode(dtype, v, x, first + i);
        }
    }

    /** Halfway between two neighbouring non-negative fp8-e4m3 values (exact in bf16 and fp16). */
    private static float fp8Midpoint(SplittableRandom rnd) {
        int code = rnd.nextInt(0x7e);
        return (Numerics.fp8e4m3ToFloat((byte) code) + Numerics.fp8e4m3ToFloat((byte) (code + 1))) / 2;
    }
}
