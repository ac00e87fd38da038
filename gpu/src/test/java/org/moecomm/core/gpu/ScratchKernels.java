package org.moecomm.core.gpu;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/** Unrelated work for the GPU tests to run between the send and receive halves. */
public final class ScratchKernels {
    private ScratchKernels() {
    }

    /** Adds 1 to each of the {@code n} floats of {@code data}; any 1-D grid. */
    public static void increment(KernelContext ctx, Buf data, int n) {
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            data.setFloat(i, data.getFloat(i) + 1f);
        }
    }
}
