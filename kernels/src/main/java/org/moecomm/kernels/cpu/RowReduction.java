package org.moecomm.kernels.cpu;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Numerics;

/**
 * {@code MoeKernels.reduceSlice} for several threads at once ({@link CollectiveHelpers#reduceSlice}):
 * token {@code t}'s weighted sum over its pairs for the quads that {@code span} threads, from the
 * one whose first quad is {@code firstQuad}, take at a step of {@code step}. Every element is the
 * helper's: a float32 sum from 0 in increasing k, {@code acc + w * v} for each routed pair (a
 * skipped one, location -1, adds nothing), converted as the helper stores it, read and written at
 * the helper's indices. Only the work is arranged for a CPU: the token's locations and weights are
 * loaded once per call, not once per quad (the routed pairs' row offsets and weights in two arrays
 * of {@code topK}), and each quad's four sums stay in locals. {@link #reduce} stores them; {@link
 * #sum} keeps a whole block's in an array the caller owns ({@link BlockSums}), from which each
 * thread {@link #store}s its own quads. Nothing is allocated per call beyond the two arrays of
 * {@code topK}: an accumulator row of the whole hidden dimension allocated on every call (as
 * 49a9dce had) cost a 7168-float array per thread and deepseek-v3 token, three quarters of a
 * round's samples in zeroing it.
 *
 * <p>The dtype codes are those of {@code MoeKernels} (bf16 0, fp16 1, fp32 2, fp8-e4m3 3); the
 * helper reads a code it does not know as fp16 in 8-byte quads and stores it as float32, and so
 * does this.
 */
final class RowReduction {
    private static final int BF16 = 0;
    private static final int FP16 = 1;
    private static final int FP32 = 2;
    private static final int FP8 = 3;
    private static final int QUAD = 4;
    /**
     * Whether the JVM runs with {@code --add-modules jdk.incubator.vector}: then bf16 rows summed into
     * a bf16 output go through {@link VectorSums} (same bits, about twice the speed). Checked here,
     * not in that class, which cannot be loaded without the module.
     */
    static final boolean VECTOR_SUMS = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    private RowReduction() {
    }

    static void reduce(int t, int firstQuad, int step, int span, Buf combineRecv, Buf pairLocation, Buf weights,
                       Buf out, int hidden, int topK, int yDtype, int outDtype) {
        sum(t, firstQuad, step, span, combineRecv, pairLocation, weights, out, null, hidden, topK, yDtype, outDtype);
    }

    /**
     * As {@link #reduce}, but each quad's four sums go to {@code sums[4q .. 4q+3]} (at least
     * {@code hidden} floats) instead of {@code out}: the sums of a whole block, which each of its
     * threads then stores its own quads of ({@link #store(int, int, int, float[], Buf, int, int)}).
     */
    static void sum(int t, int firstQuad, int step, int span, Buf combineRecv, Buf pairLocation, Buf weights,
                    float[] sums, int hidden, int topK, int yDtype) {
        sum(t, firstQuad, step, span, combineRecv, pairLocation, weights, null, sums, hidden, topK, yDtype, -1);
    }

    /** Stores the quads {@code firstQuad, firstQuad + step, ...} of token {@code t} from {@code sums}, as {@link #reduce} stores them. */
    static void store(int t, int firstQuad, int step, float[] sums, Buf out, int hidden, int outDtype) {
        if (step < 1) {
            throw new IllegalArgumentException("reduceSlice with a step of " + step + " never ends");
        }
        int quads = hidden / QUAD;
        long outFirst = (long) t * hidden;
        for (int q = firstQuad; q < quads; q += step) {
            int e = q * QUAD;
            store(out, outFirst + e, sums[e], sums[e + 1], sums[e + 2], sums[e + 3], outDtype);
        }
    }

    /** The sums of {@link #reduce}, stored into {@code out} or, when {@code sums} is given, kept there. */
    private static void sum(int t, int firstQuad, int step, int span, Buf combineRecv, Buf pairLocation, Buf weights,
                            Buf out, float[] sums, int hidden, int topK, int yDtype, int outDtype) {
        int quads = hidden / QUAD;
        if (firstQuad >= quads) {
            return;
        }
        if (step < 1) {
            throw new IllegalArgumentException("reduceSlice with a step of " + step + " never ends");
        }
        // the routed pairs in k order: a skipped one (location -1) adds nothing to any element
        long first = (long) t * topK;
        long[] rows = new long[topK];
        float[] w = new float[topK];
        int pairs = 0;
        for (int k = 0; k < topK; k++) {
            int location = pairLocation.getInt(first + k);
            float weight = weights.getFloat(first + k);
            if (location >= 0) {
                rows[pairs] = (long) location * hidden;
                w[pairs++] = weight;
            }
        }
        // quads [start, start + run) for start = firstQuad, firstQuad + step, ...: one run from
        // firstQuad to the end where the runs meet (a block of one thread takes every quad)
        int run = span >= step ? quads : span;
        int stride = span >= step ? quads : step;
        boolean vector = sums == null && yDtype == BF16 && outDtype == BF16 && VECTOR_SUMS;
        long outFirst = (long) t * hidden;
        for (long start = firstQuad; start < quads; start += stride) {
            int end = (int) Math.min(quads, start + run);
            int q = (int) start;
            if (vector) {
                q = VectorSums.bf16(combineRecv, rows, w, pairs, out, outFirst, q * QUAD, end * QUAD) / QUAD;
            }
            for (; q < end; q++) {
                sumQuad(out, outFirst + (long) q * QUAD, sums, combineRecv, rows, w, pairs, q * QUAD, yDtype, outDtype);
            }
        }
    }

    /**
     * Elements {@code h .. h+3} of the token's sum: four accumulators from 0, {@code acc + w *
     * element} for each routed pair in k order, stored as the helper stores them ({@code out[i ..]})
     * or kept in {@code sums[h ..]} when that is given.
     */
    private static void sumQuad(Buf out, long i, float[] sums, Buf y, long[] rows, float[] w, int pairs, int h,
                                int yDtype, int outDtype) {
        float a0 = 0f;
        float a1 = 0f;
        float a2 = 0f;
        float a3 = 0f;
        if (yDtype == FP32) {
            for (int p = 0; p < pairs; p++) {
                long e = rows[p] + h;
                float wp = w[p];
                a0 += wp * y.getFloat(e);
                a1 += wp * y.getFloat(e + 1);
                a2 += wp * y.getFloat(e + 2);
                a3 += wp * y.getFloat(e + 3);
            }
        } else if (yDtype == FP8) {
            for (int p = 0; p < pairs; p++) {
                int quad = y.getInt((rows[p] + h) >> 2);
                float wp = w[p];
                a0 += wp * Numerics.fp8e4m3ToFloat((byte) quad);
                a1 += wp * Numerics.fp8e4m3ToFloat((byte) (quad >>> 8));
                a2 += wp * Numerics.fp8e4m3ToFloat((byte) (quad >>> 16));
                a3 += wp * Numerics.fp8e4m3ToFloat((byte) (quad >>> 24));
            }
        } else if (yDtype == BF16) {
            for (int p = 0; p < pairs; p++) {
                long quad = y.getLong((rows[p] + h) >> 2);
                float wp = w[p];
                a0 += wp * Numerics.bf16ToFloat((short) quad);
                a1 += wp * Numerics.bf16ToFloat((short) (quad >>> 16));
                a2 += wp * Numerics.bf16ToFloat((short) (quad >>> 32));
                a3 += wp * Numerics.bf16ToFloat((short) (quad >>> 48));
            }
        } else {
            for (int p = 0; p < pairs; p++) {
                long quad = y.getLong((rows[p] + h) >> 2);
                float wp = w[p];
                a0 += wp * Numerics.fp16ToFloat((short) quad);
                a1 += wp * Numerics.fp16ToFloat((short) (quad >>> 16));
                a2 += wp * Numerics.fp16ToFloat((short) (quad >>> 32));
                a3 += wp * Numerics.fp16ToFloat((short) (quad >>> 48));
            }
        }
        if (sums != null) {
            sums[h] = a0;
            sums[h + 1] = a1;
            sums[h + 2] = a2;
            sums[h + 3] = a3;
        } else {
            store(out, i, a0, a1, a2, a3, outDtype);
        }
    }

    /**
     * Stores elements {@code i .. i+3} of {@code out} as the helper does: one 8-byte store at
     * {@code i >> 2} for 16-bit outputs (the bytes of its four 2-byte stores of a float32 row's
     * sums), element by element otherwise.
     */
    private static void store(Buf out, long i, float v0, float v1, float v2, float v3, int outDtype) {
        if (outDtype == BF16) {
            out.setLong(i >> 2, pack(Numerics.floatToBf16(v0), Numerics.floatToBf16(v1), Numerics.floatToBf16(v2),
                    Numerics.floatToBf16(v3)));
        } else if (outDtype == FP16) {
            out.setLong(i >> 2, pack(Numerics.floatToFp16(v0), Numerics.floatToFp16(v1), Numerics.floatToFp16(v2),
                    Numerics.floatToFp16(v3)));
        } else {
            storeElement(out, i, outDtype, v0);
            storeElement(out, i + 1, outDtype, v1);
            storeElement(out, i + 2, outDtype, v2);
            storeElement(out, i + 3, outDtype, v3);
        }
    }

    private static void storeElement(Buf b, long i, int dtype, float v) {
        if (dtype == BF16) {
            b.setShort(i, Numerics.floatToBf16(v));
        } else if (dtype == FP16) {
            b.setShort(i, Numerics.floatToFp16(v));
        } else if (dtype == FP8) {
            b.setByte(i, Numerics.floatToFp8e4m3(v));
        } else {
            b.setFloat(i, v);
        }
    }

    private static long pack(short s0, short s1, short s2, short s3) {
        return (s0 & 0xffffL) | (s1 & 0xffffL) << 16 | (s2 & 0xffffL) << 32 | (s3 & 0xffffL) << 48;
    }
}
