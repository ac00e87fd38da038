package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.testing.Harness;
import org.moecomm.kernels.moe.MoeKernels;

/**
 * The CPU backend runs the protocol's kernels with one thread per block by default
 * ({@code CpuKernelRunner.blockThreads}); the GPU runs them with {@link MoeKernels#THREADS}. Both
 * block sizes on the JVM must match the reference on fresh inputs, and give the same combine
 * output bit for bit (the weighted sums add in one order at any block size), so the suite's
 * one-thread rounds also stand for the GPU's block size, whose many-thread paths (scans, teams,
 * barriers) run here too.
 */
@Timeout(120)
class BlockThreadsTest {
    static Stream<Arguments> configs() {
        MoeConfig groups = Harness.config().worldSize(4).groupSize(2).numExperts(16).topK(4).hidden(512)
                .maxTokensPerRank(16).build();
        MoeConfig fp8 = Harness.config().worldSize(4).numExperts(32).topK(6).hidden(640).maxTokensPerRank(24)
                .inType(DType.FP8_E4M3).outType(DType.BF16).build();
        MoeConfig quantising = Harness.config().worldSize(2).numExperts(8).topK(3).hidden(384).maxTokensPerRank(12)
                .inType(DType.BF16).expertInType(DType.FP8_E4M3).build();
        return Stream.of(Arguments.of("groups", groups), Arguments.of("fp8 with scales", fp8),
                Arguments.of("quantising", quantising));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("configs")
    void oneThreadAndTheGpusBlockSizeMatchTheReferenceAndEachOther(String name, MoeConfig config) {
        List<Workload> workloads = List.of(Workload.generate(config, 700),
                Workload.generate(config, 701, Workload.Options.defaults().drop(0.2).randomTokens()));
        List<List<byte[]>> one = rounds(config, 1, workloads);
        List<List<byte[]>> gpuSize = rounds(config, MoeKernels.THREADS, workloads);
        for (int rank = 0; rank < config.worldSize(); rank++) {
            for (int i = 0; i < workloads.size(); i++) {
                byte[] a = one.get(rank).get(i);
                byte[] b = gpuSize.get(rank).get(i);
                assertEquals(HexFormat.of().formatHex(a), HexFormat.of().formatHex(b),
                        name + ": rank " + rank + ", round " + i + ": combine output differs between 1 and "
                                + MoeKernels.THREADS + " threads per block");
            }
        }
    }

    /** One rank's reports and combine outputs (m rows), round by round. */
    private record RankRun(List<ResultCheck.Report> reports, List<byte[]> outs) {
    }

    /** Checked rounds on a cluster of {@code blockThreads}; returns each rank's combine outputs. */
    private static List<List<byte[]>> rounds(MoeConfig config, int blockThreads, List<Workload> workloads) {
        List<RankRun> runs = Harness.onAllRanks(config, blockThreads, (h, b) -> {
            RankRun run = new RankRun(new ArrayList<>(), new ArrayList<>());
            try (Arena arena = Arena.ofConfined()) {
                for (Workload w : workloads) {
                    run.reports().add(CheckedRound.run(b, w, false));
                    long bytes = (long) w.rank(h.rank()).m() * config.hidden() * config.outType().bytes();
                    MemorySegment host = arena.allocate(Math.max(1, bytes)).asSlice(0, bytes);
                    h.memory().copyToHost(b.out().buf(), 0, host);
                    run.outs().add(host.toArray(ValueLayout.JAVA_BYTE));
                }
            }
            return run;
        });
        Harness.assertAllOk(runs.stream().map(RankRun::reports).toList());
        assertTrue(runs.stream().anyMatch(r -> r.outs().stream().anyMatch(o -> o.length > 0)), "some rank had tokens");
        return runs.stream().map(RankRun::outs).toList();
    }
}
