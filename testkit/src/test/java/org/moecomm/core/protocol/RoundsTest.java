package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.moecomm.core.DType;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.cpu.CpuCluster;
import org.moecomm.core.testing.Harness;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/** Buffer reuse across rounds, the send/recv halves with other work between them, and m in a buffer. */
@Timeout(120)
class RoundsTest {
    private static final MoeConfig G2 = Harness.config().worldSize(4).groupSize(2).numExperts(16).topK(4)
            .hidden(512).maxTokensPerRank(16).build();

    @Test
    void sixRoundsOnOneHandleWithFreshInputsAndEdgeCounts() {
        int[][] tokens = {{16, 16}, {0, 7}, {3, 0}, {16, 1}, {0, 0}, {9, 16}};
        Harness.checkedRounds(G2, tokens.length, round -> Workload.generate(G2, 100 + round,
                Workload.Options.defaults().tokensPerGroup(tokens[round]).drop(round % 2 == 0 ? 0 : 0.15)), false);
    }

    @Test
    void tokenCountFromADeviceBuffer() {
        MoeConfig fp8 = G2.toBuilder().inType(DType.FP8_E4M3).expertOutType(DType.FP32).build();
        Harness.checkedRounds(fp8, 3, round -> Workload.generate(fp8, 200 + round), true);
    }

    /**
     * Rounds across the wrap-around of the signal words: from just before round 2^31, where a
     * dispatch signal's {@code round << 32} turns negative as a long, round 2^32, where it and a
     * combine signal's {@code round * 2^32} pass 2^64, and round 2^44, where combine-done's
     * {@code round * 2^20} does. Every round still matches the reference: the waits compare
     * modulo 2^64.
     */
    @ParameterizedTest(name = "after {0} rounds")
    @ValueSource(longs = {(1L << 31) - 2, (1L << 32) - 2, (1L << 44) - 2})
    void roundsAcrossTheSignalWordsWrapAround(long start) {
        int rounds = 4;
        List<Workload> workloads = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            workloads.add(Workload.generate(G2, 300 + i));
        }
        Harness.assertAllOk(Harness.onAllRanks(G2, (h, b) -> {
            ((AllToAllProtocol) h).resumeAfter(start);
            List<ResultCheck.Report> mine = new ArrayList<>();
            for (Workload w : workloads) {
                if (h.rank() == G2.worldSize() - 1) {
                    // the others wait for this rank's signals: a wait that took an old word for
                    // this round's would go on without them
                    sleep(30);
                }
                mine.add(CheckedRound.run(b, w, false));
            }
            return mine;
        }));
    }

    /** A kernel standing for unrelated work between the halves: y = 2x over a buffer. */
    public static void doubleAll(KernelContext ctx, Buf data, int n) {
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            data.setFloat(i, data.getFloat(i) * 2f);
        }
    }

    /**
     * Each rank calls the four halves separately; between them some ranks sleep (a different
     * time per rank and round), others run an unrelated kernel, so ranks drift apart by up to
     * a phase; results must still match, and the unrelated work must be unaffected.
     */
    @Test
    void halvesWithOtherWorkBetweenThem() {
        int rounds = 4;
        List<Workload> workloads = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            workloads.add(Workload.generate(G2, 300 + i, Workload.Options.defaults().drop(0.1)));
        }
        Kernel other = new Kernel(RoundsTest.class, "doubleAll");
        List<List<ResultCheck.Report>> reports = Harness.onAllRanks(G2, (h, b) -> {
            SplittableRandom rnd = new SplittableRandom(h.rank());
            List<ResultCheck.Report> mine = new ArrayList<>();
            try (CpuKernelRunner runner = new CpuKernelRunner()) {
                Buf data = h.memory().allocate(4 * 1024);
                for (int i = 0; i < 1024; i++) {
                    data.setFloat(i, i);
                }
                int doublings = 0;
                for (Workload w : workloads) {
                    int r = h.rank();
                    b.poisonOutputs();
                    var in = b.upload(w.rank(r), r % 2 == 1);
                    doublings += between(rnd, r, runner, other, data);
                    h.dispatchSend(in);
                    doublings += between(rnd, r, runner, other, data);
                    h.dispatchRecv(b.dispatchOutput());
                    mine.add(ResultCheck.dispatch(w.reference(), r, h.memory(), b.dispatchOutput()));
                    b.runExperts();
                    doublings += between(rnd, r, runner, other, data);
                    h.combineSend(b.expertY());
                    doublings += between(rnd, r, runner, other, data);
                    h.combineRecv(b.weights(), b.out());
                    mine.add(ResultCheck.combine(w.reference(), r, w.expertFunction(), h.memory(), b.out()));
                }
                for (int i = 0; i < 1024; i += 97) {
                    assertEquals(Math.scalb((float) i, doublings), data.getFloat(i));
                }
            }
            return mine;
        });
        Harness.assertAllOk(reports);
    }

    /** Even ranks sleep 0-20 ms, odd ranks run the unrelated kernel; returns the doublings applied. */
    private static int between(SplittableRandom rnd, int rank, CpuKernelRunner runner, Kernel other, Buf data) {
        if (rank % 2 == 0) {
            try {
                Thread.sleep(rnd.nextInt(21));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            return 0;
        }
        runner.launch(other, Grid.of(2, 64), data, 1024);
        return 1;
    }

    /**
     * One rank of each group runs a whole round late while its group peer races ahead into the
     * next round: the combineDone signals must keep the fast rank's next combine from overwriting
     * the slow rank's combine area before it has been reduced.
     */
    @Test
    void aSlowGroupMemberDoesNotGetItsCombineAreaOverwritten() {
        int rounds = 4;
        List<Workload> workloads = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            workloads.add(Workload.generate(G2, 400 + i, Workload.Options.defaults().tokens(16)));
        }
        List<List<ResultCheck.Report>> reports = Harness.onAllRanks(G2, (h, b) -> {
            List<ResultCheck.Report> mine = new ArrayList<>();
            int r = h.rank();
            for (Workload w : workloads) {
                b.poisonOutputs();
                h.dispatch(b.upload(w.rank(r), false), b.dispatchOutput());
                mine.add(ResultCheck.dispatch(w.reference(), r, h.memory(), b.dispatchOutput()));
                b.runExperts();
                h.combineSend(b.expertY());
                if (r % 2 == 1) {
                    sleep(60); // ranks 1 and 3 read their combine areas late, ranks 0 and 2 race ahead
                }
                h.combineRecv(b.weights(), b.out());
                mine.add(ResultCheck.combine(w.reference(), r, w.expertFunction(), h.memory(), b.out()));
            }
            return mine;
        });
        Harness.assertAllOk(reports);
    }

    /** Two handles on one cluster, used alternately: symmetric buffers are matched by creation order. */
    @Test
    void twoHandlesOnOneClusterInterleaved() {
        MoeConfig a = G2;
        MoeConfig bcfg = Harness.config().worldSize(4).numExperts(8).topK(2).hidden(256).maxTokensPerRank(8)
                .inType(DType.FP8_E4M3).outType(DType.FP16).build();
        try (CpuCluster cluster = CpuCluster.create(4)) {
            List<List<ResultCheck.Report>> reports = cluster.runOnAllRanks(rank -> {
                List<ResultCheck.Report> mine = new ArrayList<>();
                try (MoeAllToAll ha = cluster.createHandle(rank, a); MoeAllToAll hb = cluster.createHandle(rank, bcfg)) {
                    RankBuffers ba = RankBuffers.allocate(ha);
                    RankBuffers bb = RankBuffers.allocate(hb);
                    for (int i = 0; i < 3; i++) {
                        mine.add(CheckedRound.run(ba, Workload.generate(a, 500 + i), false));
                        mine.add(CheckedRound.run(bb, Workload.generate(bcfg, 600 + i), false));
                    }
                }
                return mine;
            });
            Harness.assertAllOk(reports);
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
