package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
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

    /**
     * Each case runs its rounds cycling through m = M, m = 0, m < M with -1 ids, and skewed
     * routing (see {@link DispatchCombineMain#variant}; a case of two rounds sees the first two);
     * together they cover W in {2, 4, 8}, G in {1, 2}, every
     * dtype (dispatch bf16/fp16/fp8, expert outputs bf16/fp16/fp32, out bf16/fp16), 50 rounds on
     * one handle, the send/recv halves with a kernel between them, the deepseek-v3 preset at
     * M = 128 with 8 PEs on one GPU, and the put path (every peer reached by staged puts, as
     * InfiniBand and EFA peers are) next to the default direct stores. The rows with
     * {@code BF16->FP8_E4M3} or {@code FP16->FP8_E4M3} quantise in dispatch (bf16 or fp16 tokens,
     * fp8 with block scales on the wire and to the experts; tokens from the quantisation's edge
     * cases), as the deepseek-v3-bf16-to-fp8 preset does.
     */
    @ParameterizedTest(name = "W={0} G={1} E={2} K={3} H={4} M={5} {6}->{7}->{8} rounds={9} {10}")
    @CsvSource({
        "2, 1, 8, 2, 256, 32, BF16, BF16, BF16, 8, plain",
        "4, 1, 16, 4, 512, 24, BF16, FP32, FP16, 8, plain",
        "4, 2, 8, 3, 256, 16, FP8_E4M3, BF16, BF16, 8, plain",
        "4, 1, 32, 8, 7168, 8, FP8_E4M3, BF16, BF16, 4, plain",
        "2, 2, 8, 2, 256, 32, FP16, FP16, FP16, 8, halves",
        "4, 2, 16, 4, 512, 16, FP16, FP32, BF16, 50, halves",
        "8, 2, 64, 6, 2048, 32, FP8_E4M3, FP16, BF16, 4, plain",
        "8, 1, 256, 8, 7168, 128, FP8_E4M3, BF16, BF16, 2, plain",
        "4, 1, 16, 4, 512, 24, FP8_E4M3, BF16, BF16, 8, puts",
        "4, 2, 16, 4, 512, 16, BF16, FP32, BF16, 8, halves+puts",
        "2, 1, 256, 8, 7168, 128, FP8_E4M3, BF16, BF16, 4, puts",
        "4, 1, 32, 8, 7168, 8, BF16->FP8_E4M3, BF16, BF16, 8, plain",
        "2, 2, 16, 4, 384, 24, FP16->FP8_E4M3, FP32, FP16, 8, halves",
        "4, 1, 16, 4, 512, 300, BF16->FP8_E4M3, BF16, BF16, 4, puts",
        "8, 1, 256, 8, 7168, 128, BF16->FP8_E4M3, BF16, BF16, 4, plain",
        // decode sizes (M <= 8): dispatch recv takes its slots in source order, with 1, 2 or 4
        // blocks per source group (the M = 8 rows above have 2)
        "4, 1, 32, 8, 7168, 1, FP8_E4M3, BF16, BF16, 8, plain",
        "4, 2, 16, 4, 512, 3, BF16, FP32, BF16, 8, halves",
        "2, 1, 16, 4, 512, 4, FP16, BF16, BF16, 8, puts",
        "8, 1, 256, 8, 7168, 2, BF16->FP8_E4M3, BF16, BF16, 8, plain",
        "2, 1, 16, 8, 512, 8, BF16, BF16, BF16, 8, plain",
        "2, 1, 16, 8, 512, 8, FP8_E4M3, BF16, BF16, 8, puts",
    })
    void roundsMatchTheReference(int world, int g, int e, int k, int h, int m, String in, String expertOut,
                                 String outType, int rounds, String mode) {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(true);
        LocalLauncher.Result r = GpuTestSupport.launcher(world, DispatchCombineMain.class, out, Duration.ofMinutes(8))
                .args(Integer.toString(g), Integer.toString(e), Integer.toString(k), Integer.toString(h),
                        Integer.toString(m), in, expertOut, Integer.toString(rounds), Long.toString(1000L * world + g),
                        outType, mode)
                .build().run();
        assertArrayEquals(new int[world], r.exitCodes());
        String text = out.text();
        for (int rank = 0; rank < world; rank++) {
            assertTrue(text.contains("[rank " + rank + "] CHECK dispatch-combine ok rank " + rank),
                    "rank " + rank + " did not report success");
        }
    }

    /**
     * Dispatch and combine captured once into two CUDA graphs each rank, then replayed 120 rounds
     * with new tokens, ids, weights and m (through a count in device memory) written into the same
     * buffers before each replay, every round checked against the reference; with direct stores
     * and with puts, and with dispatch in one launch (decode sizes) and in two.
     */
    @ParameterizedTest(name = "W={0} E={1} K={2} H={3} M={4} {5} peerWrites={6} dispatch launches={7}")
    @CsvSource({
        "4, 32, 8, 1024, 16, FP8_E4M3, AUTO, 2",
        "2, 16, 4, 512, 24, BF16, PUTS, 2",
        "4, 32, 8, 1024, 16, BF16->FP8_E4M3, AUTO, 2",
        "4, 32, 8, 1024, 4, FP8_E4M3, AUTO, 1",
        "2, 16, 4, 512, 2, BF16, PUTS, 1",
        "2, 16, 8, 512, 8, BF16, AUTO, 1",
        "4, 32, 8, 1024, 8, FP8_E4M3, PUTS, 1",
    })
    void capturedRoundsReplayAndMatchTheReference(int world, int e, int k, int h, int m, String in, String writes,
                                                  int dispatchLaunches) {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(true);
        LocalLauncher.Result r = GpuTestSupport.launcher(world, GraphReplayMain.class, out, Duration.ofMinutes(5))
                .args(Integer.toString(e), Integer.toString(k), Integer.toString(h), Integer.toString(m), in, writes,
                        "120", Long.toString(77L * world))
                .build().run();
        assertArrayEquals(new int[world], r.exitCodes());
        for (int rank = 0; rank < world; rank++) {
            assertTrue(out.text().contains("[rank " + rank + "] CHECK graph-replay ok rank " + rank + " (120 replays of"
                    + " two captured graphs, dispatch in " + (dispatchLaunches == 1 ? "one launch" : "two launches")),
                    "rank " + rank + " did not report success with dispatch in " + dispatchLaunches + " launch(es)");
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"out-of-range", "repeated"})
    void aBadExpertIdFoundOnTheDeviceFailsTheNextCallOnEveryRank(String kind) {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(true);
        LocalLauncher.Result r = GpuTestSupport.launcher(2, BadExpertIdMain.class, out, Duration.ofMinutes(3))
                .args(kind).build().run();
        assertArrayEquals(new int[2], r.exitCodes(), out.text());
        for (int rank = 0; rank < 2; rank++) {
            assertTrue(out.text().contains("[rank " + rank + "] CHECK bad-expert-id ok rank " + rank),
                    "rank " + rank + " did not report the bad id");
        }
    }

    @Test
    void anAbortReleasesEveryPeerAtOnceAndEveryRankCloses() {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(true);
        LocalLauncher.Result r = GpuTestSupport.launcher(4, AbortMain.class, out, Duration.ofMinutes(2)).build().run();
        assertArrayEquals(new int[4], r.exitCodes(), out.text());
        for (int rank = 0; rank < 4; rank++) {
            assertTrue(out.text().contains("[rank " + rank + "] CHECK abort ok rank " + rank),
                    "rank " + rank + " did not report the abort");
        }
    }

    @Test
    void aPeerThatNeverDispatchesGivesTheOthersATimeoutNamingIt() {
        GpuTestSupport.CapturedOutput out = new GpuTestSupport.CapturedOutput(true);
        LocalLauncher.Result r = GpuTestSupport.launcher(4, DispatchTimeoutMain.class, out, Duration.ofMinutes(3))
                .args("3000").build().run();
        assertArrayEquals(new int[4], r.exitCodes());
        for (int rank = 0; rank < 4; rank++) {
            assertTrue(out.text().contains("[rank " + rank + "] CHECK timeout ok rank " + rank),
                    "rank " + rank + " did not report the expected timeout");
        }
    }
}
