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
 * combine-done ({@link AllToAllKernels#doneShare}).
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
