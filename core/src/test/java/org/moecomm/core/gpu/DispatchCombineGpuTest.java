package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.moecomm.core.launch.LocalLauncher;

/**
 * Dispatch and combine on the GPU backend (NVSHMEM transport, Java kernels compiled to PTX),
 * W processes on one GPU, every round checked against the reference by each rank.
 */
@Tag("gpu")
class DispatchCombineGpuTest {

    @BeforeEach
    void requireGpu() {
        GpuTestSupport.assumeGpu();
    }

    @ParameterizedTest(name = "W={0} G={1} E={2} K={3} H={4} M={5} {6}->{7}")
    @CsvSource({
        "2, 1, 8, 2, 256, 32, BF16, BF16",
        "4, 1, 16, 4, 512, 24, BF16, FP32",
        "4, 2, 8, 3, 256, 16, FP8_E4M3, BF16",
        "4, 1, 32, 8, 7168, 8, FP8_E4M3, BF16",
    })
    void roundsMatchTheReference(int world, int g, int e, int k, int h, int m, String in, String expertOut) {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(true);
        LocalLauncher.Result r = GpuTestSupport.launcher(world, DispatchCombineMain.class, out, Duration.ofMinutes(8))
                .args(Integer.toString(g), Integer.toString(e), Integer.toString(k), Integer.toString(h),
                        Integer.toString(m), in, expertOut, "4", Long.toString(1000L * world + g))
                .build().run();
        assertArrayEquals(new int[world], r.exitCodes());
        String text = out.text();
        for (int rank = 0; rank < world; rank++) {
            assertTrue(text.contains("[rank " + rank + "] CHECK dispatch-combine ok rank " + rank),
                    "rank " + rank + " did not report success");
        }
    }
}
