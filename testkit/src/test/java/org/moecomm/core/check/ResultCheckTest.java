package org.moecomm.core.check;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.testing.Harness;
import org.moecomm.kernels.api.Buf;

/** The checker reports every kind of wrong result (so a passing backend test means something). */
@Timeout(60)
class ResultCheckTest {
    private static final MoeConfig CONFIG = Harness.config().worldSize(1).numExperts(4).topK(2).hidden(256)
            .maxTokensPerRank(8).inType(DType.FP8_E4M3).build();

    private record Outcome(ResultCheck.Report dispatch, ResultCheck.Report combine) {
    }

    /** A correct round on W=1 with m = M, then {@code corrupt} on the device outputs, then both checks. */
    private static Outcome corrupted(Consumer<RankBuffers> corrupt) {
        return corrupted(8, corrupt);
    }

    /** A correct round on W=1 with {@code m} tokens, then {@code corrupt} on the device outputs, then both checks. */
    private static Outcome corrupted(int m, Consumer<RankBuffers> corrupt) {
        Workload w = Workload.generate(CONFIG, 9, Workload.Options.defaults().tokens(m));
        return Harness.onAllRanks(CONFIG, (h, b) -> {
            CheckedRound.run(b, w, false).assertOk();
            corrupt.accept(b);
            return new Outcome(ResultCheck.dispatch(w.reference(), 0, h.memory(), b.dispatchOutput()),
                    ResultCheck.combine(w.reference(), 0, w.expertFunction(), h.memory(), b.out()));
        }).getFirst();
    }

    private static void assertReports(ResultCheck.Report r, String text) {
        assertFalse(r.ok(), "expected a problem containing '" + text + "'");
        assertTrue(r.toString().contains(text), r.toString());
        assertThrows(AssertionError.class, r::assertOk);
    }

    @Test
    void aCorrectRoundPasses() {
        Outcome o = corrupted(b -> { });
        o.dispatch().assertOk();
        o.combine().assertOk();
    }

    @Test
    void checkedRoundOutputsReportsBothHalvesOfARoundRunElsewhere() {
        Workload w = Workload.generate(CONFIG, 11, Workload.Options.defaults().tokens(8));
        List<ResultCheck.Report> reports = Harness.onAllRanks(CONFIG, (h, b) -> {
            CheckedRound.runWhole(b, w, false).assertOk();
            ResultCheck.Report intact = CheckedRound.outputs(b, w);
            Buf counts = b.dispatchOutput().expertNumTokens().buf();
            counts.setInt(1, counts.getInt(1) - 1);
            b.out().buf().setByte(0, (byte) (b.out().buf().getByte(0) ^ 0x40));
            return List.of(intact, CheckedRound.outputs(b, w));
        }).getFirst();
        reports.get(0).assertOk();
        assertReports(reports.get(1), "expected pair(s) missing");
        assertReports(reports.get(1), "element(s) differ from the reference");
    }

    @Test
    void wrongCountIsReported() {
        Outcome o = corrupted(b -> {
            Buf counts = b.dispatchOutput().expertNumTokens().buf();
            counts.setInt(1, counts.getInt(1) - 1);
        });
        assertReports(o.dispatch(), "expected pair(s) missing");
    }

    @Test
    void anUnwrittenOrImpossibleCountIsReported() {
        long cap = CONFIG.expertCapacity();
        assertReports(corrupted(b -> b.dispatchOutput().expertNumTokens().buf().setInt(1, -1)).dispatch(),
                "expert 1: expertNumTokens never written (poison)");
        assertReports(corrupted(b -> b.dispatchOutput().expertNumTokens().buf().setInt(0, (int) cap + 1)).dispatch(),
                "expert 0: count " + (cap + 1) + " outside [0, " + cap + "]");
        assertReports(corrupted(b -> b.dispatchOutput().expertNumTokens().buf().setInt(0, -2)).dispatch(),
                "expert 0: count -2 outside [0, " + cap + "]");
    }

    /** A count one too high over the poisoned rows beyond it: the extra slot is named as never written. */
    @Test
    void aCountOverUnwrittenRowsIsReported() {
        assertReports(corrupted(b -> {
            Buf counts = b.dispatchOutput().expertNumTokens().buf();
            assertTrue(counts.getInt(0) < CONFIG.expertCapacity());
            counts.setInt(0, counts.getInt(0) + 1);
        }).dispatch(), "(never written: poison)");
    }

    @Test
    void anOutputRowBeyondMIsReported() {
        Outcome o = corrupted(5, b -> b.out().buf().setShort(6L * 256, (short) 0));
        assertReports(o.combine(), "rows beyond m=5 were written");
        o.dispatch().assertOk();
    }

    @Test
    void aChangedTokenByteOrScaleIsReported() {
        assertReports(corrupted(b -> {
            Buf x = b.dispatchOutput().expertX().buf();
            x.setByte(3, (byte) (x.getByte(3) ^ 1));
        }).dispatch(), "match no expected pair");
        assertReports(corrupted(b -> {
            Buf s = b.dispatchOutput().expertXScale().buf();
            s.setFloat(0, s.getFloat(0) * 2);
        }).dispatch(), "match no expected pair");
    }

    @Test
    void aRowWrittenBeyondTheCountIsReported() {
        assertReports(corrupted(b -> {
            int n = b.dispatchOutput().expertNumTokens().buf().getInt(0);
            assertTrue(n < CONFIG.expertCapacity());
            b.dispatchOutput().expertX().buf().setByte((long) n * 256 + 5, (byte) 0);
        }).dispatch(), "rows beyond the count");
    }

    @Test
    void aWriteAtTheEndOfTheCapacityOrAScaleBeyondTheCountIsReported() {
        long cap = CONFIG.expertCapacity();
        assertReports(corrupted(b -> {
            // the last byte of expert 1's rows (the last chunk the check reads)
            assertTrue(b.dispatchOutput().expertNumTokens().buf().getInt(1) < cap);
            b.dispatchOutput().expertX().buf().setByte(2 * cap * 256 - 1, (byte) 0);
        }).dispatch(), "expert 1: rows beyond the count");
        assertReports(corrupted(b -> {
            int n = b.dispatchOutput().expertNumTokens().buf().getInt(0);
            b.dispatchOutput().expertXScale().buf().setFloat((long) n * 2 + 1, 1f);
        }).dispatch(), "expert 0: rows beyond the count");
    }

    @Test
    void anOutputBitOffAndAnUnwrittenRowAreReported() {
        assertReports(corrupted(b -> {
            Buf out = b.out().buf();
            out.setShort(257, (short) (out.getShort(257) ^ 1));
        }).combine(), "out[1][1]");
        assertReports(corrupted(b -> {
            Buf out = b.out().buf();
            for (int i = 0; i < 256; i++) {
                out.setShort(2 * 256 + i, (short) -1);
            }
        }).combine(), "never written (poison): [2]");
        assertReports(corrupted(b -> b.out().buf().setShort(0, (short) 0x1234)).combine(), "differ");
    }
}
