package org.moecomm.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.cpu.CpuCluster;
import org.moecomm.core.protocol.BufferLayout;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The main job: a multi-rank dispatch + combine on the best backend present, checked against
 * the reference, with per-phase times and the bytes moved.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Run dispatch + combine across W ranks, check against the reference, print per-phase times.")
final class DemoCommand implements Callable<Integer> {
    private static final Logger LOG = LogManager.getLogger(DemoCommand.class);
    private static final String[] PHASES = {"dispatch send", "dispatch recv", "combine send", "combine recv"};

    @Option(names = "--preset", defaultValue = "deepseek-v3",
            description = "Workload: deepseek-v3, deepseek-v2-lite, qwen3-30b-a3b, mixtral-8x7b (default: ${DEFAULT-VALUE}).")
    String preset;

    @Option(names = "--tokens", defaultValue = "128", description = "Tokens per rank, M (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--world", defaultValue = "4", description = "Ranks, W (default: ${DEFAULT-VALUE}).")
    int world;

    @Option(names = "--group", defaultValue = "1", description = "Ranks per token group, G (default: ${DEFAULT-VALUE}).")
    int group;

    @Option(names = "--rounds", defaultValue = "20", description = "Timed rounds (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--warmup", defaultValue = "5", description = "Untimed rounds first (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--skewed", description = "Send half of all picks to the experts of rank 0.")
    boolean skewed;

    @Option(names = "--seed", defaultValue = "1", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--backend", defaultValue = "auto",
            description = "auto (the best present), cpu (default: ${DEFAULT-VALUE}).")
    String backend;

    @Override
    public Integer call() throws Exception {
        MoeConfig config = Preset.byLabel(preset).config(world, group, tokens).build();
        String chosen = chooseBackend();
        Workload.Options options = Workload.Options.defaults().tokens(tokens);
        if (skewed) {
            options = options.skewedTo(0);
        }
        Workload workload = Workload.generate(config, seed, options);
        TrafficModel traffic = TrafficModel.of(workload, new BufferLayout(config).rowBytes());
        System.out.printf(Locale.ROOT, "moecomm demo: backend=%s preset=%s %s%n", chosen, preset, config);

        List<PhaseTimes> times = new ArrayList<>();
        for (String p : PHASES) {
            times.add(new PhaseTimes(p, rounds));
        }
        List<String> problems = runOnCpu(config, workload, times);
        if (!problems.isEmpty()) {
            System.out.println("RESULT: MISMATCH against the reference");
            problems.forEach(p -> System.out.println("  " + p));
            return 1;
        }
        System.out.printf(Locale.ROOT, "RESULT: verified against the reference on every rank (first and last round;"
                + " %d (token, expert) pairs, %d dispatch rows)%n", traffic.pairs(), traffic.dispatchRows());
        printTimes(times, traffic);
        return 0;
    }

    private String chooseBackend() {
        return switch (backend) {
            case "auto", "cpu" -> "cpu";
            default -> throw new IllegalArgumentException("unknown backend '" + backend + "' (auto, cpu)");
        };
    }

    /** Runs warm-up and timed rounds on the CPU backend; returns the problems found by the checks. */
    private List<String> runOnCpu(MoeConfig config, Workload workload, List<PhaseTimes> times) throws Exception {
        long[][] phaseNanos = new long[world][PHASES.length];
        List<String> problems = new ArrayList<>();
        CyclicBarrier roundStart = new CyclicBarrier(world);
        CyclicBarrier roundEnd = new CyclicBarrier(world, () -> {
            // Runs once per round, after every rank's samples are in: keep the slowest rank's.
            for (int p = 0; p < PHASES.length; p++) {
                long max = 0;
                for (int r = 0; r < world; r++) {
                    max = Math.max(max, phaseNanos[r][p]);
                }
                phaseNanos[0][p] = max;
            }
        });
        int total = warmup + rounds;
        try (CpuCluster cluster = CpuCluster.create(world)) {
            List<List<String>> perRank = cluster.runOnAllRanks(rank -> {
                List<String> found = new ArrayList<>();
                try (MoeAllToAll a2a = cluster.createHandle(rank, config)) {
                    RankBuffers buffers = RankBuffers.allocate(a2a);
                    DispatchInput in = buffers.upload(workload.rank(rank), false);
                    for (int round = 0; round < total; round++) {
                        boolean checked = round == 0 || round == total - 1;
                        if (checked) {
                            buffers.poisonOutputs();
                        }
                        await(roundStart);
                        long t0 = System.nanoTime();
                        a2a.dispatchSend(in);
                        long t1 = System.nanoTime();
                        a2a.dispatchRecv(buffers.dispatchOutput());
                        long t2 = System.nanoTime();
                        buffers.runExperts();
                        long t3 = System.nanoTime();
                        a2a.combineSend(buffers.expertY());
                        long t4 = System.nanoTime();
                        a2a.combineRecv(buffers.weights(), buffers.out());
                        long t5 = System.nanoTime();
                        long[] mine = phaseNanos[rank];
                        mine[0] = t1 - t0;
                        mine[1] = t2 - t1;
                        mine[2] = t4 - t3;
                        mine[3] = t5 - t4;
                        await(roundEnd);
                        if (rank == 0 && round >= warmup) {
                            for (int p = 0; p < PHASES.length; p++) {
                                times.get(p).add(phaseNanos[0][p]);
                            }
                        }
                        if (checked) {
                            ResultCheck.Report report = ResultCheck.dispatch(workload.reference(), rank, a2a.memory(),
                                    buffers.dispatchOutput())
                                    .and(ResultCheck.combine(workload.reference(), rank, workload.expertFunction(),
                                            a2a.memory(), buffers.out()));
                            if (!report.ok()) {
                                found.add("round " + round + ": " + report);
                            }
                        }
                        await(roundStart);
                    }
                }
                return found;
            });
            perRank.forEach(problems::addAll);
        }
        LOG.debug("demo finished: {} rounds on {} ranks", total, world);
        return problems;
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await(5, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted at a round barrier", e);
        } catch (BrokenBarrierException | TimeoutException e) {
            throw new IllegalStateException("another rank failed or stalled at a round barrier", e);
        }
    }

    private void printTimes(List<PhaseTimes> times, TrafficModel traffic) {
        System.out.printf(Locale.ROOT, "%-15s %12s %12s%n", "phase", "median us", "p90 us");
        for (PhaseTimes t : times) {
            System.out.printf(Locale.ROOT, "%-15s %12.1f %12.1f%n", t.name(), t.medianMicros(), t.p90Micros());
        }
        double dispatchUs = times.get(0).medianMicros() + times.get(1).medianMicros();
        double combineUs = times.get(2).medianMicros() + times.get(3).medianMicros();
        System.out.printf(Locale.ROOT, "dispatch: %.1f us, %s logical (%s on the wire), %.2f GB/s logical%n",
                dispatchUs, mib(traffic.logicalDispatchBytes()), mib(traffic.wireDispatchBytes()),
                traffic.logicalDispatchBytes() / (dispatchUs * 1e3));
        System.out.printf(Locale.ROOT, "combine:  %.1f us, %s logical (%s on the wire), %.2f GB/s logical%n",
                combineUs, mib(traffic.logicalCombineBytes()), mib(traffic.wireCombineBytes()),
                traffic.logicalCombineBytes() / (combineUs * 1e3));
        System.out.printf(Locale.ROOT, "(times: median over %d rounds of the slowest rank's phase; all %d ranks in one JVM)%n",
                rounds, world);
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.2f MiB", bytes / (1024.0 * 1024.0));
    }
}
