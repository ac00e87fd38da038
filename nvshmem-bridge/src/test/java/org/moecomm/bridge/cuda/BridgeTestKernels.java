package org.moecomm.bridge.cuda;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/** Kernels of the bridge's own tests. */
public final class BridgeTestKernels {
    private BridgeTestKernels() {
    }

    /** {@code out[i] = value} for {@code i < n}. Args: {@code out} int[n]; {@code n}; {@code value}. Grid: >= n threads. */
    public static void fill(KernelContext ctx, Buf out, int n, int value) {
        int i = ctx.globalIdx();
        if (i < n) {
            out.setInt(i, value);
        }
    }

    /**
     * {@code y[i] = a * x[i] + y[i]} (separate multiply and add) and {@code count[0] += 1} per
     * element by an atomic. Args: {@code x}, {@code y} float[n]; {@code count} int[1]; {@code a};
     * {@code n}. Grid: >= n threads. Exercises float, int and Buf parameters together.
     */
    public static void axpyCount(KernelContext ctx, Buf x, Buf y, Buf count, float a, int n) {
        int i = ctx.globalIdx();
        if (i < n) {
            float v = a * x.getFloat(i);
            y.setFloat(i, v + y.getFloat(i));
            ctx.atomicAdd(count, 0, 1);
        }
    }
}
