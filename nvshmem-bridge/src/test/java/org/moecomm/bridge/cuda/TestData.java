package org.moecomm.bridge.cuda;

import java.util.SplittableRandom;

/** Random inputs for kernel comparisons, with the special values each type has mixed in. */
final class TestData {
    private static final int[] INT_SPECIALS = {0, 1, -1, 2, -2, 31, 32, 33, 63, 64, Integer.MIN_VALUE, Integer.MAX_VALUE,
        Integer.MIN_VALUE + 1, Integer.MAX_VALUE - 1, 0x55555555, 0xAAAAAAAA, 1 << 30};
    private static final long[] LONG_SPECIALS = {0, 1, -1, 2, -2, 63, 64, 65, 127, Long.MIN_VALUE, Long.MAX_VALUE,
        Long.MIN_VALUE + 1, Integer.MIN_VALUE, Integer.MAX_VALUE, 1L << 40, 0x5555555555555555L};
    private static final float[] FLOAT_SPECIALS = {0f, -0f, 1f, -1f, 0.5f, Float.NaN, Float.POSITIVE_INFINITY,
        Float.NEGATIVE_INFINITY, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MIN_NORMAL, Float.MAX_VALUE, -Float.MAX_VALUE,
        0x1p-140f, 3e9f, -3e9f, 1e19f, -1e19f, 2147483647f, -2147483648f, 448f, 449f, 65504f, 65520f, 1e-8f,
        Float.intBitsToFloat(0x7fc00001), Float.intBitsToFloat(0xff800123)};
    private static final double[] DOUBLE_SPECIALS = {0d, -0d, 1d, -1d, Double.NaN, Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY, Double.MIN_VALUE, -Double.MIN_VALUE, Double.MIN_NORMAL, Double.MAX_VALUE, 1e300,
        -1e300, 3e9, 1e19, -1e19, 9.3e18, 0x1p-1060, (double) Float.MAX_VALUE * 2, 1e-50};

    private TestData() {
    }

    static int[] ints(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = switch (r.nextInt(4)) {
                case 0 -> INT_SPECIALS[r.nextInt(INT_SPECIALS.length)];
                case 1 -> r.nextInt(-100, 100);
                default -> r.nextInt();
            };
        }
        return a;
    }

    static int[] intsIn(int n, int from, int to, long seed) {
        return new SplittableRandom(seed).ints(n, from, to).toArray();
    }

    static long[] longs(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long[] a = new long[n];
        for (int i = 0; i < n; i++) {
            a[i] = switch (r.nextInt(4)) {
                case 0 -> LONG_SPECIALS[r.nextInt(LONG_SPECIALS.length)];
                case 1 -> r.nextLong(-1000, 1000);
                default -> r.nextLong();
            };
        }
        return a;
    }

    static float[] floats(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = switch (r.nextInt(5)) {
                case 0 -> FLOAT_SPECIALS[r.nextInt(FLOAT_SPECIALS.length)];
                case 1 -> Float.intBitsToFloat(r.nextInt());
                case 2 -> (float) (r.nextDouble() * 2e6 - 1e6);
                default -> (float) (r.nextDouble() * 8 - 4);
            };
        }
        return a;
    }

    /** Finite floats in {@code [-range, range)}. */
    static float[] finiteFloats(int n, float range, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) ((r.nextDouble() * 2 - 1) * range);
        }
        return a;
    }

    static double[] doubles(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        double[] a = new double[n];
        for (int i = 0; i < n; i++) {
            a[i] = switch (r.nextInt(5)) {
                case 0 -> DOUBLE_SPECIALS[r.nextInt(DOUBLE_SPECIALS.length)];
                case 1 -> Double.longBitsToDouble(r.nextLong());
                case 2 -> r.nextDouble() * 2e12 - 1e12;
                default -> r.nextDouble() * 8 - 4;
            };
        }
        return a;
    }

    static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }
}
