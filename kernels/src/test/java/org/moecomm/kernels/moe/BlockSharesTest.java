package org.moecomm.kernels.moe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.ptx.PtxCompiler;

/**
 * How the round kernels split work among blocks without 64-bit division: the tokens of a
 * dispatch send block ({@link MoeKernels#splitPoint}) and a combine recv block's share of
 * combine-done ({@link AllToAllKernels#doneShare}); and a block's threads among the rows it
 * copies without any division ({@link MoeKernels#teamShift}).
 */
class BlockSharesTest {

    @Test
    void splitPointIsTheProductOverTheBlocksForEveryM() {
        int[] ms = {0, 1, 7, 8, 128, 4096, 1 << 24, (1 << 25) + 3, Integer.MAX_VALUE / 64 + 1, Integer.MAX_VALUE};
        int[] blockCounts = {1, 2, 3, 7, 64, 65535};
        for (int m : ms) {
            for (int blocks : blockCounts) {
                int previous = 0;
                for (int y : IntStream.of(0, 1, blocks / 2, blocks - 1, blocks).sorted().toArray()) {
                    int at = MoeKernels.splitPoint(m, y, blocks);
                    assertEquals((int) ((long) m * y / blocks), at, "m=" + m + " y=" + y + " blocks=" + blocks);
                    assertTrue(at >= previous, "block ranges go backwards at m=" + m + " y=" + y);
                    previous = at;
                }
                assertEquals(m, MoeKernels.splitPoint(m, blocks, blocks), "the last block ends at m");
            }
        }
    }

    /**
     * A row team ({@link MoeKernels#teamShift}) is a power of two of whole warps (of the block's
     * threads, when fewer than a warp), fits in the block, and is as wide as the block's warps
     * allow for its rows: the most warps per row of a power of two that still gives every row a
     * team, or one warp per row when the rows outnumber them. For blocks of a power of two warps
     * this is the width of whole warps split evenly ({@code warps / rows} warps per team).
     */
    @Test
    void rowTeamsAreThePowerOfTwoOfWarpsThatFitsTheRows() {
        for (int threads = 1; threads <= MoeKernels.MAX_THREADS; threads++) {
            int copyWidth = 1 << MoeKernels.copyShift(threads);
            assertEquals(Math.min(32, Integer.highestOneBit(threads)), copyWidth, threads + " threads");
            int wholeWarps = Integer.highestOneBit(threads / copyWidth);
            for (int rows = 0; rows <= 2 * MoeKernels.MAX_THREADS / 32 + 1; rows++) {
                String at = threads + " threads, " + rows + " rows";
                int width = 1 << MoeKernels.teamShift(threads, rows);
                int teams = threads / width;
                assertTrue(width % copyWidth == 0 && width <= threads, at + ": width " + width);
                int warpsPerTeam = width / copyWidth;
                if (rows <= wholeWarps) {
                    assertTrue(teams >= rows, at + ": " + teams + " teams");
                    assertTrue(warpsPerTeam * 2 * Math.max(rows, 1) > wholeWarps, at + ": teams could be wider");
                } else {
                    assertEquals(copyWidth, width, at);
                }
                if (Integer.bitCount(threads / 32) == 1 && threads % 32 == 0 && rows >= 1) {
                    int warps = threads / 32;
                    assertEquals(32 * Integer.highestOneBit(warps / Math.min(rows, warps)), width, at);
                }
            }
        }
    }

    @Test
    void theDoneSharesOfAGridSumToOneRoundWhateverItsSize() {
        for (int blocks : new int[] {1, 2, 3, 7, 64, 1000, 1 << 20}) {
            long sum = 0;
            for (int b = 0; b < blocks; b++) {
                long share = AllToAllKernels.doneShare(b, blocks);
                long total = AllToAllKernels.DONE_PER_ROUND;
                assertEquals(total / blocks + (b < total % blocks ? 1 : 0), share, "block " + b + " of " + blocks);
                sum += share;
            }
            assertEquals(AllToAllKernels.DONE_PER_ROUND, sum, blocks + " blocks");
        }
    }

    /**
     * A 64-bit division is a call of about 80 dependent instructions on the GPU: the round kernels
     * have none but splitPoint's fallbacks (for m * Y past 2^31), one per inlined splitPoint.
     */
    @Test
    void theRoundKernelsDivideIn32Bits() {
        for (String name : List.of("dispatchSend", "dispatchRecv", "combineSend", "combineRecv", "dispatch")) {
            String ptx = PtxCompiler.hopper().compile(new Kernel(AllToAllKernels.class, name)).ptx();
            int fallbacks = count(ptx, "inlined org.moecomm.kernels.moe.MoeKernels.splitPoint(");
            assertEquals(fallbacks, count(ptx, "div.s64 "), name + " divides in 64 bits");
            assertFalse(ptx.contains("rem.s64") || ptx.contains("div.u64") || ptx.contains("rem.u64"), name);
        }
    }

    private static int count(String text, String what) {
        int n = 0;
        for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }
}
