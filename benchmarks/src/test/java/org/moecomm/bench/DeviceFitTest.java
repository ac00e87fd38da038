package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.gpu.SymmetricMemory;

/** {@link DeviceFit}: which configurations fit the GPU their ranks share, from the buffers' and heap's sizes. */
class DeviceFitTest {
    private static final long GB = 1_000_000_000L;

    private static RunSpec spec(int world, int tokens) {
        return new RunSpec("deepseek-v3", tokens, world, 1, false, 1L);
    }

    private static List<RunSpec> sweep(int world, int... tokens) {
        return Arrays.stream(tokens).mapToObj(t -> spec(world, t)).toList();
    }

    @Test
    void deepseekV3At4096TokensAndFourRanksNeedsMoreThanAnH100() {
        // the expert buffers alone: fp8 in and bf16 out, 64 experts of 4 x 4096 rows of 7168 values
        assertTrue(RankBuffers.deviceBytes(spec(4, 4096).config()) > 64L * 16384 * 7168 * 3);
        Optional<String> h100 = DeviceFit.refusal(List.of(sweep(4, 128, 2048, 4096)), 80 * GB, 4);
        assertTrue(h100.isPresent());
        assertTrue(h100.get().startsWith("1 configuration(s) do not fit 4 ranks on one GPU"), h100.get());
        assertTrue(h100.get().contains("m=4096") && !h100.get().contains("m=2048"), h100.get());
        assertEquals(Optional.empty(), DeviceFit.refusal(List.of(sweep(4, 128, 2048, 4096)), 141 * GB, 4),
                "an H200 holds them");
        assertEquals(Optional.empty(), DeviceFit.refusal(List.of(sweep(2, 4096)), 80 * GB, 2), "two ranks on an H100");
    }

    @Test
    void everyConfigurationOfALaunchHasItsLargestHeap() {
        long heap2048 = SymmetricMemory.heapSizeFor(SymmetricMemory.of(spec(4, 2048).config()).total());
        long device = 4 * (RankBuffers.deviceBytes(spec(4, 2048).config()) + heap2048 + DeviceFit.PROCESS_BYTES);
        assertEquals(Optional.empty(), DeviceFit.refusal(List.of(sweep(4, 2048)), device, 4), "exactly fits alone");
        // beside 4096 tokens, each rank of the launch holds 4096's heap, and 2048 no longer fits
        String why = DeviceFit.refusal(List.of(sweep(4, 2048, 4096)), device, 4).orElseThrow();
        assertTrue(why.startsWith("2 configuration(s)") && why.contains("m=2048"), why);
        // launches are sized apart: 2048 in a launch of its own still fits
        assertTrue(DeviceFit.refusal(List.of(sweep(4, 2048), sweep(4, 4096)), device, 4).orElseThrow()
                .startsWith("1 configuration(s)"));
    }
}
