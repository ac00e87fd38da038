package org.moecomm.kernels.comm;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Test kernels for {@link KernelContext#peerBuf}, the non-blocking puts, {@link KernelContext#quiet}
 * and {@link KernelContext#systemFence}: run by several ranks at once, like {@link CommKernels}.
 *
 * <p>Each is launched with {@code world} blocks; block {@code d} sends region {@code d} of this
 * rank's data (regions of {@code regionBytes}) to region {@code rank} of {@code d}'s symmetric
 * {@code recv}, sets {@code d}'s signal word {@code rank} to {@code base}, then its thread 0 waits
 * for this rank's signal word {@code d} to reach {@code base} and writes 1 (arrived) or 0 to
 * {@code arrived[d]}; a wait that runs out reports {@code tag}.
 */
public final class PeerAccessKernels {
    private PeerAccessKernels() {
    }

    /**
     * Stores straight into the peer's memory: the block copies the first {@code bytes[d]} bytes
     * (a multiple of 8) of region {@code d} of {@code send} as longs through {@code peerBuf}, then
     * every thread fences ({@code systemFence}) and, after a barrier, thread 0 signals.
     */
    public static void storeThroughPeer(KernelContext ctx, Buf recv, Buf send, Buf bytes, Buf signals, Buf arrived,
                                        Buf errors, long regionBytes, long base, long timeoutNanos, int rank,
                                        int tag) {
        int d = ctx.groupIdx();
        Buf dst = ctx.peerBuf(recv.slice(rank * regionBytes, regionBytes), d);
        Buf src = send.slice(d * regionBytes, regionBytes);
        long words = bytes.getInt(d) / 8;
        for (long i = ctx.localIdx(); i < words; i += ctx.localGroupSizeX()) {
            dst.setLong(i, src.getLong(i));
        }
        ctx.systemFence();
        ctx.localBarrier();
        signalAndWait(ctx, signals, arrived, errors, base, timeoutNanos, rank, d, tag);
    }

    /**
     * One block-collective non-blocking put of the first {@code bytes[d]} bytes of region
     * {@code d} of {@code send}; every thread then calls {@code quiet} and, after a barrier,
     * thread 0 signals.
     */
    public static void putBlock(KernelContext ctx, Buf recv, Buf send, Buf bytes, Buf signals, Buf arrived,
                                Buf errors, long regionBytes, long base, long timeoutNanos, int rank, int tag) {
        int d = ctx.groupIdx();
        ctx.putBlockNbi(recv.slice(rank * regionBytes, regionBytes), send.slice(d * regionBytes, regionBytes),
                bytes.getInt(d), d);
        ctx.quiet();
        ctx.localBarrier();
        signalAndWait(ctx, signals, arrived, errors, base, timeoutNanos, rank, d, tag);
    }

    /**
     * Rows from several warps: the block first writes {@code rows[d]} rows of {@code rowBytes}
     * into region {@code d} of {@code stage} (the longs of region {@code d} of {@code send}, each
     * xor {@code key}), then, after a barrier, warp {@code w} puts rows {@code w, w + warps, ...}
     * with {@code putWarpNbi}; every thread calls {@code quiet} and, after a barrier, thread 0
     * signals. {@code regionBytes} is a multiple of 8.
     */
    public static void putWarps(KernelContext ctx, Buf recv, Buf send, Buf stage, Buf rows, Buf signals,
                                Buf arrived, Buf errors, long rowBytes, long regionBytes, long key, long base,
                                long timeoutNanos, int rank, int tag) {
        int d = ctx.groupIdx();
        int n = rows.getInt(d);
        Buf src = send.slice(d * regionBytes, regionBytes);
        Buf staged = stage.slice(d * regionBytes, regionBytes);
        long words = n * rowBytes / 8;
        for (long i = ctx.localIdx(); i < words; i += ctx.localGroupSizeX()) {
            staged.setLong(i, src.getLong(i) ^ key);
        }
        ctx.localBarrier();
        int warps = ctx.localGroupSizeX() / KernelContext.WARP_SIZE;
        Buf dst = recv.slice(rank * regionBytes, regionBytes);
        for (int r = ctx.localIdx() / KernelContext.WARP_SIZE; r < n; r += warps) {
            ctx.putWarpNbi(dst.slice(r * rowBytes, rowBytes), staged.slice(r * rowBytes, rowBytes), rowBytes, d);
        }
        ctx.quiet();
        ctx.localBarrier();
        signalAndWait(ctx, signals, arrived, errors, base, timeoutNanos, rank, d, tag);
    }

    /** Every method at once, for the compiler tests (not a protocol). */
    public static void allMethods(KernelContext ctx, Buf dst, Buf src, long bytes, long value, int pe) {
        Buf peer = ctx.peerBuf(dst, pe);
        peer.setLong(ctx.localIdx(), value);
        ctx.systemFence();
        ctx.localBarrier();
        ctx.putBlockNbi(dst, src, bytes, pe);
        ctx.putWarpNbi(dst.slice(64, 64), src.slice(64, 64), 64, pe);
        ctx.quiet();
    }

    private static void signalAndWait(KernelContext ctx, Buf signals, Buf arrived, Buf errors, long base,
                                      long timeoutNanos, int rank, int d, int tag) {
        if (ctx.localIdx() == 0) {
            ctx.signalSet(signals.slice(8L * rank, 8), base, d);
            long seen = ctx.waitAtLeast(signals.slice(8L * d, 8), base, timeoutNanos, errors, rank, d, tag);
            arrived.setInt(d, KernelContext.reached(seen, base) ? 1 : 0);
        }
    }
}
