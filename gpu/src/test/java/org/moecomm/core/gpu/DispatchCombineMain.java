package org.moecomm.core.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.moecomm.core.DType;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerWrites;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.launch.LaunchEnv;
import org.moecomm.bridge.cuda.GpuKernelRunner;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.ptx.PtxCompiler;

/**
 * A rank of the GPU dispatch/combine test: rounds of dispatch and combine on the GPU backend,
 * each checked against the plain-Java reference ({@link CheckedRound}), alternating the token
 * count between a Java int and a device buffer and cycling the workload through m = M, m = 0,
 * m < M per group with -1 ids, and skewed routing. Arguments: {@code G E K H M inType
 * expertOutType rounds seed [outType [mode]]}, inType being a dtype or {@code in->expertIn} for a
 * quantising dispatch ({@code BF16->FP8_E4M3}: its tokens are drawn from the quantisation's edge
 * cases, {@link Workload.Options#edgeValues(boolean)}); with {@code halves} in the mode every operation
 * runs as its send and receive halves with a kernel ({@link ScratchKernels#increment}) launched
 * between them, whose result is checked at the end (without, half of the rounds call the operations
 * whole: dispatch in one launch at decode sizes); with {@code puts} every peer is reached by
 * staged puts ({@link PeerWrites#PUTS}) instead of direct stores. Prints {@code CHECK dispatch-combine ok rank r} or
 * the problems (exit code 1).
 */
public final class DispatchCombineMain {
    private static final int SCRATCH = 1 << 20;

    private DispatchCombineMain() {
    }

    public static void main(String[] args) {
        int world = Integer.parseInt(System.getenv(LaunchEnv.WORLD_SIZE));
        int g = Integer.parseInt(args[0]);
        int maxTokens = Integer.parseInt(args[4]);
        MoeConfig.Builder base = MoeConfig.builder()
                .worldSize(world)
                .groupSize(g)
                .numExperts(Integer.parseInt(args[1]))
                .topK(Integer.parseInt(args[2]))
                .hidden(Integer.parseInt(args[3]))
                .maxTokensPerRank(maxTokens)
                .expertOutType(DType.valueOf(args[6]))
                .outType(args.length > 9 ? DType.valueOf(args[9]) : DType.BF16)
                .waitTimeout(Duration.ofSeconds(60));
        MoeConfig config = dispatchTypes(base, args[5]).build();
        int rounds = Integer.parseInt(args[7]);
        long seed = Long.parseLong(args[8]);
        String mode = args.length > 10 ? args[10] : "plain";
        boolean halves = mode.contains("halves");
        if (mode.contains("puts")) {
            config = config.toBuilder().peerWrites(PeerWrites.PUTS).build();
        }
        int bad = 0;
        try (GpuBackend gpu = GpuBackend.start(config)) {
            int rank = gpu.rank();
            System.out.println("rank " + rank + ": " + config + "; " + GpuBackend.memoryReport(config));
            try (MoeAllToAll h = gpu.createHandle(config);
                 GpuKernelRunner other = new GpuKernelRunner(gpu.context(), gpu.deviceTiming(h).stream(),
                         PtxCompiler::compileCached)) {
                RankBuffers buffers = RankBuffers.allocate(h);
                Buf scratch = h.memory().allocate(4L * SCRATCH);
                Kernel increment = new Kernel(ScratchKernels.class, "increment");
                int[] launches = {0};
                Runnable between = halves ? () -> {
                    other.launch(increment, Grid.of(64, 256), scratch, SCRATCH);
                    launches[0]++;
                } : () -> { };
                for (int i = 0; i < rounds; i++) {
                    Workload w = Workload.generate(config, seed + i, variant(i, config));
                    long t0 = System.nanoTime();
                    // without halves, rounds 2 and 3 of every four call dispatch and combine whole
                    // (dispatch in one launch at decode sizes)
                    ResultCheck.Report report = !halves && i % 4 >= 2 ? CheckedRound.runWhole(buffers, w, i % 2 == 1)
                            : CheckedRound.run(buffers, w, i % 2 == 1, between);
                    long us = (System.nanoTime() - t0) / 1000;
                    if (!report.ok()) {
                        bad++;
                        System.out.println("rank " + rank + " round " + (i + 1) + ": " + report);
                    } else {
                        System.out.println("rank " + rank + " round " + (i + 1) + " ok (" + us + " us with checks; "
                                + w.options() + ")");
                    }
                }
                if (halves && !scratchHolds(h, scratch, launches[0])) {
                    bad++;
                    System.out.println("rank " + rank + ": the kernel between the halves did not run "
                            + launches[0] + " times");
                }
            }
            if (bad > 0) {
                System.out.println("CHECK dispatch-combine FAILED rank " + rank + ": " + bad + " of " + rounds
                        + " rounds differ from the reference");
                System.exit(1);
            }
            System.out.println("CHECK dispatch-combine ok rank " + rank + " (" + rounds + " rounds"
                    + (halves ? ", halves with a kernel between" : "") + ", peerWrites " + config.peerWrites() + ")");
        }
    }

    /**
     * Sets the dispatch dtypes from {@code types}: a dtype, or {@code in->expertIn} for a dispatch
     * that converts (quantises) the tokens, as in {@code BF16->FP8_E4M3}.
     */
    static MoeConfig.Builder dispatchTypes(MoeConfig.Builder b, String types) {
        String[] t = types.split("->");
        b.inType(DType.valueOf(t[0].strip()));
        return t.length > 1 ? b.expertInType(DType.valueOf(t[1].strip())) : b;
    }

    /**
     * Round i's workload: m = M; m = 0; m < M per group with 15% -1 ids; skewed to one rank; with
     * a quantising dispatch, tokens from the quantisation's edge cases.
     */
    static Workload.Options variant(int i, MoeConfig config) {
        int maxTokens = config.maxTokensPerRank();
        int world = config.worldSize();
        Workload.Options o = Workload.Options.defaults().edgeValues(config.quantizes());
        return switch (i % 4) {
            case 0 -> o.tokens(maxTokens);
            case 1 -> o.tokens(0);
            case 2 -> o.drop(0.15);
            default -> o.tokens(maxTokens / 2 + 1).skewedTo(i % world);
        };
    }

    /** Whether every scratch float equals the number of increments (it started at zero). */
    private static boolean scratchHolds(MoeAllToAll h, Buf scratch, int increments) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(4L * SCRATCH, 16);
            h.memory().copyToHost(scratch, 0, host);
            for (long i = 0; i < SCRATCH; i++) {
                if (host.getAtIndex(ValueLayout.JAVA_FLOAT, i) != increments) {
                    return false;
                }
            }
            return true;
        }
    }
}
