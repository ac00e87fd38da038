package org.moecomm.kernels.cpu;

import java.lang.foreign.MemorySegment;

import org.moecomm.kernels.api.Buf;

/**
 * What the loop form of a kernel ({@link LoopFormCompiler}) calls in place of the library's
 * team-collective helpers ({@link Substitutions} lists them). On a GPU each thread of a team does
 * its share of such a helper (a 16-byte piece in every {@code width}, a quad in every
 * {@code step}); in a loop block the threads run one after another, so the first member of the
 * team to arrive does the whole team's work in one go (a row as one bulk copy, a token's sum with
 * its pairs loaded once) and the others only check in with the block's {@link CollectiveLedger}.
 * The bytes written are the same: the team's shares together are the whole work, each element
 * computed as the helper computes it.
 *
 * <p>The contract that makes this exact is the helpers' own: every member of the team calls the
 * helper with the same arguments (its lane aside) between the same two barriers, and nothing
 * reads what the team writes before the next barrier but the members themselves. The ledger
 * checks the first part and fails the launch when a member skips or changes a call. A call that
 * does not describe a team (a lane outside the width, a team that does not fit in the block) does
 * the caller's share alone, as the helper does. Failures differ in one way: an access out of
 * bounds fails at the first member, before any byte of the row is written.
 *
 * <p>Public only because the loop forms are hidden classes in the kernels' own packages; not an
 * API for kernels.
 */
public final class CollectiveHelpers {
    /** The ledger's kind of call of copyPieces. */
    private static final int COPY_PIECES = 1;

    private CollectiveHelpers() {
    }

    /** The arguments of a copyPieces call, buffers compared by the memory they view. */
    private record PieceCopy(Buf dst, long dstPiece, Buf src, long srcPiece, int pieces) {
        @Override
        public boolean equals(Object o) {
            return o instanceof PieceCopy c && dstPiece == c.dstPiece && srcPiece == c.srcPiece && pieces == c.pieces
                    && sameMemory(dst, c.dst) && sameMemory(src, c.src);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(dstPiece * 31 + srcPiece) * 31 + pieces;
        }
    }

    /** Whether two buffers view the same bytes (a peer lookup may give a new Buf for the same memory). */
    static boolean sameMemory(Buf a, Buf b) {
        return a == b || a.segment().equals(b.segment()) && a.byteSize() == b.byteSize();
    }

    /**
     * {@code MoeKernels.copyPieces(dst, dstPiece, src, srcPiece, pieces, lane, shift)}: a team of
     * {@code width = 2^shift} threads copies {@code pieces} 16-byte pieces, lane {@code lane} those
     * at {@code lane, lane + width, ...}. The team's first member copies all of them, as one
     * {@link MemorySegment#copy}.
     */
    public static void copyPieces(Buf dst, long dstPiece, Buf src, long srcPiece, int pieces, int lane, int shift) {
        int width = 1 << shift;
        // a team of one lane (every team of a block of one thread) has nobody to meet in the ledger
        if (width != 1 || lane != 0) {
            LoopBlock block = LoopBlock.running();
            int first = block == null ? -1 : block.runningThread() - lane;
            if (width < 1 || lane < 0 || lane >= width || first < 0 || first + width > block.threads) {
                copyLanePieces(dst, dstPiece, src, srcPiece, pieces, lane, width);
                return;
            }
            if (!block.ledger().arrive(COPY_PIECES, first, width, lane,
                    new PieceCopy(dst, dstPiece, src, srcPiece, pieces))) {
                return;
            }
        }
        if (pieces > 0) {
            MemorySegment.copy(src.segment(), srcPiece << 4, dst.segment(), dstPiece << 4, (long) pieces << 4);
        }
    }

    /**
     * {@code MoeKernels.copyPiecesDeep}: the same pieces as {@link #copyPieces}, eight in flight
     * per lane on the GPU, which a loop block's bulk copy does not need; so the same team copy.
     */
    public static void copyPiecesDeep(Buf dst, long dstPiece, Buf src, long srcPiece, int pieces, int lane,
                                      int shift) {
        copyPieces(dst, dstPiece, src, srcPiece, pieces, lane, shift);
    }

    /** One lane's share of copyPieces, piece by piece: a call that describes no team. */
    private static void copyLanePieces(Buf dst, long dstPiece, Buf src, long srcPiece, int pieces, int lane,
                                       int width) {
        if (width < 1 && lane < pieces) {
            throw new IllegalArgumentException("copyPieces with a team width of " + width + " never ends");
        }
        for (long i = lane; i < pieces; i += width) {
            dst.copy16(dstPiece + i, src, srcPiece + i);
        }
    }

    /**
     * {@code MoeKernels.reduceSlice(t, firstQuad, step, combineRecv, pairLocation, weights, out,
     * hidden, topK, yDtype, outDtype)}: the calling thread's quads {@code firstQuad, firstQuad +
     * step, ...} of token {@code t}. The library's kernels give thread {@code i} of a block the
     * quads from {@code base + i} at a step of at least the block's threads; run thread by thread,
     * those quads lie a step apart, and every cache line of the token's rows was read again by
     * each thread that takes a quad of it. So the first thread of a loop block to make such a call
     * sums the runs of quads of all the block's threads at once, each row read front to back
     * ({@link RowReduction#sum}, kept in the block's {@link BlockSums} until its next barrier, while
     * there is room), and each thread with the same call stores its own quads from those sums. A thread stores only its
     * own quads, so a call of another form (a step below the block's threads, a first quad that
     * is not {@code base + i}, or other arguments than the block's first call since its barrier)
     * is exact too: it sums the caller's quads alone. Each element is
     * summed and stored as the helper does, so the bits are the same.
     */
    public static void reduceSlice(int t, int firstQuad, int step, Buf combineRecv, Buf pairLocation, Buf weights,
                                   Buf out, int hidden, int topK, int yDtype, int outDtype) {
        LoopBlock block = LoopBlock.running();
        float[] sums = block == null ? null
                : blockSums(block, t, firstQuad, step, combineRecv, pairLocation, weights, hidden, topK, yDtype);
        if (sums == null) { // not a call of the block's shape, or no room left: the caller's quads alone
            RowReduction.reduce(t, firstQuad, step, 1, combineRecv, pairLocation, weights, out, hidden, topK, yDtype,
                    outDtype);
        } else {
            RowReduction.store(t, firstQuad, step, sums, out, hidden, outDtype);
        }
    }

    /**
     * Token {@code t}'s sums for the whole {@code block}, made by the first of its threads to ask
     * ({@link RowReduction#sum}), or {@code null} when this call is not one the block can share.
     */
    private static float[] blockSums(LoopBlock block, int t, int firstQuad, int step, Buf combineRecv,
                                     Buf pairLocation, Buf weights, int hidden, int topK, int yDtype) {
        int base = firstQuad - block.runningThread();
        BlockSums kept = block.sums();
        // a block of one thread has no other threads' quads to share: its sums go straight to out
        if (block.threads == 1 || base < 0 || step < block.threads || t < 0
                || !kept.takesShape(base, step, combineRecv, pairLocation, weights, hidden, topK, yDtype)) {
            return null;
        }
        float[] sums = kept.of(t);
        if (sums == null) {
            sums = kept.makeFor(t, hidden);
            if (sums != null) {
                RowReduction.sum(t, base, step, block.threads, combineRecv, pairLocation, weights, sums, hidden, topK,
                        yDtype);
            }
        }
        return sums;
    }
}
