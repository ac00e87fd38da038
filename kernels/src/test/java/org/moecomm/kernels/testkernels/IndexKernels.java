package org.moecomm.kernels.testkernels;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Compiler test kernels: 64-bit index arithmetic and 2-D grids.
 */
public final class IndexKernels {
    private IndexKernels() {
    }

    /**
     * Copies a {@code rows x cols} int matrix between row strides given as {@code long}s. Args:
     * {@code dst} int[rows * dstStride]; {@code src} int[rows * srcStride]; {@code srcStride};
     * {@code dstStride}; {@code rows}; {@code cols}. Grid: {@code blocksX} covering {@code cols}
     * with the block's threads, {@code blocksY = rows} (row = {@code groupIdy}). Elements of
     * {@code dst} outside the copied columns are left as they were.
     */
    public static void stridedCopy(KernelContext ctx, Buf dst, Buf src, long srcStride, long dstStride, int rows, int cols) {
        int row = ctx.groupIdy();
        int col = ctx.globalIdx();
        if (row < rows && col < cols) {
            dst.setInt(IndexMath.at(row, dstStride, col), src.getInt(IndexMath.at(row, srcStride, col)));
        }
    }

    /**
     * Index arithmetic past 32 bits without large buffers: {@code idx = base + t} with a
     * {@code base} above {@code 2^31}; writes {@code idx * 3 + (idx >>> 33)} at {@code idx - base},
     * and {@code (int) (idx >> 7)} as a second long. Args: {@code out} long[2 * n]; {@code base};
     * {@code n}. Grid: >= n threads.
     */
    public static void bigIndex(KernelContext ctx, Buf out, long base, int n) {
        int t = ctx.globalIdx();
        if (t < n) {
            long idx = base + t;
            long local = idx - base;
            out.setLong(local, idx * 3 + (idx >>> 33));
            out.setLong(n + local, (int) (idx >> 7));
        }
    }

    /**
     * Writes each thread's launch coordinates, in a 2-D grid. Args: {@code out} int[blocksX *
     * blocksY * threads * 4]. Grid: any 2-D grid. Thread with linear index
     * {@code L = (groupIdy * numGroupsX + groupIdx) * localGroupSizeX + localIdx} writes
     * {@code globalIdx, groupIdy, numGroupsX * 1000 + numGroupsY, globalGroupSizeX} at
     * {@code 4L .. 4L+3}.
     */
    public static void grid2d(KernelContext ctx, Buf out) {
        long linear = ((long) ctx.groupIdy() * ctx.numGroupsX() + ctx.groupIdx()) * ctx.localGroupSizeX() + ctx.localIdx();
        long o = linear * 4;
        out.setInt(o, ctx.globalIdx());
        out.setInt(o + 1, ctx.groupIdy());
        out.setInt(o + 2, ctx.numGroupsX() * 1000 + ctx.numGroupsY());
        out.setInt(o + 3, ctx.globalGroupSizeX());
    }
}
