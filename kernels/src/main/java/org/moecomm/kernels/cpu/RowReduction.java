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
 * loaded once, not once per quad, and each pair's row is read once, front to back, into one
 * accumulator per element.
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

    private RowReduction() {
    }

    static void reduce(int t, int firstQuad, int step, int span, Buf combineRecv, Buf pairLocation, Buf weights,
                       Buf out, int hidden, int topK, int yDtype, int outDtype) {
        int quads = hidden / QUAD;
        if (firstQuad >= quads) {
            return;
        }
        if (step < 1) {
            throw new IllegalArgumentException("reduceSlice with a step of " + step + " never ends");
        }
        // quads [start, start + run) for start = firstQuad, firstQuad + step, ...
        int run = Math.min(span, step);
        long first = (long) t * topK;
        float[] acc = new float[quads * QUAD];
        for (int k = 0; k < topK; k++) {
            int location = pairLocation.getInt(first + k);
            float w = weights.getFloat(first + k);
            if (location < 0) {
                continue;
            }
            long row = (long) location * hidden;
            for (long start = firstQuad; start < quads; start += step) {
                int end = (int) Math.min(quads, start + run);
                addRow(acc, (int) start, end, combineRecv, row, w, yDtype);
            }
        }
        long outFirst = (long) t * hidden;
        for (long start = firstQuad; start < quads; start += step) {
            int end = (int) Math.min(quads, start + run);
            for (int q = (int) start; q < end; q++) {
                store(out, outFirst + (long) q * QUAD, acc, q * QUAD, yDtype, outDtype);
            }
        }
    }

    /** {@code acc[4q + e] += w * element} of the pair's row for quads {@code [from, to)}, at the helper's indices. */
    private static void addRow(float[] acc, int from, int to, Buf y, long row, float w, int dtype) {
        if (dtype == FP32) {
            for (int q = from; q < to; q++) {
                long i = row + (long) q * QUAD;
                for (int e = 0; e < QUAD; e++) {
                    acc[q * QUAD + e] += w * y.getFloat(i + e);
                }
            }
        } else if (dtype == FP8) {
            for (int q = from; q < to; q++) {
                int quad = y.getInt((row + (long) q * QUAD) >> 2);
                for (int e = 0; e < QUAD; e++) {
                    acc[q * QUAD + e] += w * Numerics.fp8e4m3ToFloat((byte) (quad >>> (8 * e)));
                }
            }
        } else if (dtype == BF16) {
            for (int q = from; q < to; q++) {
                long quad = y.getLong((row + (long) q * QUAD) >> 2);
                for (int e = 0; e < QUAD; e++) {
                    acc[q * QUAD + e] += w * Numerics.bf16ToFloat((short) (quad >>> (16 * e)));
                }
            }
        } else {
            for (int q = from; q < to; q++) {
                long quad = y.getLong((row + (long) q * QUAD) >> 2);
                for (int e = 0; e < QUAD; e++) {
                    acc[q * QUAD + e] += w * Numerics.fp16ToFloat((short) (quad >>> (16 * e)));
                }
            }
        }
    }

    /**
     * Stores elements {@code i .. i+3} of {@code out} from {@code acc[a ..]} as the helper does: a
     * float32 row's sums element by element, the others' as one quad (8-byte stores for 16-bit
     * outputs at {@code i >> 2}).
     */
    private static void store(Buf out, long i, float[] acc, int a, int yDtype, int outDtype) {
        if (yDtype == FP32) {
            for (int e = 0; e < QUAD; e++) {
                storeElement(out, i + e, outDtype, acc[a + e]);
            }
        } else if (outDtype == BF16) {
            out.setLong(i >> 2, pack(Numerics.floatToBf16(acc[a]), Numerics.floatToBf16(acc[a + 1]),
                    Numerics.floatToBf16(acc[a + 2]), Numerics.floatToBf16(acc[a + 3])));
        } else if (outDtype == FP16) {
            out.setLong(i >> 2, pack(Numerics.floatToFp16(acc[a]), Numerics.floatToFp16(acc[a + 1]),
                    Numerics.floatToFp16(acc[a + 2]), Numerics.floatToFp16(acc[a + 3])));
        } else {
            for (int e = 0; e < QUAD; e++) {
                storeElement(out, i + e, outDtype, acc[a + e]);
            }
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
