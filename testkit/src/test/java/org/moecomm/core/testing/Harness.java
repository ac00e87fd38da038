package org.moecomm.core.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.IntFunction;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.cpu.CpuCluster;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/** Runs rank bodies on a fresh CPU cluster with one handle per rank. */
public final class Harness {
    /** Wait bound of test configs: long enough for a loaded 2-core machine, short enough to fail fast. */
    public static final Duration TEST_TIMEOUT = Duration.ofSeconds(20);

    private Harness() {
    }

    /** Runs {@code body(handle, buffers)} on every rank of a new cluster; returns the results by rank. */
    public static <T> List<T> onAllRanks(MoeConfig config, BiFunction<MoeAllToAll, RankBuffers, T> body) {
        return onAllRanks(config, CpuKernelRunner.defaultBlockThreads(), body);
    }

    /** {@link #onAllRanks(MoeConfig, BiFunction)} on a cluster of at most {@code maxBlockThreads} threads per block. */
    public static <T> List<T> onAllRanks(MoeConfig config, int maxBlockThreads,
                                         BiFunction<MoeAllToAll, RankBuffers, T> body) {
        try (CpuCluster cluster = CpuCluster.create(config.worldSize(), maxBlockThreads)) {
            return cluster.runOnAllRanks(rank -> {
                try (MoeAllToAll h = cluster.createHandle(rank, config)) {
                    return body.apply(h, RankBuffers.allocate(h));
                }
            });
        }
    }

    /**
     * Runs {@code rounds} checked rounds on one handle per rank, round i with {@code workload.apply(i)},
     * and fails with every rank's problems if any rank differs from the reference.
     */
    public static void checkedRounds(MoeConfig config, int rounds, IntFunction<Workload> workload,
                                     boolean countInBuffer) {
        List<Workload> workloads = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            workloads.add(workload.apply(i));
        }
        List<List<ResultCheck.Report>> reports = onAllRanks(config, (h, b) -> {
            List<ResultCheck.Report> mine = new ArrayList<>();
            for (Workload w : workloads) {
                mine.add(CheckedRound.run(b, w, countInBuffer));
            }
            return mine;
        });
        assertAllOk(reports);
    }

    public static void assertAllOk(List<List<ResultCheck.Report>> reportsByRank) {
        StringBuilder problems = new StringBuilder();
        for (int r = 0; r < reportsByRank.size(); r++) {
            List<ResultCheck.Report> reports = reportsByRank.get(r);
            for (int i = 0; i < reports.size(); i++) {
                if (!reports.get(i).ok()) {
                    problems.append("round ").append(i + 1).append(", ").append(reports.get(i)).append('\n');
                }
            }
        }
        if (!problems.isEmpty()) {
            fail(problems.toString());
        }
    }

    /** A builder with the test timeout. */
    public static MoeConfig.Builder config() {
        return MoeConfig.builder().waitTimeout(TEST_TIMEOUT);
    }
}
