package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.moecomm.kernels.testing.Refusals.assertRefused;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.moecomm.bench.gpu.CopyBandwidth;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.core.launch.LocalLauncher;
import org.moecomm.core.launch.LocalLauncher.GpuPolicy;
import org.moecomm.core.protocol.BufferLayout;

/**
 * The pieces between the GPU rank processes and the results file, without a GPU: the specs and
 * plans on a rank's command line, the rank sample files, the slowest-rank aggregation, the JSON
 * line and its file name, the recorded commit.
 */
class PhaseResultsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final RoundPlan PLAN = new RoundPlan(2, 3, false, false);

    /** W ranks on one GPU, as on a machine that has one (also for the other tests of results). */
    static LocalLauncher.GpuPlacement oneGpu(int world) {
        return LocalLauncher.placement(GpuPolicy.SHARED, world, List.of("0"));
    }

    @Test
    void specsAndPlansSurviveTheCommandLine() {
        RunSpec s = new RunSpec("deepseek-v3", 128, 4, 2, true, 42);
        assertEquals(LaunchMode.PLAIN, s.launch());
        assertEquals("deepseek-v3:128:4:2:skewed:42:plain", s.encode());
        assertEquals(s, RunSpec.decode(s.encode()));
        RunSpec g = new RunSpec("deepseek-v3", 128, 4, 2, true, 42, LaunchMode.GRAPH);
        assertEquals("deepseek-v3:128:4:2:skewed:42:graph", g.encode());
        assertEquals(g, RunSpec.decode(g.encode()));
        assertEquals("deepseek-v3 m=128 W=4 G=2 skewed launch=graph", g.toString());
        assertEquals("deepseek-v3 m=128 W=4 G=2 skewed", s.toString());
        // the launch mode does not change the handle nor the workload
        assertEquals(s.config(), g.config());
        // a word of six fields (before launch modes) is plain
        assertEquals(s, RunSpec.decode("deepseek-v3:128:4:2:skewed:42"));
        assertEquals(PLAN, RoundPlan.decode(PLAN.encode()));
        RoundPlan deviceStart = new RoundPlan(2, 3, false, false, RoundStart.DEVICE);
        assertEquals(deviceStart, RoundPlan.decode(deviceStart.encode()));
        assertRefused(IllegalArgumentException.class, () -> RoundStart.byLabel("gpu"), "unknown round start 'gpu'");
        assertRefused(IllegalArgumentException.class, () -> RunSpec.decode("deepseek-v3:1:4"), "not a run spec");
        assertRefused(IllegalArgumentException.class, () -> RunSpec.decode("nope:1:4:1:uniform:1"),
                "unknown preset 'nope'");
        assertRefused(IllegalArgumentException.class, () -> RunSpec.decode("deepseek-v3:1:4:1:uniform:1:eager"),
                "unknown launch mode 'eager'");
    }

    @Test
    void theFirstConfigurationWarmsTheProcessWithMoreUntimedRounds() {
        RoundPlan warming = PLAN.warmingTheProcess();
        assertEquals(PLAN.warmup() + RoundPlan.PROCESS_WARMUP, warming.warmup());
        assertEquals(PLAN.rounds(), warming.rounds());
        assertEquals(PLAN.start(), warming.start());
        // still checked first; timed only after all of its warm-up
        assertTrue(warming.checked(0));
        assertFalse(warming.timed(PLAN.warmup()));
        assertTrue(warming.timed(warming.warmup()));
        // the first configuration of each launch mode warms the process: its own host path
        List<RunSpec> specs = List.of(spec("deepseek-v3", 1, LaunchMode.GRAPH), spec("deepseek-v3", 1, LaunchMode.WHOLE),
                spec("deepseek-v3", 8, LaunchMode.GRAPH), spec("deepseek-v3", 8, LaunchMode.WHOLE),
                spec("deepseek-v3", 8, LaunchMode.PLAIN));
        assertEquals(List.of(true, true, false, false, true),
                IntStream.range(0, specs.size()).mapToObj(i -> GpuRankMain.warmsTheProcess(specs, i)).toList());
    }

    @Test
    void roundPlanChecksFirstAndOptionallyLast() {
        RoundPlan demo = new RoundPlan(1, 3, true, true);
        assertTrue(demo.checked(0) && demo.checked(3) && !demo.checked(1));
        assertFalse(demo.timed(0));
        assertTrue(demo.timed(1));
        assertEquals("first and last round", demo.checkedDescription());
        assertTrue(PLAN.checked(0) && !PLAN.checked(4));
        assertTrue(PLAN.runExperts(0) && !PLAN.runExperts(1));
        assertEquals("first round", PLAN.checkedDescription());
        assertRefused(IllegalArgumentException.class, () -> new RoundPlan(0, 0, false, false),
                "timed rounds (--rounds) must be >= 1, got 0");
    }

    @Test
    void launchesGroupByPresetInOrder(@TempDir Path dir) {
        List<RunSpec> specs = List.of(spec("deepseek-v3", 1), spec("deepseek-v2-lite", 1), spec("deepseek-v3", 8));
        List<List<RunSpec>> l = GpuRunner.launches(specs);
        assertEquals(List.of(List.of(specs.get(0), specs.get(2)), List.of(specs.get(1))), l);
        List<String> args = GpuRunner.rankArgs(dir, PLAN, l.getFirst());
        assertEquals(List.of(dir.toString(), PLAN.encode(), specs.get(0).encode(), specs.get(2).encode()), args);
        assertEquals("4 processes on 1 GPU under MPS", GpuRunner.mode(oneGpu(4), true));
        assertEquals("4 processes on 4 GPUs, one each",
                GpuRunner.mode(LocalLauncher.placement(GpuPolicy.PER_RANK, 4, List.of("0", "1", "2", "3")), true));
        assertEquals("8 processes on 4 GPUs, up to 2 per GPU under MPS",
                GpuRunner.mode(LocalLauncher.placement(GpuPolicy.PER_RANK, 8, List.of("0", "1", "2", "3")), true));
        assertEquals("3 processes on 2 GPUs, up to 2 per GPU time-sliced (no MPS daemon found)",
                GpuRunner.mode(LocalLauncher.placement(GpuPolicy.PER_RANK, 3, List.of("0", "1")), false));
        assertEquals(GpuRunner.mode(oneGpu(4), true),
                GpuRunner.mode(LocalLauncher.placement(GpuPolicy.SHARED, 4, List.of("0", "1")), true));
        assertFalse(GpuRunner.mpsRunning(Map.of("CUDA_MPS_PIPE_DIRECTORY", dir.resolve("none").toString())));
    }

    @Test
    void rankFilesCombineIntoTheSlowestRankPerRound(@TempDir Path dir) throws IOException {
        List<RunSpec> specs = List.of(spec("deepseek-v2-lite", 1), spec("deepseek-v2-lite", 8));
        // rank 0 is slower in round 0, rank 1 in rounds 1 and 2
        writeRank(dir, 0, specs, new long[] {9_000, 1_000, 1_000}, List.of());
        writeRank(dir, 1, specs, new long[] {2_000, 5_000, 7_000}, List.of("rank 1 dispatch: 1 problem(s):\n  expert 3: count 2, expected 1"));
        List<RankSamples> ranks = List.of(RankSamples.read(RankSamples.file(dir, 0)),
                RankSamples.read(RankSamples.file(dir, 1)));
        List<Measurement> ms = GpuRunner.collect(specs, PLAN, ranks, GpuRunner.mode(oneGpu(2), true));
        assertEquals(2, ms.size());
        Measurement m = ms.getFirst();
        assertEquals("NVIDIA H200", m.device());
        // samples 9000, 5000, 7000 ns: median 7 us, p90 8.6 us (interpolated)
        assertEquals(7.0, m.phase(Phases.DISPATCH_SEND).medianMicros(), 1e-9);
        assertEquals(8.6, m.phase(Phases.DISPATCH_SEND).p90Micros(), 1e-9);
        // the whole dispatch was written as 10x the send
        assertEquals(70.0, m.phase(Phases.DISPATCH).medianMicros(), 1e-9);
        assertFalse(m.verified());
        assertEquals(2, m.problems().size());
        assertTrue(ms.get(1).verified());
    }

    @ParameterizedTest
    @EnumSource(value = LaunchMode.class, names = {"WHOLE", "GRAPH"})
    void wholeAndGraphRankFilesHaveOnlyWholeHalves(LaunchMode mode, @TempDir Path dir) throws IOException {
        List<RunSpec> specs = List.of(spec("deepseek-v2-lite", 8, mode));
        // rank 0 slower in round 0, rank 1 in rounds 1 and 2; no send/recv samples on either
        writeRank(dir, 0, specs, new long[] {9_000, 1_000, 1_000}, List.of());
        writeRank(dir, 1, specs, new long[] {2_000, 5_000, 7_000}, List.of());
        List<String> lines = Files.readAllLines(RankSamples.file(dir, 0));
        assertTrue(lines.contains("spec\t0\tdeepseek-v2-lite:8:2:1:uniform:1:" + mode.label()), lines.toString());
        assertTrue(lines.contains("phase\t0\t" + Phases.DISPATCH_SEND + "\t"), lines.toString());
        List<RankSamples> ranks = List.of(RankSamples.read(RankSamples.file(dir, 0)),
                RankSamples.read(RankSamples.file(dir, 1)));
        assertEquals(0, ranks.getFirst().samples(0)[Phases.COMBINE_RECV].length);
        Measurement m = GpuRunner.collect(specs, PLAN, ranks, GpuRunner.mode(oneGpu(2), true)).getFirst();
        assertEquals(mode, m.launch());
        for (int p : new int[] {Phases.DISPATCH_SEND, Phases.DISPATCH_RECV, Phases.COMBINE_SEND, Phases.COMBINE_RECV}) {
            assertFalse(m.phase(p).measured(), Phases.NAMES.get(p));
            assertTrue(Double.isNaN(m.phase(p).medianMicros()), Phases.NAMES.get(p));
        }
        // slowest per round 90000, 50000, 70000 ns (dispatch written as 10x): median 70 us, p90 86 us
        assertTrue(m.phase(Phases.DISPATCH).measured());
        assertEquals(70.0, m.phase(Phases.DISPATCH).medianMicros(), 1e-9);
        assertEquals(86.0, m.phase(Phases.DISPATCH).p90Micros(), 1e-9);
        assertEquals(7.0, m.phase(Phases.COMBINE).medianMicros(), 1e-9);
        assertEquals(m.traffic().logicalDispatchBytes() / 70e3, m.dispatchGBps(), 1e-9);
        assertTrue(m.verified());

        JsonNode j = JSON.readTree(PhaseJson.line(m, new PhaseJson.Run("gpu", LocalDate.of(2026, 12, 2), "c0ffee",
                "moecomm bench")));
        assertEquals(mode.label(), j.get("launch").asText());
        assertEquals(mode == LaunchMode.GRAPH ? PhaseJson.TIMING_GPU_GRAPH : PhaseJson.TIMING_GPU_WHOLE,
                j.get("timing").asText());
        // the device bytes of every phase, their rate only where the phase was timed; no copy baseline here
        assertTrue(j.get("dispatchSendDeviceBytes").asLong() > 0, j.toString());
        assertTrue(j.get("dispatchSendDeviceGBps").isNull(), j.toString());
        assertEquals(j.get("dispatchDeviceBytes").asLong() / 70e3, j.get("dispatchDeviceGBps").asDouble(), 1e-4);
        assertTrue(j.get("dispatchCopyPercent").isNull() && j.get("copyGBps").isNull(), j.toString());
        for (String k : List.of("dispatchSend", "dispatchRecv", "combineSend", "combineRecv")) {
            assertTrue(j.has(k + "MedianUs") && j.get(k + "MedianUs").isNull(), k + " in " + j);
            assertTrue(j.has(k + "P90Us") && j.get(k + "P90Us").isNull(), k + " in " + j);
        }
        assertEquals(70.0, j.get("dispatchMedianUs").asDouble(), 1e-9);
        assertEquals(86.0, j.get("dispatchP90Us").asDouble(), 1e-9);
        assertEquals(7.0, j.get("combineMedianUs").asDouble(), 1e-9);
        assertEquals(mode, PhaseJson.launch(j));

        String row = BenchTables.timeRow(m);
        assertTrue(row.startsWith("deepseek-v2-lite      8  " + mode.label() + " |"), row);
        assertTrue(row.contains("          - /        -       70.0 /     86.0 |"), row);
        assertTrue(row.contains("          - /        -        7.0 /      8.6 |"), row);
    }

    @Test
    void aPhaseMeasuredOnSomeRanksOnlyIsAnError() {
        long[][] full = new long[Phases.COUNT][3];
        long[][] partial = new long[Phases.COUNT][3];
        partial[Phases.DISPATCH_SEND] = new long[0];
        assertRefused(IllegalArgumentException.class, () -> Measurement.slowest(List.of(full, partial), 3),
                "0 samples from a rank, expected 3");
    }

    @Test
    void incompleteOrBrokenRankFilesAreErrors(@TempDir Path dir) throws IOException {
        assertRefused(IOException.class, () -> RankSamples.read(dir.resolve("rank-7.tsv")), "rank-7.tsv is missing");
        Path bad = dir.resolve("bad.tsv");
        Files.writeString(bad, "device\tX\nweird\t1\n");
        IOException e = assertThrows(IOException.class, () -> RankSamples.read(bad));
        assertTrue(e.getMessage().contains("line 2"), e.getMessage());
        Path partial = dir.resolve("partial.tsv");
        Files.writeString(partial, "device\tX\nspec\t0\t" + spec("deepseek-v3", 1).encode() + "\nphase\t0\t0\t1,2\n");
        RankSamples r = RankSamples.read(partial);
        assertRefused(IllegalStateException.class, () -> r.samples(0), "configuration 0 has no complete samples");
    }

    @Test
    void jsonLineHasTheRecordedFields() throws IOException {
        RunSpec s = spec("deepseek-v3", 8);
        long[][] samples = new long[Phases.COUNT][3];
        for (int p = 0; p < Phases.COUNT; p++) {
            samples[p] = new long[] {10_000L * (p + 1), 20_000L * (p + 1), 30_000L * (p + 1)};
        }
        TrafficModel traffic = TrafficModel.of(s.workload(), new BufferLayout(s.config()));
        // a second rank, faster in every phase: the slowest-rank fields are rank 1's, rank 0's its own
        long[][] fasterRankZero = new long[Phases.COUNT][3];
        for (int p = 0; p < Phases.COUNT; p++) {
            for (int i = 0; i < 3; i++) {
                fasterRankZero[p][i] = samples[p][i] / 2;
            }
        }
        // every rank copied 256 MiB, the slowest in 250 us: 2 x 2 x 256 MiB / 250 us = 4294.97 GB/s
        CopyBaseline copy = new CopyBaseline(CopyBandwidth.GPU_COPY, 256L << 20, 2, 250.0);
        Measurement m = Measurement.of(s, PLAN, traffic, List.of(fasterRankZero, samples), List.of(), "NVIDIA H200",
                GpuRunner.mode(oneGpu(4), true), copy);
        JsonNode j = JSON.readTree(PhaseJson.line(m, new PhaseJson.Run("gpu", LocalDate.of(2026, 12, 2), "c0ffee",
                "bash scripts/gpu-nvshmem-check.sh")));
        for (String k : List.of("preset", "tokens", "world", "group", "mode", "gpu", "commit", "command", "date",
                "warmup", "rounds", "checked", "verified", "timing", "pairs", "dispatchLogicalBytes",
                "combineLogicalBytes", "dispatchWireBytes", "combineWireBytes", "dispatchGBps", "combineGBps")) {
            assertTrue(j.has(k), k + " missing in " + j);
        }
        for (String k : Phases.KEYS) {
            assertTrue(j.get(k + "MedianUs").isNumber() && j.get(k + "P90Us").isNumber(), k + " in " + j);
        }
        assertEquals("4 processes on 1 GPU under MPS", j.get("mode").asText());
        assertEquals("plain", j.get("launch").asText());
        assertEquals(PhaseJson.TIMING_GPU, j.get("timing").asText());
        assertTrue(BenchTables.timeRow(m).startsWith("deepseek-v3           8  plain |       20.0 /     28.0"),
                BenchTables.timeRow(m));
        assertEquals("NVIDIA H200", j.get("gpu").asText());
        assertEquals(20.0, j.get("dispatchSendMedianUs").asDouble(), 1e-9);
        assertEquals(28.0, j.get("dispatchSendP90Us").asDouble(), 1e-9);
        // the whole dispatch (phase 4) has median 100 us: GB/s = logical bytes / (100 us * 1e3)
        long bytes = j.get("dispatchLogicalBytes").asLong();
        assertEquals(traffic.pairs() * (7168L + 4L * 56), bytes);
        assertEquals(bytes / 1e5, j.get("dispatchGBps").asDouble(), 1e-3);
        assertEquals(traffic.pairs() * 7168L * 2, j.get("combineLogicalBytes").asLong());
        assertTrue(j.get("verified").asBoolean());
        assertFalse(j.has("problems"));
        // phase 4 (dispatch) is 50/100/150 us on rank 1, half that on rank 0; phase 5 (combine) 60/120/180
        assertEquals(50.0, j.get("rank0DispatchMedianUs").asDouble(), 1e-9);
        assertEquals(70.0, j.get("rank0DispatchP90Us").asDouble(), 1e-9); // between 50 and 75 (Percentiles)
        assertEquals(60.0, j.get("rank0CombineMedianUs").asDouble(), 1e-9);
        assertEquals("host", j.get("start").asText());
        assertEquals(new BufferLayout(s.config()).symmetricBytes(), j.get("symmetricBytesPerRank").asLong());
        assertTrue(j.get("localBytesPerRank").asLong() > 0);

        // logical per rank: the world's rate over W = 2
        assertEquals(j.get("dispatchGBps").asDouble() / 2, j.get("dispatchGBpsPerRank").asDouble(), 1e-4);
        assertEquals(j.get("combineGBps").asDouble() / 2, j.get("combineGBpsPerRank").asDouble(), 1e-4);
        // the copy baseline and, per phase, the device bytes, their rate in the median and its share
        assertEquals(4294.9673, j.get("copyGBps").asDouble(), 1e-9);
        assertEquals(250.0, j.get("copyMedianUs").asDouble(), 1e-9);
        assertEquals(256L << 20, j.get("copyBytes").asLong());
        assertTrue(j.get("copyMethod").asText().startsWith("cuMemcpyDtoDAsync of copyBytes (256 MiB) on each of the 2"
                + " ranks at once, a barrier before each copy; per copy the slowest rank"), j.get("copyMethod").asText());
        assertEquals(DeviceBytes.MODEL, j.get("deviceBytesModel").asText());
        for (int p = 0; p < Phases.COUNT; p++) {
            String k = Phases.KEYS.get(p);
            long deviceBytes = traffic.device().of(p);
            assertTrue(deviceBytes > 0, k);
            assertEquals(deviceBytes, j.get(k + "DeviceBytes").asLong(), k);
            // phase p's median is 20 * (p + 1) us on the slowest rank
            double gbps = deviceBytes / (20e3 * (p + 1));
            assertEquals(gbps, j.get(k + "DeviceGBps").asDouble(), 1e-4, k);
            assertEquals(100 * gbps / copy.gbps(), j.get(k + "CopyPercent").asDouble(), 1e-4, k);
        }
        String row = BenchTables.deviceRow(m);
        assertTrue(row.startsWith("deepseek-v3           8  plain |"), row);
        assertTrue(row.endsWith(" |      4295"), row);
        assertTrue(row.contains(String.format(java.util.Locale.ROOT, " %9.2f ",
                traffic.device().of(Phases.DISPATCH_SEND) / 1048576.0)), row);

        // without a copy baseline: the device rates stay, the shares and the copy fields are null
        JsonNode noCopy = JSON.readTree(PhaseJson.line(Measurement.of(s, PLAN, traffic, List.<long[][]>of(samples), List.of(),
                "cpu", CpuRunner.mode(2), null), new PhaseJson.Run("cpu", LocalDate.of(2026, 12, 2), "c0ffee", "x")));
        for (String k : List.of("copyGBps", "copyMedianUs", "copyBytes", "copyMethod", "dispatchCopyPercent")) {
            assertTrue(noCopy.has(k) && noCopy.get(k).isNull(), k + " in " + noCopy);
        }
        assertTrue(noCopy.get("dispatchDeviceGBps").isNumber(), noCopy.toString());
        String noCopyRow = BenchTables.deviceRow(Measurement.of(s, PLAN, traffic, List.<long[][]>of(samples), List.of(), "cpu",
                CpuRunner.mode(2), null));
        assertTrue(noCopyRow.endsWith("     - |         -"), noCopyRow);
        assertFalse(noCopyRow.contains("%"), noCopyRow);
    }

    @Test
    void theCopyBaselineIsTheSlowestRankPerCopy(@TempDir Path dir) throws IOException {
        List<RunSpec> specs = List.of(spec("deepseek-v2-lite", 1));
        writeRank(dir, 0, specs, new long[] {1_000, 1_000, 1_000}, List.of());
        writeRank(dir, 1, specs, new long[] {1_000, 1_000, 1_000}, List.of());
        // no copy lines: no baseline
        List<RankSamples> none = List.of(RankSamples.read(RankSamples.file(dir, 0)),
                RankSamples.read(RankSamples.file(dir, 1)));
        assertEquals(null, GpuRunner.copyBaseline(none));
        assertEquals(null, GpuRunner.collect(specs, PLAN, none, "m").getFirst().copy());
        // per copy the slowest rank: 400, 300, 500 us; median 400 us
        RankSamples.append(RankSamples.file(dir, 0), List.of(RankSamples.copyLine("memcpy", 1L << 20,
                new double[] {0.4, 0.1, 0.5})));
        RankSamples.append(RankSamples.file(dir, 1), List.of(RankSamples.copyLine("memcpy", 1L << 20,
                new double[] {0.2, 0.3, 0.1})));
        List<RankSamples> ranks = List.of(RankSamples.read(RankSamples.file(dir, 0)),
                RankSamples.read(RankSamples.file(dir, 1)));
        assertTrue(Files.readAllLines(RankSamples.file(dir, 1)).contains("copy\tmemcpy\t1048576\t200000,300000,100000"));
        CopyBaseline c = GpuRunner.collect(specs, PLAN, ranks, "m").getFirst().copy();
        assertEquals(new CopyBaseline("memcpy", 1L << 20, 2, 400.0), c);
        assertEquals(2 * 2.0 * (1L << 20) / 400e3, c.gbps(), 1e-12);
        // ranks that copied different amounts are an error, not a number
        RankSamples.append(RankSamples.file(dir, 1), List.of(RankSamples.copyLine("memcpy", 2L << 20,
                new double[] {0.2, 0.3, 0.1})));
        List<RankSamples> odd = List.of(RankSamples.read(RankSamples.file(dir, 0)),
                RankSamples.read(RankSamples.file(dir, 1)));
        assertRefused(IllegalStateException.class, () -> GpuRunner.copyBaseline(odd),
                "the ranks measured different copies");
        assertThrows(IllegalArgumentException.class, () -> CopyBaseline.of("memcpy", 1, List.of(new long[2],
                new long[3])));
        assertRefused(IllegalArgumentException.class, () -> new CopyBaseline("memcpy", 0, 2, 1.0), "a copy of 0 bytes");
    }

    /** The heap of a rank process holds the largest configuration, not the sum: handles live one at a time. */
    @Test
    void theHeapIsSizedForTheLargestConfiguration() {
        MoeConfig[] sweep = TokenSweep.ALL.tokens().stream()
                .map(m -> org.moecomm.core.Preset.DEEPSEEK_V3.config(8, 1, m).build()).toArray(MoeConfig[]::new);
        long largest = GpuBackend.Options.forConfigs(sweep[sweep.length - 1]).symmetricBytes();
        assertEquals(largest, GpuRankMain.heapFor(sweep).symmetricBytes());
        assertEquals(largest, GpuRankMain.heapFor(sweep[sweep.length - 1], sweep[0]).symmetricBytes());
        // what the comment of heapFor says: 14.3 GiB for all of them, 7.45 GiB for the largest
        assertEquals(14.3, GpuBackend.Options.forConfigs(sweep).symmetricBytes() / (double) (1L << 30), 0.05);
        assertEquals(7.45, largest / (double) (1L << 30), 0.01);
    }

    @Test
    void fileNamesEndInGpuPhases() {
        LocalDate d = LocalDate.of(2026, 12, 2);
        assertEquals("2026-12-02-h200-gpu-phases.json", PhaseJson.fileName(d, "gpu", "NVIDIA H200"));
        assertEquals("2026-12-02-device-gpu-phases.json", PhaseJson.fileName(d, "gpu", "NVIDIA"));
        assertEquals("2026-12-02-cpu-phases.json", PhaseJson.fileName(d, "cpu", "cpu"));
    }

    @Test
    void commitComesFromTheEnvironmentOrTheBundle(@TempDir Path dir) throws IOException {
        Path info = dir.resolve("BUNDLE.txt");
        assertEquals("unknown", BenchCommand.defaultCommit(Map.of(), info));
        Files.writeString(info, "built: 2026-12-02\ncommit: 1a2b3c4 (with uncommitted changes)\n");
        assertEquals("1a2b3c4 (with uncommitted changes)", BenchCommand.defaultCommit(Map.of(), info));
        assertEquals("feed", BenchCommand.defaultCommit(Map.of("MOECOMM_COMMIT", "feed"), info));
    }

    @Test
    void gpuRunnerLaunchesRankProcessesAndCombinesTheirFiles() throws Exception {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        java.io.PrintStream ranksOut = new java.io.PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8);
        GpuRunner runner = new GpuRunner(java.time.Duration.ofMinutes(2), ranksOut, FakeRankMain.class, GpuPolicy.PER_RANK);
        List<RunSpec> specs = List.of(spec("deepseek-v2-lite", 1), spec("mixtral-8x7b", 2), spec("deepseek-v2-lite", 4),
                spec("deepseek-v2-lite", 4, LaunchMode.GRAPH));
        List<Measurement> ms = runner.run(specs, PLAN);
        assertEquals(specs, ms.stream().map(Measurement::spec).toList());
        assertTrue(bytes.toString(java.nio.charset.StandardCharsets.UTF_8).contains("[rank 1] fake rank 1 wrote"));
        // deepseek-v2-lite m=4 is the second configuration of the first launch: rank 1 (slowest) writes
        // 1000 * 2 * 2 + p + k; rounds k = 0, 1, 2: median at k = 1
        Measurement m = ms.get(2);
        assertEquals(4.0 + (Phases.COMBINE + 1) / 1000.0, m.phase(Phases.COMBINE).medianMicros(), 1e-9);
        assertEquals("Fake GPU", m.device());
        assertTrue(m.mode().startsWith("2 processes on 1 GPU"), m.mode());
        assertTrue(ms.stream().allMatch(Measurement::verified));
        // every rank process measured the copy baseline before its configurations: each launch has its own
        for (Measurement each : ms) {
            assertEquals(CopyBandwidth.HOST_COPY, each.copy().copy());
            assertEquals(FakeRankMain.COPY_BYTES, each.copy().bytesPerRank());
            assertEquals(2, each.copy().ranks());
            assertTrue(each.copy().gbps() > 0 && Double.isFinite(each.copyShare(Phases.DISPATCH)), each.copy().toString());
        }
        assertTrue(ms.get(0).copy() == ms.get(2).copy() && ms.get(0).copy() != ms.get(1).copy());
        // the graph spec is the third configuration of the first launch: 1000 * 2 * 3 + p + k, no send/recv
        Measurement g = ms.get(3);
        assertEquals(LaunchMode.GRAPH, g.launch());
        assertEquals(6.0 + (Phases.DISPATCH + 1) / 1000.0, g.phase(Phases.DISPATCH).medianMicros(), 1e-9);
        assertFalse(g.phase(Phases.DISPATCH_SEND).measured());
        assertFalse(g.phase(Phases.COMBINE_RECV).measured());
        assertTrue(m.phase(Phases.COMBINE_RECV).measured());
    }

    private static RunSpec spec(String preset, int tokens) {
        return spec(preset, tokens, LaunchMode.PLAIN);
    }

    private static RunSpec spec(String preset, int tokens, LaunchMode launch) {
        return new RunSpec(preset, tokens, 2, 1, false, 1, launch);
    }

    /**
     * A rank's file: every phase p of config i has samples base * (p == DISPATCH ? 10 : 1), but
     * none for the send/recv phases of a graph spec (as GpuRankMain writes them).
     */
    private static void writeRank(Path dir, int rank, List<RunSpec> specs, long[] base, List<String> problems)
            throws IOException {
        Path f = RankSamples.file(dir, rank);
        RankSamples.append(f, List.of(RankSamples.deviceLine("NVIDIA H200")));
        for (int i = 0; i < specs.size(); i++) {
            long[][] s = new long[Phases.COUNT][];
            for (int p = 0; p < Phases.COUNT; p++) {
                if (!specs.get(i).launch().timesSendAndRecv() && Phases.isSendOrRecv(p)) {
                    s[p] = new long[0];
                    continue;
                }
                s[p] = base.clone();
                if (p == Phases.DISPATCH) {
                    for (int k = 0; k < s[p].length; k++) {
                        s[p][k] *= 10;
                    }
                }
            }
            RankSamples.append(f, RankSamples.lines(i, specs.get(i), i == 0 ? problems : new ArrayList<>(), s));
        }
    }
}
