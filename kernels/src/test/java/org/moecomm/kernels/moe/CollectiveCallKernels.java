package org.moecomm.kernels.moe;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Kernels that call MoeKernels' team-collective helpers the way the library's kernels do, with
 * the team shape and dtypes as arguments, for comparing the CPU runner's substituted helpers
 * (CollectiveHelpersTest) with the helpers themselves.
 */
public final class CollectiveCallKernels {
    private CollectiveCallKernels() {
    }

    /**
     * Teams of {@code 2^shift} threads copy {@code rows} rows of {@code pieces} 16-byte pieces, rows
     * {@code r} of src to rows {@code rows - 1 - r} of dst, twice: before and after a barrier
     * (the second time from dst to src's second half), with copyPiecesDeep when {@code deep != 0}.
     */
    public static void teamCopy(KernelContext ctx, Buf dst, Buf src, int rows, int pieces, int shift, int deep) {
        int threads = ctx.localGroupSizeX();
        int team = ctx.localIdx() >> shift;
        int lane = ctx.localIdx() & ((1 << shift) - 1);
        int teams = threads >> shift;
        for (int r = team + ctx.groupIdx() * teams; r < rows && team < teams; r += teams * ctx.numGroupsX()) {
            copy(dst, (long) (rows - 1 - r) * pieces, src, (long) r * pieces, pieces, lane, shift, deep);
        }
        ctx.localBarrier();
        for (int r = team + ctx.groupIdx() * teams; r < rows && team < teams; r += teams * ctx.numGroupsX()) {
            copy(src, (long) (rows + r) * pieces, dst, (long) (rows - 1 - r) * pieces, pieces, lane, shift, deep);
        }
    }

    /** MoeKernels.copyPiecesDeep when {@code deep != 0}, else copyPieces. */
    static void copy(Buf dst, long dstPiece, Buf src, long srcPiece, int pieces, int lane, int shift, int deep) {
        if (deep != 0) {
            MoeKernels.copyPiecesDeep(dst, dstPiece, src, srcPiece, pieces, lane, shift);
        } else {
            MoeKernels.copyPieces(dst, dstPiece, src, srcPiece, pieces, lane, shift);
        }
    }

    /** Only lane 0 of each team calls copyPieces: it copies its own pieces, no more. */
    public static void laneZeroCopy(KernelContext ctx, Buf dst, Buf src, int pieces, int shift) {
        int lane = ctx.localIdx() & ((1 << shift) - 1);
        if (lane == 0) {
            MoeKernels.copyPieces(dst, (long) ctx.localIdx() * pieces, src, (long) ctx.localIdx() * pieces, pieces,
                    lane, shift);
        }
    }

    /** Like AllToAllKernels.combineRecv: block (x, y) reduces tokens x, x + X, ... and its share of their quads. */
    public static void reduceTokens(KernelContext ctx, Buf combineRecv, Buf pairLocation, Buf weights, Buf out, int m,
                                    int hidden, int topK, int yDtype, int outDtype) {
        int threads = ctx.localGroupSizeX();
        int firstQuad = ctx.groupIdy() * threads + ctx.localIdx();
        int stepQuad = ctx.numGroupsY() * threads;
        for (int t = ctx.groupIdx(); t < m; t += ctx.numGroupsX()) {
            MoeKernels.reduceSlice(t, firstQuad, stepQuad, combineRecv, pairLocation, weights, out, hidden, topK,
                    yDtype, outDtype);
        }
    }

    /**
     * One block: it reduces tokens {@code 0 .. m-1} (float32 rows), then, after a barrier, every
     * thread negates the elements of its quads in every row and, after another barrier, the block
     * reduces the same tokens again, the same call into the same {@code out}: sums that a loop
     * block keeps between its barriers must not outlive them.
     */
    public static void reduceChangeReduce(KernelContext ctx, Buf combineRecv, Buf pairLocation, Buf weights, Buf out,
                                          int m, int rows, int hidden, int topK, int outDtype) {
        int threads = ctx.localGroupSizeX();
        for (int t = 0; t < m; t++) {
            MoeKernels.reduceSlice(t, ctx.localIdx(), threads, combineRecv, pairLocation, weights, out, hidden, topK,
                    2, outDtype);
        }
        ctx.localBarrier();
        for (int q = ctx.localIdx(); q < hidden / 4; q += threads) {
            for (int r = 0; r < rows; r++) {
                for (int e = 0; e < 4; e++) {
                    long i = (long) r * hidden + 4 * q + e;
                    combineRecv.setFloat(i, -combineRecv.getFloat(i));
                }
            }
        }
        ctx.localBarrier();
        for (int t = 0; t < m; t++) {
            MoeKernels.reduceSlice(t, ctx.localIdx(), threads, combineRecv, pairLocation, weights, out, hidden, topK,
                    2, outDtype);
        }
    }

    /** One thread per quad-step: thread tid takes quads tid * 3, tid * 3 + step... (not a block's consecutive quads). */
    public static void reduceStrided(KernelContext ctx, Buf combineRecv, Buf pairLocation, Buf weights, Buf out,
                                     int hidden, int topK, int yDtype, int outDtype) {
        MoeKernels.reduceSlice(ctx.groupIdx(), ctx.localIdx() * 3, 3 * ctx.localGroupSizeX() + 1, combineRecv,
                pairLocation, weights, out, hidden, topK, yDtype, outDtype);
    }
}
