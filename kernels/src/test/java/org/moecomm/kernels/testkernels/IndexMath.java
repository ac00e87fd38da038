package org.moecomm.kernels.testkernels;

/** Helpers called from test kernels in other classes (the compiler inlines across classes). */
public final class IndexMath {
    /** A 64-bit odd constant, read by kernels as a {@code static final} (javac folds it). */
    public static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private IndexMath() {
    }

    /** Mixes a thread index and an offset into 64 bits. */
    public static long mix(int t, long offset) {
        long h = (t + 1) * GOLDEN;
        h ^= h >>> 31;
        return h + offset;
    }

    /** Row-major element index of {@code (row, col)} with a 64-bit stride. */
    public static long at(long row, long stride, int col) {
        return row * stride + col;
    }
}
