package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.core.launch.LocalLauncher;
import picocli.CommandLine;

/**
 * {@code demo} and {@code bench} end to end on the CPU backend at small sizes (CI, no GPU): option
 * parsing, the backend choice when there is no GPU (auto runs on the CPU, gpu is a clear error),
 * the shared output, and the JSON lines file.
 */
class CommandsCpuTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ByteArrayOutputStream outBytes = new ByteArrayOutputStream();
    private final ByteArrayOutputStream errBytes = new ByteArrayOutputStream();

    private int execute(RunCommand cmd, String... args) {
        cmd.out = new PrintStream(outBytes, true, StandardCharsets.UTF_8);
        cmd.err = new PrintStream(errBytes, true, StandardCharsets.UTF_8);
        cmd.gpuProbe = () -> new GpuBackend.Availability(false, "CUDA: no CUDA driver (test)");
        CommandLine cl = Main.commandLine(cmd);
        cl.setErr(new PrintWriter(cmd.err, true));
        return cl.execute(args);
    }

    private String out() {
        return outBytes.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return errBytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void demoOptionsParse() {
        DemoCommand d = new DemoCommand();
        new CommandLine(d).parseArgs("--preset", "mixtral-8x7b", "--tokens", "7", "--world", "2", "--group", "2",
                "--rounds", "3", "--warmup", "1", "--skewed", "--seed", "9", "--backend", "cpu");
        assertEquals(List.of(new RunSpec("mixtral-8x7b", 7, 2, 2, true, 9)), d.specs(BackendChoice.Backend.CPU));
        // the demo launches plainly on either backend
        assertEquals(List.of(new RunSpec("mixtral-8x7b", 7, 2, 2, true, 9, LaunchMode.PLAIN)),
                d.specs(BackendChoice.Backend.GPU));
        assertEquals(new RoundPlan(1, 3, true, true), d.plan(BackendChoice.Backend.CPU));
        assertEquals("cpu", d.backend);
        DemoCommand defaults = new DemoCommand();
        new CommandLine(defaults).parseArgs();
        assertEquals("auto", defaults.backend);
        // the GPU backend's ranks: one GPU each where there are W, all on the one GPU where there is one
        assertEquals(LocalLauncher.GpuPolicy.PER_RANK, defaults.gpus.policy);
        new CommandLine(d).parseArgs("--gpus", "shared");
        assertEquals(LocalLauncher.GpuPolicy.SHARED, d.gpus.policy);
        assertEquals(List.of(new RunSpec("deepseek-v3", 128, 4, 1, false, 1)), defaults.specs(BackendChoice.Backend.GPU));
        // warm-up until the JIT has compiled the host's code on the GPU, a few rounds on the CPU
        assertEquals(new RoundPlan(DemoCommand.GPU_WARMUP, 20, true, true), defaults.plan(BackendChoice.Backend.GPU));
        assertEquals(new RoundPlan(DemoCommand.CPU_WARMUP, 20, true, true), defaults.plan(BackendChoice.Backend.CPU));
    }

    @Test
    void benchOptionsParse() {
        BenchCommand b = new BenchCommand();
        new CommandLine(b).parseArgs();
        // the CPU backend: plain launches only, one spec per preset and tokens
        List<RunSpec> cpu = b.specs(BackendChoice.Backend.CPU);
        assertEquals(8, cpu.size());
        assertEquals(new RunSpec("deepseek-v3", 1, 4, 1, false, 1, LaunchMode.PLAIN), cpu.getFirst());
        assertEquals(new RunSpec("deepseek-v2-lite", 128, 4, 1, false, 1, LaunchMode.PLAIN), cpu.getLast());
        // the GPU backend: plain and graph, the two modes of a configuration next to each other, decode
        // and prefill sizes
        List<RunSpec> gpu = b.specs(BackendChoice.Backend.GPU);
        assertEquals(32, gpu.size());
        assertEquals(new RunSpec("deepseek-v3", 1, 4, 1, false, 1, LaunchMode.PLAIN), gpu.get(0));
        assertEquals(new RunSpec("deepseek-v3", 1, 4, 1, false, 1, LaunchMode.GRAPH), gpu.get(1));
        assertEquals(new RunSpec("deepseek-v3", 8, 4, 1, false, 1, LaunchMode.PLAIN), gpu.get(2));
        assertEquals(new RunSpec("deepseek-v3", 4096, 4, 1, false, 1, LaunchMode.GRAPH), gpu.get(15));
        assertEquals(new RunSpec("deepseek-v2-lite", 4096, 4, 1, false, 1, LaunchMode.GRAPH), gpu.getLast());
        assertEquals(16, gpu.stream().filter(s -> s.launch() == LaunchMode.GRAPH).count());
        assertEquals(List.of(1, 8, 32, 128, 512, 1024, 2048, 4096), b.tokens(BackendChoice.Backend.GPU));
        assertEquals(List.of(1, 8, 32, 128), b.tokens(BackendChoice.Backend.CPU));
        assertEquals(new RoundPlan(20, 100, false, false), b.plan(BackendChoice.Backend.GPU));
        assertEquals(Path.of("benchmarks/results"), b.outDir);
    }

    @Test
    void benchSweepOptionParses() {
        BenchCommand prefill = new BenchCommand();
        new CommandLine(prefill).parseArgs("--sweep", "prefill", "--presets", "deepseek-v2-lite");
        assertEquals(TokenSweep.PREFILL, prefill.sweep);
        List<RunSpec> cpu = prefill.specs(BackendChoice.Backend.CPU);
        assertEquals(List.of(512, 1024, 2048, 4096), cpu.stream().map(RunSpec::tokens).toList());
        assertEquals(8, prefill.specs(BackendChoice.Backend.GPU).size());
        BenchCommand all = new BenchCommand();
        new CommandLine(all).parseArgs("--sweep", "ALL");
        assertEquals(TokenSweep.ALL.tokens(), all.tokens(BackendChoice.Backend.CPU));
        BenchCommand decode = new BenchCommand();
        new CommandLine(decode).parseArgs("--sweep", "decode");
        assertEquals(List.of(1, 8, 32, 128), decode.tokens(BackendChoice.Backend.GPU));
        BenchCommand listed = new BenchCommand();
        new CommandLine(listed).parseArgs("--tokens", "4096,2");
        assertEquals(List.of(4096, 2), listed.tokens(BackendChoice.Backend.GPU));
        org.junit.jupiter.api.Assertions.assertThrows(CommandLine.ParameterException.class,
                () -> new CommandLine(new BenchCommand()).parseArgs("--sweep", "huge"));
        assertEquals("unknown sweep 'huge' (decode, prefill, all)",
                org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                        () -> TokenSweep.byLabel("huge")).getMessage());
    }

    @Test
    void benchRefusesTokensAndSweepTogetherBeforeRunning(@TempDir Path dir) throws Exception {
        assertEquals(2, execute(new BenchCommand(), "--backend", "cpu", "--tokens", "1", "--sweep", "decode",
                "--out-dir", dir.toString()));
        assertEquals("moecomm bench: --tokens and --sweep both choose the tokens per rank: give one of them",
                err().strip());
        assertFalse(out().contains("backend="), out());
        errBytes.reset();
        assertEquals(2, execute(new BenchCommand(), "--backend", "cpu", "--sweep", "huge"));
        assertTrue(err().startsWith("bench: Invalid value for option '--sweep': unknown sweep 'huge'")
                && err().strip().lines().count() == 1, err());
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(0, s.count());
        }
        // the help names the sizes and the default of each backend
        String help = String.join(" ", new CommandLine(new BenchCommand()).getCommandSpec().findOption("--sweep")
                .description());
        assertTrue(help.contains("decode (1,8,32,128), prefill (512,1024,2048,4096)"), help);
        assertTrue(help.contains("default: all on the GPU backend; decode on the CPU backend"), help);
    }

    @Test
    void benchLaunchOptionParses() {
        BenchCommand graphOnly = new BenchCommand();
        new CommandLine(graphOnly).parseArgs("--launch", "graph", "--presets", "mixtral-8x7b", "--tokens", "2,4");
        assertEquals(List.of(new RunSpec("mixtral-8x7b", 2, 4, 1, false, 1, LaunchMode.GRAPH),
                new RunSpec("mixtral-8x7b", 4, 4, 1, false, 1, LaunchMode.GRAPH)),
                graphOnly.specs(BackendChoice.Backend.GPU));
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> graphOnly.specs(BackendChoice.Backend.CPU));
        assertTrue(e.getMessage().contains("the CPU backend has only plain launches"), e.getMessage());

        BenchCommand both = new BenchCommand();
        new CommandLine(both).parseArgs("--launch", "GRAPH,plain,graph", "--presets", "mixtral-8x7b", "--tokens", "2");
        assertEquals(List.of(LaunchMode.GRAPH, LaunchMode.PLAIN), both.launchModes(BackendChoice.Backend.GPU));
        assertEquals(List.of("graph", "plain"),
                both.specs(BackendChoice.Backend.GPU).stream().map(s -> s.launch().label()).toList());

        BenchCommand plain = new BenchCommand();
        new CommandLine(plain).parseArgs("--launch", "plain");
        assertEquals(List.of(LaunchMode.PLAIN), plain.launchModes(BackendChoice.Backend.GPU));
        assertEquals(List.of(LaunchMode.PLAIN), plain.launchModes(BackendChoice.Backend.CPU));

        BenchCommand bad = new BenchCommand();
        new CommandLine(bad).parseArgs("--launch", "eager");
        e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> bad.specs(BackendChoice.Backend.GPU));
        assertEquals("unknown launch mode 'eager' (plain, whole, graph)", e.getMessage());

        BenchCommand whole = new BenchCommand();
        new CommandLine(whole).parseArgs("--launch", "whole,graph", "--presets", "mixtral-8x7b", "--tokens", "2");
        assertEquals(List.of(LaunchMode.WHOLE, LaunchMode.GRAPH), whole.launchModes(BackendChoice.Backend.GPU));
        e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> whole.specs(BackendChoice.Backend.CPU));
        assertTrue(e.getMessage().startsWith("--launch whole: the CPU backend has only plain launches"), e.getMessage());
    }

    @Test
    void benchStartOptionParses() {
        BenchCommand device = new BenchCommand();
        new CommandLine(device).parseArgs("--start", "device", "--presets", "mixtral-8x7b", "--tokens", "2");
        assertEquals(RoundStart.DEVICE, device.plan(BackendChoice.Backend.GPU).start());
        assertEquals(2, device.specs(BackendChoice.Backend.GPU).size(), "one configuration, replayed and launched");
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> device.specs(BackendChoice.Backend.CPU));
        assertTrue(e.getMessage().contains("the CPU backend has no device stream"), e.getMessage());
        BenchCommand aligned = new BenchCommand();
        new CommandLine(aligned).parseArgs("--start", "aligned", "--presets", "mixtral-8x7b", "--tokens", "2");
        assertEquals(RoundStart.ALIGNED, aligned.plan(BackendChoice.Backend.GPU).start());
        e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> aligned.specs(BackendChoice.Backend.CPU));
        assertTrue(e.getMessage().startsWith("--start aligned: the CPU backend's ranks are threads"), e.getMessage());
        BenchCommand byDefault = new BenchCommand();
        new CommandLine(byDefault).parseArgs();
        assertEquals(RoundStart.HOST, byDefault.plan(BackendChoice.Backend.GPU).start());
        org.junit.jupiter.api.Assertions.assertThrows(CommandLine.ParameterException.class,
                () -> new CommandLine(new BenchCommand()).parseArgs("--start", "later"));
    }

    @Test
    void benchRefusesGraphLaunchesOnTheCpu(@TempDir Path dir) throws Exception {
        // --backend auto without a GPU falls back to the CPU, which cannot replay graphs
        assertEquals(2, execute(new BenchCommand(), "--launch", "plain,graph", "--out-dir", dir.toString()));
        assertTrue(err().contains("moecomm bench: --launch graph: the CPU backend has only plain launches"), err());
        assertFalse(out().contains("moecomm bench: backend="), out());
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(0, s.count());
        }
        assertEquals(2, execute(new BenchCommand(), "--backend", "cpu", "--launch", "sideways"));
        assertTrue(err().contains("unknown launch mode 'sideways'"), err());
    }

    @Test
    void demoOnAutoWithoutAGpuRunsOnTheCpuAndVerifies() {
        int rc = execute(new DemoCommand(), "--preset", "deepseek-v2-lite", "--tokens", "3", "--world", "2",
                "--rounds", "3", "--warmup", "1");
        assertEquals(0, rc, out() + err());
        String o = out();
        assertTrue(o.contains("backend=cpu (no GPU backend here: CUDA: no CUDA driver (test))"), o);
        assertTrue(o.contains("RESULT: verified against the reference on every rank (first and last round;"), o);
        for (String phase : List.of("dispatch send", "dispatch recv", "combine send", "combine recv",
                "dispatch (all)", "combine (all)")) {
            assertTrue(o.contains(phase), phase + " missing:\n" + o);
        }
        assertTrue(o.contains("GB/s logical") && o.contains("MiB logical"), o);
        Matcher rounds = Pattern.compile(
                "rounds: 4 \\(1 warm-up \\+ 3 timed\\) in (\\d+\\.\\d\\d) s of wall time").matcher(o);
        assertTrue(rounds.find(), o);
        assertTrue(o.contains("(CPU backend, host clock, one thread per block, vector sums, loop forms in C1)"), o);
        assertTrue(Double.parseDouble(rounds.group(1)) > 0, o);
    }

    @Test
    void roundsWallSumsEachRoundsSpanFromTheFirstStartToTheLastEnd() {
        // rank 0 starts round 0 at 10 and ends at 50, rank 1 at 12 and 70; round 1: 100-130, 95-120
        long[][] starts = {{10, 100}, {12, 95}};
        long[][] ends = {{50, 130}, {70, 120}};
        assertEquals(Duration.ofNanos((70 - 10) + (130 - 95)), Measurement.roundsWall(starts, ends));
    }

    @Test
    void demoForcedOnTheGpuWithoutOneFailsClearly() {
        int rc = execute(new DemoCommand(), "--backend", "gpu");
        assertEquals(2, rc);
        assertTrue(err().contains("moecomm demo: --backend gpu: the GPU backend cannot run here: CUDA: no CUDA driver"),
                err());
        assertFalse(out().contains("RESULT"), out());
    }

    @Test
    void versionIsPrinted() {
        java.io.StringWriter w = new java.io.StringWriter();
        CommandLine cl = Main.commandLine(new Main());
        cl.setOut(new PrintWriter(w, true));
        assertEquals(0, cl.execute("-V"));
        assertTrue(w.toString().startsWith("moecomm " + VersionProvider.version() + "\n"), w.toString());
        assertFalse(VersionProvider.version().startsWith("unknown"), VersionProvider.version());
        assertTrue(cl.getSubcommands().get("demo").getCommandSpec().optionsMap().get("--preset").completionCandidates()
                .iterator().hasNext());
    }

    @Test
    void badOptionsAreRefusedBeforeRunning() {
        assertEquals(2, execute(new DemoCommand(), "--backend", "cpu", "--preset", "nope"));
        assertEquals("demo: Invalid value for option '--preset': 'nope' is not a preset (deepseek-v3, deepseek-v2-lite,"
                + " qwen3-30b-a3b, mixtral-8x7b, deepseek-v3-bf16-to-fp8) (--help lists the options)", err().strip());
        errBytes.reset();
        // configurations the handle refuses: one line, status 2, nothing run
        assertEquals(2, execute(new DemoCommand(), "--backend", "cpu", "--world", "3"));
        assertEquals("moecomm demo: deepseek-v3 at 128 tokens per rank on W=3 G=1: numExperts 256 is not divisible by"
                + " worldSize 3", err().strip());
        errBytes.reset();
        assertEquals(2, execute(new DemoCommand(), "--backend", "cpu", "--tokens", "100000000"));
        assertTrue(err().strip().lines().count() == 1 && err().contains("is too large for this world"), err());
        assertFalse(out().contains("backend="), out());
        assertEquals(2, execute(new BenchCommand(), "--backend", "cpu", "--world", "4", "--group", "3"));
        assertTrue(err().contains("group size 3 must divide the world size 4"), err());
        errBytes.reset();
        assertEquals(2, execute(new BenchCommand(), "--backend", "cpu", "--rounds", "0"));
        assertTrue(err().contains("timed rounds (--rounds) must be >= 1, got 0"), err());
        errBytes.reset();
        assertEquals(2, execute(new BenchCommand(), "--gpus", "all"));
        assertTrue(err().contains("'all' is not one of shared, per-rank, none"), err());
        errBytes.reset();
        assertEquals(2, execute(new DemoCommand(), "--gpus", "none"));
        assertTrue(err().contains("'none' leaves the ranks' GPUs to the caller; give shared or per-rank"), err());
    }

    @Test
    void benchOnTheCpuWritesJsonLines(@TempDir Path dir) throws Exception {
        int rc = execute(new BenchCommand(), "--backend", "cpu", "--presets", "deepseek-v2-lite,mixtral-8x7b",
                "--tokens", "1,4", "--world", "2", "--warmup", "1", "--rounds", "3", "--out-dir", dir.toString(),
                "--commit", "abc123");
        assertEquals(0, rc, out() + err());
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.toList();
        }
        assertEquals(1, files.size(), files.toString());
        assertTrue(files.getFirst().getFileName().toString().endsWith("-cpu-phases.json"), files.toString());
        List<String> lines = Files.readAllLines(files.getFirst());
        assertEquals(4, lines.size());
        JsonNode first = JSON.readTree(lines.getFirst());
        assertEquals("deepseek-v2-lite", first.get("preset").asText());
        assertEquals(1, first.get("tokens").asInt());
        assertEquals(2, first.get("world").asInt());
        assertEquals("abc123", first.get("commit").asText());
        assertTrue(first.get("command").asText().startsWith("moecomm bench --backend cpu"), first.toString());
        assertEquals("cpu", first.get("backend").asText());
        assertTrue(first.get("verified").asBoolean());
        for (String line : lines) {
            JsonNode j = JSON.readTree(line);
            assertEquals("plain", j.get("launch").asText(), line);
            for (String k : Phases.KEYS) {
                assertTrue(j.get(k + "MedianUs").isNumber() && j.get(k + "MedianUs").asDouble() > 0, k + " in " + line);
                // host memory stands for device memory here, against a host copy measured in the same run
                assertTrue(j.get(k + "DeviceBytes").asLong() > 0, k + " in " + line);
                assertTrue(j.get(k + "DeviceGBps").asDouble() > 0, k + " in " + line);
                assertTrue(j.get(k + "CopyPercent").asDouble() > 0, k + " in " + line);
            }
            assertEquals(j.get("dispatchGBps").asDouble() / 2, j.get("dispatchGBpsPerRank").asDouble(), 1e-3, line);
            assertTrue(j.get("copyGBps").asDouble() > 0, line);
            assertEquals(CpuRunner.COPY_BYTES, j.get("copyBytes").asLong(), line);
            assertTrue(j.get("copyMethod").asText().startsWith("MemorySegment.copy of copyBytes (16 MiB) on each of the"
                    + " 2 ranks at once"), line);
        }
        JsonNode last = JSON.readTree(lines.getLast());
        assertEquals("mixtral-8x7b", last.get("preset").asText());
        assertEquals(4, last.get("tokens").asInt());
        assertTrue(out().contains("BENCH OK"), out());
        assertTrue(out().contains("wrote 4 lines to"), out());
        assertTrue(out().contains("4 configurations, W=2 G=1, tokens=1,4, launch=plain, 1 warm-up + 3 timed rounds each"), out());
        List<String> table = out().lines().takeWhile(l -> !l.startsWith("Device memory per phase"))
                .filter(l -> l.startsWith("preset") || l.startsWith("deepseek-v2-lite") || l.startsWith("mixtral-8x7b"))
                .toList();
        assertEquals(5, table.size(), out());
        assertTrue(table.getFirst().matches("preset\\s+m\\s+launch \\|.*"), table.getFirst());
        assertTrue(table.get(1).matches("deepseek-v2-lite\\s+1\\s+plain \\|\\s+\\d+\\.\\d / .*"), table.get(1));
        assertFalse(out().contains(" - /"), out());
        assertFalse(out().contains("(graph:"), out());
        // the device memory table: a row per configuration, the copy and the byte model below it
        List<String> device = out().lines().dropWhile(l -> !l.startsWith("Device memory per phase"))
                .filter(l -> l.startsWith("deepseek-v2-lite") || l.startsWith("mixtral-8x7b")).toList();
        assertEquals(4, device.size(), out());
        assertTrue(device.getFirst().matches("deepseek-v2-lite\\s+1\\s+plain \\|\\s+\\d+\\.\\d\\d\\s+[\\d.]+\\s+[\\d.]+%\\s.*"),
                device.getFirst());
        assertTrue(out().contains("(copy: MemorySegment.copy of copyBytes (16 MiB) on each of the 2 ranks at once"),
                out());
        assertTrue(out().contains("  dispatch recv = " + DeviceBytes.FORMULAS.get(Phases.DISPATCH_RECV)), out());
    }

    @Test
    void benchForcedOnTheGpuWithoutOneWritesNothing(@TempDir Path dir) throws Exception {
        assertEquals(2, execute(new BenchCommand(), "--backend", "gpu", "--out-dir", dir.toString()));
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(0, s.count());
        }
        assertTrue(err().contains("moecomm bench: --backend gpu: the GPU backend cannot run here"), err());
    }

    @Test
    void benchThroughMainRecordsItsInvocation(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("x-gpu-phases.json");
        int rc = new CommandLine(new Main()).execute("bench", "--backend", "cpu", "--presets", "mixtral-8x7b",
                "--tokens", "1", "--world", "2", "--warmup", "0", "--rounds", "1", "--out", file.toString());
        assertEquals(0, rc);
        JsonNode j = JSON.readTree(Files.readAllLines(file).getFirst());
        assertEquals("moecomm bench --backend cpu --presets mixtral-8x7b --tokens 1 --world 2 --warmup 0 --rounds 1"
                + " --out " + file, j.get("command").asText());
    }

    @Test
    void mainListsTheBenchSubcommand() {
        CommandLine cl = new CommandLine(new Main());
        assertTrue(cl.getSubcommands().containsKey("bench"));
        assertTrue(cl.getSubcommands().containsKey("demo"));
    }
}
