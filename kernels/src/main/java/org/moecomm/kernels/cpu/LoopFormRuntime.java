package org.moecomm.kernels.cpu;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * What the loop form of a kernel ({@link LoopFormCompiler}) calls in place of the context methods
 * that synchronise a block or wait: the part of each that one thread does between two of the
 * block's barriers. Public only because the loop forms are hidden classes in the kernels' own
 * packages; not an API for kernels.
 */
public final class LoopFormRuntime {
    private LoopFormRuntime() {
    }

    /** One look at a {@link KernelContext#waitAtLeast}'s signal word: true once it has been reached. */
    public static boolean pollWait(KernelContext ctx, Buf signal, long value, long timeoutNanos, Buf errors, int rank,
                                   int peer, int tag) {
        return ((CpuKernelContext) ctx).pollWait(signal, value, timeoutNanos, errors, rank, peer, tag);
    }

    /** The result of a {@link KernelContext#waitAtLeast} whose {@link #pollWait} returned true: the value it saw. */
    public static long passedWith(KernelContext ctx) {
        return ((CpuKernelContext) ctx).passedWith();
    }

    /** {@link KernelContext#putBlockNbi} between its barriers. */
    public static void putBlock(KernelContext ctx, Buf dst, Buf src, long bytes, int pe) {
        CpuKernelContext c = (CpuKernelContext) ctx;
        c.putBlockOnce(c.peers("putBlockNbi"), dst, src, bytes, pe);
    }

    /** {@link KernelContext#putSignalBlock} between its barriers. */
    public static void putSignal(KernelContext ctx, Buf dst, Buf src, long bytes, Buf signal, long value, int pe) {
        CpuKernelContext c = (CpuKernelContext) ctx;
        c.putSignalOnce("putSignalBlock", c.peers("putSignalBlock"), dst, src, bytes, signal, value, pe, false);
    }

    /** {@link KernelContext#putSignalAddBlock} between its barriers. */
    public static void putSignalAdd(KernelContext ctx, Buf dst, Buf src, long bytes, Buf signal, long value, int pe) {
        CpuKernelContext c = (CpuKernelContext) ctx;
        c.putSignalOnce("putSignalAddBlock", c.peers("putSignalAddBlock"), dst, src, bytes, signal, value, pe, true);
    }

    /** Marks a split point while the loop form's local types are inferred; never called. */
    public static void site(int site) {
        throw new IllegalStateException("split point " + site + " of an unfinished loop form");
    }
}
