package org.moecomm.kernels.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

/**
 * Checks {@link Numerics} against independent computations: decoding from the format's
 * definition (in double) and encoding as "the nearest representable value, ties to the even
 * code", found by searching the format's values.
 */
class NumericsTest {
    private static final int SAMPLES = 200_000;

    // ---- independent references ----

    /** Value of a binary format code with {@code mantissaBits} and exponent bias {@code bias}, as double. */
    private static double decode(int code, int exponentBits, int mantissaBits, int bias) {
        int mantissa = code & ((1 << mantissaBits) - 1);
        int exponent = (code >>> mantissaBits) & ((1 << exponentBits) - 1);
        int sign = code >>> (mantissaBits + exponentBits) & 1;
        double magnitude = exponent == 0
                ? mantissa * Math.pow(2, 1 - bias - mantissaBits)
                : (1 + mantissa / Math.pow(2, mantissaBits)) * Math.pow(2, exponent - bias);
        return sign == 1 ? -magnitude : magnitude;
    }

    /**
     * Code of the representable non-negative value nearest to {@code a >= 0} among codes
     * {@code 0..maxCode} (values increasing with the code); ties go to the even code. Returns
     * -1 when {@code a} lies at or beyond the midpoint between the largest value and
     * {@code beyond} (the next value if the exponent range did not end).
     */
    private static int nearestCode(double a, double[] values, int maxCode, double beyond) {
        if (a >= (values[maxCode] + beyond) / 2) {
            return a == (values[maxCode] + beyond) / 2 && (maxCode & 1) == 0 ? maxCode : -1;
        }
        int lo = 0;
        int hi = maxCode;
        while (lo < hi) { // first code whose value is >= a
            int mid = (lo + hi) >>> 1;
            if (values[mid] >= a) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if (lo == 0 || values[lo] == a) {
            return lo;
        }
        double below = a - values[lo - 1];
        double above = values[lo] - a;
        if (below < above) {
            return lo - 1;
        }
        if (above < below) {
            return lo;
        }
        return (lo & 1) == 0 ? lo : lo - 1;
    }

    private static double[] positiveValues(int count, int exponentBits, int mantissaBits, int bias) {
        double[] v = new double[count];
        for (int c = 0; c < count; c++) {
            v[c] = decode(c, exponentBits, mantissaBits, bias);
        }
        return v;
    }

    private static final double[] BF16 = positiveValues(0x7f80, 8, 7, 127);
    private static final double[] FP16 = positiveValues(0x7c00, 5, 10, 15);
    private static final double[] FP8 = positiveValues(0x7f, 4, 3, 7);

    private static short expectedBf16(float f) {
        int sign = Float.floatToRawIntBits(f) >>> 31 << 15;
        int code = nearestCode(Math.abs((double) f), BF16, 0x7f7f, Math.pow(2, 128));
        return (short) (sign | (code < 0 ? 0x7f80 : code));
    }

    private static short expectedFp16(float f) {
        int sign = Float.floatToRawIntBits(f) >>> 31 << 15;
        int code = nearestCode(Math.abs((double) f), FP16, 0x7bff, 65536);
        return (short) (sign | (code < 0 ? 0x7c00 : code));
    }

    private static byte expectedFp8(float f) {
        int sign = Float.floatToRawIntBits(f) >>> 31 << 7;
        double a = Math.abs((double) f);
        // satfinite: anything at or above the largest finite value stays there
        int code = a >= 448 ? 0x7e : nearestCode(a, FP8, 0x7e, 480);
        return (byte) (sign | code);
    }

    /** Random floats over the whole range, with extra weight near the narrow formats' ranges and subnormals. */
    private static float randomFloat(SplittableRandom r) {
        switch (r.nextInt(4)) {
            case 0:
                return Float.intBitsToFloat(r.nextInt()); // anything, NaN and infinities included
            case 1:
                return (float) ((r.nextDouble() * 2 - 1) * Math.pow(2, r.nextInt(-30, 20)));
            case 2:
                return (float) ((r.nextDouble() * 2 - 1) * 500);
            default: {
                // exactly halfway between two neighbours of a random narrow value: exercises ties
                int bits = r.nextInt() & 0x8fffffff;
                return Float.intBitsToFloat((bits & 0xffff0000) | 0x8000);
            }
        }
    }

    // ---- bf16 ----

    @Test
    void bf16DecodesEveryCodeAndRoundTrips() {
        for (int c = 0; c < 0x10000; c++) {
            float f = Numerics.bf16ToFloat((short) c);
            if ((c & 0x7fff) > 0x7f80) {
                assertTrue(Float.isNaN(f));
                assertEquals((short) 0x7fff, Numerics.floatToBf16(f), "NaN stays NaN");
                continue;
            }
            if ((c & 0x7fff) < 0x7f80) {
                assertEquals(decode(c, 8, 7, 127), f, 0.0, "bf16 code " + c);
            }
            assertEquals((short) c, Numerics.floatToBf16(f), "round trip of bf16 code " + c);
        }
    }

    @Test
    void bf16RoundsToNearestEven() {
        assertEquals((short) 0x3f80, Numerics.floatToBf16(1f + 0x1p-8f), "tie rounds down to the even 1.0");
        assertEquals((short) 0x3f82, Numerics.floatToBf16(1f + 3 * 0x1p-8f), "tie rounds up to the even code");
        assertEquals((short) 0x3f81, Numerics.floatToBf16(1f + 0x1p-8f + 0x1p-20f), "above the tie rounds up");
        assertEquals((short) 0x7f80, Numerics.floatToBf16(Float.MAX_VALUE), "overflow to infinity");
        assertEquals((short) 0xff80, Numerics.floatToBf16(Float.NEGATIVE_INFINITY));
        assertEquals((short) 0x0001, Numerics.floatToBf16(Float.MIN_VALUE * 65536), "smallest bf16 subnormal");
        assertEquals((short) 0x8000, Numerics.floatToBf16(-Float.MIN_VALUE), "tiny negative rounds to -0");
        SplittableRandom r = new SplittableRandom(11);
        for (int i = 0; i < SAMPLES; i++) {
            float f = randomFloat(r);
            if (!Float.isNaN(f)) {
                assertEquals(expectedBf16(f), Numerics.floatToBf16(f), () -> "bf16 of " + f);
            }
        }
    }

    // ---- fp16 ----

    @Test
    void fp16DecodesEveryCodeAndRoundTrips() {
        for (int c = 0; c < 0x10000; c++) {
            float f = Numerics.fp16ToFloat((short) c);
            if ((c & 0x7fff) > 0x7c00) {
                assertTrue(Float.isNaN(f));
                continue;
            }
            if ((c & 0x7fff) < 0x7c00) {
                assertEquals(decode(c, 5, 10, 15), f, 0.0, "fp16 code " + c);
            }
            assertEquals((short) c, Numerics.floatToFp16(f), "round trip of fp16 code " + c);
        }
    }

    @Test
    void fp16RoundsToNearestEvenWithSubnormals() {
        assertEquals((short) 0x3c00, Numerics.floatToFp16(1f + 0x1p-11f), "tie rounds down to the even 1.0");
        assertEquals((short) 0x3c02, Numerics.floatToFp16(1f + 3 * 0x1p-11f), "tie rounds up to the even code");
        assertEquals((short) 0x0001, Numerics.floatToFp16(0x1p-24f), "smallest subnormal");
        assertEquals((short) 0x0000, Numerics.floatToFp16(0x1p-25f), "half the smallest subnormal ties to 0");
        assertEquals((short) 0x0002, Numerics.floatToFp16(3 * 0x1p-25f), "subnormal tie rounds to even");
        assertEquals((short) 0x7bff, Numerics.floatToFp16(65519f), "below the overflow midpoint");
        assertEquals((short) 0x7c00, Numerics.floatToFp16(65520f), "overflow midpoint rounds to infinity");
        SplittableRandom r = new SplittableRandom(12);
        for (int i = 0; i < SAMPLES; i++) {
            float f = randomFloat(r);
            if (!Float.isNaN(f)) {
                assertEquals(expectedFp16(f), Numerics.floatToFp16(f), () -> "fp16 of " + f);
            }
        }
    }

    // ---- fp8 e4m3 ----

    @Test
    void fp8DecodesEveryCodeAndRoundTrips() {
        for (int c = 0; c < 0x100; c++) {
            float f = Numerics.fp8e4m3ToFloat((byte) c);
            if ((c & 0x7f) == 0x7f) {
                assertTrue(Float.isNaN(f), "code " + c + " is NaN");
                assertTrue(Float.isNaN(Numerics.fp8e4m3ToFloat(Numerics.floatToFp8e4m3(f))));
                continue;
            }
            assertEquals(decode(c, 4, 3, 7), f, 0.0, "fp8 code " + c);
            assertEquals((byte) c, Numerics.floatToFp8e4m3(f), "round trip of fp8 code " + c);
        }
        assertEquals(448f, Numerics.fp8e4m3ToFloat((byte) 0x7e));
        assertEquals(0x1p-9f, Numerics.fp8e4m3ToFloat((byte) 0x01), "smallest subnormal");
        assertEquals(7 * 0x1p-9f, Numerics.fp8e4m3ToFloat((byte) 0x07), "largest subnormal");
        assertEquals(0x1p-6f, Numerics.fp8e4m3ToFloat((byte) 0x08), "smallest normal");
    }

    @Test
    void fp8RoundsToNearestEvenAndSaturates() {
        assertEquals((byte) 0x38, Numerics.floatToFp8e4m3(1f + 0x1p-4f), "tie rounds down to the even 1.0");
        assertEquals((byte) 0x3a, Numerics.floatToFp8e4m3(1f + 3 * 0x1p-4f), "tie rounds up to the even code");
        assertEquals((byte) 0x00, Numerics.floatToFp8e4m3(0x1p-10f), "half the smallest subnormal ties to 0");
        assertEquals((byte) 0x02, Numerics.floatToFp8e4m3(3 * 0x1p-10f), "subnormal tie rounds to even");
        assertEquals((byte) 0x08, Numerics.floatToFp8e4m3(15 * 0x1p-10f), "largest subnormal tie rounds to normal");
        assertEquals((byte) 0x80, Numerics.floatToFp8e4m3(-0f), "negative zero");
        assertEquals((byte) 0x7e, Numerics.floatToFp8e4m3(448f));
        assertEquals((byte) 0x7e, Numerics.floatToFp8e4m3(470f), "beyond the largest finite value saturates");
        assertEquals((byte) 0x7e, Numerics.floatToFp8e4m3(1e30f));
        assertEquals((byte) 0x7e, Numerics.floatToFp8e4m3(Float.POSITIVE_INFINITY));
        assertEquals((byte) 0xfe, Numerics.floatToFp8e4m3(-1e9f), "saturates to -448");
        assertEquals((byte) 0xfe, Numerics.floatToFp8e4m3(Float.NEGATIVE_INFINITY));
        assertEquals((byte) 0x7d, Numerics.floatToFp8e4m3(416f + 15f), "below the midpoint between 416 and 448");
        assertTrue(Float.isNaN(Numerics.fp8e4m3ToFloat(Numerics.floatToFp8e4m3(Float.NaN))));
        SplittableRandom r = new SplittableRandom(13);
        for (int i = 0; i < SAMPLES; i++) {
            float f = randomFloat(r);
            if (!Float.isNaN(f)) {
                assertEquals(expectedFp8(f), Numerics.floatToFp8e4m3(f), () -> "fp8 of " + f);
            }
        }
    }

    // ---- block-scaled fp8 quantisation ----

    /** The fp8 code of a quotient by the definition: NaN gives 0x7f, else the nearest code (ties even), saturated. */
    private static byte expectedQuantized(double quotient) {
        return Double.isNaN(quotient) ? (byte) 0x7f : expectedFp8((float) quotient);
    }

    @Test
    void maxMagnitudeIgnoresNaNAndSigns() {
        assertEquals(3f, Numerics.maxMagnitude(2f, -3f));
        assertEquals(2f, Numerics.maxMagnitude(2f, -1f));
        assertEquals(2f, Numerics.maxMagnitude(2f, Float.NaN), "a NaN never wins");
        assertEquals(0f, Numerics.maxMagnitude(0f, Float.intBitsToFloat(0xffc00000)), "nor a negative NaN");
        assertEquals(Float.POSITIVE_INFINITY, Numerics.maxMagnitude(2f, Float.NEGATIVE_INFINITY));
        assertEquals(Float.floatToRawIntBits(0f), Float.floatToRawIntBits(Numerics.maxMagnitude(0f, -0f)),
                "the magnitude of -0 is +0");
        assertEquals(Float.MIN_VALUE, Numerics.maxMagnitude(0f, -Float.MIN_VALUE), "subnormals count");
    }

    @Test
    void fp8ScaleIsTheLargestMagnitudeOver448OrOneForZeros() {
        assertEquals(1f, Numerics.fp8e4m3Scale(0f), "a block of zeros");
        assertEquals(1f, Numerics.fp8e4m3Scale(448f));
        assertEquals(Float.POSITIVE_INFINITY, Numerics.fp8e4m3Scale(Float.POSITIVE_INFINITY));
        assertTrue(Numerics.fp8e4m3Scale(0x1p-133f) < Float.MIN_NORMAL, "a bf16 subnormal gives a subnormal scale");
        SplittableRandom r = new SplittableRandom(14);
        for (int i = 0; i < SAMPLES; i++) {
            float amax = Math.abs(randomFloat(r));
            if (Float.isNaN(amax) || amax == 0f) {
                continue;
            }
            // a quotient computed in double and rounded once is the correctly rounded float quotient
            assertEquals((float) ((double) amax / 448), Numerics.fp8e4m3Scale(amax), () -> "scale of " + amax);
        }
    }

    @Test
    void quantizedValuesAreTheNearestCodesOfTheirQuotients() {
        assertEquals((byte) 0x00, Numerics.quantizeFp8e4m3(0f, 1f));
        assertEquals((byte) 0x80, Numerics.quantizeFp8e4m3(-0f, 1f), "negative zero keeps its sign");
        assertEquals((byte) 0x80, Numerics.quantizeFp8e4m3(-0x1p-20f, 1f), "a tiny negative rounds to -0");
        assertEquals((byte) 0x7f, Numerics.quantizeFp8e4m3(Float.NaN, 2f));
        assertEquals((byte) 0x7f, Numerics.quantizeFp8e4m3(Float.intBitsToFloat(0xffc00000), 2f),
                "a negative NaN gives the same code");
        assertEquals((byte) 0x7f, Numerics.quantizeFp8e4m3(Float.NEGATIVE_INFINITY, Float.POSITIVE_INFINITY));
        assertEquals((byte) 0x80, Numerics.quantizeFp8e4m3(-5f, Float.POSITIVE_INFINITY));
        assertEquals((byte) 0x7e, Numerics.quantizeFp8e4m3(1f, Numerics.fp8e4m3Scale(1f)),
                "the largest value maps to 448");
        assertEquals((byte) 0x01, Numerics.quantizeFp8e4m3(0x1p-9f, 1f), "the smallest subnormal code");
        assertEquals((byte) 0x38, Numerics.quantizeFp8e4m3(1f + 0x1p-4f, 1f), "a tie rounds to the even code");
        SplittableRandom r = new SplittableRandom(15);
        for (int i = 0; i < SAMPLES; i++) {
            float v = randomFloat(r);
            float amax = Math.abs(v) * (float) (1 + r.nextDouble() * (r.nextBoolean() ? 1 : 1e6));
            float scale = Numerics.fp8e4m3Scale(Float.isNaN(amax) ? 0f : amax);
            assertEquals(expectedQuantized((double) v / scale), Numerics.quantizeFp8e4m3(v, scale),
                    () -> "code of " + v + " with scale " + scale);
        }
    }
}
