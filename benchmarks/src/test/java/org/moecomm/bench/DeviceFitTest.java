package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.gpu.SymmetricMemory;

/** {@link DeviceFit}: which configurations fit the GPU their ranks share, from the buffers' and heap's sizes. */
class DeviceFitTest {
    private static final long GB = 1_000_000_000L;
    private static final DeviceFit H100_W4 = new DeviceFit(80 * GB, 4);

    private static RunSpec spec(String preset, int world, int tokens) {
        return new RunSpec(preset, tokens, world, 1, false, 1L);
    }

    private static List<RunSpec> sweep(int world, int... tokens) {
        return Arrays.stream(tokens).mapToObj(t -> spec("deepseek-v3", world, t)).toList();
    }

    @Test
    void deepseekV3At4096TokensAndFourRanksNeedsMoreThanAnH100() {
        // the expert buffers alone: fp8 in and bf16 out, 64 experts of 4 x 4096 rows of 7168 values
        assertTrue(RankBuffers.deviceBytes(spec("deepseek-v3", 4, 4096).config()) > 64L * 16384 * 7168 * 3);
        List<DeviceFit.Misfit> misfits = H100_W4.misfits(List.of(sweep(4, 128, 2048, 4096)));
        assertEquals(1, misfits.size(), misfits.toString());
        assertEquals(4096, misfits.getFirst().spec().tokens());
        assertTrue(misfits.getFirst().toString().startsWith("deepseek-v3 m=4096 W=4 G=1"), misfits.toString());
        assertEquals(List.of(), new DeviceFit(141 * GB, 4).misfits(List.of(sweep(4, 128, 2048, 4096))),
                "an H200 holds them");
        assertEquals(List.of(), new DeviceFit(80 * GB, 2).misfits(List.of(sweep(2, 4096))), "two ranks on an H100");
        assertEquals(List.of(), new DeviceFit(80 * GB, 1).misfits(List.of(sweep(4, 4096))), "one rank per H100");
    }

    @Test
    void aRefusalSaysHowManyRanksShareAGpu() {
        IllegalArgumentException one = assertThrows(IllegalArgumentException.class,
                () -> new DeviceFit(GB, 1).runnable(sweep(4, 4096), false, System.err));
        assertTrue(one.getMessage().startsWith("refused 1 configuration(s) that do not fit one rank on a GPU of 0.93 GiB"),
                one.getMessage());
    }

    @Test
    void everyConfigurationOfALaunchHasItsLargestHeap() {
        RunSpec m2048 = spec("deepseek-v3", 4, 2048);
        // the heap a rank process of that launch starts with
        long heap2048 = SymmetricMemory.heapSizeFor(GpuRankMain.heapFor(m2048.config()).symmetricBytes());
        DeviceFit fit = new DeviceFit(4 * (RankBuffers.deviceBytes(m2048.config()) + heap2048 + DeviceFit.PROCESS_BYTES), 4);
        assertEquals(List.of(), fit.misfits(List.of(sweep(4, 2048))), "exactly fits alone");
        // beside 4096 tokens, each rank of the launch holds 4096's heap, and 2048 no longer fits
        assertEquals(2, fit.misfits(List.of(sweep(4, 2048, 4096))).size());
        // launches are sized apart: 2048 in a launch of its own still fits
        assertEquals(1, fit.misfits(List.of(sweep(4, 2048), sweep(4, 4096))).size());
        // left out, 4096 takes its heap along, and 2048 runs
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        List<RunSpec> kept = fit.runnable(sweep(4, 2048, 4096), true,
                new PrintStream(bytes, true, StandardCharsets.UTF_8));
        assertEquals(sweep(4, 2048), kept);
        String warning = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(warning.startsWith("leaving out 1 configuration(s) that do not fit 4 ranks") && warning.contains("m=4096")
                && !warning.contains("m=2048"), warning);
    }

    @Test
    void aSweepLeavesOutWhatDoesNotFitAndNamedSizesAreRefused() {
        List<RunSpec> specs = new ArrayList<>(sweep(4, 1, 4096));
        specs.add(spec("deepseek-v2-lite", 4, 4096));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream warnings = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        // deepseek-v2-lite runs in a launch of its own and fits at 4096 tokens
        assertEquals(List.of(specs.get(0), specs.get(2)), H100_W4.runnable(specs, true, warnings));
        assertEquals(specs, new DeviceFit(141 * GB, 4).runnable(specs, false, warnings), "all fit: nothing to do");

        IllegalArgumentException named = assertThrows(IllegalArgumentException.class,
                () -> H100_W4.runnable(specs, false, warnings));
        assertTrue(named.getMessage().startsWith("refused 1 configuration(s) that do not fit 4 ranks on one GPU of 74.51 GiB")
                && named.getMessage().contains("Leave them out"), named.getMessage());
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                () -> H100_W4.runnable(sweep(4, 4096), true, warnings));
        assertTrue(none.getMessage().startsWith("refused"), "nothing would be left: " + none.getMessage());
    }
}
