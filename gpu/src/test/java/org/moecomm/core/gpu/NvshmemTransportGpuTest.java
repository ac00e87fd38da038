package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.moecomm.core.launch.LocalLauncher;

/**
 * The NVSHMEM endpoint on a GPU: W processes (PEs) on one GPU started by the launcher, each
 * running {@link PingPongMain}: peer pointers, a checked and timed ping-pong kernel, and the
 * error paths of kernels' bounded waits (reported, sticky, recovered).
 */
@Tag("gpu")
class NvshmemTransportGpuTest {

    @BeforeEach
    void requireGpu() {
        GpuTestSupport.assumeGpu();
    }

    @ParameterizedTest(name = "{0} PEs on one GPU")
    @ValueSource(ints = {2, 4})
    void peerPointersPingPongAndErrorPaths(int world) {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(true);
        LocalLauncher.Result r = GpuTestSupport.launcher(world, PingPongMain.class, out, Duration.ofMinutes(5))
                .build().run();
        assertArrayEquals(new int[world], r.exitCodes());
        String text = out.text();
        for (int rank = 0; rank < world; rank++) {
            String p = "[rank " + rank + "] CHECK ";
            for (String check : new String[] {"peer-pointers", "wait-timeout", "sticky-failure", "recovery", "all"}) {
                assertTrue(text.contains(p + check + " ok rank " + rank), "rank " + rank + " did not report " + check);
            }
        }
        assertTrue(text.contains("[rank 0] CHECK ping-pong ok rank 0"), "no ping-pong result");
        assertTrue(text.contains("[rank 1] CHECK ping-pong ok rank 1"), "no ping-pong result");
    }
}
