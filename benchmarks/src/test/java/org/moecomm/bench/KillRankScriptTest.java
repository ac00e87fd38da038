package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.core.launch.LocalLauncher;
import org.moecomm.core.launch.RendezvousServer;

/**
 * scripts/gpu-kill-rank.sh in its dry mode (KILL_RANK_DRY=1, the stand-in rank
 * {@link FakePeerLossRankMain}): the script's own logic (rendezvous, start, kill by pid, the
 * bounded waits, the checks and kill-rank.json) without a GPU.
 */
@EnabledOnOs(OS.LINUX)
@Timeout(180)
class KillRankScriptTest {

    private static Path root() {
        Path here = Path.of("").toAbsolutePath();
        return Files.exists(here.resolve("scripts/gpu-kill-rank.sh")) ? here : here.getParent();
    }

    private static Result run(Path out, Map<String, String> extra) throws IOException, InterruptedException {
        Path log = out.resolve("script.log");
        ProcessBuilder pb = new ProcessBuilder("bash", "scripts/gpu-kill-rank.sh").directory(root().toFile())
                .redirectErrorStream(true).redirectOutput(log.toFile());
        Map<String, String> env = pb.environment();
        env.put("OUT", out.toString());
        env.put("KILL_RANK_DRY", "1");
        env.put("KILL_RANK_JAVA", Path.of(System.getProperty("java.home"), "bin", "java").toString());
        env.put("KILL_RANK_CLASSPATH", LocalLauncher.classPathWith(FakePeerLossRankMain.class, RendezvousServer.class));
        env.put("KILL_RANK_MAIN", FakePeerLossRankMain.class.getName());
        env.put("KILL_RANK_WAIT_MS", "1000");
        env.putAll(extra);
        Process p = pb.start();
        boolean exited = p.waitFor(120, TimeUnit.SECONDS); // the output goes to a file, so the bound holds
        if (!exited) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        String output = Files.readString(log);
        assertTrue(exited, "gpu-kill-rank.sh still running after 120 s:\n" + output);
        String json = Files.exists(out.resolve("kill-rank.json")) ? Files.readString(out.resolve("kill-rank.json")) : "";
        return new Result(p.exitValue(), output, json);
    }

    private record Result(int status, String output, String json) {
    }

    @Test
    void survivorsThatFailAndCloseInTimePass(@TempDir Path out) throws Exception {
        Result r = run(out, Map.of());
        assertEquals(0, r.status(), r.output());
        assertTrue(r.output().contains("KILL-RANK PASS"), r.output());
        assertTrue(r.json().contains("\"result\":\"PASS\""), r.json());
        assertTrue(r.json().contains("\"victim_exit_status\":\"137\""), r.json());
        for (String rank : List.of("0", "1", "3")) {
            assertTrue(r.json().contains("{\"rank\":" + rank + ","), r.json());
        }
        assertTrue(Files.exists(out.resolve("kill-rank.log")));
    }

    @Test
    void aSurvivorThatHangsInCloseFailsTheCheckAndIsKilled(@TempDir Path out) throws Exception {
        Result r = run(out, Map.of("FAKE_HANG_CLOSE_RANK", "3", "KILL_RANK_EXIT_MS", "3000"));
        assertEquals(1, r.status(), r.output());
        assertTrue(r.output().contains("KILL-RANK FAIL"), r.output());
        assertTrue(r.output().contains("rank 3 did not exit"), r.output());
        assertTrue(r.json().contains("\"result\":\"FAIL\""), r.json());
    }
}
