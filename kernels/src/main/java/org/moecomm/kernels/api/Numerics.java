package org.moecomm.kernels.api;

/**
 * Conversions between float32 and the narrow formats the library moves (bf16, fp16,
 * fp8-e4m3), usable inside kernels. Each has this JVM implementation and a one-instruction
 * PTX lowering ({@code cvt.rn...}); the JVM side reproduces the GPU's rounding (round to
 * nearest even; fp8 saturates to the largest finite value, as {@code cvt.rn.satfinite} does)
 * so results compare bit-exactly, NaNs included (the GPU's canonical NaNs).
 *
 * <p>Also the rule of block-scaled fp8 quantisation (docs/contract.md, "Quantising dispatch"):
 * {@link #maxMagnitude}, {@link #fp8e4m3Scale} and {@link #quantizeFp8e4m3}, plain Java that the
 * compiler inlines (IEEE float compare, {@code div.rn.f32}, the fp8 conversion), written once
 * for the kernels and the reference.
 */
public final class Numerics {
    /** Largest finite fp8-e4m3 (OCP "E4M3FN") value. */
    public static final float FP8_E4M3_MAX = 448f;

    /** The NaN the GPU's conversions produce (cvt gives canonical NaNs, dropping payload and sign). */
    private static final float CANONICAL_NAN = Float.intBitsToFloat(0x7fffffff);
    private static final short BF16_NAN = 0x7fff;
    private static final short FP16_NAN = 0x7fff;
    private static final byte FP8_NAN = 0x7f;

    private Numerics() {
    }

    public static float bf16ToFloat(short v) {
        return Float.intBitsToFloat((v & 0xffff) << 16);
    }

    public static short floatToBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if ((bits & 0x7fffffff) > 0x7f800000) {
            return BF16_NAN;
        }
        int roundBit = (bits >>> 16) & 1;
        return (short) ((bits + 0x7fff + roundBit) >>> 16);
    }

    public static float fp16ToFloat(short v) {
        float f = Float.float16ToFloat(v);
        return f != f ? CANONICAL_NAN : f;
    }

    public static short floatToFp16(float f) {
        return f != f ? FP16_NAN : Float.floatToFloat16(f);
    }

    public static float fp8e4m3ToFloat(byte v) {
        return FP8_E4M3_VALUES[v & 0xff];
    }

    /** Every fp8-e4m3 byte's value, so that the JVM decodes one with a load (on a GPU it is one cvt). */
    private static final float[] FP8_E4M3_VALUES = fp8e4m3Values();

    private static float[] fp8e4m3Values() {
        float[] values = new float[256];
        for (int b = 0; b < 256; b++) {
            values[b] = fp8e4m3Value(b);
        }
        return values;
    }

    private static float fp8e4m3Value(int b) {
        int exponent = (b >>> 3) & 0xf;
        int mantissa = b & 7;
        float magnitude;
        if (exponent == 0xf && mantissa == 7) {
            return CANONICAL_NAN;
        } else if (exponent == 0) {
            magnitude = mantissa * 0x1p-9f;
        } else {
            magnitude = (8 + mantissa) * Math.scalb(1f, exponent - 10);
        }
        return (b & 0x80) != 0 ? -magnitude : magnitude;
    }

    /**
     * The larger of {@code max} and {@code |v|}, for the largest magnitude of a block: a NaN
     * {@code v} leaves {@code max} (as C's {@code fmaxf} does), so a block's scale stays finite.
     */
    public static float maxMagnitude(float max, float v) {
        float a = Math.abs(v);
        return a > max ? a : max;
    }

    /**
     * The float32 scale of a block whose largest magnitude is {@code amax}: {@code amax / 448}
     * (an IEEE division, round to nearest even), so the largest value maps to fp8's largest
     * finite value; 1 for a block of zeros (its codes are then zeros of the values' signs).
     */
    public static float fp8e4m3Scale(float amax) {
        return amax > 0f ? amax / FP8_E4M3_MAX : 1f;
    }

    /**
     * The fp8-e4m3 code of {@code v} in a block of scale {@code scale}: the float32 quotient
     * {@code v / scale} (IEEE division) rounded to nearest even and saturated to +-448
     * ({@link #floatToFp8e4m3}); a NaN quotient (a NaN value, or infinity over an infinite scale)
     * is {@code 0x7f}, whatever its sign (the GPU's conversion would keep a NaN's sign).
     */
    public static byte quantizeFp8e4m3(float v, float scale) {
        float q = v / scale;
        return q != q ? FP8_NAN : floatToFp8e4m3(q);
    }

    public static byte floatToFp8e4m3(float f) {
        if (Float.isNaN(f)) {
            return FP8_NAN;
        }
        int sign = (Float.floatToRawIntBits(f) >>> 24) & 0x80;
        float a = Math.abs(f);
        int code;
        if (a >= FP8_E4M3_MAX) {
            code = 0x7e;
        } else if (a < 0x1p-6f) {
            code = (int) Math.rint(a * 0x1p9f);
        } else {
            int exponent = Math.getExponent(a);
            int mantissa = (int) Math.rint((Math.scalb(a, -exponent) - 1f) * 8f);
            code = Math.min(0x7e, ((exponent + 7) << 3) + mantissa);
        }
        return (byte) (sign | code);
    }
}
