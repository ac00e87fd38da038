package org.moecomm.bench.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Arrays;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.bridge.cuda.Cuda;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.cpu.CpuKernelRunner;
import org.moecomm.kernels.ptx.PtxCompiler;
import org.moecomm.kernels.ptx.PtxKernel;
import picocli.CommandLine;

/** The launch-cost benchmark's parts that need no GPU: its kernel, the skip, the results file. */
class LaunchCostBenchmarkCpuTest {

    @Test
    void theKernelCompilesToPtxWithTwelveParameters() {
        String[] params = entryParameters(LaunchCostBenchmark.TOUCH);
        assertEquals(12, params.length, String.join(",", params));
        assertTrue(PtxCompiler.compileCached(LaunchCostBenchmark.TOUCH).deviceFunctions().isEmpty(),
                "needs no device library");
    }

    @Test
    void theWideKernelHasTheOneLaunchDispatchsParameterCount() {
        String[] params = entryParameters(LaunchCostBenchmark.WIDE);
        assertEquals(35, params.length, String.join(",", params));
        assertEquals(18 + 1, Arrays.stream(params).filter(p -> p.contains(".u64") || p.contains(".s64")).count(),
                "18 pointers and a long: " + String.join(",", params));
    }

    @Test
    void theKernelWritesItsTwoValues() {
        assertWritesItsTwoValues(LaunchCostBenchmark.TOUCH, (out, other) ->
                LaunchCostBenchmark.touchArgs(out, other, other, other), 1 + 7);
    }

    @Test
    void theWideKernelWritesItsTwoValues() {
        assertWritesItsTwoValues(LaunchCostBenchmark.WIDE, LaunchCostBenchmark::wideArgs, 1 + 16);
    }

    /** The parameters of {@code kernel}'s PTX entry. */
    private static String[] entryParameters(Kernel kernel) {
        PtxKernel ptx = PtxCompiler.compileCached(kernel);
        Matcher entry = Pattern.compile("\\.entry\\s+" + Pattern.quote(ptx.entryName()) + "\\s*\\(([^)]*)\\)")
                .matcher(ptx.ptx());
        assertTrue(entry.find(), ptx.ptx());
        return entry.group(1).split(",");
    }

    /** Runs {@code kernel} on the CPU with its first buffer {@code out}: the int and the tag land there alone. */
    private static void assertWritesItsTwoValues(Kernel kernel, BiFunction<Buf, Buf, Object[]> args, int sum) {
        try (Arena arena = Arena.ofShared(); CpuKernelRunner runner = new CpuKernelRunner()) {
            Buf out = Buf.allocate(arena, 64);
            Buf other = Buf.allocate(arena, 64);
            runner.launch(kernel, LaunchCostBenchmark.GRID, args.apply(out, other));
            assertEquals(sum, out.getInt(0));
            assertEquals(0x1234_5678_9abcL, out.getLong(1));
            assertEquals(0, other.getLong(0), "the other buffers are only passed");
        }
    }

    @Test
    void theHandleCasesPatternNamesThemAlone() {
        Pattern handle = Pattern.compile(LaunchCostBenchmark.HANDLE_CASES);
        String prefix = LaunchCostBenchmark.class.getName() + ".";
        for (String name : new String[] {"handleDispatch", "handleCombine", "handleDispatchReplay",
                "handleCombineReplay"}) {
            assertTrue(handle.matcher(prefix + name).find(), name);
        }
        for (String name : new String[] {"launch", "launchWide", "launchWithPointerChecks", "functionLaunch",
                "graphReplay", "streamQuery"}) {
            assertTrue(!handle.matcher(prefix + name).find(), name);
        }
    }

    @Test
    void withoutAGpuItSkipsWithTheReason(@TempDir Path dir) {
        assumeFalse(Cuda.isAvailable(), "a GPU is here: the benchmark runs instead (scripts/gpu-bench.sh)");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream saved = System.out;
        int rc;
        try (PrintStream capture = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            rc = new CommandLine(new LaunchCostBenchmark.Cli()).execute("--out-dir", dir.toString(), "-f", "0");
        } finally {
            System.setOut(saved);
        }
        String printed = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(3, rc, printed);
        assertTrue(printed.contains("launch-cost benchmark skipped: no CUDA GPU can be used: "
                + Cuda.availability().reason()), printed);
        assertTrue(dir.toFile().list().length == 0, "nothing written");
    }

    @Test
    void resultsNeverGoOverAnExistingFile(@TempDir Path dir) throws Exception {
        LocalDate day = LocalDate.of(2026, 12, 3);
        Path first = LaunchCostBenchmark.freshFile(dir, day, "NVIDIA H200");
        assertEquals(dir.resolve("2026-12-03-h200-gpu-launch-cost.json"), first);
        Files.writeString(first, "[]");
        Path second = LaunchCostBenchmark.freshFile(dir, day, "NVIDIA H200");
        assertEquals(dir.resolve("2026-12-03-h200-gpu-launch-cost-2.json"), second);
        Files.writeString(second, "[]");
        assertEquals(dir.resolve("2026-12-03-h200-gpu-launch-cost-3.json"),
                LaunchCostBenchmark.freshFile(dir, day, "NVIDIA H200"));
    }

    @Test
    void theJsonGetsDeviceCommitAndCommand(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("r.json");
        Files.writeString(file, "[{\"benchmark\":\"x.launch\",\"jvm\":\"/tmp/work/jre/bin/java\",\"vmVersion\":\"25.0.1\","
                + "\"jvmArgs\":[\"-Xss4m\",\"-Djava.io.tmpdir=/tmp/work\"],\"primaryMetric\":{\"score\":1500.5}}]");
        LaunchCostBenchmark.annotate(file, "NVIDIA H200", "abc123", "bash scripts/gpu-bench.sh");
        JsonNode e = new ObjectMapper().readTree(file.toFile()).get(0);
        assertEquals("NVIDIA H200", e.get("device").asText());
        assertEquals("abc123", e.get("commit").asText());
        assertEquals("bash scripts/gpu-bench.sh", e.get("command").asText());
        assertEquals("java 25.0.1", e.get("jvm").asText());
        assertEquals("-Xss4m", e.get("jvmArgs").get(0).asText());
        assertEquals("-Djava.io.tmpdir=<path>", e.get("jvmArgs").get(1).asText());
        assertEquals(1500.5, e.get("primaryMetric").get("score").asDouble());
    }
}
