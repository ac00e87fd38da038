package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.launch.LaunchException;
import org.moecomm.core.launch.LocalLauncher;

/** The multi-process launcher with plain Java ranks (no GPU needed). */
@Timeout(120)
class LocalLauncherTest {

    private static LocalLauncher.Builder launcher(int world, GpuTestSupport.CapturedOutput out) {
        return LocalLauncher.builder()
                .worldSize(world)
                .mainClass(LauncherTestMain.class)
                .classPath(LocalLauncher.classPathWith(LauncherTestMain.class))
                .output(out.stream)
                .killGrace(Duration.ofSeconds(2))
                .timeout(Duration.ofSeconds(90));
    }

    @Test
    void ranksShareTheRendezvousAndGetTheirEnvironment() {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(false);
        LocalLauncher.Result r = launcher(3, out).args("ok").gpuPolicy(LocalLauncher.GpuPolicy.SHARED)
                .devices(List.of("5")).env("MOECOMM_TEST_EXTRA", "yes").build().run();
        assertArrayEquals(new int[] {0, 0, 0}, r.exitCodes());
        String text = out.text();
        for (int rank = 0; rank < 3; rank++) {
            String p = "[rank " + rank + "] ";
            assertTrue(text.contains(p + "got cafe03"), text);
            String mps = System.getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") != null
                    ? System.getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") : "33";
            String remote = System.getenv("NVSHMEM_REMOTE_TRANSPORT") != null
                    ? System.getenv("NVSHMEM_REMOTE_TRANSPORT") : "none";
            assertTrue(text.contains(p + "env CUDA_VISIBLE_DEVICES=5 MPS=" + mps + " PES_PER_GPU=3 REMOTE=" + remote
                    + " EXTRA=yes"), text);
            assertTrue(text.contains(p + "stderr line of rank " + rank), text);
        }
    }

    @Test
    void perRankPolicySpreadsRanksOverTheGivenDevices() {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(false);
        launcher(2, out).args("ok").gpuPolicy(LocalLauncher.GpuPolicy.PER_RANK).devices(List.of("0", "1")).build().run();
        String text = out.text();
        assertTrue(text.contains("[rank 0] env CUDA_VISIBLE_DEVICES=0 MPS=" + System.getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
                + " PES_PER_GPU=1"), text);
        assertTrue(text.contains("[rank 1] env CUDA_VISIBLE_DEVICES=1 MPS=" + System.getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
                + " PES_PER_GPU=1"), text);
    }

    @Test
    void aFailingRankFailsTheRunWithItsMessageAndTheOthersAreStopped() {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(false);
        long t0 = System.nanoTime();
        LaunchException e = assertThrows(LaunchException.class,
                () -> launcher(3, out).args("fail", "1").gpuPolicy(LocalLauncher.GpuPolicy.NONE).build().run());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(1, e.failedRank());
        assertEquals(1, e.exitCode());
        assertTrue(e.getMessage().contains("rank 1 failed with exit code 1"), e.getMessage());
        assertTrue(e.getMessage().contains("IllegalStateException: boom from rank 1"), e.getMessage());
        // the others sleep for two minutes: they must have been stopped, not waited for
        assertTrue(ms < 60_000, "took " + ms + " ms");
    }

    @Test
    void aRunPastItsTimeoutIsStopped() {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(false);
        LaunchException e = assertThrows(LaunchException.class, () -> launcher(2, out).args("hang")
                .gpuPolicy(LocalLauncher.GpuPolicy.NONE).timeout(Duration.ofSeconds(3)).build().run());
        assertEquals(-1, e.failedRank());
        assertTrue(e.getMessage().contains("timed out after 3 s"), e.getMessage());
        assertTrue(e.getMessage().contains("ranks still running: [0, 1]"), e.getMessage());
    }

    @Test
    void commandUsesThisJavaAndTheMainClass() {
        List<String> cmd = LocalLauncher.builder().worldSize(2).mainClass("a.B").args("x", "y")
                .classPath("cp1").jvmOption("-Xmx1g").rankWrapper(List.of()).build().command();
        assertTrue(cmd.getFirst().endsWith("java"), cmd.toString());
        assertTrue(cmd.contains("--enable-native-access=ALL-UNNAMED"), cmd.toString());
        assertEquals(List.of("-Xmx1g", "-cp", "cp1", "a.B", "x", "y"), cmd.subList(cmd.size() - 6, cmd.size()));
    }

    @Test
    void aRankWrapperRunsEveryRankAndItsExitCodeIsTheRanks() {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(false);
        // env(1) as the wrapper: it sets a variable and runs the rank's java, as compute-sanitizer would
        launcher(2, out).args("ok").gpuPolicy(LocalLauncher.GpuPolicy.NONE)
                .rankWrapper(List.of("env", "MOECOMM_TEST_EXTRA=wrapped")).build().run();
        for (int rank = 0; rank < 2; rank++) {
            String prefix = "[rank " + rank + "] ";
            assertTrue(out.text().lines().anyMatch(l -> l.startsWith(prefix + "env ") && l.contains("EXTRA=wrapped")),
                    out.text());
        }
        LaunchException e = assertThrows(LaunchException.class, () -> launcher(2, out).args("ok")
                .gpuPolicy(LocalLauncher.GpuPolicy.NONE).rankWrapper(List.of("sh", "-c", "exit 86")).build().run());
        assertEquals(86, e.exitCode(), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> LocalLauncher.builder().rankWrapper(List.of("a", " ")));
    }
}
