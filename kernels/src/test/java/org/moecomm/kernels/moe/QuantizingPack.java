package org.moecomm.kernels.moe;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.Specialize;

/**
 * A test kernel: {@link MoeKernels#pack}'s numbering and rows with the quantising copy, which the
 * library reaches only through {@code AllToAllKernels.dispatchSend} (a kernel that also talks to
 * peers), so that the quantiser is checked on its own: on the CPU runner against a plain loop
 * ({@code PackQuantizationTest}) and on the GPU against the CPU runner. x holds {@code hidden}
 * values of dtype {@code quantizeFrom} (bf16 or fp16) per token; the rows carry fp8 codes and
 * {@code hidden / 128} scales; m is read from {@code numTokens} and the ids are checked.
 */
public final class QuantizingPack {
    private QuantizingPack() {
    }

    public static void pack(KernelContext ctx, Buf x, Buf indices, Buf numTokens, Buf dispatchSend, Buf sendRows,
                            Buf pairLocation, Buf inputReport, int hidden, int topK, int expertsPerRank, int groupSize,
                            int member, int rowBytes, int maxTokens, int pairsPerRegion, @Specialize int quantizeFrom) {
        int dest = ctx.groupIdx();
        boolean serves = dest % groupSize == member;
        // xScale is not read when quantising: x stands in for it
        int rows = (int) MoeKernels.packRows(ctx, dest, ctx.numGroupsX(), x, x, indices, numTokens, pairLocation,
                inputReport, dispatchSend, (long) (dest / groupSize) * maxTokens, serves ? 1 : 0, dispatchSend, 0, -1,
                hidden, hidden / MoeKernels.SCALE_BLOCK, topK, expertsPerRank, rowBytes, maxTokens, pairsPerRegion,
                -1, 1, quantizeFrom, -1);
        if (serves && ctx.localIdx() == 0 && ctx.groupIdy() == ctx.numGroupsY() - 1) {
            sendRows.setInt(dest / groupSize, rows);
        }
    }
}
