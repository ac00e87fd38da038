package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ReportCommandTest {
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();
    /** The first line of benchmarks/results/2026-12-02-h200-gpu-phases.json: written before the launch field. */
    private static final String OLD_LINE = "{\"preset\":\"deepseek-v3\",\"tokens\":1,\"world\":4,\"group\":1,\"routing\":\"uniform\",\"seed\":1,"
            + "\"backend\":\"gpu\",\"mode\":\"4 processes on 1 GPU under MPS\",\"gpu\":\"NVIDIA H200\","
            + "\"date\":\"2026-12-02\",\"commit\":\"b82d7bd\","
            + "\"command\":\"bash scripts/gpu-nvshmem-check.sh (gpu-bench.sh step: moecomm bench --backend gpu --world 4 --warmup 200)\","
            + "\"timing\":\"CUDA events on each rank's stream; per round the slowest rank; all ranks aligned by a barrier before dispatch and before combine\","
            + "\"warmup\":200,\"rounds\":100,\"checked\":\"first round\",\"verified\":true,"
            + "\"dispatchSendMedianUs\":41.728,\"dispatchSendP90Us\":63.936,\"dispatchRecvMedianUs\":31.04,"
            + "\"dispatchRecvP90Us\":74.496,\"combineSendMedianUs\":39.84,\"combineSendP90Us\":60.96,"
            + "\"combineRecvMedianUs\":38.944,\"combineRecvP90Us\":72.384,\"dispatchMedianUs\":69.152,"
            + "\"dispatchP90Us\":140.864,\"combineMedianUs\":76.576,\"combineP90Us\":117.216,\"pairs\":32,"
            + "\"dispatchRows\":15,\"dispatchLogicalBytes\":236544,\"combineLogicalBytes\":458752,"
            + "\"dispatchWireBytes\":111600,\"combineWireBytes\":458752,\"dispatchGBps\":3.4206,"
            + "\"combineGBps\":5.9908}";

    @TempDir
    Path tmp;

    /** Every phase value lands under its own header (they once came in another order than the headers). */
    @Test
    void phaseColumnsMatchTheirHeaders() throws Exception {
        StringBuilder line = new StringBuilder("{\"preset\":\"p\",\"world\":4,\"mode\":\"m\",\"tokens\":8,\"verified\":true");
        for (int i = 0; i < Phases.KEYS.size(); i++) {
            line.append(",\"").append(Phases.KEYS.get(i)).append("MedianUs\":").append(i + 1);
        }
        Path file = tmp.resolve("phases.json");
        Files.writeString(file, line.append("}\n").toString());
        List<String> rows = new ReportCommand().phaseTable(file).lines().filter(l -> l.startsWith("|")).toList();
        List<String> header = cells(rows.get(0));
        List<String> values = cells(rows.get(2));
        for (int i = 0; i < Phases.NAMES.size(); i++) {
            int column = header.indexOf(Phases.NAMES.get(i));
            assertEquals(String.format(java.util.Locale.ROOT, "%.1f", (double) (i + 1)), values.get(column),
                    Phases.NAMES.get(i));
        }
        // no launch field: plain
        assertEquals("plain", values.get(header.indexOf("launch")));
        assertEquals(header.size(), values.size());
    }

    /** The memory table is the handle's layout: deepseek-v3, W = 4, M = 2048 needs 1.86 GiB per rank. */
    @Test
    void memoryTableComesFromTheLayout() {
        String table = MemoryTable.markdown();
        assertTrue(table.contains("| deepseek-v3 | 4 | 119 MiB | 477 MiB | 1.86 GiB | 3.73 GiB |"), table);
        assertTrue(table.contains("| deepseek-v2-lite | 8 |"), table);
        assertEquals(MemoryTable.size(MemoryTable.layout(org.moecomm.core.Preset.DEEPSEEK_V3, 8, 4096)
                .symmetricBytes()), "7.45 GiB");
    }

    /** A file written before launch modes existed reads as plain launches, every number in its column. */
    @Test
    void olderResultsWithoutLaunchAreRead() throws Exception {
        Path file = tmp.resolve("2026-12-02-h200-gpu-phases.json");
        Files.writeString(file, OLD_LINE + "\n");
        List<String> rows = new ReportCommand().phaseTable(file).lines().filter(l -> l.startsWith("|")).toList();
        assertEquals(3, rows.size(), rows.toString());
        List<String> header = cells(rows.get(0));
        List<String> row = cells(rows.get(2));
        assertEquals(List.of("preset", "W", "mode", "tokens/rank", "launch", "dispatch send", "dispatch recv",
                "combine send", "combine recv", "dispatch", "combine", "dispatch p90", "combine p90", "rank 0 dispatch",
                "rank 0 combine", "dispatch GB/s per rank", "combine GB/s per rank", "verified"), header);
        // no rank 0 medians nor per-rank rates in it: "-"
        assertEquals(List.of("deepseek-v3", "4", "4 processes on 1 GPU under MPS", "1", "plain", "41.7", "31.0", "39.8",
                "38.9", "69.2", "76.6", "140.9", "117.2", "-", "-", "-", "-", "true"), row);
        // nor device bytes: the device table says so in one sentence instead of a table of dashes
        String device = new ReportCommand().deviceTable(List.of(file));
        assertFalse(device.contains("|"), device);
        assertTrue(device.contains("Device memory per phase: not recorded in these results files"), device);
    }

    /**
     * A line as {@code moecomm bench} writes it now (PhaseJson, with a copy baseline of 4000 GB/s):
     * the per-rank rates in the phase table, per phase the device bytes, their rate and share in the
     * device table; a graph line has "-" for the rates of its untimed send and recv.
     */
    @Test
    void newResultsShowPerRankRatesAndDeviceMemory() throws Exception {
        Path file = tmp.resolve("2026-12-04-h200-w2-gpu-phases.json");
        Measurement plain = measurement(LaunchMode.PLAIN);
        Measurement graph = measurement(LaunchMode.GRAPH);
        PhaseJson.Run run = new PhaseJson.Run("gpu", java.time.LocalDate.of(2026, 12, 4), "c0ffee", "moecomm bench");
        Files.writeString(file, PhaseJson.line(plain, run) + "\n" + PhaseJson.line(graph, run) + "\n");

        List<String> rows = new ReportCommand().phaseTable(file).lines().filter(l -> l.startsWith("|")).toList();
        List<String> header = cells(rows.get(0));
        List<String> row = cells(rows.get(2));
        assertEquals(BenchTables.figure(plain.dispatchGBpsPerRank()), row.get(header.indexOf("dispatch GB/s per rank")));
        assertEquals(BenchTables.figure(plain.combineGBpsPerRank()), row.get(header.indexOf("combine GB/s per rank")));
        // the p90 of the operations and rank 0's medians, as the JSON has them
        com.fasterxml.jackson.databind.JsonNode json = JSON.readTree(PhaseJson.line(plain, run));
        for (String[] column : new String[][] {{"dispatch p90", "dispatchP90Us"}, {"combine p90", "combineP90Us"},
                {"rank 0 dispatch", "rank0DispatchMedianUs"}, {"rank 0 combine", "rank0CombineMedianUs"}}) {
            assertEquals(String.format(java.util.Locale.ROOT, "%.1f", json.get(column[1]).asDouble()),
                    row.get(header.indexOf(column[0])), column[0]);
        }

        String table = new ReportCommand().deviceTable(List.of(file));
        List<String> deviceRows = table.lines().filter(l -> l.startsWith("|")).toList();
        assertEquals(4, deviceRows.size(), table);
        List<String> dh = cells(deviceRows.get(0));
        assertEquals(List.of("preset", "W", "tokens/rank", "launch", "dispatch send", "dispatch recv", "combine send",
                "combine recv", "dispatch", "combine", "copy GB/s"), dh);
        List<String> p = cells(deviceRows.get(2));
        assertEquals(List.of("deepseek-v3", "2", "8", "plain"), p.subList(0, 4));
        assertEquals("4000", p.get(dh.indexOf("copy GB/s")));
        for (int phase = 0; phase < Phases.COUNT; phase++) {
            String expected = String.format(java.util.Locale.ROOT, "%.2f MiB, %s GB/s (%s%%)",
                    plain.traffic().device().of(phase) / 1048576.0, BenchTables.figure(plain.deviceGBps(phase)),
                    BenchTables.figure(100 * plain.copyShare(phase)));
            assertEquals(expected, p.get(dh.indexOf(Phases.NAMES.get(phase))), Phases.NAMES.get(phase));
        }
        List<String> g = cells(deviceRows.get(3));
        assertEquals("graph", g.get(3));
        assertTrue(g.get(dh.indexOf("dispatch send")).endsWith("MiB, - GB/s (-)"), g.toString());
        assertFalse(g.get(dh.indexOf("dispatch")).contains("-"), g.toString());

        // and its chart: device GB/s per half against the copy bandwidth
        Path png = ResultCharts.phaseBandwidth(tmp, 2, List.of(JSON.readTree(PhaseJson.line(plain, run))));
        assertEquals(tmp.resolve("phase-bandwidth-w2.png"), png);
        assertEquals(ResultCharts.WIDTH, javax.imageio.ImageIO.read(png.toFile()).getWidth());
        // none from lines without the fields, nor for a world without lines
        assertEquals(null, ResultCharts.phaseBandwidth(tmp, 4, List.of(JSON.readTree(OLD_LINE))));
        assertEquals(null, ResultCharts.phaseBandwidth(tmp, 4, List.of(JSON.readTree(PhaseJson.line(plain, run)))));
    }

    /** deepseek-v3 at 8 tokens on W = 2: phase p takes 10 * (p + 1) us on every round; a copy of 4000 GB/s. */
    private static Measurement measurement(LaunchMode launch) {
        RunSpec spec = new RunSpec("deepseek-v3", 8, 2, 1, false, 1, launch);
        RoundPlan plan = new RoundPlan(0, 2, false, false);
        long[][] samples = new long[Phases.COUNT][];
        for (int p = 0; p < Phases.COUNT; p++) {
            boolean timed = launch.timesSendAndRecv() || !Phases.isSendOrRecv(p);
            samples[p] = timed ? new long[] {10_000L * (p + 1), 10_000L * (p + 1)} : new long[0];
        }
        // 2 ranks x 2 x 1 GB in 1000 us: 4000 GB/s
        CopyBaseline copy = new CopyBaseline("cuMemcpyDtoDAsync", 1_000_000_000L, 2, 1000.0);
        return Measurement.of(spec, plan, TrafficModel.of(spec.workload(),
                new org.moecomm.core.protocol.BufferLayout(spec.config())), List.<long[][]>of(samples), List.of(),
                "NVIDIA H200", GpuRunner.mode(PhaseResultsTest.oneGpu(2), true), copy);
    }

    /** Graph lines: launch "graph", the send/recv columns "-" (null in the JSON), the whole halves in theirs. */
    @Test
    void graphRowsShowDashesForSendAndRecv() throws Exception {
        Path file = tmp.resolve("2026-12-03-h200-gpu-phases.json");
        Files.writeString(file, line("deepseek-v3", 4, 8, "plain", 10) + "\n" + line("deepseek-v3", 4, 8, "graph", 20)
                + "\n");
        List<String> rows = new ReportCommand().phaseTable(file).lines().filter(l -> l.startsWith("|")).toList();
        List<String> header = cells(rows.get(0));
        List<String> plain = cells(rows.get(2));
        List<String> graph = cells(rows.get(3));
        assertEquals("plain", plain.get(header.indexOf("launch")));
        assertEquals("graph", graph.get(header.indexOf("launch")));
        assertEquals("8", graph.get(header.indexOf("tokens/rank")));
        for (String phase : List.of("dispatch send", "dispatch recv", "combine send", "combine recv")) {
            assertEquals("-", graph.get(header.indexOf(phase)), phase);
            assertFalse(plain.get(header.indexOf(phase)).equals("-"), phase);
        }
        assertEquals("25.0", graph.get(header.indexOf("dispatch")));
        assertEquals("26.0", graph.get(header.indexOf("combine")));
        assertEquals("12.0", plain.get(header.indexOf("dispatch recv")));
        assertEquals("15.0", plain.get(header.indexOf("dispatch")));
    }

    /**
     * Every world size shows, each from the newest file that has it: a newer W=4 file replaces the
     * older W=4 rows, while the W=2 rows of another file stay; W ascending.
     */
    @Test
    void everyWorldSizeShowsFromItsNewestFile() throws Exception {
        Path results = Files.createDirectories(tmp.resolve("results"));
        Files.writeString(results.resolve("2026-12-02-h200-gpu-phases.json"), OLD_LINE + "\n");
        Files.writeString(results.resolve("2026-12-03-h200-gpu-phases.json"),
                line("deepseek-v3", 4, 1, "plain", 100) + "\n" + line("deepseek-v3", 4, 1, "graph", 200) + "\n");
        Files.writeString(results.resolve("2026-12-03-h200-w2-gpu-phases.json"),
                line("deepseek-v2-lite", 2, 8, "plain", 300) + "\n" + line("deepseek-v2-lite", 2, 8, "graph", 400) + "\n");
        // not a phases file
        Files.writeString(results.resolve("2026-12-04-cpu-phases.json"), line("mixtral-8x7b", 2, 1, "plain", 1) + "\n");
        Path readme = tmp.resolve("README.md");
        Files.writeString(readme, "# x\n\n" + ReportCommand.BEGIN + "\nold table\n" + ReportCommand.END + "\nafter\n");
        assertEquals(0, new CommandLine(new ReportCommand()).execute("--results", results.toString(), "--readme",
                readme.toString()));
        String text = Files.readString(readme);
        assertFalse(text.contains("old table"), text);
        assertTrue(text.endsWith(ReportCommand.END + "\nafter\n"), text);
        assertTrue(text.contains("(`2026-12-03-h200-w2-gpu-phases.json`, `2026-12-03-h200-gpu-phases.json`;"), text);
        // the phase rows (the memory table's rows carry MiB or GiB)
        List<List<String>> rows = text.lines().filter(l -> l.startsWith("| deepseek") || l.startsWith("| mixtral"))
                .filter(l -> !l.contains("iB |")).map(ReportCommandTest::cells).toList();
        assertEquals(4, rows.size(), text);
        // preset, W, tokens, launch, dispatch median
        assertEquals(List.of("deepseek-v2-lite", "2", "8", "plain", "305.0"), pick(rows.get(0)));
        assertEquals(List.of("deepseek-v2-lite", "2", "8", "graph", "405.0"), pick(rows.get(1)));
        assertEquals(List.of("deepseek-v3", "4", "1", "plain", "105.0"), pick(rows.get(2)));
        assertEquals(List.of("deepseek-v3", "4", "1", "graph", "205.0"), pick(rows.get(3)));
        // the older W=4 file is superseded
        assertFalse(text.contains("41.7"), text);
    }

    /** The committed results give every chart, each a PNG of the chart size, shown in the README's section. */
    @Test
    void chartsAreDrawnFromTheCommittedResults() throws Exception {
        Path readme = tmp.resolve("README.md");
        Files.writeString(readme, ReportCommand.BEGIN + "\n" + ReportCommand.END + "\n");
        assertEquals(0, new CommandLine(new ReportCommand()).execute("--results", "results", "--readme", readme.toString()));
        String text = Files.readString(readme);
        for (String name : List.of("phase-latency-w2", "phase-latency-w4", "kernel-bandwidth", "cpu-backend-jmh",
                "phase-bandwidth-w2", "phase-bandwidth-w4")) {
            Path png = tmp.resolve("docs/charts/" + name + ".png");
            java.awt.image.BufferedImage image = javax.imageio.ImageIO.read(png.toFile());
            assertEquals(ResultCharts.WIDTH, image.getWidth(), name);
            assertEquals(ResultCharts.HEIGHT, image.getHeight(), name);
            assertTrue(text.contains("![" + name + "](docs/charts/" + name + ".png)"), text);
        }
        // the newest committed phase files carry the device bytes: the device table and its charts are drawn
        assertTrue(text.contains("Device memory per phase on the GPU backend"), text);
        assertFalse(text.contains("Device memory per phase: not recorded"), text);
        assertTrue(text.contains("pplx-kernels: `reference/2026-12-02-h200-pplx-kernels.json`"), text);
    }

    /**
     * Run from a folder inside the repository, the report finds the repository above it; given a
     * root without a README, it says so in one line.
     */
    @Test
    void theRepositoryIsFoundFromBelowIt() throws Exception {
        Path sub = Files.createDirectories(tmp.resolve("repo/benchmarks/target"));
        assertEquals(null, ReportCommand.repositoryAbove(sub));
        Files.writeString(tmp.resolve("repo/README.md"), ReportCommand.BEGIN + "\n" + ReportCommand.END + "\n");
        assertEquals(tmp.resolve("repo"), ReportCommand.repositoryAbove(sub));
        java.io.StringWriter err = new java.io.StringWriter();
        CommandLine cl = new CommandLine(new ReportCommand());
        cl.setErr(new java.io.PrintWriter(err, true));
        assertEquals(2, cl.execute("--root", tmp.resolve("elsewhere").toString()));
        assertTrue(err.toString().startsWith("moecomm report: ") && err.toString().strip().lines().count() == 1,
                err.toString());
        assertTrue(err.toString().contains("README.md does not exist (give --root or --readme)"), err.toString());
    }

    private static List<String> pick(List<String> row) {
        return List.of(row.get(0), row.get(1), row.get(3), row.get(4), row.get(9));
    }

    /**
     * A results line as PhaseJson writes it: phase i (Phases.KEYS order) has median base + i + 1
     * us, except the send/recv phases of a graph line, which are null.
     */
    private static String line(String preset, int world, int tokens, String launch, double base) {
        StringBuilder b = new StringBuilder(String.format(java.util.Locale.ROOT,
                "{\"preset\":\"%s\",\"tokens\":%d,\"world\":%d,\"group\":1,\"backend\":\"gpu\",\"launch\":\"%s\","
                        + "\"mode\":\"%d processes on 1 GPU under MPS\",\"verified\":true", preset, tokens, world, launch,
                world));
        for (int i = 0; i < Phases.KEYS.size(); i++) {
            String key = Phases.KEYS.get(i);
            boolean missing = launch.equals("graph") && Phases.isSendOrRecv(i);
            b.append(",\"").append(key).append("MedianUs\":").append(missing ? "null" : Double.toString(base + i + 1));
            b.append(",\"").append(key).append("P90Us\":").append(missing ? "null" : Double.toString(base + i + 2));
        }
        return b.append('}').toString();
    }

    private static List<String> cells(String row) {
        return Arrays.stream(row.split("\\|")).map(String::trim).skip(1).toList();
    }

    @Test
    void theChartsNameTheGpusTheirLinesWereMeasuredOn() throws Exception {
        assertEquals("H100", ResultCharts.shortGpuName("NVIDIA H100 80GB HBM3"));
        assertEquals("H200", ResultCharts.shortGpuName("NVIDIA H200"));
        assertEquals("some card", ResultCharts.shortGpuName(" some card "));
        assertEquals("H100", ResultCharts.gpuOf(List.of(JSON.readTree("{\"gpu\":\"NVIDIA H100 80GB HBM3\"}"),
                JSON.readTree("{\"gpu\":\"NVIDIA H100 80GB HBM3\"}"))));
        assertEquals("H100/H200", ResultCharts.gpuOf(List.of(JSON.readTree("{\"gpu\":\"NVIDIA H100 80GB HBM3\"}"),
                JSON.readTree("{\"gpu\":\"NVIDIA H200\"}"))));
        assertEquals("", ResultCharts.gpuOf(List.of(JSON.readTree("{\"preset\":\"deepseek-v3\"}"))));
    }

    @Test
    void theChartsSayWhereTheRanksRan() throws Exception {
        List<JsonNode> lines = List.of(JSON.readTree("{\"world\":4,\"mode\":\"4 processes on 1 GPU under MPS\"}"),
                JSON.readTree("{\"world\":4,\"mode\":\"4 processes on 1 GPU under MPS\"}"),
                JSON.readTree("{\"world\":8,\"mode\":\"8 processes on 8 GPUs, one each\"}"));
        assertEquals("4 processes on 1 GPU under MPS", ResultCharts.placementOf(lines, 4));
        assertEquals("8 processes on 8 GPUs, one each", ResultCharts.placementOf(lines, 8));
        assertEquals("W = 2", ResultCharts.placementOf(lines, 2));
    }
}
