package org.moecomm.core.gpu;

import java.time.Duration;
import org.moecomm.core.DType;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.launch.LaunchEnv;

/**
 * A rank of the GPU dispatch/combine test: rounds of dispatch and combine on the GPU backend,
 * each checked against the plain-Java reference ({@link CheckedRound}), alternating the token
 * count between a Java int and a device buffer. Arguments: {@code G E K H M inType expertOutType
 * rounds seed}. Prints {@code CHECK dispatch-combine ok rank r} or the problems (exit code 1).
 */
public final class DispatchCombineMain {
    private DispatchCombineMain() {
    }

    public static void main(String[] args) {
        int world = Integer.parseInt(System.getenv(LaunchEnv.WORLD_SIZE));
        int g = Integer.parseInt(args[0]);
        MoeConfig config = MoeConfig.builder()
                .worldSize(world)
                .groupSize(g)
                .numExperts(Integer.parseInt(args[1]))
                .topK(Integer.parseInt(args[2]))
                .hidden(Integer.parseInt(args[3]))
                .maxTokensPerRank(Integer.parseInt(args[4]))
                .inType(DType.valueOf(args[5]))
                .expertOutType(DType.valueOf(args[6]))
                .waitTimeout(Duration.ofSeconds(60))
                .build();
        int rounds = Integer.parseInt(args[7]);
        long seed = Long.parseLong(args[8]);
        int bad = 0;
        try (GpuBackend gpu = GpuBackend.start(config)) {
            int rank = gpu.rank();
            System.out.println("rank " + rank + ": " + config + "; " + GpuBackend.memoryReport(config));
            try (MoeAllToAll h = gpu.createHandle(config)) {
                RankBuffers buffers = RankBuffers.allocate(h);
                for (int i = 0; i < rounds; i++) {
                    Workload w = Workload.generate(config, seed + i);
                    long t0 = System.nanoTime();
                    ResultCheck.Report report = CheckedRound.run(buffers, w, i % 2 == 1);
                    long us = (System.nanoTime() - t0) / 1000;
                    if (!report.ok()) {
                        bad++;
                        System.out.println("rank " + rank + " round " + (i + 1) + ": " + report);
                    } else {
                        System.out.println("rank " + rank + " round " + (i + 1) + " ok (" + us + " us with checks)");
                    }
                }
            }
            if (bad > 0) {
                System.out.println("CHECK dispatch-combine FAILED rank " + rank + ": " + bad + " of " + rounds
                        + " rounds differ from the reference");
                System.exit(1);
            }
            System.out.println("CHECK dispatch-combine ok rank " + rank + " (" + rounds + " rounds)");
        }
    }
}
