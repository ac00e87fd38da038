package org.moecomm.kernels.comm;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Test kernels for the one-sided communication methods of {@link KernelContext} (not in the
 * single-GPU comparison suite of package testkernels: they need several ranks): run by several
 * ranks at once, on the JVM with a shared {@link org.moecomm.kernels.cpu.PeerMemory} or on GPUs
 * with NVSHMEM.
 */
public final class CommKernels {
    private CommKernels() {
    }

    /**
     * Grid of {@code world} blocks: block {@code d} puts {@code rows[d]} rows of {@code rowBytes}
     * (read on the device) from region {@code d} of {@code send} to region {@code rank} of
     * {@code d}'s symmetric {@code recv} and sets {@code d}'s signal word {@code rank} to
     * {@code base + rows[d]}; then its thread 0 waits for this rank's signal word {@code d} to reach
     * {@code base} and writes 1 (arrived) or 0 to {@code arrived[d]}; a wait that runs out
     * reports {@code tag}.
     */
    public static void exchange(KernelContext ctx, Buf recv, Buf send, Buf rows, Buf signals, Buf arrived,
                                Buf errors, long rowBytes, long regionBytes, long base, long timeoutNanos, int rank,
                                int tag) {
        int d = ctx.groupIdx();
        long bytes = rows.getInt(d) * rowBytes;
        ctx.putSignalBlock(recv.slice(rank * regionBytes, regionBytes), send.slice(d * regionBytes, regionBytes), bytes,
                signals.slice(8L * rank, 8), base + rows.getInt(d), d);
        if (ctx.localIdx() == 0) {
            long seen = ctx.waitAtLeast(signals.slice(8L * d, 8), base, timeoutNanos, errors, rank, d, tag);
            arrived.setInt(d, KernelContext.reached(seen, base) ? 1 : 0);
        }
    }

    /**
     * One block: thread {@code p < world} adds {@code delta} to rank {@code p}'s counter, or sets
     * it to {@code target} when {@code set} is 1; then thread 0 waits for this rank's counter to
     * reach {@code target} and writes the low half of the value the wait returned to
     * {@code arrived[0]}, or -1 when it did not arrive (a wait that runs out reports {@code tag}).
     */
    public static void count(KernelContext ctx, Buf counter, Buf arrived, Buf errors, long delta, long target, int set,
                             long timeoutNanos, int rank, int world, int tag) {
        int p = ctx.localIdx();
        if (p < world) {
            if (set == 1) {
                ctx.signalSet(counter, target, p);
            } else {
                ctx.signalAdd(counter, delta, p);
            }
        }
        if (p == 0) {
            long seen = ctx.waitAtLeast(counter, target, timeoutNanos, errors, rank, -1, tag);
            arrived.setInt(0, KernelContext.reached(seen, target) ? (int) seen : -1);
        }
    }

    /**
     * Grid {@code world x chunks}: block {@code (d, c)} puts part {@code c} ({@code chunkBytes}
     * bytes at offset {@code c * chunkBytes}) of region {@code d} of {@code send} to the same part
     * of region {@code rank} of {@code d}'s symmetric {@code recv}, and adds {@code delta} to
     * {@code d}'s signal word {@code rank} with it ({@code putSignalAddBlock}): once every part
     * has arrived the word has grown by {@code chunks * delta}.
     */
    public static void putShares(KernelContext ctx, Buf recv, Buf send, Buf signals, long chunkBytes,
                                 long regionBytes, long delta, int rank) {
        int d = ctx.groupIdx();
        long at = ctx.groupIdy() * chunkBytes;
        ctx.putSignalAddBlock(recv.slice(rank * regionBytes + at, chunkBytes), send.slice(d * regionBytes + at,
                chunkBytes), chunkBytes, signals.slice(8L * rank, 8), delta, d);
    }

    /**
     * One block on ranks 0 and 1 (other ranks return): {@code rounds} round trips. Round
     * {@code n}: rank 0 puts {@code bytes} of {@code src} to region 0 of rank 1's {@code data} with
     * rank 1's signal word 0 set to {@code base + n}; rank 1 waits for it, then puts its
     * {@code src} to region 1 of rank 0's {@code data} with rank 0's word 1 set to
     * {@code base + n}, which rank 0 waits for before the next round. A wait that runs out
     * reports {@code tag} (on the GPU the later waits then return at once).
     */
    public static void pingPong(KernelContext ctx, Buf data, Buf src, Buf signals, Buf errors, long bytes,
                                long base, int rounds, long timeoutNanos, int rank, int tag) {
        if (rank > 1) {
            return;
        }
        int peer = 1 - rank;
        for (int n = 1; n <= rounds; n++) {
            if (rank == 1) {
                if (ctx.localIdx() == 0) {
                    ctx.waitAtLeast(signals.slice(0, 8), base + n, timeoutNanos, errors, rank, peer, tag);
                }
                ctx.localBarrier();
            }
            ctx.putSignalBlock(data.slice(rank * bytes, bytes), src, bytes, signals.slice(8L * rank, 8), base + n,
                    peer);
            if (rank == 0) {
                if (ctx.localIdx() == 0) {
                    ctx.waitAtLeast(signals.slice(8, 8), base + n, timeoutNanos, errors, rank, peer, tag);
                }
                ctx.localBarrier();
            }
        }
    }
}
