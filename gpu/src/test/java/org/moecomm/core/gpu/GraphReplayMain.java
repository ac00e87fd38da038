package org.moecomm.core.gpu;

import java.time.Duration;
import org.moecomm.core.DType;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.InputCheck;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerWrites;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.launch.LaunchEnv;
import org.moecomm.core.protocol.AllToAllProtocol;

/**
 * A rank of the CUDA graph test: dispatch (send + recv) and combine (send + recv) are captured
 * once into two {@link RoundGraph}s, then replayed round after round. Before each replay the rank
 * writes a fresh workload (tokens, ids, weights, and m through a count in device memory, cycling
 * m = M, m = 0, -1 ids and skewed routing) into the same buffers and poisons the outputs; the
 * experts run on the host between the two graphs; every round is checked against the reference.
 * Arguments: {@code E K H M inType peerWrites rounds seed}, inType as in {@link DispatchCombineMain}
 * (a dtype, or {@code BF16->FP8_E4M3} for a quantising dispatch). Prints {@code CHECK graph-replay ok
 * rank r} or the problems (exit code 1).
 */
public final class GraphReplayMain {
    private GraphReplayMain() {
    }

    public static void main(String[] args) {
        int world = Integer.parseInt(System.getenv(LaunchEnv.WORLD_SIZE));
        int maxTokens = Integer.parseInt(args[3]);
        MoeConfig config = DispatchCombineMain.dispatchTypes(MoeConfig.builder()
                .worldSize(world)
                .numExperts(Integer.parseInt(args[0]))
                .topK(Integer.parseInt(args[1]))
                .hidden(Integer.parseInt(args[2]))
                .maxTokensPerRank(maxTokens)
                .peerWrites(PeerWrites.valueOf(args[5]))
                .inputCheck(InputCheck.DEVICE)
                .waitTimeout(Duration.ofSeconds(30)), args[4])
                .build();
        int rounds = Integer.parseInt(args[6]);
        long seed = Long.parseLong(args[7]);
        int bad = 0;
        String launches;
        try (GpuBackend gpu = GpuBackend.start(config)) {
            int rank = gpu.rank();
            try (MoeAllToAll h = gpu.createHandle(config)) {
                launches = ((AllToAllProtocol) h).dispatchesInOneLaunch() ? "dispatch in one launch"
                        : "dispatch in two launches";
                RankBuffers buffers = RankBuffers.allocate(h);
                // the graphs keep the buffers of the first upload; later uploads rewrite those buffers
                DispatchInput in = buffers.upload(Workload.generate(config, seed).rank(rank), true);
                Runnable sync = gpu.deviceTiming(h).barrier();
                try (HalfGraphs graphs = HalfGraphs.capture(gpu, buffers.handle(), in, buffers.dispatchOutput(),
                        buffers.combineInput(), buffers.out())) {
                    RoundGraph dispatch = graphs.dispatch();
                    RoundGraph combine = graphs.combine();
                    for (int i = 0; i < rounds; i++) {
                        Workload w = Workload.generate(config, seed + 1 + i,
                                DispatchCombineMain.variant(i, config));
                        buffers.upload(w.rank(rank), true);
                        buffers.poisonOutputs();
                        dispatch.replay();
                        dispatch.stream().synchronize();
                        buffers.runExperts();
                        combine.replay();
                        combine.stream().synchronize();
                        ResultCheck.Report report = ResultCheck.dispatch(w.reference(), rank, h.memory(),
                                buffers.dispatchOutput())
                                .and(ResultCheck.combine(w.reference(), rank, w.expertFunction(), h.memory(),
                                        buffers.out()));
                        if (!report.ok()) {
                            bad++;
                            System.out.println("rank " + rank + " replay " + (i + 1) + ": " + report);
                        }
                    }
                    // raises a timeout recorded by the last replays, if any
                    sync.run();
                }
            }
            if (bad > 0) {
                System.out.println("CHECK graph-replay FAILED rank " + rank + ": " + bad + " of " + rounds
                        + " replays differ from the reference");
                System.exit(1);
            }
            System.out.println("CHECK graph-replay ok rank " + rank + " (" + rounds + " replays of two captured graphs, "
                    + launches + ", " + config + ")");
        }
    }
}
