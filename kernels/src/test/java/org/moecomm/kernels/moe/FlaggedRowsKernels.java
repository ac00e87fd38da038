package org.moecomm.kernels.moe;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Test kernels for {@link FlaggedRows}: one block writes a dispatch row flagged, one block reads
 * one back, as dispatch send and dispatch recv do (their block is one team).
 */
public final class FlaggedRowsKernels {
    private FlaggedRowsKernels() {
    }

    /**
     * Writes row {@code row} of {@code rows} flagged {@code flag} (0: plain): the token from
     * {@code x} (16-byte pieces), {@code scalesPerToken} scales from {@code xScale} and
     * {@code metaWords} meta words from {@code meta}, at the plain row layout's word offsets.
     */
    public static void writeRow(KernelContext ctx, Buf rows, Buf x, Buf xScale, Buf meta, long row, int xBytes,
                                int scalesPerToken, int metaWords, int rowBytes, int flag) {
        int width = ctx.localGroupSizeX();
        int lane = ctx.localIdx();
        long word = (row * rowBytes) >> 2;
        FlaggedRows.copyPieces(ctx, rows, word, x, 0, xBytes >> 4, lane, width, flag);
        long scaleWord = word + (MoeKernels.align16(xBytes) >> 2);
        for (int i = lane; i < scalesPerToken; i += width) {
            FlaggedRows.store(ctx, rows, scaleWord + i, xScale.getInt(i), flag);
        }
        long metaWord = word + (MoeKernels.rowMetaOffset(xBytes, scalesPerToken) >> 2);
        for (int i = lane; i < metaWords; i += width) {
            FlaggedRows.store(ctx, rows, metaWord + i, meta.getInt(i), flag);
        }
    }

    /**
     * Copies flagged row {@code row} of {@code rows} (token and scales) into row {@code dstRow} of
     * {@code expertX} and {@code expertXScale}, the block as one team; a word not yet arrived is
     * waited for (peer {@code peer}, tag {@code tag}, bound {@code timeoutNanos}).
     */
    public static void readRow(KernelContext ctx, Buf rows, Buf expertX, Buf expertXScale, Buf errors, long row,
                               long dstRow, int xBytes, int scalesPerToken, int rowBytes, int flag, long timeoutNanos,
                               int peer, int tag) {
        FlaggedRows.copyRowToExpert(ctx, rows, expertX, expertXScale, row, dstRow, ctx.localIdx(),
                ctx.localGroupSizeX(), xBytes, scalesPerToken, rowBytes, flag, errors, timeoutNanos, 0, peer, tag);
    }

    /** Zeroes slots {@code [first, first + slots)} of {@code rows}, as a receiver does in an epoch's plain round. */
    public static void clearSlots(KernelContext ctx, Buf rows, long first, long slots) {
        FlaggedRows.clear(ctx, rows, first, slots);
    }
}
