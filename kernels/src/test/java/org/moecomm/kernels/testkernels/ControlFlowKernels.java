package org.moecomm.kernels.testkernels;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Compiler test kernels: control flow. Nested loops with {@code break}/{@code continue}, early
 * returns (no barriers in these kernels), switches, data-dependent trip counts and inlined helper
 * methods. Every kernel is per-thread and deterministic; any 1-D grid with at least {@code n}
 * threads works.
 */
public final class ControlFlowKernels {
    private static final int LIMIT = 1000;

    private ControlFlowKernels() {
    }

    /**
     * Nested loops with {@code continue}, {@code break} and a labelled {@code break}. Args:
     * {@code out} int[n]; {@code n}; {@code m} (inner trip count, small, e.g. 0..40). Grid: >= n
     * threads.
     */
    public static void nestedLoops(KernelContext ctx, Buf out, int n, int m) {
        int t = ctx.globalIdx();
        if (t >= n) {
            return;
        }
        int acc = 0;
        outer:
        for (int i = 0; i < t % 7 + 1; i++) {
            for (int j = 0; j < m; j++) {
                if ((i + j) % 3 == 0) {
                    continue;
                }
                if (j > 2 * i + t % 5) {
                    break;
                }
                acc += i * 31 + j;
                if (acc > LIMIT + t) {
                    break outer;
                }
            }
            int k = 0;
            while (k < i) {
                acc ^= k << i;
                k++;
            }
            do {
                acc += 1;
            } while (acc % 4 != 0);
        }
        out.setInt(t, acc);
    }

    /**
     * Early exits: threads past {@code n} return at once; the others scan their row of
     * {@code data} and return from inside the loop at the first negative value, writing its
     * column, or write {@code -1} after the loop. Args: {@code data} int[n * cols]; {@code out}
     * int[n]; {@code n}; {@code cols}. Grid: >= n threads.
     */
    public static void earlyExit(KernelContext ctx, Buf data, Buf out, int n, int cols) {
        int row = ctx.globalIdx();
        if (row >= n) {
            return;
        }
        long base = (long) row * cols;
        for (int c = 0; c < cols; c++) {
            if (data.getInt(base + c) < 0) {
                out.setInt(row, c);
                return;
            }
        }
        out.setInt(row, -1);
    }

    /**
     * Dense ({@code tableswitch}) and sparse ({@code lookupswitch}) switches, with fall-through.
     * Args: {@code in} int[n]; {@code out} int[n]; {@code n}. Grid: >= n threads.
     */
    public static void switches(KernelContext ctx, Buf in, Buf out, int n) {
        int t = ctx.globalIdx();
        if (t >= n) {
            return;
        }
        int v = in.getInt(t);
        int r;
        switch (v & 7) {
            case 0 -> r = 10;
            case 1 -> r = 11;
            case 2, 3 -> r = 23;
            case 5 -> r = 55;
            default -> r = -1;
        }
        int s = 0;
        switch (v) {
            case -1000:
                s += 1;
            case 7:
                s += 10;
                break;
            case 100000:
                s += 100;
                break;
            case Integer.MIN_VALUE:
                s = 5;
                break;
            default:
                s = -7;
        }
        out.setInt(t, r * 1000 + s);
    }

    /**
     * A data-dependent {@code while} loop (Collatz steps, capped), with a {@code long} state.
     * Args: {@code in} int[n] (positive values); {@code out} int[n]; {@code n}. Grid: >= n threads.
     */
    public static void collatz(KernelContext ctx, Buf in, Buf out, int n) {
        int t = ctx.globalIdx();
        if (t >= n) {
            return;
        }
        long x = in.getInt(t);
        int steps = 0;
        while (x > 1 && steps < 10_000) {
            x = (x & 1) == 0 ? x >> 1 : 3 * x + 1;
            steps++;
        }
        out.setInt(t, steps);
    }

    /**
     * Inlined static helpers: nested calls, helpers taking and returning every kernel type, a
     * helper in another class, a helper with several returns, and a helper taking the context.
     * {@code assert}s compile to nothing (assertions are off on the GPU; keep them true).
     * Args: {@code in} float[n]; {@code out} long[n * 4]; {@code n}. Grid: >= n threads.
     */
    public static void helpers(KernelContext ctx, Buf in, Buf out, int n) {
        int t = tid(ctx);
        if (!inRange(t, n)) {
            return;
        }
        assert t >= 0 : "thread index is never negative";
        float x = in.getFloat(t);
        long o = t * 4L;
        out.setLong(o, classify(x));
        out.setLong(o + 1, IndexMath.mix(t, o));
        double scaled = scale(x, 2.5);
        out.setLong(o + 2, Double.isNaN(scaled) ? -1 : Double.doubleToRawLongBits(scaled));
        store(out, o + 3, sumTo(t % 50));
    }

    private static int tid(KernelContext ctx) {
        return ctx.groupIdx() * ctx.localGroupSizeX() + ctx.localIdx();
    }

    private static boolean inRange(int i, int n) {
        return i >= 0 && i < n;
    }

    private static int classify(float x) {
        if (x != x) {
            return 0;
        }
        if (x < 0) {
            return x < -1 ? -2 : -1;
        }
        if (x == 0) {
            return 3;
        }
        return x > 1 ? 2 : 1;
    }

    private static double scale(float x, double factor) {
        return x * factor;
    }

    private static long sumTo(int k) {
        long s = 0;
        for (int i = 1; i <= k; i++) {
            s += square(i);
        }
        return s;
    }

    private static long square(long v) {
        return v * v;
    }

    private static void store(Buf b, long index, long value) {
        b.setLong(index, value);
    }
}
