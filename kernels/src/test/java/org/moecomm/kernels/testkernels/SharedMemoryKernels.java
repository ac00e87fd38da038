package org.moecomm.kernels.testkernels;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Compiler test kernels: block-shared arrays and barriers. Every thread of a block reaches every
 * barrier (no early return before one). The reductions combine values in a fixed tree order, so
 * even the float sums are the same bits on the CPU runner and the GPU.
 */
public final class SharedMemoryKernels {
    /** Largest block these kernels accept (the size of their shared arrays). */
    public static final int MAX_THREADS = 1024;

    private SharedMemoryKernels() {
    }

    /**
     * Per-block sum of ints by a tree reduction in shared memory. Args: {@code in} int[n];
     * {@code out} int[numGroupsX]; {@code n}. Grid: blocks of a power-of-two size up to 1024;
     * block {@code b} sums elements {@code [b * threads, (b + 1) * threads)} (missing ones are 0).
     */
    public static void blockReduceSum(KernelContext ctx, Buf in, Buf out, int n) {
        int[] s = ctx.allocateIntLocalArray(MAX_THREADS);
        int t = ctx.localIdx();
        int g = ctx.globalIdx();
        s[t] = g < n ? in.getInt(g) : 0;
        ctx.localBarrier();
        for (int stride = ctx.localGroupSizeX() / 2; stride > 0; stride >>= 1) {
            if (t < stride) {
                s[t] += s[t + stride];
            }
            ctx.localBarrier();
        }
        if (t == 0) {
            out.setInt(ctx.groupIdx(), s[0]);
        }
    }

    /**
     * Per-block sum of floats, same tree as {@link #blockReduceSum} (so bit-exact across
     * runners). Args: {@code in} float[n]; {@code out} float[numGroupsX]; {@code n}. Grid: blocks
     * of a power-of-two size up to 1024.
     */
    public static void blockReduceFloat(KernelContext ctx, Buf in, Buf out, int n) {
        float[] s = ctx.allocateFloatLocalArray(MAX_THREADS);
        int t = ctx.localIdx();
        int g = ctx.globalIdx();
        s[t] = g < n ? in.getFloat(g) : 0f;
        ctx.localBarrier();
        for (int stride = ctx.localGroupSizeX() / 2; stride > 0; stride >>= 1) {
            if (t < stride) {
                s[t] = s[t] + s[t + stride];
            }
            ctx.localBarrier();
        }
        if (t == 0) {
            out.setFloat(ctx.groupIdx(), s[0]);
        }
    }

    /**
     * Reverses each block's slice of {@code in} through shared memory. Args: {@code in} int[n];
     * {@code out} int[n]; {@code n}. Grid: any block size up to 1024, {@code numGroupsX * threads
     * >= n}. Expect {@code out[b*T + i] = in[b*T + T-1-i]} where that element exists, else 0
     * ({@code T} = threads per block).
     */
    public static void blockReverse(KernelContext ctx, Buf in, Buf out, int n) {
        int[] s = ctx.allocateIntLocalArray(MAX_THREADS);
        int t = ctx.localIdx();
        int g = ctx.globalIdx();
        s[t] = g < n ? in.getInt(g) : 0;
        ctx.localBarrier();
        if (g < n) {
            out.setInt(g, s[ctx.localGroupSizeX() - 1 - t]);
        }
    }

    /**
     * Inclusive prefix sum of longs within each block (Hillis-Steele, two barriers per step), in
     * a {@code long} shared array; also checks the array's length is known ({@code arraylength}).
     * Args: {@code in} long[n]; {@code out} long[n]; {@code n}. Grid: any block size up to 1024.
     */
    public static void blockScanLong(KernelContext ctx, Buf in, Buf out, int n) {
        long[] s = ctx.allocateLongLocalArray(MAX_THREADS);
        int t = ctx.localIdx();
        int g = ctx.globalIdx();
        s[t] = g < n ? in.getLong(g) : 0L;
        ctx.localBarrier();
        for (int d = 1; d < ctx.localGroupSizeX() && d < s.length; d <<= 1) {
            long add = t >= d ? s[t - d] : 0L;
            ctx.localBarrier();
            s[t] += add;
            ctx.localBarrier();
        }
        if (g < n) {
            out.setLong(g, s[t]);
        }
    }

    /**
     * Two shared arrays of different types used together, and {@code KernelContext.WARP_SIZE}:
     * each thread writes its warp's lane-0 value, read back from shared memory. Args:
     * {@code out} int[numGroupsX * threads]. Grid: any 1-D grid, block size up to 1024.
     * Expect {@code out[g] = 1000 * warp + lane0Global % 1000 + WARP_SIZE} with
     * {@code warp = localIdx / 32} and {@code lane0Global = g - localIdx % 32}.
     */
    public static void warpLanes(KernelContext ctx, Buf out) {
        int[] ids = ctx.allocateIntLocalArray(MAX_THREADS);
        float[] scratch = ctx.allocateFloatLocalArray(MAX_THREADS / KernelContext.WARP_SIZE);
        int t = ctx.localIdx();
        int warp = t / KernelContext.WARP_SIZE;
        ids[t] = ctx.globalIdx();
        if (t % KernelContext.WARP_SIZE == 0) {
            scratch[warp] = warp;
        }
        ctx.localBarrier();
        int lane0 = ids[warp * KernelContext.WARP_SIZE];
        out.setInt(ctx.globalIdx(), 1000 * (int) scratch[warp] + lane0 % 1000 + KernelContext.WARP_SIZE);
    }
}
