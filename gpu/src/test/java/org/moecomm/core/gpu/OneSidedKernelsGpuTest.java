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
 * Java kernels calling the NVSHMEM bridge's device functions on a GPU: W processes (PEs) on one
 * GPU, each running {@link OneSidedKernelsMain}.
 */
@Tag("gpu")
class OneSidedKernelsGpuTest {

    @BeforeEach
    void requireGpu() {
        GpuTestSupport.assumeGpu();
    }

    @ParameterizedTest(name = "{0} PEs on one GPU")
    @ValueSource(ints = {2, 4})
    void exchangeCountAndTimeoutFromJavaKernels(int world) {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(true);
        LocalLauncher.Result r = GpuTestSupport.launcher(world, OneSidedKernelsMain.class, out, Duration.ofMinutes(5))
                .build().run();
        assertArrayEquals(new int[world], r.exitCodes(), out.text());
        String text = out.text();
        for (int rank = 0; rank < world; rank++) {
            for (String check : new String[] {"one-sided-exchange", "one-sided-count", "one-sided-timeout", "all"}) {
                String line = "[rank " + rank + "] CHECK " + check + " ok rank " + rank;
                assertTrue(text.contains(line), "rank " + rank + " did not report " + check);
            }
        }
    }
}
