package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.core.check.StressRounds;
import org.moecomm.core.gpu.GpuBackend;
import picocli.CommandLine;

/** {@code moecomm stress} on the CPU backend (CI): the run, its summary and JSON, bad options, the spec's word. */
class StressCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private final ByteArrayOutputStream outBytes = new ByteArrayOutputStream();
    private final ByteArrayOutputStream errBytes = new ByteArrayOutputStream();

    private int execute(String... args) {
        StressCommand cmd = new StressCommand();
        cmd.out = new PrintStream(outBytes, true, StandardCharsets.UTF_8);
        cmd.err = new PrintStream(errBytes, true, StandardCharsets.UTF_8);
        cmd.gpuProbe = () -> new GpuBackend.Availability(false, "CUDA: no CUDA driver (test)");
        CommandLine cl = Main.commandLine(cmd);
        cl.setErr(new PrintWriter(cmd.err, true));
        return cl.execute(args);
    }

    @Test
    void aShortRunChecksEveryRoundAndWritesItsJson() throws Exception {
        int rc = execute("--preset", "mixtral-8x7b", "--tokens", "6", "--world", "2", "--rounds", "12", "--seed", "3",
                "--max-skew-us", "20", "--out-dir", dir.toString());
        String out = outBytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, out + errBytes.toString(StandardCharsets.UTF_8));
        assertTrue(out.contains("backend cpu") && out.contains("STRESS OK"), out);
        assertTrue(out.contains("rank 1: 12 rounds"), out);
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.toList();
        }
        assertEquals(1, files.size(), files.toString());
        assertTrue(files.getFirst().getFileName().toString().endsWith("cpu-cpu-stress.json"), files.toString());
        JsonNode j = JSON.readTree(Files.readString(files.getFirst()));
        assertEquals("stress", j.get("kind").asText());
        assertEquals(12, j.get("rounds").asInt());
        assertEquals(0, j.get("failedRounds").asInt());
        assertEquals(2, j.get("ranks").size());
        long rows = j.get("ranks").get(0).get("rowsChecked").asLong() + j.get("ranks").get(1).get("rowsChecked").asLong();
        assertTrue(rows > 0 && rows == j.get("rowsChecked").asLong(), j.toString());
        assertTrue(j.get("command").asText().startsWith("moecomm stress --preset mixtral-8x7b"), j.toString());
    }

    @Test
    void aGivenCommandIsRecordedInsteadOfTheInvocation() throws Exception {
        assertEquals(0, execute("--preset", "mixtral-8x7b", "--tokens", "2", "--world", "2", "--rounds", "2",
                "--out-dir", dir.toString(), "--command", "bash scripts/gpu-nvshmem-check.sh (stress step)"));
        Path file;
        try (Stream<Path> s = Files.list(dir)) {
            file = s.findFirst().orElseThrow();
        }
        assertEquals("bash scripts/gpu-nvshmem-check.sh (stress step)",
                JSON.readTree(Files.readString(file)).get("command").asText());
    }

    @Test
    void badOptionsAreOneLineAndStatusTwo() {
        assertEquals(2, execute("--rounds", "0", "--out-dir", dir.toString()));
        String err = errBytes.toString(StandardCharsets.UTF_8);
        assertTrue(err.startsWith("moecomm stress: rounds must be positive") && err.strip().lines().count() == 1, err);
        errBytes.reset();
        assertEquals(2, execute("--world", "3", "--out-dir", dir.toString()));
        assertTrue(errBytes.toString(StandardCharsets.UTF_8).contains("not divisible"), errBytes.toString());
        errBytes.reset();
        assertEquals(2, execute("--backend", "gpu", "--out-dir", dir.toString()));
        assertTrue(errBytes.toString(StandardCharsets.UTF_8).contains("cannot run here"), errBytes.toString());
    }

    @Test
    void aGpuRunGathersEveryRanksResultFromItsProcess() throws Exception {
        StressCommand cmd = new StressCommand();
        cmd.out = new PrintStream(outBytes, true, StandardCharsets.UTF_8);
        cmd.err = new PrintStream(errBytes, true, StandardCharsets.UTF_8);
        cmd.gpuProbe = () -> new GpuBackend.Availability(true, "fake GPU (test)");
        cmd.gpuRankMain = FakeStressRankMain.class;
        CommandLine cl = Main.commandLine(cmd);
        int rc = cl.execute("--backend", "gpu", "--world", "2", "--rounds", "7", "--launch-timeout", "120",
                "--gpus", "shared", "--out-dir", dir.toString());
        assertEquals(org.moecomm.core.launch.LocalLauncher.GpuPolicy.SHARED, cmd.gpus.policy);
        String out = outBytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, out + errBytes.toString(StandardCharsets.UTF_8));
        assertTrue(out.contains("rank 0: 7 rounds, 70 rows checked") && out.contains("rank 1: 7 rounds, 140 rows checked"),
                out);
        Path file = dir.resolve(ResultFiles.name(java.time.LocalDate.now(), "Fake GPU", "gpu-stress"));
        JsonNode j = JSON.readTree(Files.readString(file));
        assertEquals("gpu", j.get("backend").asText());
        assertEquals("Fake GPU", j.get("device").asText());
        assertEquals(210, j.get("rowsChecked").asLong());
    }

    @Test
    void theSpecTravelsAsOneWord() {
        StressSpec s = new StressSpec("deepseek-v3", 8, 4, 2, new StressRounds.Options(500, 7, 0.25, 150));
        assertEquals(s, StressSpec.decode(s.encode()));
    }
}
