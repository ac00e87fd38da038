package org.moecomm.kernels.testkernels;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.Numerics;

/**
 * Compiler test kernels: the arithmetic of each primitive type, written to be compared bit for
 * bit between the CPU runner and the GPU. Each kernel is elementwise: thread {@code i < n} reads
 * element {@code i} of the inputs and writes {@code *_RESULTS} results to
 * {@code out[i * *_RESULTS ...]}; any 1-D grid with at least {@code n} threads works.
 *
 * <p>Float and double results are stored as values; compare them bitwise, except that any two
 * NaNs are equal (the GPU makes the canonical NaN where the JVM keeps an operand's payload).
 * Integer division by zero is undefined on the GPU: the kernels divide by {@code y} only where
 * {@code y != 0}.
 */
public final class ArithmeticKernels {
    /** ints written per element by {@link #intOps}. */
    public static final int INT_RESULTS = 24;
    /** longs written per element by {@link #longOps}. */
    public static final int LONG_RESULTS = 22;
    /** floats written per element by {@link #floatOps}. */
    public static final int FLOAT_RESULTS = 20;
    /** doubles written per element by {@link #doubleOps}. */
    public static final int DOUBLE_RESULTS = 16;
    /** ints written per element by {@link #narrowings}. */
    public static final int NARROW_RESULTS = 20;
    /** ints written per element by {@link #constantDivisions}: a quotient and a remainder per int divisor. */
    public static final int INT_CONSTANT_DIVISION_RESULTS = 38;
    /** longs written per element by {@link #constantDivisions}: the same per long divisor. */
    public static final int LONG_CONSTANT_DIVISION_RESULTS = 10;

    private ArithmeticKernels() {
    }

    /**
     * Int arithmetic, shifts (counts masked to 5 bits), bit operations, comparisons,
     * {@code Math} min/max/abs, narrowing ({@code i2b, i2s, i2c}) and bit counts.
     * Args: {@code a, b} int[n]; {@code out} int[n * INT_RESULTS]; {@code n}. Grid: >= n threads.
     * Include {@code Integer.MIN_VALUE} and {@code -1} among the inputs: {@code MIN / -1} must
     * give {@code MIN} and {@code MIN % -1} zero, as on the JVM.
     */
    public static void intOps(KernelContext ctx, Buf a, Buf b, Buf out, int n) {
        int i = ctx.globalIdx();
        if (i >= n) {
            return;
        }
        int x = a.getInt(i);
        int y = b.getInt(i);
        long o = (long) i * INT_RESULTS;
        out.setInt(o, x + y);
        out.setInt(o + 1, x - y);
        out.setInt(o + 2, x * y);
        out.setInt(o + 3, y != 0 ? x / y : 0);
        out.setInt(o + 4, y != 0 ? x % y : 0);
        out.setInt(o + 5, x & y);
        out.setInt(o + 6, x | y);
        out.setInt(o + 7, x ^ y);
        out.setInt(o + 8, x << y);
        out.setInt(o + 9, x >> y);
        out.setInt(o + 10, x >>> y);
        out.setInt(o + 11, -x);
        out.setInt(o + 12, ~x);
        out.setInt(o + 13, x < y ? 1 : 0);
        out.setInt(o + 14, (x <= y ? 1 : 0) | (x == y ? 2 : 0) | (x != y ? 4 : 0) | (x > y ? 8 : 0) | (x >= y ? 16 : 0));
        out.setInt(o + 15, Math.min(x, y));
        out.setInt(o + 16, Math.max(x, y));
        out.setInt(o + 17, Math.abs(x));
        out.setInt(o + 18, (byte) x);
        out.setInt(o + 19, (short) x);
        out.setInt(o + 20, (char) x);
        out.setInt(o + 21, Integer.bitCount(x) + 100 * Integer.numberOfLeadingZeros(x) + 10000 * Integer.numberOfTrailingZeros(y));
        out.setInt(o + 22, (x << 3) + (y >> 35) + (x >>> -1));
        out.setInt(o + 23, Integer.compare(x, y) + 3 * Integer.signum(y) + Integer.rotateLeft(x, 7));
    }

    /**
     * Long arithmetic, shifts (counts masked to 6 bits), comparisons ({@code lcmp}),
     * {@code Math} min/max/abs and bit counts. Args: {@code a, b} long[n]; {@code out}
     * long[n * LONG_RESULTS]; {@code n}. Grid: >= n threads. Include {@code Long.MIN_VALUE} and
     * {@code -1} among the inputs.
     */
    public static void longOps(KernelContext ctx, Buf a, Buf b, Buf out, int n) {
        int i = ctx.globalIdx();
        if (i >= n) {
            return;
        }
        long x = a.getLong(i);
        long y = b.getLong(i);
        long o = (long) i * LONG_RESULTS;
        int s = (int) y;
        out.setLong(o, x + y);
        out.setLong(o + 1, x - y);
        out.setLong(o + 2, x * y);
        out.setLong(o + 3, y != 0 ? x / y : 0);
        out.setLong(o + 4, y != 0 ? x % y : 0);
        out.setLong(o + 5, x & y);
        out.setLong(o + 6, x | y);
        out.setLong(o + 7, x ^ y);
        out.setLong(o + 8, x << s);
        out.setLong(o + 9, x >> s);
        out.setLong(o + 10, x >>> s);
        out.setLong(o + 11, -x);
        out.setLong(o + 12, ~x);
        out.setLong(o + 13, x < y ? 1 : 0);
        out.setLong(o + 14, (x <= y ? 1 : 0) | (x == y ? 2 : 0) | (x != y ? 4 : 0) | (x > y ? 8 : 0) | (x >= y ? 16 : 0));
        out.setLong(o + 15, Math.min(x, y));
        out.setLong(o + 16, Math.max(x, y));
        out.setLong(o + 17, Math.abs(x));
        out.setLong(o + 18, Long.compare(x, y));
        out.setLong(o + 19, Long.bitCount(x) + 100L * Long.numberOfLeadingZeros(x) + 10000L * Long.numberOfTrailingZeros(y));
        out.setLong(o + 20, (x << 40) + (y >> 70) + (x >>> -1));
        out.setLong(o + 21, x * 0x9E3779B97F4A7C15L + (y ^ (y >>> 29)));
    }

    /**
     * Division and remainder by divisors the compiler knows (literals, reaching the division
     * through an inlined helper's parameter as a specialised parameter does), which it lowers
     * without {@code div}: for ints 1 and -1, powers of two of either sign up to 2^30, other
     * divisors of either sign by their magic numbers, and {@code MIN_VALUE} (the generic
     * division); for longs 1, -1 and powers of two of either sign, and 3 (the generic division).
     * Args: {@code ints} int[n], {@code longs} long[n]; {@code intOut} int[n *
     * INT_CONSTANT_DIVISION_RESULTS], {@code longOut} long[n * LONG_CONSTANT_DIVISION_RESULTS];
     * {@code n}. Include {@code MIN_VALUE}, {@code MAX_VALUE}, 0 and -1 among the inputs.
     */
    public static void constantDivisions(KernelContext ctx, Buf ints, Buf longs, Buf intOut, Buf longOut, int n) {
        int i = ctx.globalIdx();
        if (i >= n) {
            return;
        }
        int x = ints.getInt(i);
        long o = (long) i * INT_CONSTANT_DIVISION_RESULTS;
        divideInt(intOut, o, x, 1);
        divideInt(intOut, o + 2, x, -1);
        divideInt(intOut, o + 4, x, 2);
        divideInt(intOut, o + 6, x, -2);
        divideInt(intOut, o + 8, x, 8);
        divideInt(intOut, o + 10, x, 1024);
        divideInt(intOut, o + 12, x, -4096);
        divideInt(intOut, o + 14, x, 1 << 30);
        divideInt(intOut, o + 16, x, -(1 << 30));
        divideInt(intOut, o + 18, x, 3);
        divideInt(intOut, o + 20, x, -3);
        divideInt(intOut, o + 22, x, 7);
        divideInt(intOut, o + 24, x, 56);
        divideInt(intOut, o + 26, x, 7440);
        divideInt(intOut, o + 28, x, -7440);
        divideInt(intOut, o + 30, x, 1_000_000_007);
        divideInt(intOut, o + 32, x, Integer.MAX_VALUE);
        divideInt(intOut, o + 34, x, -Integer.MAX_VALUE);
        divideInt(intOut, o + 36, x, Integer.MIN_VALUE);
        long y = longs.getLong(i);
        long p = (long) i * LONG_CONSTANT_DIVISION_RESULTS;
        divideLong(longOut, p, y, 1);
        divideLong(longOut, p + 2, y, -1);
        divideLong(longOut, p + 4, y, 64);
        divideLong(longOut, p + 6, y, -(1L << 62));
        divideLong(longOut, p + 8, y, 3);
    }

    /** {@code x / d} and {@code x % d} to {@code out[at]} and {@code out[at + 1]}. */
    static void divideInt(Buf out, long at, int x, int d) {
        out.setInt(at, x / d);
        out.setInt(at + 1, x % d);
    }

    /** {@code x / d} and {@code x % d} to {@code out[at]} and {@code out[at + 1]}. */
    static void divideLong(Buf out, long at, long x, long d) {
        out.setLong(at, x / d);
        out.setLong(at + 1, x % d);
    }

    /**
     * Float arithmetic (round to nearest, no contraction into FMA), {@code Math.fma}, negation,
     * {@code Math} min/max/abs (NaN and signed zeros as on the JVM), {@code Math.sqrt} through
     * double, comparisons with NaN ({@code fcmpl}/{@code fcmpg}) and {@code Float.compare}.
     * Args: {@code a, b} float[n]; {@code out} float[n * FLOAT_RESULTS]; {@code n}. Grid: >= n
     * threads. Include NaN, infinities, signed zeros and subnormals among the inputs.
     */
    public static void floatOps(KernelContext ctx, Buf a, Buf b, Buf out, int n) {
        int i = ctx.globalIdx();
        if (i >= n) {
            return;
        }
        float x = a.getFloat(i);
        float y = b.getFloat(i);
        long o = (long) i * FLOAT_RESULTS;
        out.setFloat(o, x + y);
        out.setFloat(o + 1, x - y);
        out.setFloat(o + 2, x * y);
        out.setFloat(o + 3, x / y);
        out.setFloat(o + 4, x * y + x);
        out.setFloat(o + 5, Math.fma(x, y, x));
        out.setFloat(o + 6, -x);
        out.setFloat(o + 7, Math.min(x, y));
        out.setFloat(o + 8, Math.max(x, y));
        out.setFloat(o + 9, Math.abs(x));
        out.setFloat(o + 10, (float) Math.sqrt(x));
        out.setFloat(o + 11, x < y ? 1f : 0f);
        out.setFloat(o + 12, x > y ? 1f : 0f);
        out.setFloat(o + 13, x <= y ? 1f : 0f);
        out.setFloat(o + 14, x >= y ? 1f : 0f);
        out.setFloat(o + 15, x == y ? 1f : 0f);
        out.setFloat(o + 16, x != y ? 1f : 0f);
        out.setFloat(o + 17, Float.compare(x, y));
        out.setFloat(o + 18, Float.isNaN(x) ? 1f : Float.intBitsToFloat(Float.floatToRawIntBits(x) ^ 0x00400001));
        out.setFloat(o + 19, (x - y) * (x + y) / 3f);
    }

    /**
     * Double arithmetic, {@code Math.fma}, {@code Math.sqrt}, min/max/abs and comparisons with
     * NaN. Args: {@code a, b} double[n]; {@code out} double[n * DOUBLE_RESULTS]; {@code n}.
     * Grid: >= n threads.
     */
    public static void doubleOps(KernelContext ctx, Buf a, Buf b, Buf out, int n) {
        int i = ctx.globalIdx();
        if (i >= n) {
            return;
        }
        double x = a.getDouble(i);
        double y = b.getDouble(i);
        long o = (long) i * DOUBLE_RESULTS;
        out.setDouble(o, x + y);
        out.setDouble(o + 1, x - y);
        out.setDouble(o + 2, x * y);
        out.setDouble(o + 3, x / y);
        out.setDouble(o + 4, Math.fma(x, y, x));
        out.setDouble(o + 5, -x);
        out.setDouble(o + 6, Math.min(x, y));
        out.setDouble(o + 7, Math.max(x, y));
        out.setDouble(o + 8, Math.abs(x));
        out.setDouble(o + 9, Math.sqrt(x));
        out.setDouble(o + 10, x < y ? 1 : 0);
        out.setDouble(o + 11, x >= y ? 1 : 0);
        out.setDouble(o + 12, x == y ? 1 : 0);
        out.setDouble(o + 13, Double.compare(x, y));
        out.setDouble(o + 14, Double.longBitsToDouble(Double.doubleToRawLongBits(x) & 0x7FF0_0000_0000_0000L));
        out.setDouble(o + 15, x * y + x * 0.5);
    }

    /**
     * Every primitive conversion: {@code i2l i2f i2d l2i l2f l2d f2i f2l f2d d2i d2l d2f i2b i2s
     * i2c}. Float-to-integer conversions saturate and map NaN to 0, as on the JVM. Args:
     * {@code ints} int[n], {@code longs} long[n], {@code floats} float[n], {@code doubles}
     * double[n]; {@code out} long[n * 16] (each result widened to a long; float results as their
     * raw bits, -1 for NaN, whose payload the GPU does not keep); {@code n}. Grid: >= n threads. Include NaN, infinities and values beyond the int
     * and long ranges among the float inputs.
     */
    public static void conversions(KernelContext ctx, Buf ints, Buf longs, Buf floats, Buf doubles, Buf out, int n) {
        int i = ctx.globalIdx();
        if (i >= n) {
            return;
        }
        int x = ints.getInt(i);
        long l = longs.getLong(i);
        float f = floats.getFloat(i);
        double d = doubles.getDouble(i);
        long o = i * 16L;
        out.setLong(o, x);
        out.setLong(o + 1, Float.floatToRawIntBits((float) x));
        out.setLong(o + 2, Double.doubleToRawLongBits(x));
        out.setLong(o + 3, (int) l);
        out.setLong(o + 4, Float.floatToRawIntBits((float) l));
        out.setLong(o + 5, Double.doubleToRawLongBits((double) l));
        out.setLong(o + 6, (int) f);
        out.setLong(o + 7, (long) f);
        out.setLong(o + 8, bitsOrMinusOne(f));
        out.setLong(o + 9, (int) d);
        out.setLong(o + 10, (long) d);
        out.setLong(o + 11, Float.isNaN((float) d) ? -1 : Float.floatToRawIntBits((float) d));
        out.setLong(o + 12, (byte) x);
        out.setLong(o + 13, (short) x);
        out.setLong(o + 14, (char) x);
        out.setLong(o + 15, (byte) (int) f + (short) (long) d + (char) l);
    }

    /**
     * Narrowings ({@code i2b, i2s, i2c}) and narrow intrinsic results whose uses read only their
     * own 16 or 8 bits (compiled without the sign or zero extension), next to ones with a use that
     * needs the extension. Args: {@code ints} int[n], {@code longs} long[n]; {@code out}
     * int[n * NARROW_RESULTS]; {@code n}. Grid: >= n threads.
     */
    public static void narrowings(KernelContext ctx, Buf ints, Buf longs, Buf out, int n) {
        int i = ctx.globalIdx();
        if (i >= n) {
            return;
        }
        int x = ints.getInt(i);
        long q = longs.getLong(i);
        float f = x * 0x1p-20f;
        long o = (long) i * NARROW_RESULTS;
        // only the narrow bits read
        out.setInt(o, (short) x << 16);
        out.setInt(o + 1, (short) x & 0xffff);
        out.setInt(o + 2, (int) ((short) (x >> 7) & 0xfff0L));
        out.setInt(o + 3, (byte) x << 24 | (char) x & 0xff);
        short bits = (short) (q >>> 16);
        out.setInt(o + 4, Float.floatToRawIntBits(Numerics.bf16ToFloat(bits)));
        out.setInt(o + 5, floatBitsOrMinusOne(Numerics.fp16ToFloat((short) (q >>> 32))));
        out.setInt(o + 6, floatBitsOrMinusOne(Numerics.fp8e4m3ToFloat((byte) (q >>> 40))));
        out.setInt(o + 7, lowHalf((short) (x >>> 3)));
        out.setShort(2 * (o + 8), (short) (x ^ 0x5a5a));
        out.setShort(2 * (o + 8) + 1, (short) (char) (x >>> 16));
        out.setByte(4 * (o + 9), (byte) (x >> 9));
        out.setByte(4 * (o + 9) + 1, Numerics.floatToFp8e4m3(f));
        out.setShort(2 * (o + 9) + 1, Numerics.floatToBf16(f));
        long packed = (Numerics.floatToBf16(f) & 0xffffL) | (Numerics.floatToFp16(-f) & 0xffffL) << 16;
        out.setInt(o + 10, (int) packed);
        // the upper bits read too
        out.setInt(o + 11, (short) x >> 4);
        out.setInt(o + 12, (short) x < 0 ? 1 : 0);
        out.setInt(o + 13, (short) x << 8 ^ (byte) x << 16);
        out.setInt(o + 14, (short) x & 0x1ffff);
        short s = (short) (x >> 1);
        out.setInt(o + 15, (s & 0xff) + s);
        out.setInt(o + 16, signOf((short) (x >>> 3)));
        out.setInt(o + 17, (char) x >> 1);
        out.setInt(o + 18, Numerics.floatToBf16(f));
        out.setInt(o + 19, Numerics.floatToFp8e4m3(f) + Numerics.floatToFp16(f));
    }

    private static int lowHalf(short s) {
        return s & 0xffff;
    }

    private static int signOf(short s) {
        return s < 0 ? -1 : 1;
    }

    private static int floatBitsOrMinusOne(float f) {
        return Float.isNaN(f) ? -1 : Float.floatToRawIntBits(f);
    }

    private static long bitsOrMinusOne(double d) {
        return Double.isNaN(d) ? -1 : Double.doubleToRawLongBits(d);
    }
}
