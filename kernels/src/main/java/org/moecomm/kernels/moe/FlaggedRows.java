package org.moecomm.kernels.moe;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Dispatch rows that carry their own arrival (the "low latency" protocol of NCCL, in 8-byte
 * words): int32 word {@code w} of a row (the plain layout of {@link MoeKernels}: token, scales,
 * meta) is stored as int64 slot {@code w}, {@code flag << 32 | value}, with one store that a
 * reader sees whole or not at all ({@link KernelContext#storeRelaxed}). The flag is the round
 * (its low 32 bits, never 0), so a receiver that loads a slot holding this round's flag has the
 * value, whatever became of the other slots; a slot with an older flag has not arrived yet. The
 * sender needs no fence between its rows and its signal, which may then arrive first: it only
 * tells how many rows to expect. The price is twice the bytes, which only a decode round's few
 * rows can afford (docs/protocol.md, "Flagged rows").
 *
 * <p>Every method takes {@code flag}: 0 reads and writes the plain layout ({@code int32} words,
 * ordinary accesses), so the kernels call one code path for both.
 *
 * <p>A slot that has not arrived when its row is read is waited for, bounded, as the dispatch
 * signal of its source is ({@link KernelContext#waitAtLeast} for {@code flag << 32}, the same
 * peer and tag): a sender that never writes it makes the round fail with the wait's error.
 */
final class FlaggedRows {
    /**
     * Bit of a dispatch signal's low half (rows below it): the source's rows of this round are
     * flagged, in the handle's {@code dispatchFlagged} buffer, not plain in {@code dispatchRecv}.
     */
    static final long SIGNAL_FLAGGED = 1L << 31;

    private FlaggedRows() {
    }

    /**
     * The flag of round {@code round}: {@code round % epoch}. Flags grow within an epoch, so a
     * slot not yet written this round holds a smaller one (or 0) and a bounded wait for
     * {@code flag << 32} waits for the right value; the epoch's round whose flag is 0 sends plain
     * rows, and every receiver clears its flagged slots in it ({@link #clear}), so the next epoch
     * starts from zeros again. {@code epoch} is at most {@code 2^31 - 1} (flags stay positive).
     */
    static int flagOf(long round, int epoch) {
        return (int) (round % epoch);
    }

    /** Zeroes {@code slots} slots of {@code rows} from {@code first} on, the block's threads together. */
    static void clear(KernelContext ctx, Buf rows, long first, long slots) {
        for (long i = ctx.localIdx(); i < slots; i += ctx.localGroupSizeX()) {
            rows.setLong(first + i, 0);
        }
    }

    /** The rows a dispatch signal's low half {@code low} counts. */
    static int rowsOf(int low) {
        return low & 0x7fffffff;
    }

    /** Whether a dispatch signal's low half {@code low} says the rows are flagged. */
    static boolean flaggedIn(int low) {
        return low < 0;
    }

    /** The slot of {@code value} in a row flagged {@code flag}. */
    static long slot(int flag, int value) {
        return ((long) flag << 32) | (value & 0xffffffffL);
    }

    /** Writes int32 word {@code word} of a row: plain ({@code flag == 0}) or as its flagged slot. */
    static void store(KernelContext ctx, Buf rows, long word, int value, int flag) {
        if (flag == 0) {
            rows.setInt(word, value);
        } else {
            ctx.storeRelaxed(rows, word, slot(flag, value));
        }
    }

    /**
     * Copies {@code pieces} 16-byte pieces of {@code src} (from piece {@code srcPiece}) into the
     * flagged row words from {@code dstWord} on, a team of {@code width} threads (lane
     * {@code lane}) together: up to four pieces per lane loaded before any is stored, as
     * {@link MoeKernels#copyPiecesDeep} keeps its loads in flight.
     */
    static void copyPieces(KernelContext ctx, Buf dst, long dstWord, Buf src, long srcPiece, int pieces, int lane,
                           int width, int flag) {
        for (int i = lane; i < pieces; i += 4 * width) {
            int i1 = i + width;
            int i2 = i1 + width;
            int i3 = i2 + width;
            long a0 = src.getLong(2 * (srcPiece + i));
            long b0 = src.getLong(2 * (srcPiece + i) + 1);
            long a1 = i1 < pieces ? src.getLong(2 * (srcPiece + i1)) : 0;
            long b1 = i1 < pieces ? src.getLong(2 * (srcPiece + i1) + 1) : 0;
            long a2 = i2 < pieces ? src.getLong(2 * (srcPiece + i2)) : 0;
            long b2 = i2 < pieces ? src.getLong(2 * (srcPiece + i2) + 1) : 0;
            long a3 = i3 < pieces ? src.getLong(2 * (srcPiece + i3)) : 0;
            long b3 = i3 < pieces ? src.getLong(2 * (srcPiece + i3) + 1) : 0;
            storePiece(ctx, dst, dstWord + 4L * i, a0, b0, flag);
            if (i1 < pieces) {
                storePiece(ctx, dst, dstWord + 4L * i1, a1, b1, flag);
            }
            if (i2 < pieces) {
                storePiece(ctx, dst, dstWord + 4L * i2, a2, b2, flag);
            }
            if (i3 < pieces) {
                storePiece(ctx, dst, dstWord + 4L * i3, a3, b3, flag);
            }
        }
    }

    /** One 16-byte piece ({@code lo}, {@code hi}: its bytes 0-7 and 8-15) as four flagged slots. */
    static void storePiece(KernelContext ctx, Buf dst, long word, long lo, long hi, int flag) {
        ctx.storeRelaxed(dst, word, slot(flag, (int) lo));
        ctx.storeRelaxed(dst, word + 1, slot(flag, (int) (lo >>> 32)));
        ctx.storeRelaxed(dst, word + 2, slot(flag, (int) hi));
        ctx.storeRelaxed(dst, word + 3, slot(flag, (int) (hi >>> 32)));
    }

    /**
     * The raw load of int32 word {@code word} of a row: the word ({@code flag == 0}) or its
     * flagged slot, to be {@linkplain #settle settled} after the loads that go with it are issued.
     */
    static long load(KernelContext ctx, Buf rows, long word, int flag) {
        return flag == 0 ? rows.getInt(word) : ctx.loadRelaxed(rows, word);
    }

    /**
     * The value of a word {@link #load}ed as {@code loaded}: a plain word as it is, a flagged
     * slot once it holds this round's flag (waited for, bounded, and loaded again when it did
     * not yet; 0 when the wait ran out, which the wait recorded in {@code errors}).
     */
    static int settle(KernelContext ctx, Buf rows, long word, long loaded, int flag, Buf errors, long timeoutNanos,
                      int rank, int peer, int tag) {
        if (flag == 0 || (int) (loaded >>> 32) == flag) {
            return (int) loaded;
        }
        if (await(ctx, rows, word, 1, flag, errors, timeoutNanos, rank, peer, tag)) {
            return (int) ctx.loadRelaxed(rows, word);
        }
        return 0;
    }

    /**
     * Waits, bounded, until slots {@code [word, word + count)} hold this round's flag. False when a
     * wait ran out (recorded in {@code errors}, raised on the host).
     */
    static boolean await(KernelContext ctx, Buf rows, long word, int count, int flag, Buf errors, long timeoutNanos,
                         int rank, int peer, int tag) {
        long arrived = (long) flag << 32;
        for (int j = 0; j < count; j++) {
            if (!ctx.waitAtLeast(rows.slice(8 * (word + j), 8), arrived, timeoutNanos, errors, rank, peer, tag)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Copies a flagged row's token ({@code pieces} 16-byte pieces, its words from {@code srcWord}
     * on) into {@code dst} from piece {@code dstPiece}, a team of {@code width} threads together:
     * two pieces per lane and step (eight slots in flight), a step whose slots have not all
     * arrived waits for them and loads again.
     */
    static void copyToPlain(KernelContext ctx, Buf rows, long srcWord, Buf dst, long dstPiece, int pieces, int lane,
                            int width, int flag, Buf errors, long timeoutNanos, int rank, int peer, int tag) {
        int i = lane;
        while (i < pieces) {
            int j = i + width;
            boolean two = j < pieces;
            long wi = srcWord + 4L * i;
            long wj = srcWord + 4L * j;
            long s0 = ctx.loadRelaxed(rows, wi);
            long s1 = ctx.loadRelaxed(rows, wi + 1);
            long s2 = ctx.loadRelaxed(rows, wi + 2);
            long s3 = ctx.loadRelaxed(rows, wi + 3);
            long t0 = two ? ctx.loadRelaxed(rows, wj) : s0;
            long t1 = two ? ctx.loadRelaxed(rows, wj + 1) : s0;
            long t2 = two ? ctx.loadRelaxed(rows, wj + 2) : s0;
            long t3 = two ? ctx.loadRelaxed(rows, wj + 3) : s0;
            boolean first = arrived(s0, flag) && arrived(s1, flag) && arrived(s2, flag) && arrived(s3, flag);
            boolean second = arrived(t0, flag) && arrived(t1, flag) && arrived(t2, flag) && arrived(t3, flag);
            if (first && second) {
                dst.setLong(2 * (dstPiece + i), joined(s0, s1));
                dst.setLong(2 * (dstPiece + i) + 1, joined(s2, s3));
                if (two) {
                    dst.setLong(2 * (dstPiece + j), joined(t0, t1));
                    dst.setLong(2 * (dstPiece + j) + 1, joined(t2, t3));
                }
                i += 2 * width;
            } else if (!await(ctx, rows, first ? wj : wi, 4, flag, errors, timeoutNanos, rank, peer, tag)) {
                i += 2 * width; // the wait ran out (recorded): the round fails on the host
            }
            // else a piece that had not arrived has now: load the step again (one wait site: the CPU
            // runner's loop form copies the code of every wait that a kernel reaches)
        }
    }

    /**
     * {@link MoeKernels#copyListed} for flagged rows, all from one source, {@code peer}: teams of
     * warps copy the listed pairs' rows with {@link #copyRowToExpert}.
     */
    static void copyListed(KernelContext ctx, Buf rows, int flag, Buf expertX, Buf expertXScale, int copies,
                           int[] copySlot, int[] copyExpert, int[] copyRow, int capacity, int xBytes,
                           int scalesPerToken, int rowBytes, Buf errors, long timeoutNanos, int rank, int peer,
                           int tag) {
        int threads = ctx.localGroupSizeX();
        int width = MoeKernels.teamWidth(threads, copies);
        int team = ctx.localIdx() / width;
        int lane = ctx.localIdx() - team * width;
        for (int c = team; c < copies && team < threads / width; c += threads / width) {
            if (copySlot[c] >= 0) {
                copyRowToExpert(ctx, rows, expertX, expertXScale, copyRow[c], (long) copyExpert[c] * capacity
                        + copySlot[c], lane, width, xBytes, scalesPerToken, rowBytes, flag, errors, timeoutNanos, rank,
                        peer, tag);
            }
        }
    }

    /**
     * {@link MoeKernels#copyRowToExpert} for a flagged row: row {@code srcRow}'s token and scales,
     * by a team of {@code width} threads, into {@code expertX} and {@code expertXScale} row
     * {@code dstRow}; each word waited for, when it has not arrived, with {@code peer} and {@code tag}.
     */
    static void copyRowToExpert(KernelContext ctx, Buf rows, Buf expertX, Buf expertXScale, long srcRow, long dstRow,
                                int lane, int width, int xBytes, int scalesPerToken, int rowBytes, int flag,
                                Buf errors, long timeoutNanos, int rank, int peer, int tag) {
        int pieces = xBytes >> 4;
        long srcWord = (srcRow * rowBytes) >> 2;
        long scaleWord = srcWord + (MoeKernels.align16(xBytes) >> 2);
        long dstScale = dstRow * scalesPerToken;
        // the lane's first scale in flight with the token's slots
        long laneScale = lane < scalesPerToken ? ctx.loadRelaxed(rows, scaleWord + lane) : 0;
        copyToPlain(ctx, rows, srcWord, expertX, dstRow * pieces, pieces, lane, width, flag, errors, timeoutNanos,
                rank, peer, tag);
        for (int i = lane; i < scalesPerToken; i += width) {
            long loaded = i == lane ? laneScale : ctx.loadRelaxed(rows, scaleWord + i);
            // a wait (in settle) is a split point of the CPU runner's loop form: its result goes to a local first
            int scale = settle(ctx, rows, scaleWord + i, loaded, flag, errors, timeoutNanos, rank, peer, tag);
            expertXScale.setInt(dstScale + i, scale);
        }
    }

    /** Whether a flagged slot holds this round's flag. */
    static boolean arrived(long slot, int flag) {
        return (int) (slot >>> 32) == flag;
    }

    /** The 8 plain bytes of two flagged slots (their values, low word first). */
    static long joined(long lo, long hi) {
        return (lo & 0xffffffffL) | (hi << 32);
    }
}
