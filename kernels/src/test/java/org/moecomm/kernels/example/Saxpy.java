package org.moecomm.kernels.example;

import java.lang.foreign.Arena;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/** The example of docs/kernels-in-java.md ("A complete example"): keep the two in step. */
public final class Saxpy {
    private Saxpy() {
    }

    /** {@code y[i] = a * x[i] + y[i]} for {@code i < n}, a grid-stride loop. */
    public static void saxpy(KernelContext ctx, Buf x, Buf y, float a, int n) {
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            y.setFloat(i, a * x.getFloat(i) + y.getFloat(i));
        }
    }

    public static final Kernel SAXPY = new Kernel(Saxpy.class, "saxpy");

    /** Runs saxpy on the CPU runner over {@code n} elements: x[i] = i, y[i] = 1; returns y. */
    public static float[] runOnCpu(int n, float a) {
        try (Arena arena = Arena.ofShared()) {          // kernel threads are not this thread: shared, not confined
            Buf x = Buf.allocate(arena, 4L * n);
            Buf y = Buf.allocate(arena, 4L * n);
            for (int i = 0; i < n; i++) {
                x.setFloat(i, i);
                y.setFloat(i, 1f);
            }
            new CpuKernelRunner().launch(SAXPY, Grid.of(4, 128), x, y, a, n);   // 4 blocks of 128 threads
            float[] out = new float[n];
            for (int i = 0; i < n; i++) {
                out[i] = y.getFloat(i);
            }
            return out;
        }
    }
}
