package org.moecomm.bench.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.core.MoeConfig;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.moe.MoeKernels;
import picocli.CommandLine;

/**
 * The GPU kernel benchmark's own logic, on the CPU runner at a tiny size (runs in CI, no GPU):
 * input construction, the checks (they pass on the real kernels and catch a wrong byte), the
 * timing loop, the JSON lines and the table. Java kernels stand in for the CUDA C++ twins, so the
 * twin path (checked first run, interleaved timing, ratio) runs too.
 */
class KernelBenchmarkCpuTest {
    private static final List<String> REQUIRED = List.of("kernel", "preset", "tokens", "world", "gridY", "javaMedianUs",
            "javaP90Us", "twinMedianUs", "twinP90Us", "ratio", "bytes", "javaGBps", "copyGBps", "gpu", "commit", "command");
    private static final Map<String, Kernel> STAND_INS = Map.of(
            "pack_twin", new Kernel(MoeKernels.class, "pack"),
            "reduce_twin", new Kernel(MoeKernels.class, "reduce"));

    private CpuBenchDevice dev;

    @BeforeEach
    void open() {
        dev = new CpuBenchDevice(STAND_INS);
    }

    @AfterEach
    void close() {
        dev.close();
    }

    private static KernelBenchmark.Settings settings(int[] tokens, Integer gridY, Integer scatterGridY) {
        return new KernelBenchmark.Settings(KernelBenchmark.TINY, 4, tokens, gridY, scatterGridY, null, MoeKernels.THREADS,
                1, 3, new LinkedHashSet<>(KernelBenchmark.KERNELS), 1L << 20, 1L << 20, 7, true, "abc1234",
                "test command");
    }

    @Test
    void wholeRunOnTheCpuRunnerPassesItsChecksAndWritesEveryField() throws Exception {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        // 300 tokens: pack takes two chunks of 256; pack and scatter on 2-D grids (3 blocks per destination or group)
        KernelBenchmark.Report report = KernelBenchmark.run(dev, settings(new int[] {37, 300}, 3, null),
                new PrintStream(text, true, StandardCharsets.UTF_8));
        String table = text.toString(StandardCharsets.UTF_8);
        assertEquals(8, report.lines().size(), table);
        for (KernelBenchmark.Line l : report.lines()) {
            assertNull(l.error(), () -> l.kernel() + " M=" + l.tokens() + ": " + l.error() + "\n" + table);
            assertNotNull(l.java(), l.kernel());
            assertEquals(3, l.java().n());
            assertTrue(l.bytes() > 0, l.kernel());
            boolean twin = l.kernel().equals("pack") || l.kernel().equals("reduce");
            assertEquals(twin, l.twin() != null, l.kernel() + ": " + l.twinNote());
            assertEquals(twin, l.ratio() != null, l.kernel());
        }
        assertEquals(0, report.exitCode());
        assertEquals(Grid.of(4, 3, MoeKernels.THREADS), report.lines().get(0).grid());
        assertEquals(Grid.of(4, 3, MoeKernels.THREADS), report.lines().get(1).grid());
        // gather's default chunks: ceil(NG*M/32); reduce: one block per token
        assertEquals(Grid.of(4, (4 * 37 + 31) / 32, MoeKernels.THREADS), report.lines().get(2).grid());
        assertEquals(Grid.of(300, 1, MoeKernels.THREADS), report.lines().get(7).grid());

        ObjectMapper json = new ObjectMapper();
        Set<String> seen = new HashSet<>();
        for (String line : report.jsonLines()) {
            JsonNode n = json.readTree(line);
            for (String f : REQUIRED) {
                assertTrue(n.has(f), "missing " + f + " in " + line);
            }
            assertEquals("tiny", n.get("preset").asText());
            assertEquals(4, n.get("world").asInt());
            assertEquals("abc1234", n.get("commit").asText());
            assertEquals("test command", n.get("command").asText());
            assertTrue(n.get("copyGBps").isNumber(), line);
            assertEquals(1L << 20, n.get("copyBytes").asLong());
            assertTrue(n.get("bytesFormula").asText().contains("+"), line);
            assertTrue(n.get("error").isNull(), line);
            seen.add(n.get("kernel").asText() + "@" + n.get("tokens").asInt());
            if (n.get("kernel").asText().equals("scatter")) {
                assertTrue(n.get("twinMedianUs").isNull() && n.get("ratio").isNull(), line);
            }
        }
        assertEquals(8, seen.size());
        assertTrue(table.contains("copy baseline"), table);
        assertTrue(table.contains("ratio"), table);
        assertTrue(table.contains("pack:    "), table);
    }

    @Test
    void workloadFollowsTheProtocol() {
        MoeConfig cfg = KernelBenchmark.config("tiny", 4, 50);
        try (KernelWorkload w = new KernelWorkload("tiny", cfg, 3)) {
            // K distinct experts per token, all pairs land somewhere
            for (int t = 0; t < w.m; t++) {
                int[] ids = Arrays.copyOfRange(w.own.indices(), t * w.k, (t + 1) * w.k);
                assertEquals(w.k, Arrays.stream(ids).distinct().count());
                assertTrue(Arrays.stream(ids).allMatch(e -> e >= 0 && e < w.e));
            }
            assertEquals(w.m * w.k, Arrays.stream(w.pairsTo).sum());
            long tokenDestinations = 0;
            for (int t = 0; t < w.m; t++) {
                tokenDestinations += Arrays.stream(w.own.indices(), t * w.k, (t + 1) * w.k).map(e -> e / w.l).distinct().count();
            }
            assertEquals(tokenDestinations, Arrays.stream(w.rowsTo).sum());
            // every pair location is unique and inside its destination's region
            Set<Integer> locations = new HashSet<>();
            for (int i = 0; i < w.m * w.k; i++) {
                int loc = w.packPairLocation[i];
                assertEquals(w.own.indices()[i] / w.l, loc / w.ppr);
                assertTrue(locations.add(loc));
            }
            // this rank is its own group's member: group 0's region holds this rank's own rows for itself
            assertEquals(w.rowsTo[0], w.rowsFrom[0]);
            assertEquals(w.pairsTo[0], w.pairsFrom[0]);
            assertEquals(Arrays.stream(w.pairsFrom).sum(), Arrays.stream(w.expertCount).sum());
            for (int g = 0; g < w.ng; g++) {
                assertEquals((1L << 32) | w.rowsFrom[g], w.dispatchSignals[g]);
            }
            assertTrue(w.packBytes() > 0 && w.scatterBytes() > 0 && w.gatherBytes() > 0 && w.reduceBytes() > 0);
        }
        // the benchmark's preset: DeepSeek-V3 rows (7168 fp8 + 56 scales + 10 meta ints) and regions
        MoeConfig ds = KernelBenchmark.config("deepseek-v3", 8, 128);
        try (KernelWorkload w = new KernelWorkload("deepseek-v3", ds, 1)) {
            assertEquals(7168 + 224 + 48, w.rowBytes);
            assertEquals(56, w.s);
            assertEquals(32, w.l);
            assertEquals(128 * 8, w.ppr);
            assertEquals(8 * 128, w.capacity);
            assertEquals(2 * 7168, w.yBytes);
            assertEquals(8L * 128 * 8 + 128L * 8 * 2 * 7168 + 128L * 7168 * 2, w.reduceBytes());
        }
    }

    /** Device buffers of one tiny workload, as the benchmark lays them out. */
    private final class Bufs {
        final KernelWorkload w;
        final Buf x;
        final Buf xScale;
        final Buf indices;
        final Buf numTokens;
        final Buf send;
        final Buf sendRows;
        final Buf pairLocation;
        final Buf inputReport;
        final Buf recv;
        final Buf signals;
        final Buf counts;
        final Buf expertX;
        final Buf expertXScale;
        final Buf origin;
        final Buf pairsFromGroup;
        final Buf expertY;
        final Buf combineSend;
        final Buf combineRecv;
        final Buf weights;
        final Buf out;

        Bufs(KernelWorkload w) {
            this.w = w;
            x = dev.allocate(w.xBytesTotal());
            xScale = dev.allocate(w.xScaleBytes());
            indices = dev.allocate(4L * w.m * w.k);
            numTokens = dev.allocate(4);
            send = dev.allocate(w.sendBytes());
            sendRows = dev.allocate(4L * w.ng);
            pairLocation = dev.allocate(4L * w.m * w.k);
            inputReport = dev.allocate(4L * MoeKernels.REPORT_INTS);
            dev.fill(inputReport, (byte) 0);
            recv = dev.allocate(w.sendBytes());
            signals = dev.allocate(8L * w.ng);
            counts = dev.allocate(4L * w.l);
            expertX = dev.allocate(w.expertXBytes());
            expertXScale = dev.allocate(w.expertXScaleBytes());
            origin = dev.allocate(4L * w.l * w.capacity);
            pairsFromGroup = dev.allocate(4L * w.ng);
            expertY = dev.allocate(w.expertYBytes());
            combineSend = dev.allocate(w.combineSendBytes());
            combineRecv = dev.allocate(w.combineRecvBytes());
            weights = dev.allocate(4L * w.m * w.k);
            out = dev.allocate(w.outBytesTotal());
        }

        void pack() {
            dev.fill(send, KernelWorkload.POISON);
            dev.fill(sendRows, KernelWorkload.POISON);
            dev.fill(pairLocation, KernelWorkload.POISON);
            dev.launchChecked(new Kernel(MoeKernels.class, "pack"), Grid.of(w.w, MoeKernels.THREADS), x, xScale, indices,
                    numTokens, send, sendRows, pairLocation, inputReport, w.xBytes, w.s, w.k, w.l, w.g, w.member, w.rowBytes,
                    w.m, w.ppr, -1, 1);
        }

        void scatter() {
            dev.fill(counts, (byte) 0);
            dev.fill(expertX, KernelWorkload.POISON);
            dev.fill(expertXScale, KernelWorkload.POISON);
            dev.fill(origin, KernelWorkload.POISON);
            dev.fill(pairsFromGroup, KernelWorkload.POISON);
            dev.launchChecked(new Kernel(MoeKernels.class, "scatter"), Grid.of(w.ng, MoeKernels.THREADS), recv, signals,
                    counts, expertX, expertXScale, origin, pairsFromGroup, w.xBytes, w.s, w.k, w.rowBytes, w.m, w.ng, w.ppr);
        }

        void gather() {
            dev.fill(combineSend, KernelWorkload.POISON);
            dev.launchChecked(new Kernel(MoeKernels.class, "gather"), Grid.of(w.l, 2, MoeKernels.THREADS), expertY, counts,
                    origin, combineSend, w.yBytes, w.capacity);
        }

        void reduce() {
            dev.fill(out, KernelWorkload.POISON);
            dev.launchChecked(new Kernel(MoeKernels.class, "reduce"), Grid.of(w.m, MoeKernels.THREADS), combineRecv,
                    pairLocation, weights, numTokens, out, w.h, w.k, w.yDtype, w.outDtype);
        }
    }

    private static void flipByte(Buf b, long at) {
        b.segment().set(ValueLayout.JAVA_BYTE, at, (byte) (b.segment().get(ValueLayout.JAVA_BYTE, at) ^ 1));
    }

    @Test
    void checksPassOnTheKernelsAndCatchAWrongByte() {
        try (KernelWorkload w = new KernelWorkload("tiny", KernelBenchmark.config("tiny", 4, 45), 11)) {
            Bufs b = new Bufs(w);
            w.uploadPackInputs(dev, b.x, b.xScale, b.indices, b.numTokens);
            w.uploadScatterInputs(dev, b.recv, b.signals);

            b.pack();
            assertNull(w.checkPack(dev, b.send, b.sendRows, b.pairLocation));
            flipByte(b.send, (long) w.rowBytes + w.layout.metaOffset()); // region 0, row 1: pairBase
            String msg = w.checkPack(dev, b.send, b.sendRows, b.pairLocation);
            assertNotNull(msg);
            assertTrue(msg.contains("region 0 row 1 meta byte 0"), msg);
            b.pack();
            b.pairLocation.setInt(5, b.pairLocation.getInt(5) + 1);
            assertTrue(w.checkPack(dev, b.send, b.sendRows, b.pairLocation).startsWith("pairLocation[1][1]"));

            b.scatter();
            assertNull(w.checkScatter(dev, b.counts, b.expertX, b.expertXScale, b.origin, b.pairsFromGroup));
            int expert = 0;
            while (w.expertCount[expert] < 2) {
                expert++;
            }
            flipByte(b.expertXScale, 4L * expert * w.capacity * w.s + 4L * w.s + 2); // slot 1's first scale
            msg = w.checkScatter(dev, b.counts, b.expertX, b.expertXScale, b.origin, b.pairsFromGroup);
            assertNotNull(msg);
            assertTrue(msg.contains("scale 0 differs"), msg);
            b.scatter();
            long first = (long) expert * w.capacity;
            b.origin.setInt(first + 1, b.origin.getInt(first)); // one pair twice, another missing
            assertTrue(w.checkScatter(dev, b.counts, b.expertX, b.expertXScale, b.origin, b.pairsFromGroup)
                    .contains("placed twice"));

            // gather from the state scatter leaves (any slot order)
            b.scatter();
            w.uploadExpertY(dev, b.expertY);
            b.gather();
            assertNull(w.checkGather(dev, b.counts, b.origin, b.combineSend));
            flipByte(b.combineSend, (long) w.yBytes * 3 + 5);
            msg = w.checkGather(dev, b.counts, b.origin, b.combineSend);
            assertNotNull(msg);
            assertTrue(msg.startsWith("combineSend group 0 row 3 byte 5"), msg);
            // and from the canonical state the benchmark uploads when scatter is not run
            w.uploadScatterState(dev, b.counts, b.origin);
            b.gather();
            assertNull(w.checkGather(dev, b.counts, b.origin, b.combineSend));

            w.uploadReduceInputs(dev, b.combineRecv, b.pairLocation, b.weights);
            b.reduce();
            assertNull(w.checkReduce(dev, b.out));
            flipByte(b.out, 2L * (w.h + 3)); // out[1][3], lowest mantissa bit
            msg = w.checkReduce(dev, b.out);
            assertNotNull(msg);
            assertTrue(msg.startsWith("out[1][3]"), msg);
        }
    }

    @Test
    void aWrongKernelIsReportedWithoutNumbers() {
        // a "Java kernel" whose output the check refuses: pack run with a reset that zeroes dispatchSend
        // instead of poisoning it as the reference does, so the rows past sendRows differ
        try (KernelWorkload w = new KernelWorkload("tiny", KernelBenchmark.config("tiny", 4, 20), 5)) {
            Bufs b = new Bufs(w);
            w.uploadPackInputs(dev, b.x, b.xScale, b.indices, b.numTokens);
            KernelBenchmark.Settings s = settings(new int[] {20}, null, null);
            KernelBenchmark.Line base = new KernelBenchmark.Line(null, "tiny", 0, 4, null, null, null, 0, null, null, 0, 0,
                    1, 3, null, null, null, null, null, "cpu", 1, "cpu", "2026-01-01", "c", "cmd");
            KernelBenchmark.KernelSpec spec = new KernelBenchmark.KernelSpec("pack", new Kernel(MoeKernels.class, "pack"),
                    "pack_twin", Grid.of(w.w, MoeKernels.THREADS),
                    new Object[] {b.x, b.xScale, b.indices, b.numTokens, b.send, b.sendRows, b.pairLocation, b.inputReport,
                        w.xBytes, w.s, w.k, w.l, w.g, w.member, w.rowBytes, w.m, w.ppr, -1, 1},
                    () -> dev.fill(b.send, (byte) 0), // not poisoned like the reference: rows past sendRows differ
                    () -> { }, () -> w.checkPack(dev, b.send, b.sendRows, b.pairLocation), "check", 1, "formula");
            KernelBenchmark.Line line = KernelBenchmark.measure(dev, s, 20, base, spec, () -> { });
            assertNotNull(line.error());
            assertTrue(line.error().startsWith("Java kernel output wrong on the first run: dispatchSend differs"),
                    line.error());
            assertNull(line.java());
            assertNull(line.ratio());
            KernelBenchmark.Report r = new KernelBenchmark.Report(List.of(line), false);
            assertEquals(1, r.exitCode());
            assertTrue(r.jsonLines().getFirst().contains("\"javaMedianUs\":null"));
        }
    }

    @Test
    void statisticsGridAndNames() {
        KernelBenchmark.Stats s = KernelBenchmark.Stats.of(new double[] {4, 1, 3, 2});
        assertEquals(2.5, s.median());
        assertEquals(3.7, s.p90(), 1e-12);
        assertEquals(1, s.min());
        double[] hundred = new double[100];
        Arrays.setAll(hundred, i -> 100 - i);
        assertEquals(90.1, KernelBenchmark.Stats.of(hundred).p90(), 1e-9);
        assertEquals(50.5, KernelBenchmark.Stats.of(hundred).median());
        assertEquals(2.0, KernelBenchmark.Stats.of(new double[] {1e-3}).gbps(2000), 1e-9); // 2000 B in 1 us

        assertEquals(33, KernelBenchmark.defaultGridY(132, 8));
        assertEquals(1, KernelBenchmark.defaultGridY(1, 8));
        assertEquals(64, KernelBenchmark.defaultGridY(132, 2));
        assertEquals("2026-12-02-h200-gpu-kernels.json",
                KernelBenchmark.fileName(LocalDate.of(2026, 12, 2), "NVIDIA H200"));
        assertEquals("2026-12-02-h100-80gb-hbm3-gpu-kernels.json",
                KernelBenchmark.fileName(LocalDate.of(2026, 12, 2), "NVIDIA H100 80GB HBM3"));

        Buf buf = Buf.of(java.lang.foreign.Arena.global().allocate(32));
        long[] p = GpuBenchDevice.params(new Object[] {buf, -1, 2.5f, 7L});
        assertEquals(buf.address(), p[0]);
        assertEquals(0xffff_ffffL, p[1]);
        assertEquals(Float.floatToRawIntBits(2.5f), p[2]);
        assertEquals(7L, p[3]);
    }

    @Test
    void scatterMayUseItsOwnGridY() {
        KernelBenchmark.Report report = KernelBenchmark.run(dev, settings(new int[] {40}, 2, 1),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        assertEquals(Grid.of(4, 2, MoeKernels.THREADS), report.lines().get(0).grid());
        assertEquals(Grid.of(4, 1, MoeKernels.THREADS), report.lines().get(1).grid());
        assertEquals(0, report.exitCode());
    }

    /** The twins are launched with the Java kernels' arguments: same count, pointers where Buf, 32-bit ints where int. */
    @Test
    void twinsTakeTheJavaKernelsParameters() throws Exception {
        String cu = Files.readString(Path.of("src/main/cuda/twins.cu"));
        for (String name : List.of("pack", "reduce")) {
            Matcher mt = Pattern.compile("extern \"C\" __global__ void (?:__launch_bounds__\\([^)]*\\) )?" + name
                    + "_twin\\(([^)]*)\\)").matcher(cu);
            assertTrue(mt.find(), name + "_twin not found in twins.cu");
            String[] cParams = mt.group(1).split(",");
            Class<?>[] jParams = new Kernel(MoeKernels.class, name).method().getParameterTypes();
            assertEquals(jParams.length - 1, cParams.length, name);
            for (int i = 0; i < cParams.length; i++) {
                String c = cParams[i].trim();
                Class<?> j = jParams[i + 1];
                if (j == Buf.class) {
                    assertTrue(c.contains("*"), name + " parameter " + i + ": " + c);
                } else {
                    assertEquals(int.class, j, name + " parameter " + i);
                    assertTrue(c.matches("(const )?int \\w+"), name + " parameter " + i + ": " + c);
                }
            }
        }
    }

    @Test
    void commandLineDryRunOnTheCpuWritesTheFile(@TempDir Path dir) throws Exception {
        int rc = new CommandLine(new KernelBenchmark()).execute("--device", "cpu", "--preset", "tiny", "--world", "4",
                "--tokens", "16", "--warmups", "0", "--reps", "2", "--copy-mib", "1", "--flush-mib", "0",
                "--kernels", "pack,reduce", "--commit", "deadbee", "--out-dir", dir.toString());
        assertEquals(0, rc);
        List<Path> files;
        try (Stream<Path> list = Files.list(dir)) {
            files = list.toList();
        }
        assertEquals(1, files.size(), files.toString());
        assertTrue(files.getFirst().getFileName().toString().endsWith("-gpu-kernels.json"));
        List<String> lines = Files.readAllLines(files.getFirst());
        assertEquals(2, lines.size());
        JsonNode first = new ObjectMapper().readTree(lines.getFirst());
        assertEquals("pack", first.get("kernel").asText());
        assertEquals("cpu", first.get("device").asText());
        assertEquals("deadbee", first.get("commit").asText());
        assertTrue(first.get("twinMedianUs").isNull()); // no stand-ins from the command line
        assertFalse(first.get("twinNote").isNull());
    }
}
