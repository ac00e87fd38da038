package org.moecomm.bench;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import org.moecomm.core.Preset;
import org.moecomm.core.check.StressRounds;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.core.launch.LaunchException;
import org.moecomm.core.launch.LocalLauncher;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code moecomm stress}: many rounds on one handle per rank, each with new random inputs and
 * checked in full ({@link StressRounds}), on the CPU backend (ranks as threads) or the GPU
 * backend (W rank processes, placed by {@code --gpus}). Prints each rank's rounds, rows checked and failed rounds,
 * writes the run as one JSON line (never over an existing file) and exits 0 only when every
 * round of every rank was right.
 */
@Command(name = "stress", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Many checked rounds on one handle: random m (0 and M included), random -1 ids, changing routing"
                + " skew and rank arrival skew.")
final class StressCommand implements Callable<Integer> {
    @Option(names = "--preset", defaultValue = "deepseek-v2-lite", converter = PresetOption.Converter.class,
            completionCandidates = PresetOption.Names.class,
            description = "Workload shape: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    Preset preset;

    @Option(names = "--tokens", defaultValue = "16", description = "M, the most tokens per rank (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--world", defaultValue = "4", description = "Ranks, W (default: ${DEFAULT-VALUE}).")
    int world;

    @Mixin
    GpusOption gpus = new GpusOption();

    @Option(names = "--group", defaultValue = "1", description = "Ranks per token group, G (default: ${DEFAULT-VALUE}).")
    int group;

    @Option(names = "--rounds", defaultValue = "1000", description = "Rounds (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--seed", defaultValue = "1", description = "Seed of the first round (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--max-drop", defaultValue = "0.3",
            description = "Largest fraction of -1 ids in a round (default: ${DEFAULT-VALUE}).")
    double maxDrop;

    @Option(names = "--max-skew-us", defaultValue = "200",
            description = "Longest delay of a rank before each half of a round, in us (default: ${DEFAULT-VALUE}).")
    int maxSkewMicros;

    @Option(names = "--backend", defaultValue = "auto",
            description = "auto, cpu or gpu, as for demo (default: ${DEFAULT-VALUE}).")
    String backend;

    @Option(names = "--launch-timeout", defaultValue = "3600",
            description = "GPU backend: bound in seconds of the rank processes (default: ${DEFAULT-VALUE}).")
    long launchTimeoutSeconds;

    @Option(names = "--out-dir", defaultValue = "benchmarks/results",
            description = "Folder of the results file <date>-<device>-stress.json (default: ${DEFAULT-VALUE}).")
    Path outDir;

    @Option(names = "--commit", description = "Commit recorded in the results (default: as for bench).")
    String commit;

    @Option(names = "--command", description = "Command recorded in the results (default: this invocation).")
    String command;

    @Spec
    CommandSpec spec;

    PrintStream out = System.out;
    PrintStream err = System.err;
    Supplier<GpuBackend.Availability> gpuProbe = GpuBackend::availability;
    /** The rank process of a GPU run (tests replace it with one that needs no GPU). */
    Class<?> gpuRankMain = GpuStressMain.class;

    @Override
    public Integer call() throws Exception {
        BackendChoice.Choice choice;
        StressSpec run;
        try {
            choice = BackendChoice.choose(backend, gpuProbe);
            run = new StressSpec(preset.label(), tokens, world, group,
                    new StressRounds.Options(rounds, seed, maxDrop, maxSkewMicros));
        } catch (IllegalArgumentException e) {
            err.println("moecomm stress: " + e.getMessage());
            return 2;
        }
        out.println("moecomm stress: " + run + ", backend " + RunCommand.label(choice) + " (" + choice.reason() + ")");
        out.flush();
        List<StressRounds.Result> results = new ArrayList<>();
        String device;
        try {
            device = choice.backend() == BackendChoice.Backend.GPU ? onGpu(run, results) : onCpu(run, results, err);
        } catch (LaunchException e) {
            err.println("moecomm stress: the GPU run failed: " + e.getMessage());
            return 1;
        }
        boolean ok = true;
        for (StressRounds.Result r : results) {
            out.printf(Locale.ROOT, "rank %d: %d rounds, %d rows checked, %d failed round(s), %.1f s%n", r.rank(),
                    r.rounds(), r.rowsChecked(), r.failedRounds(), r.nanos() / 1e9);
            r.problems().forEach(p -> out.println("  " + p));
            ok &= r.ok();
        }
        String line = StressResults.summary(run, RunCommand.label(choice), device,
                commit != null ? commit : BenchCommand.defaultCommit(System.getenv(), Path.of(BenchCommand.BUNDLE_INFO)),
                command != null ? command : Main.invocation(spec, "stress"), results);
        Path file = StressResults.write(ResultFiles.fresh(outDir,
                ResultFiles.name(LocalDate.now(), device, RunCommand.label(choice) + "-stress")), line);
        out.println((ok ? "STRESS OK" : "STRESS FAILED") + "; wrote " + file);
        return ok ? 0 : 1;
    }

    /** Runs on the CPU backend, adds the ranks' results to {@code results}; returns the machine's name. */
    private static String onCpu(StressSpec run, List<StressRounds.Result> results, PrintStream progressOut) {
        Progress progress = new Progress(progressOut, "stress", run.options().rounds(), Progress.INTERVAL);
        results.addAll(StressRounds.runOnCpu(run.config(), run.options(), progress::roundsDone));
        return ResultFiles.machine();
    }

    /** Runs W rank processes on the GPU, adds their results to {@code results}; returns the GPU's name. */
    private String onGpu(StressSpec run, List<StressRounds.Result> results) throws Exception {
        Path dir = Files.createTempDirectory("moecomm-gpu-stress");
        try {
            LocalLauncher.builder()
                    .worldSize(run.world())
                    .mainClass(gpuRankMain)
                    .classPath(LocalLauncher.classPathWith(gpuRankMain, GpuStressMain.class, GpuBackend.class))
                    .jvmOption("-Xss4m")
                    .jvmOption("-Dmoecomm.log.level=WARN")
                    .gpuPolicy(gpus.policy)
                    .output(err)
                    .timeout(Duration.ofSeconds(launchTimeoutSeconds))
                    .args(List.of(dir.toString(), run.encode()))
                    .build().run();
            String device = "gpu";
            for (int r = 0; r < run.world(); r++) {
                List<String> lines = Files.readAllLines(GpuStressMain.resultFile(dir, r));
                device = lines.getFirst();
                results.add(StressResults.fromJson(lines.get(1)));
            }
            return device;
        } finally {
            GpuRunner.deleteTree(dir);
        }
    }

}
