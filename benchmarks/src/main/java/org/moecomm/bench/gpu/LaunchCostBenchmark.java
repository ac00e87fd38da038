package org.moecomm.bench.gpu;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.moecomm.bench.JmhResults;
import org.moecomm.bench.ResultFiles;
import org.moecomm.bench.VersionProvider;
import org.moecomm.bridge.cuda.Cuda;
import org.moecomm.bridge.cuda.CudaContext;
import org.moecomm.bridge.cuda.CudaFunction;
import org.moecomm.bridge.cuda.CudaGraph;
import org.moecomm.bridge.cuda.CudaStream;
import org.moecomm.bridge.cuda.GpuKernelRunner;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Unmatched;

/**
 * Host time of one kernel launch from Java on CUDA device 0 (JMH, average time per launch), and of
 * the GPU handle's calls that launch a round's halves. The launch cases launch a trivial kernel
 * ({@link #touch}: 12 parameters, 4 {@code Buf}s, 7 {@code int}s, a {@code long}; one thread
 * writes 12 bytes) with its arguments built once, as a caller holding them would; boxing them is
 * the caller's cost and not measured.
 *
 * <ul>
 *   <li>{@code launch}: {@link GpuKernelRunner#launch} with the pointer checks off, as the GPU
 *       backend's runner launches (argument packing, specialisation and module lookup, context
 *       bind, JNI, {@code cuLaunchKernel}, result check). The target is at most 3 us.
 *   <li>{@code launchWithPointerChecks}: the same with the runner's default check that every
 *       {@code Buf} lies in one CUDA allocation (two driver queries per {@code Buf}).
 *   <li>{@code functionLaunch}: {@link CudaFunction#launch} with the 12 slots packed once (the
 *       {@code long[]} JNI path): {@code cuLaunchKernel} and JNI with none of the runner's work.
 *   <li>{@code graphReplay}: {@link CudaGraph#launch} of a graph of two such launches (a round's
 *       half is two kernels), captured once: the host time of a replayed half.
 *   <li>{@code streamQuery}: {@link CudaStream#isIdle()} ({@code cuStreamQuery} on an idle
 *       stream): a cheap driver call through the same binding, for reference.
 *   <li>{@code launchWide}: {@code launch} of a trivial kernel ({@link #wide}) with the parameter
 *       list of the one-launch decode dispatch (18 {@code Buf}s, 16 {@code int}s, a {@code long}):
 *       what a kernel's parameters add to a launch.
 *   <li>{@code handleDispatch}, {@code handleCombine}: the GPU handle's whole calls
 *       ({@code dispatch}: one launch at this size; {@code combine}: two) in a job of one process
 *       at deepseek-v3, 1 token ({@link HandleRound}): everything the library does on the host for
 *       a half launched plainly (checks, argument lists, the checked runner's error poll, the
 *       launches). {@code handleDispatch} is the library's one plain launch: its target is the
 *       same 3 us. Timed per call on an idle stream (the other half and a synchronisation run
 *       before each call, outside the measurement, as JMH's per-invocation setup).
 *   <li>{@code handleDispatchReplay}, {@code handleCombineReplay}: the same halves captured once
 *       and replayed ({@code RoundGraph.replay}), likewise timed.
 * </ul>
 * The handle cases need the NVSHMEM bridge ({@code MOECOMM_NVSHMEM_LIB}); without it the command
 * line leaves them out and says why.
 *
 * <p>Every {@value #SYNC_EVERY} launches the stream is synchronised inside the timed method
 * (amortised: the GPU runs a launch of this kernel faster than the host enqueues one, so the
 * wait is for the last few), so the launch queue never fills and blocks {@code cuLaunchKernel}.
 *
 * <p>Run: {@code java --enable-native-access=ALL-UNNAMED -cp <jars> org.moecomm.bench.gpu.LaunchCostBenchmark
 * --out-dir benchmarks/results} (scripts/gpu-bench.sh does this on the GPU machine; more
 * arguments go to JMH, e.g. {@code -f 0}). It writes {@code <date>-<gpu>-gpu-launch-cost.json}
 * (JMH's JSON with {@code device, commit, command} added; never over an existing file) and exits
 * 0, 1 when a benchmark failed, or 3 (a stated reason, nothing run) when no GPU can be used. The
 * forked JVM is JMH's default: this JVM's binary, class path and options (the
 * {@code --enable-native-access} and JavaCPP cache options included).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--sun-misc-unsafe-memory-access=allow", "-Dmoecomm.log.level=WARN"})
public class LaunchCostBenchmark {
    /** JMH's pattern of the cases that need the GPU backend (NVSHMEM). */
    static final String HANDLE_CASES = "\\.handle[A-Z]\\w*$";
    /** Launches between two stream synchronisations. */
    static final int SYNC_EVERY = 256;
    /** The per-launch host time the launch path must stay within. */
    static final double TARGET_NS = 3000;
    static final Kernel TOUCH = new Kernel(LaunchCostBenchmark.class, "touch");
    static final Grid GRID = Grid.of(1, 32);

    /** The trivial kernel: thread 0 writes {@code n0 + n6} and {@code tag} into {@code out}; the rest are only passed. */
    public static void touch(KernelContext ctx, Buf out, Buf a, Buf b, Buf c, int n0, int n1, int n2, int n3, int n4,
            int n5, int n6, long tag) {
        if (ctx.globalIdx() == 0) {
            out.setInt(0, n0 + n6);
            out.setLong(1, tag);
        }
    }

    static final Kernel WIDE = new Kernel(LaunchCostBenchmark.class, "wide");

    /**
     * A trivial kernel with the parameter list of the one-launch decode dispatch's Java method
     * ({@code AllToAllKernels.dispatch}: 18 {@code Buf}s, 16 {@code int}s, a {@code long}; a handle's
     * launch passes 22 of them, its 13 {@code @Specialize}d ones compiled in): thread 0
     * writes {@code n0 + n15} and {@code tag} into {@code out}; the rest are only passed.
     */
    public static void wide(KernelContext ctx, Buf out, Buf b1, Buf b2, Buf b3, Buf b4, Buf b5, Buf b6, Buf b7, Buf b8,
            Buf b9, Buf b10, Buf b11, Buf b12, Buf b13, Buf b14, Buf b15, Buf b16, Buf b17, int n0, int n1, int n2,
            int n3, int n4, int n5, int n6, int n7, int n8, int n9, int n10, int n11, int n12, int n13, int n14, int n15,
            long tag) {
        if (ctx.globalIdx() == 0) {
            out.setInt(0, n0 + n15);
            out.setLong(1, tag);
        }
    }

    /** {@link #wide}'s arguments: {@code out}, then {@code b} seventeen times, 16 ints, a long. */
    static Object[] wideArgs(Buf out, Buf b) {
        Object[] args = new Object[35];
        args[0] = out;
        for (int i = 1; i <= 17; i++) {
            args[i] = b;
        }
        for (int i = 0; i < 16; i++) {
            args[18 + i] = i + 1;
        }
        args[34] = 0x1234_5678_9abcL;
        return args;
    }

    /** {@link #touch}'s arguments over four buffers of 64 bytes. */
    static Object[] touchArgs(Buf out, Buf a, Buf b, Buf c) {
        return new Object[] {out, a, b, c, 1, 2, 3, 4, 5, 6, 7, 0x1234_5678_9abcL};
    }

    /** A runner on device 0 with {@link #touch} loaded and its arguments in device memory; not a JMH state itself. */
    static final class Device {
        final GpuKernelRunner runner;
        final Object[] args;
        final Object[] wideArgs;
        final CudaFunction function;
        final long[] params;
        private int launches;

        Device(boolean checkPointers) {
            Cuda.Availability a = Cuda.availability();
            if (!a.available()) {
                throw new IllegalStateException("no CUDA GPU can be used: " + a.reason());
            }
            runner = new GpuKernelRunner().checkPointers(checkPointers);
            args = touchArgs(runner.allocate(64), runner.allocate(64), runner.allocate(64), runner.allocate(64));
            wideArgs = wideArgs(runner.allocate(64), runner.allocate(64));
            runner.launch(TOUCH, GRID, args); // compile and load outside the measurement
            runner.launch(WIDE, GRID, wideArgs);
            runner.synchronize();
            function = runner.function(TOUCH);
            params = GpuBenchDevice.params(args);
        }

        /** Counts a launch; synchronises every {@link #SYNC_EVERY}. */
        void launched() {
            if (++launches == SYNC_EVERY) {
                launches = 0;
                runner.synchronize();
            }
        }

        void close() {
            runner.close();
        }
    }

    /** The backend's setting: no pointer checks. */
    @State(Scope.Thread)
    public static class Unchecked {
        Device device;

        @Setup(Level.Trial)
        public void setUp() {
            device = new Device(false);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            device.close();
        }
    }

    /** The runner's default: every {@code Buf} argument checked to be CUDA memory. */
    @State(Scope.Thread)
    public static class PointerChecked {
        Device device;

        @Setup(Level.Trial)
        public void setUp() {
            device = new Device(true);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            device.close();
        }
    }

    /**
     * Two launches of {@link #touch} (a round's half is two kernels) captured once into a CUDA
     * graph, the way {@code GpuBackend.capture} captures a half.
     */
    @State(Scope.Thread)
    public static class Replayed {
        Device device;
        CudaGraph graph;

        @Setup(Level.Trial)
        public void setUp() {
            device = new Device(false);
            graph = CudaGraph.capture(device.runner.stream(), () -> {
                device.runner.launch(TOUCH, GRID, device.args);
                device.runner.launch(TOUCH, GRID, device.args);
            });
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            try {
                device.runner.synchronize();
                graph.close();
            } finally {
                device.close();
            }
        }
    }

    /**
     * A W = 1 handle ({@link HandleRound}) made once per trial; before each timed call the other
     * half runs as needed and the GPU is waited for (outside the measurement).
     */
    public abstract static class HandleState {
        private final boolean replayed;
        private final boolean timesDispatch;
        HandleRound round;

        HandleState(boolean replayed, boolean timesDispatch) {
            this.replayed = replayed;
            this.timesDispatch = timesDispatch;
        }

        @Setup(Level.Trial)
        public void setUp() {
            round = new HandleRound(replayed);
        }

        @Setup(Level.Invocation)
        public void ready() {
            if (timesDispatch) {
                round.readyForDispatch();
            } else {
                round.readyForCombine();
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            round.close();
        }
    }

    /** Whole calls, the dispatch half timed. */
    @State(Scope.Thread)
    public static class DispatchReady extends HandleState {
        public DispatchReady() {
            super(false, true);
        }
    }

    /** Whole calls, the combine half timed. */
    @State(Scope.Thread)
    public static class CombineReady extends HandleState {
        public CombineReady() {
            super(false, false);
        }
    }

    /** Replays, the dispatch half timed. */
    @State(Scope.Thread)
    public static class ReplayDispatchReady extends HandleState {
        public ReplayDispatchReady() {
            super(true, true);
        }
    }

    /** Replays, the combine half timed. */
    @State(Scope.Thread)
    public static class ReplayCombineReady extends HandleState {
        public ReplayCombineReady() {
            super(true, false);
        }
    }

    @Benchmark
    public void launch(Unchecked s) {
        Device d = s.device;
        d.runner.launch(TOUCH, GRID, d.args);
        d.launched();
    }

    @Benchmark
    public void launchWithPointerChecks(PointerChecked s) {
        Device d = s.device;
        d.runner.launch(TOUCH, GRID, d.args);
        d.launched();
    }

    @Benchmark
    public void functionLaunch(Unchecked s) {
        Device d = s.device;
        d.function.launch(d.runner.stream(), 1, 1, 1, GRID.threads(), 1, 1, 0, d.params);
        d.launched();
    }

    /** One replay of the two-kernel graph: what a half of a captured round costs the host. */
    @Benchmark
    public void graphReplay(Replayed s) {
        s.graph.launch(s.device.runner.stream());
        s.device.launched();
    }

    @Benchmark
    public boolean streamQuery(Unchecked s) {
        return s.device.runner.stream().isIdle();
    }

    @Benchmark
    public void launchWide(Unchecked s) {
        Device d = s.device;
        d.runner.launch(WIDE, GRID, d.wideArgs);
        d.launched();
    }

    @Benchmark
    public void handleDispatch(DispatchReady s) {
        s.round.dispatch();
    }

    @Benchmark
    public void handleCombine(CombineReady s) {
        s.round.combine();
    }

    @Benchmark
    public void handleDispatchReplay(ReplayDispatchReady s) {
        s.round.dispatch();
    }

    @Benchmark
    public void handleCombineReplay(ReplayCombineReady s) {
        s.round.combine();
    }

    // ---- the command line entry ----

    public static void main(String[] args) {
        System.exit(new CommandLine(new Cli()).execute(args));
    }

    /** The command line (a class of its own: JMH allows no fields in a benchmark class without a state). */
    @Command(name = "launch-cost", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
            description = "JMH: host time of one kernel launch from Java on a GPU (other arguments go to JMH).")
    static final class Cli implements Callable<Integer> {
        @Option(names = "--out-dir", defaultValue = ".", description = "Folder for <date>-<gpu>-gpu-launch-cost.json.")
        Path outDir;

        @Option(names = "--commit", defaultValue = "${env:MOECOMM_COMMIT:-unknown}", description = "Commit recorded in the JSON.")
        String commit;

        @Option(names = "--command", description = "Command recorded in the JSON (default: this invocation).")
        String command;

        @Unmatched
        List<String> jmhArgs = new ArrayList<>();

        @Override
        public Integer call() throws IOException, CommandLineOptionException {
            PrintStream out = System.out;
            Cuda.Availability a = Cuda.availability();
            if (!a.available()) {
                out.println("launch-cost benchmark skipped: no CUDA GPU can be used: " + a.reason());
                return 3;
            }
            String device;
            try (CudaContext context = CudaContext.open(0)) {
                device = context.deviceName();
            }
            Files.createDirectories(outDir);
            Path file = freshFile(outDir, LocalDate.now(ZoneOffset.UTC), device);
            ChainedOptionsBuilder builder = new OptionsBuilder()
                    .parent(new CommandLineOptions(jmhArgs.toArray(String[]::new)))
                    .include("^" + Pattern.quote(LaunchCostBenchmark.class.getName()) + "\\.");
            GpuBackend.Availability backend = GpuBackend.availability();
            if (!backend.available()) {
                out.println("launch-cost benchmark: the handle cases are left out: " + backend.reason());
                builder.exclude(HANDLE_CASES);
            }
            Options options = builder
                    .resultFormat(ResultFormatType.JSON)
                    .result(file.toString())
                    .shouldFailOnError(true)
                    .build();
            Collection<RunResult> results;
            try {
                results = new Runner(options).run();
            } catch (RunnerException e) {
                out.println("launch-cost benchmark failed: " + e.getMessage());
                return 1;
            }
            String recorded = command != null ? command
                    : "java org.moecomm.bench.gpu.LaunchCostBenchmark " + String.join(" ", jmhArgs);
            annotate(file, device, commit, recorded);
            out.println(summary(results));
            out.println("wrote " + file);
            return results.isEmpty() ? 1 : 0;
        }
    }

    /** Lines naming each benchmark's score, and whether {@code launch} and {@code handleDispatch} are within {@link #TARGET_NS}. */
    static String summary(Collection<RunResult> results) {
        StringBuilder s = new StringBuilder("launch cost (host time per call):");
        for (RunResult r : results) {
            String label = r.getParams().getBenchmark().substring(LaunchCostBenchmark.class.getName().length() + 1);
            double score = r.getPrimaryResult().getScore();
            s.append(String.format(Locale.ROOT, "%n  %-24s %9.1f ± %.1f %s", label, score,
                    r.getPrimaryResult().getScoreError(), r.getPrimaryResult().getScoreUnit()));
            if (label.equals("launch") || label.equals("handleDispatch")) {
                s.append(score <= TARGET_NS ? "  (within" : "  (OVER").append(String.format(Locale.ROOT,
                        " the %.0f ns target)", TARGET_NS));
            }
        }
        return s.toString();
    }

    /** {@code <date>-<gpu>-gpu-launch-cost.json} in {@code dir}, with {@code -2}, {@code -3}, ... when taken. */
    static Path freshFile(Path dir, LocalDate date, String deviceName) {
        return ResultFiles.fresh(dir, ResultFiles.name(date, deviceName, "gpu-launch-cost"));
    }

    /** Adds {@code device, commit, command} to every entry of JMH's JSON, keeping the machine's paths out. */
    static void annotate(Path file, String device, String commit, String command) throws IOException {
        JmhResults.annotate(file, Map.of("device", device, "commit", commit, "command", command));
    }
}
