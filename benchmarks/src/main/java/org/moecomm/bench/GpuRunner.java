package org.moecomm.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.moecomm.bridge.cuda.Cuda;
import org.moecomm.core.check.Workload;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.core.launch.LocalLauncher;
import org.moecomm.core.launch.LocalLauncher.GpuPlacement;
import org.moecomm.core.launch.LocalLauncher.GpuPolicy;
import org.moecomm.core.protocol.BufferLayout;

/**
 * The GPU backend: W rank processes ({@link GpuRankMain}) started by {@link LocalLauncher} with
 * this JVM's {@code java} and class path, placed by a {@link GpuPolicy} (one GPU per rank where
 * the node has them, NVLink between them; ranks that share a GPU run as NVSHMEM PEs under MPS
 * when its daemon runs). One launch per preset, with a handle for each of that preset's token counts
 * inside it; the ranks' samples come back as files ({@link RankSamples}) and are combined here
 * (per round, the slowest rank), and so are the copy times every rank process measured before its
 * configurations (per copy the slowest rank: each launch's {@link CopyBaseline}).
 */
final class GpuRunner implements Runner {
    /** Where NVIDIA's MPS control daemon keeps its pipes unless {@code CUDA_MPS_PIPE_DIRECTORY} says otherwise. */
    private static final String MPS_DEFAULT_PIPE_DIRECTORY = "/tmp/nvidia-mps";

    private final Duration launchTimeout;
    private final PrintStream rankOutput;
    private final Class<?> rankMain;
    private final GpuPolicy gpus;

    GpuRunner(Duration launchTimeout, PrintStream rankOutput, GpuPolicy gpus) {
        this(launchTimeout, rankOutput, GpuRankMain.class, gpus);
    }

    /** With another rank main class taking {@link GpuRankMain}'s arguments (tests). */
    GpuRunner(Duration launchTimeout, PrintStream rankOutput, Class<?> rankMain, GpuPolicy gpus) {
        this.launchTimeout = launchTimeout;
        this.rankOutput = rankOutput;
        this.rankMain = rankMain;
        this.gpus = gpus;
    }

    /**
     * Where the ranks ran, as recorded in results: {@code W processes on 1 GPU under MPS} (the
     * form of every earlier file), {@code W processes on N GPUs, one each}, or {@code W processes
     * on N GPUs, up to k per GPU under MPS}.
     */
    static String mode(GpuPlacement placement, boolean mps) {
        int world = placement.rankDevices().size();
        String sharing = mps ? "under MPS" : "time-sliced (no MPS daemon found)";
        if (placement.gpus() == 1) {
            return String.format(Locale.ROOT, "%d processes on 1 GPU %s", world, sharing);
        }
        if (placement.ranksPerGpu() == 1) {
            return String.format(Locale.ROOT, "%d processes on %d GPUs, one each", world, placement.gpus());
        }
        return String.format(Locale.ROOT, "%d processes on %d GPUs, up to %d per GPU %s", world, placement.gpus(),
                placement.ranksPerGpu(), sharing);
    }

    /** Whether an MPS control daemon seems to run (its control pipe exists). */
    static boolean mpsRunning(Map<String, String> env) {
        String dir = env.getOrDefault("CUDA_MPS_PIPE_DIRECTORY", MPS_DEFAULT_PIPE_DIRECTORY);
        return Files.exists(Path.of(dir, "control"));
    }

    /**
     * The configurations of {@code specs} whose buffers fit the GPUs {@code gpus} places the ranks
     * on ({@link DeviceFit#runnable}: with {@code leaveOut} the others are left out, each named on
     * {@code warnings}; without it they are refused), checked before any process starts, since such
     * a configuration fails in ways that do not name the memory: the most ranks one GPU takes, on
     * the smallest of the GPUs used (this process's visible ones, in the order the launcher uses
     * them). Without CUDA here nothing is checked (the ranks fail at their start, saying why).
     */
    static List<RunSpec> runnable(List<RunSpec> specs, GpuPolicy gpus, boolean leaveOut, PrintStream warnings) {
        if (!Cuda.isAvailable() || specs.isEmpty()) {
            return specs;
        }
        GpuPlacement placement = LocalLauncher.placement(gpus, specs.getFirst().world(), null);
        long smallest = Long.MAX_VALUE;
        for (int ordinal = 0; ordinal < placement.gpus(); ordinal++) {
            smallest = Math.min(smallest, Cuda.deviceTotalMemory(ordinal));
        }
        return new DeviceFit(smallest, placement.ranksPerGpu()).runnable(specs, leaveOut, warnings);
    }

    /** The specs in launches: one per preset, in order of first appearance. */
    static List<List<RunSpec>> launches(List<RunSpec> specs) {
        Map<String, List<RunSpec>> byPreset = new LinkedHashMap<>();
        for (RunSpec s : specs) {
            byPreset.computeIfAbsent(s.preset(), k -> new ArrayList<>()).add(s);
        }
        return new ArrayList<>(byPreset.values());
    }

    /** A rank's command-line arguments. */
    static List<String> rankArgs(Path dir, RoundPlan plan, List<RunSpec> specs) {
        List<String> a = new ArrayList<>();
        a.add(dir.toString());
        a.add(plan.encode());
        specs.forEach(s -> a.add(s.encode()));
        return a;
    }

    @Override
    public List<Measurement> run(List<RunSpec> specs, RoundPlan plan) throws Exception {
        int world = specs.getFirst().world();
        if (specs.stream().anyMatch(s -> s.world() != world)) {
            throw new IllegalArgumentException("all configurations of a GPU run need the same world size");
        }
        String mode = mode(LocalLauncher.placement(gpus, world, null), mpsRunning(System.getenv()));
        // results go back in the order of the specs, whatever the launches' order
        Map<RunSpec, List<Measurement>> byLaunch = new LinkedHashMap<>();
        for (List<RunSpec> launch : launches(specs)) {
            List<Measurement> ms = runLaunch(launch, plan, world, mode);
            for (Measurement m : ms) {
                byLaunch.computeIfAbsent(m.spec(), k -> new ArrayList<>()).add(m);
            }
        }
        List<Measurement> out = new ArrayList<>();
        for (RunSpec s : specs) {
            out.add(byLaunch.get(s).removeFirst());
        }
        return out;
    }

    private List<Measurement> runLaunch(List<RunSpec> specs, RoundPlan plan, int world, String mode) throws Exception {
        Path dir = Files.createTempDirectory("moecomm-gpu-run");
        try {
            if (plan.start() == RoundStart.ALIGNED) {
                HostSpinBarrier.create(GpuRankMain.hostStartFile(dir), world);
            }
            LocalLauncher.Builder b = LocalLauncher.builder()
                    .worldSize(world)
                    .mainClass(rankMain)
                    .classPath(LocalLauncher.classPathWith(rankMain, GpuRankMain.class, GpuBackend.class))
                    .jvmOption("-Xss4m")
                    .gpuPolicy(gpus)
                    .output(rankOutput)
                    .timeout(launchTimeout)
                    .args(rankArgs(dir, plan, specs));
            if (System.getProperty("moecomm.log.level") == null) {
                b.jvmOption("-Dmoecomm.log.level=WARN");
            }
            b.build().run();
            List<RankSamples> ranks = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                ranks.add(RankSamples.read(RankSamples.file(dir, r)));
            }
            return collect(specs, plan, ranks, mode);
        } finally {
            deleteTree(dir);
        }
    }

    /** The measurements of one launch from every rank's samples. */
    static List<Measurement> collect(List<RunSpec> specs, RoundPlan plan, List<RankSamples> ranks, String mode) {
        List<Measurement> out = new ArrayList<>();
        String device = ranks.getFirst().device();
        CopyBaseline copy = copyBaseline(ranks);
        for (int i = 0; i < specs.size(); i++) {
            RunSpec spec = specs.get(i);
            List<long[][]> perRank = new ArrayList<>();
            List<String> problems = new ArrayList<>();
            for (int r = 0; r < ranks.size(); r++) {
                RankSamples s = ranks.get(r);
                if (!spec.equals(s.spec(i))) {
                    throw new IllegalStateException("rank " + r + " ran " + s.spec(i) + " as configuration " + i
                            + ", expected " + spec);
                }
                perRank.add(s.samples(i));
                problems.addAll(s.problems(i));
            }
            Workload w = spec.workload();
            TrafficModel traffic = TrafficModel.of(w, new BufferLayout(spec.config()));
            out.add(Measurement.of(spec, plan, traffic, perRank, problems, device, mode, copy));
        }
        return out;
    }

    /** The launch's copy baseline from every rank's copy times; null when some rank measured none. */
    static CopyBaseline copyBaseline(List<RankSamples> ranks) {
        RankSamples first = ranks.getFirst();
        if (ranks.stream().anyMatch(r -> r.copy() == null)) {
            return null;
        }
        for (RankSamples r : ranks) {
            if (!r.copy().equals(first.copy()) || r.copyBytes() != first.copyBytes()) {
                throw new IllegalStateException("the ranks measured different copies: " + first.copy() + " of "
                        + first.copyBytes() + " bytes and " + r.copy() + " of " + r.copyBytes());
            }
        }
        return CopyBaseline.of(first.copy(), first.copyBytes(), ranks.stream().map(RankSamples::copyNanos).toList());
    }

    /** Deletes {@code dir} and everything in it; what cannot be deleted stays (a temporary folder). */
    static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // a leftover in the temporary folder is harmless
                }
            });
        } catch (IOException e) {
            // likewise
        }
    }
}
