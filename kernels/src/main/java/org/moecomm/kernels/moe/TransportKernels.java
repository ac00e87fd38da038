package org.moecomm.kernels.moe;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * The puts, signals and waits of one protocol step in one launch each, from tables that describe
 * them (prepared once per handle, in device memory): a GPU backend issues every put of a step as
 * one kernel instead of one launch per peer. The kernels call the one-sided communication
 * methods of {@link KernelContext} (NVSHMEM device functions on the GPU).
 *
 * <p>Tables are arrays of longs, one row per operation, with the columns below.
 */
public final class TransportKernels {
    /** Put table columns: byte offset in {@code src}. */
    public static final int PUT_SRC_OFFSET = 0;
    /** Byte offset in the symmetric {@code dst}. */
    public static final int PUT_DST_OFFSET = 1;
    /** Index of the int32 count in {@code counts}. */
    public static final int PUT_COUNT_INDEX = 2;
    /** Index of the 64-bit signal word in the symmetric {@code signals}. */
    public static final int PUT_SIGNAL_INDEX = 3;
    /** Destination rank. */
    public static final int PUT_PEER = 4;
    /** Most bytes the put may move (room in the source and at the destination). */
    public static final int PUT_MAX_BYTES = 5;
    public static final int PUT_COLUMNS = 6;

    /** Wait table columns: index of the signal word in {@code signals}. */
    public static final int WAIT_SIGNAL_INDEX = 0;
    /** The rank expected to raise it (reported on timeout). */
    public static final int WAIT_PEER = 1;
    /** The tag reported on timeout. */
    public static final int WAIT_TAG = 2;
    public static final int WAIT_COLUMNS = 3;

    private TransportKernels() {
    }

    /**
     * Grid of one block per put: block {@code i} reads its count from {@code counts}, copies
     * {@code count * bytesPerCount} bytes from {@code src} to the destination's {@code dst} and
     * sets the destination's signal word to {@code signalBase + count} (after the data). A count
     * that is negative or does not fit sends nothing, not even the signal, so the destination's
     * bounded wait runs out and names this rank.
     */
    public static void putEach(KernelContext ctx, Buf src, Buf dst, Buf counts, Buf signals, Buf table,
                               long bytesPerCount, long signalBase) {
        long row = (long) ctx.groupIdx() * PUT_COLUMNS;
        int count = counts.getInt(table.getLong(row + PUT_COUNT_INDEX));
        long bytes = count * bytesPerCount;
        if (count < 0 || bytes > table.getLong(row + PUT_MAX_BYTES)) {
            return; // the same for every thread of the block: no collective call is split
        }
        ctx.putSignalBlock(dst.slice(table.getLong(row + PUT_DST_OFFSET), bytes),
                src.slice(table.getLong(row + PUT_SRC_OFFSET), bytes), bytes,
                signals.slice(8 * table.getLong(row + PUT_SIGNAL_INDEX), 8), signalBase + count,
                (int) table.getLong(row + PUT_PEER));
    }

    /**
     * One block: thread {@code i} (and {@code i + blockDim}, ...) waits, bounded, until this
     * rank's signal word of wait {@code i} is {@code >= value}. A wait that runs out is recorded
     * in {@code errors} with its peer and tag (the waits after it then return at once).
     */
    public static void waitEach(KernelContext ctx, Buf signals, Buf table, int waits, long value, long timeoutNanos,
                                Buf errors, int rank) {
        for (int i = ctx.localIdx(); i < waits; i += ctx.localGroupSizeX()) {
            long row = (long) i * WAIT_COLUMNS;
            ctx.waitAtLeast(signals.slice(8 * table.getLong(row + WAIT_SIGNAL_INDEX), 8), value, timeoutNanos, errors,
                    rank, (int) table.getLong(row + WAIT_PEER), (int) table.getLong(row + WAIT_TAG));
        }
    }

    /**
     * One block: thread {@code i} (and {@code i + blockDim}, ...) sets ({@code add == 0}) or adds
     * {@code value} to signal word {@code index} on rank {@code peers[i]} (int32).
     */
    public static void signalEach(KernelContext ctx, Buf signals, Buf peers, int count, long index, long value,
                                  int add) {
        Buf word = signals.slice(8 * index, 8);
        for (int i = ctx.localIdx(); i < count; i += ctx.localGroupSizeX()) {
            if (add == 0) {
                ctx.signalSet(word, value, peers.getInt(i));
            } else {
                ctx.signalAdd(word, value, peers.getInt(i));
            }
        }
    }
}
