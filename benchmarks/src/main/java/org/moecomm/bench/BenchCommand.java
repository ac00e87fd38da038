package org.moecomm.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import org.moecomm.core.Preset;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The per-phase benchmark (BENCHMARKS.md): presets x tokens per rank x launch modes on W ranks,
 * warm-up then timed rounds, every configuration checked against the reference on its first
 * round; per phase (dispatch send/recv, combine send/recv, whole dispatch, whole combine) the
 * median and p90 of the slowest rank, the logical bytes and rates (all ranks and per rank), and
 * the device memory the phase moves ({@link DeviceBytes}) against the copy bandwidth measured in
 * the same run ({@link CopyBaseline}). The tokens per rank: {@code --tokens}, or a
 * {@link TokenSweep} (decode and prefill sizes on the GPU backend, decode only on the CPU
 * backend by default). The launch modes
 * ({@link LaunchMode}): plain (each call launched as it is made) and, on the GPU backend, graph
 * (each half captured into a CUDA graph and replayed; only the whole halves are timed, the
 * send/recv columns show "-"). Prints the tables ({@link BenchTables}) and writes JSON lines
 * ({@link PhaseJson}) to {@code <out-dir>/<date>-<gpu>-gpu-phases.json}. Exit status 0 when every
 * configuration was verified, 1 when a check failed or a run failed, 2 for bad options or a
 * backend that cannot run.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Per-phase dispatch/combine benchmark over presets and tokens per rank; writes JSON lines.")
final class BenchCommand extends RunCommand {
    static final String BUNDLE_INFO = ".gpu-carry/BUNDLE.txt";

    @Option(names = "--presets", split = ",", defaultValue = "deepseek-v3,deepseek-v2-lite",
            converter = PresetOption.Converter.class, completionCandidates = PresetOption.Names.class,
            description = "Presets, of ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    List<Preset> presets;

    @Option(names = "--tokens", split = ",", paramLabel = "M",
            description = "Tokens per rank (each also the handle's M), instead of the --sweep sizes; on the GPU a size"
                    + " whose buffers do not fit the GPU the ranks share is refused.")
    List<Integer> tokens;

    @Option(names = "--sweep", paramLabel = "SIZES", converter = TokenSweepConverter.class,
            description = "Tokens per rank to sweep without --tokens: decode (1,8,32,128), prefill (512,1024,2048,4096)"
                    + " or all (both) (default: all on the GPU backend; decode on the CPU backend, which runs the kernels"
                    + " on the JVM: its prefill sizes would take about half an hour). On the GPU the sizes whose buffers"
                    + " do not fit the GPU the ranks share are left out, each named.")
    TokenSweep sweep;

    @Option(names = "--launch", split = ",", paramLabel = "MODE",
            description = "Launch modes: plain (the four calls launched from the host, send and recv timed apart),"
                    + " whole (dispatch and combine each one call launched from the host: one launch for a decode"
                    + " dispatch; GPU backend only), graph (the dispatch call and the combine call each captured into a"
                    + " CUDA graph once and replayed every round; GPU backend only) (default: plain,graph on the GPU"
                    + " backend, plain on the CPU backend).")
    List<String> launch;

    @Option(names = "--warmup", defaultValue = "20", description = "Untimed rounds per configuration (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--rounds", defaultValue = "100", description = "Timed rounds per configuration (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--experts-every-round",
            description = "Run the (host, untimed) experts every round; by default only before the checked first round,"
                    + " later rounds combining the same expert outputs again (same bytes, shorter run).")
    boolean expertsEveryRound;

    @Option(names = "--start", defaultValue = "host", paramLabel = "HOW", converter = RoundStartConverter.class,
            description = "How ranks start each timed half on the GPU: host (a barrier the host waits for, then the"
                    + " launches: with launch latency and host skew; default), aligned (the same, then the rank processes"
                    + " leave a spin barrier together: launch latency without host skew, as pplx_baseline.cu times"
                    + " pplx-kernels) or device (the barrier only enqueued, the half behind it, as pplx-kernels' benchmark"
                    + " enqueues its samples: the GPU's time alone).")
    RoundStart start;

    @Option(names = "--out-dir", defaultValue = "benchmarks/results",
            description = "Folder of the results file <date>-<gpu>-gpu-phases.json (default: ${DEFAULT-VALUE}).")
    Path outDir;

    @Option(names = "--out", description = "Results file (instead of a name chosen in --out-dir).")
    Path outFile;

    @Option(names = "--commit", description = "Commit recorded in the results (default: env MOECOMM_COMMIT, else the"
            + " commit in " + BUNDLE_INFO + ", else unknown).")
    String commit;

    @Option(names = "--command", description = "Command recorded in the results (default: this invocation).")
    String command;

    @Spec
    CommandSpec spec;

    @Override
    String name() {
        return "bench";
    }

    /** Per preset, per tokens, per launch mode (so the modes of a configuration are adjacent rows). */
    @Override
    List<RunSpec> specs(BackendChoice.Backend backend) {
        List<Integer> sizes = tokens(backend);
        if (presets.isEmpty() || sizes.isEmpty()) {
            throw new IllegalArgumentException("no configuration: give --presets and --tokens");
        }
        List<LaunchMode> modes = launchModes(backend);
        if (backend == BackendChoice.Backend.CPU && start == RoundStart.DEVICE) {
            throw new IllegalArgumentException("--start device: the CPU backend has no device stream to enqueue a"
                    + " barrier on; give --start host or --backend gpu");
        }
        if (backend == BackendChoice.Backend.CPU && start == RoundStart.ALIGNED) {
            throw new IllegalArgumentException("--start aligned: the CPU backend's ranks are threads of one process"
                    + " that leave their barrier together already; give --start host or --backend gpu");
        }
        List<RunSpec> specs = new ArrayList<>();
        for (Preset p : presets) {
            for (int m : sizes) {
                for (LaunchMode mode : modes) {
                    specs.add(new RunSpec(p.label(), m, world, group, skewed, seed, mode));
                }
            }
        }
        return specs;
    }

    /** The sizes of a sweep (no {@code --tokens}) that do not fit the GPU are left out, those of {@code --tokens} refused. */
    @Override
    boolean leavesOutWhatDoesNotFit() {
        return tokens == null;
    }

    /** {@code --tokens}, else the {@code --sweep} sizes, else the backend's sweep ({@link TokenSweep#defaultFor}). */
    List<Integer> tokens(BackendChoice.Backend backend) {
        if (tokens != null && sweep != null) {
            throw new IllegalArgumentException("--tokens and --sweep both choose the tokens per rank: give one of them");
        }
        return tokens != null ? tokens : (sweep != null ? sweep : TokenSweep.defaultFor(backend)).tokens();
    }

    /** {@code --launch}, else the backend's default: plain and graph on the GPU, plain on the CPU. */
    List<LaunchMode> launchModes(BackendChoice.Backend backend) {
        List<LaunchMode> modes = launch == null ? (backend == BackendChoice.Backend.GPU
                ? List.of(LaunchMode.PLAIN, LaunchMode.GRAPH) : List.of(LaunchMode.PLAIN)) : LaunchMode.parse(launch);
        LaunchMode gpuOnly = modes.stream().filter(LaunchMode::gpuOnly).findFirst().orElse(null);
        if (backend == BackendChoice.Backend.CPU && gpuOnly != null) {
            throw new IllegalArgumentException("--launch " + gpuOnly + ": the CPU backend has only plain launches"
                    + " (whole calls and graph replay are timed on the GPU backend); give --launch plain or --backend gpu");
        }
        return modes;
    }

    @Override
    RoundPlan plan(BackendChoice.Backend backend) {
        return new RoundPlan(warmup, rounds, false, expertsEveryRound, start);
    }

    @Override
    void started(BackendChoice.Choice choice, List<RunSpec> specs) {
        String modes = specs.stream().map(s -> s.launch().label()).distinct().collect(Collectors.joining(","));
        String sizes = specs.stream().map(s -> Integer.toString(s.tokens())).distinct().collect(Collectors.joining(","));
        out.printf(Locale.ROOT, "moecomm bench: backend=%s (%s); %d configurations, W=%d G=%d, tokens=%s, launch=%s,"
                + " %d warm-up + %d timed rounds each%n", label(choice), choice.reason(), specs.size(), world, group, sizes,
                modes, warmup, rounds);
        out.flush();
    }

    @Override
    int report(BackendChoice.Choice choice, List<Measurement> results) throws IOException {
        BenchTables.print(out, results);
        String backendLabel = label(choice);
        LocalDate date = LocalDate.now(ZoneOffset.UTC);
        PhaseJson.Run run = new PhaseJson.Run(backendLabel, date, commit != null ? commit
                : defaultCommit(System.getenv(), Path.of(BUNDLE_INFO)), command != null ? command : Main.invocation(spec, name()));
        Path file = outFile != null ? outFile
                : ResultFiles.fresh(outDir, PhaseJson.fileName(date, backendLabel, results.getFirst().device()));
        PhaseJson.write(file, PhaseJson.lines(results, run));
        out.println("wrote " + results.size() + " lines to " + file);
        long bad = results.stream().filter(m -> !m.verified()).count();
        if (bad > 0) {
            out.println("BENCH FAILED: " + bad + " of " + results.size() + " configurations differ from the reference:");
            results.stream().filter(m -> !m.verified()).forEach(m -> m.problems().forEach(p -> out.println("  " + p)));
            return 1;
        }
        out.println("BENCH OK: every configuration verified against the reference (first round)");
        return 0;
    }

    /** {@code MOECOMM_COMMIT}, else the {@code commit:} line of the bundle's BUNDLE.txt, else "unknown". */
    static String defaultCommit(Map<String, String> env, Path bundleInfo) {
        String c = env.get("MOECOMM_COMMIT");
        if (c != null && !c.isBlank()) {
            return c.strip();
        }
        try {
            if (Files.isRegularFile(bundleInfo)) {
                for (String line : Files.readAllLines(bundleInfo)) {
                    if (line.startsWith("commit:")) {
                        String v = line.substring("commit:".length()).strip();
                        if (!v.isEmpty()) {
                            return v;
                        }
                    }
                }
            }
        } catch (IOException e) {
            // fall through
        }
        return "unknown";
    }

    static final class TokenSweepConverter implements picocli.CommandLine.ITypeConverter<TokenSweep> {
        @Override
        public TokenSweep convert(String value) {
            try {
                return TokenSweep.byLabel(value);
            } catch (IllegalArgumentException e) {
                throw new picocli.CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    static final class RoundStartConverter implements picocli.CommandLine.ITypeConverter<RoundStart> {
        @Override
        public RoundStart convert(String value) {
            return RoundStart.byLabel(value);
        }
    }
}
