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
    /**
     * Written by the kernel: the value this put left in the destination's signal word (0 before
     * the first round; the word is written by this put only).
     */
    public static final int PUT_LEFT = 6;
    public static final int PUT_COLUMNS = 7;

    /** How much a signal grows from one round to the next: rounds are the high 32 bits. */
    public static final long ROUND_STEP = 1L << 32;
    /** Fewest bytes a chunk of a put carries (smaller puts use fewer of the grid's chunk blocks). */
    public static final long MIN_CHUNK_BYTES = 64 * 1024;

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
     * Grid {@code puts x chunks} ({@code chunks} a power of two, at most 64): put {@code i} reads
     * its count from {@code counts} and moves {@code count * bytesPerCount} bytes from {@code src}
     * to the destination's {@code dst}, split over as many of its {@code chunks} blocks as carry
     * at least {@link #MIN_CHUNK_BYTES} each (one block for a small message). The destination's
     * signal word ends at {@code signalBase + count}, after all the data: every block adds its
     * share with its part ({@code putSignalAddBlock}). Shares of a round: each block but the first
     * adds {@code ROUND_STEP / chunks}, the first the rest; until all have arrived the word stays
     * below {@code signalBase}, since counts are below {@code ROUND_STEP / chunks}. Requires one
     * batch per signal word and one issue per round (so the word grows by one round each time).
     *
     * <p>A count that is negative or does not fit sends nothing, not even the signal, so the
     * destination's bounded wait runs out and names this rank.
     */
    public static void putEach(KernelContext ctx, Buf src, Buf dst, Buf counts, Buf signals, Buf table,
                               long bytesPerCount, long signalBase) {
        long row = (long) ctx.groupIdx() * PUT_COLUMNS;
        int count = counts.getInt(table.getLong(row + PUT_COUNT_INDEX));
        long bytes = count * bytesPerCount;
        if (count < 0 || bytes > table.getLong(row + PUT_MAX_BYTES)) {
            return; // the same for every block of the put: no collective call is split
        }
        int chunks = ctx.numGroupsY();
        int chunk = ctx.groupIdy();
        int active = (int) Math.max(1, Math.min(chunks, bytes / MIN_CHUNK_BYTES));
        if (chunk >= active) {
            return;
        }
        long step = ROUND_STEP / chunks;
        long target = signalBase + count;
        long left = table.getLong(row + PUT_LEFT);
        long share = chunk == 0 ? target - left - (active - 1) * step : step;
        long chunkBytes = ((bytes + active - 1) / active + 15) & ~15L;
        long begin = Math.min(bytes, chunk * chunkBytes);
        long length = Math.min(chunkBytes, bytes - begin);
        ctx.putSignalAddBlock(dst.slice(table.getLong(row + PUT_DST_OFFSET) + begin, length),
                src.slice(table.getLong(row + PUT_SRC_OFFSET) + begin, length), length,
                signals.slice(8 * table.getLong(row + PUT_SIGNAL_INDEX), 8), share,
                (int) table.getLong(row + PUT_PEER));
        if (chunk == 0 && ctx.localIdx() == 0) {
            table.setLong(row + PUT_LEFT, target);
        }
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
