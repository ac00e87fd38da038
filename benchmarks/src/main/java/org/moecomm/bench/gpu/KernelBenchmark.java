package org.moecomm.bench.gpu;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import org.moecomm.bench.Percentiles;
import org.moecomm.bench.ResultFiles;
import org.moecomm.bench.VersionProvider;
import org.moecomm.bridge.cuda.Cuda;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.moe.MoeKernels;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Kernel benchmark of the four MoE kernels compiled from Java ({@link MoeKernels} pack, scatter,
 * gather, reduce) on one GPU, one simulated rank of {@code W}, against the CUDA C++ twins of pack
 * and reduce ({@code benchmarks/src/main/cuda/twins.cu}) launched the same way with the same
 * inputs and grid.
 *
 * <p>Per (kernel, tokens): a first run whose outputs are checked (Java kernel and twin against a
 * host reference, bit for bit: a number from a wrong result is not a number), then warm-up runs
 * and timed runs, each timed by CUDA events around one launch, Java kernel and twin interleaved.
 * Before every run an untimed memset of {@code --flush-mib} MiB evicts the L2 cache and keeps the
 * stream busy, so the start event is not stamped before the launch is enqueued. The device's copy
 * bandwidth ({@code cuMemcpyDtoDAsync}, read + write counted: 2 x size) is measured in the same
 * run the same way.
 *
 * <p>Grids (threads per block {@code --threads}, 256): pack {@code W x Y}, scatter {@code NG x Y}
 * ({@code Y = --grid-y}, default {@code min(64, ceil(2 * SMs / W))}; {@code --scatter-grid-y} sets scatter's
 * alone), gather {@code L x chunks} ({@code --gather-chunks}, default {@code ceil(NG*M/32)}),
 * reduce {@code M}. Twins get the same grid. The inputs are those of a real round
 * ({@link KernelWorkload}); gather runs on the expert counts and origins scatter left.
 *
 * <p>JSON fields: {@code kernel, preset, tokens, world, gridX, gridY} (gather: its chunks; reduce:
 * 1), {@code threads, javaMedianUs, javaP90Us, javaMinUs, twinMedianUs, twinP90Us, twinMinUs}
 * (null without a twin), {@code ratio} (java median / twin median), {@code bytes} (read + written
 * by the kernel, {@code bytesFormula}), {@code javaGBps, twinGBps} (bytes / median),
 * {@code copyGBps} (2 x {@code copyBytes} / copy median), {@code copyMethod, copyBytes,
 * copyMedianUs, warmups, reps, l2FlushBytes, check} (what was compared), {@code error} (null when
 * right; then there are no times), {@code twinNote, javaResources, twinResources} (registers,
 * shared and local memory; the Java kernel's as specialised for the launch's arguments, the one
 * timed), {@code gpu, sms, device, date, commit, command}.
 *
 * <p>Output: one JSON line per (kernel, tokens) into a file named
 * {@code <date>-<gpu>-gpu-kernels.json} (or {@code --out}), and a table on stdout. Exit status 0
 * when every check passed (and, with {@code --require-twins}, every twin ran), 1 otherwise, 3
 * when no GPU can be used.
 *
 * <p>Run (see scripts/gpu-bench.sh, which does this on the GPU machine from the bundle):
 * {@code java --enable-native-access=ALL-UNNAMED -cp <jars> org.moecomm.bench.gpu.KernelBenchmark
 * --twin-ptx .gpu-carry/twins/twins.ptx --out-dir results}.
 */
@Command(name = "gpu-kernels", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Time MoeKernels pack/scatter/gather/reduce on a GPU against their CUDA C++ twins.")
public final class KernelBenchmark implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Kernels in the order they run (each needs the previous ones' inputs). */
    static final List<String> KERNELS = List.of("pack", "scatter", "gather", "reduce");
    static final String TINY = "tiny";

    @Option(names = "--preset", defaultValue = "deepseek-v3",
            description = "deepseek-v3, deepseek-v2-lite, qwen3-30b-a3b, mixtral-8x7b, or tiny (E=16 K=4 H=256 fp8, for dry runs).")
    String preset;

    @Option(names = "--world", defaultValue = "8", description = "W: ranks simulated (one rank's kernels run).")
    int world;

    @Option(names = "--tokens", split = ",", defaultValue = "128,4096", description = "Tokens per rank (M = m).")
    int[] tokens;

    @Option(names = "--grid-y", description = "Blocks in grid y for pack (W x Y) and scatter (NG x Y); "
            + "default ceil(2 * SMs / W), at most 64 (as the library launches them).")
    Integer gridY;

    @Option(names = "--scatter-grid-y", description = "scatter's grid y when it should differ from --grid-y.")
    Integer scatterGridY;

    @Option(names = "--gather-chunks", description = "gather's grid y; default ceil(NG*M/32) (docs/protocol.md).")
    Integer gatherChunks;

    @Option(names = "--threads", defaultValue = "256", description = "Threads per block (MoeKernels.THREADS).")
    int threads;

    @Option(names = "--warmups", defaultValue = "20", description = "Untimed runs before timing.")
    int warmups;

    @Option(names = "--reps", defaultValue = "100", description = "Timed runs (median and p90 over them).")
    int reps;

    @Option(names = "--kernels", split = ",", defaultValue = "pack,scatter,gather,reduce", description = "Which kernels.")
    List<String> kernels;

    @Option(names = "--twin-ptx", description = "PTX of the CUDA C++ twins (built by scripts/make-gpu-bundle.sh).")
    Path twinPtx;

    @Option(names = "--require-twins", description = "Fail when a kernel with a twin could not time it.")
    boolean requireTwins;

    @Option(names = "--out", description = "JSON lines file (its name should end in -gpu-kernels.json).")
    Path out;

    @Option(names = "--out-dir", description = "Folder for <date>-<gpu>-gpu-kernels.json (when --out is not given).")
    Path outDir;

    @Option(names = "--copy-mib", defaultValue = "1024", description = "Size of the copy-bandwidth baseline; 0 skips it.")
    long copyMib;

    @Option(names = "--flush-mib", defaultValue = "256", description = "Memset before every run (L2 flush); 0 disables.")
    long flushMib;

    @Option(names = "--seed", defaultValue = "1", description = "Routing and data seed.")
    long seed;

    @Option(names = "--device", defaultValue = "gpu", description = "gpu, or cpu (the CPU runner: a dry run, times meaningless).")
    String device;

    @Option(names = "--commit", defaultValue = "${env:MOECOMM_COMMIT:-unknown}", description = "Commit recorded in the JSON.")
    String commit;

    @Option(names = "--command", description = "Command recorded in the JSON (default: this invocation).")
    String command;

    private String[] rawArgs = new String[0];

    public static void main(String[] args) {
        KernelBenchmark b = new KernelBenchmark();
        b.rawArgs = args.clone();
        System.exit(new CommandLine(b).execute(args));
    }

    /** What one run measures. */
    record Settings(String preset, int world, int[] tokens, Integer gridY, Integer scatterGridY, Integer gatherChunks,
                    int threads, int warmups,
                    int reps, Set<String> kernels, long copyBytes, long flushBytes, long seed, boolean requireTwins,
                    String commit, String command) {
        Settings {
            if (warmups < 0 || reps < 1 || threads < 1 || threads > MoeKernels.MAX_THREADS) {
                throw new IllegalArgumentException("need warmups >= 0, reps >= 1, 1 <= threads <= " + MoeKernels.MAX_THREADS);
            }
            for (String k : kernels) {
                if (!KERNELS.contains(k)) {
                    throw new IllegalArgumentException("unknown kernel '" + k + "'; known: " + KERNELS);
                }
            }
        }
    }

    @Override
    public Integer call() throws IOException {
        Settings settings = new Settings(preset, world, tokens, gridY, scatterGridY, gatherChunks, threads, warmups, reps,
                new LinkedHashSet<>(kernels), copyMib << 20, flushMib << 20, seed, requireTwins, commit,
                command != null ? command : "java org.moecomm.bench.gpu.KernelBenchmark " + String.join(" ", rawArgs));
        for (int m : tokens) {
            config(preset, world, m); // fail on a bad shape before touching the device
        }
        BenchDevice dev;
        if (device.equals("cpu")) {
            dev = new CpuBenchDevice(Map.of());
        } else if (device.equals("gpu")) {
            Cuda.Availability a = Cuda.availability();
            if (!a.available()) {
                System.out.println("no CUDA GPU can be used: " + a.reason());
                return 3;
            }
            dev = new GpuBenchDevice(twinPtx);
        } else {
            throw new CommandLine.ParameterException(new CommandLine(this), "--device must be gpu or cpu");
        }
        try (dev) {
            Path file = out != null ? out
                    : ResultFiles.fresh(outDir != null ? outDir : Path.of("."), fileName(LocalDate.now(ZoneOffset.UTC),
                            dev.name()));
            Report report = run(dev, settings, System.out);
            if (file.getParent() != null) {
                Files.createDirectories(file.getParent());
            }
            Files.write(file, report.jsonLines());
            System.out.println("wrote " + report.lines().size() + " JSON lines to " + file);
            return report.exitCode();
        }
    }

    // ---- shapes ----

    /** The config of {@code preset} for W ranks (G = 1) and M tokens per rank. */
    static MoeConfig config(String preset, int world, int tokensPerRank) {
        if (preset.equals(TINY)) {
            return MoeConfig.builder().numExperts(16).topK(4).hidden(256).inType(DType.FP8_E4M3)
                    .expertOutType(DType.BF16).outType(DType.BF16).worldSize(world).groupSize(1)
                    .maxTokensPerRank(tokensPerRank).build();
        }
        return Preset.byLabel(preset).config(world, 1, tokensPerRank).build();
    }

    /** Cap of the default grid y (the library's launches use the same, in AllToAllProtocol). */
    static final int MAX_GRID_Y = 64;

    /**
     * Default blocks in grid y for pack and scatter, as the library launches them: about two
     * blocks per SM over the W (or NG) blocks of x, {@code ceil(2 * SMs / blocksX)}, at most 64.
     */
    static int defaultGridY(int multiprocessors, int blocksX) {
        return Math.max(1, Math.min(MAX_GRID_Y, (2 * multiprocessors + blocksX - 1) / blocksX));
    }

    /** {@code <date>-<gpu>-gpu-kernels.json}, the GPU named in lower case without "NVIDIA". */
    static String fileName(LocalDate date, String deviceName) {
        return ResultFiles.name(date, deviceName, "gpu-kernels");
    }

    // ---- statistics ----

    /** Median, p90 ({@link Percentiles}), min and mean of samples in milliseconds. */
    record Stats(double median, double p90, double min, double mean, int n) {
        static Stats of(double[] ms) {
            return new Stats(Percentiles.of(ms, 0.5), Percentiles.of(ms, 0.9), Arrays.stream(ms).min().orElse(Double.NaN),
                    Arrays.stream(ms).average().orElse(Double.NaN), ms.length);
        }

        double medianUs() {
            return median * 1e3;
        }

        double p90Us() {
            return p90 * 1e3;
        }

        double gbps(long bytes) {
            return bytes / (median * 1e-3) / 1e9;
        }
    }

    // ---- results ----

    /** One (kernel, tokens) result: one JSON line. */
    record Line(String kernel, String preset, int tokens, int world, Grid grid, Stats java, Stats twin, long bytes,
                String bytesFormula, Stats copy, long copyBytes, long flushBytes, int warmups, int reps, String check,
                String error, String twinNote, String javaResources, String twinResources, String gpu, int sms,
                String device, String date, String commit, String command) {

        Double ratio() {
            return java == null || twin == null ? null : java.median() / twin.median();
        }

        Double copyGBps() {
            return copy == null ? null : copy.gbps(2 * copyBytes);
        }

        String toJson() {
            ObjectNode j = JSON.createObjectNode();
            j.put("kernel", kernel).put("preset", preset).put("tokens", tokens).put("world", world)
                    .put("gridX", grid == null ? null : grid.blocksX()).put("gridY", grid == null ? null : grid.blocksY())
                    .put("threads", grid == null ? null : grid.threads())
                    .put("javaMedianUs", micros(java, Stats::median))
                    .put("javaP90Us", micros(java, Stats::p90))
                    .put("javaMinUs", micros(java, Stats::min))
                    .put("twinMedianUs", micros(twin, Stats::median))
                    .put("twinP90Us", micros(twin, Stats::p90))
                    .put("twinMinUs", micros(twin, Stats::min))
                    .put("ratio", rounded(ratio()))
                    .put("bytes", bytes).put("bytesFormula", bytesFormula)
                    .put("javaGBps", rounded(java == null ? null : java.gbps(bytes)))
                    .put("twinGBps", rounded(twin == null ? null : twin.gbps(bytes)))
                    .put("copyGBps", rounded(copyGBps()))
                    .put("copyMethod", copy == null ? null : copyName(device)
                            + " of copyBytes; GB/s = 2 * copyBytes / median (read + write)")
                    .put("copyBytes", copy == null ? null : copyBytes)
                    .put("copyMedianUs", micros(copy, Stats::median))
                    .put("warmups", warmups).put("reps", reps).put("l2FlushBytes", flushBytes)
                    .put("check", check).put("error", error).put("twinNote", twinNote)
                    .put("javaResources", javaResources).put("twinResources", twinResources)
                    .put("gpu", gpu).put("sms", sms).put("device", device).put("date", date)
                    .put("commit", commit).put("command", command);
            return j.toString();
        }

        private static Double micros(Stats stats, ToDoubleFunction<Stats> millis) {
            return stats == null ? null : rounded(millis.applyAsDouble(stats) * 1e3);
        }

        /** Three decimals; null for none, NaN or infinity. */
        private static Double rounded(Double v) {
            return v == null || v.isNaN() || v.isInfinite() ? null : Math.round(v * 1e3) / 1e3;
        }
    }

    /** Every line of a run, and whether the run is good. */
    record Report(List<Line> lines, boolean requireTwins) {
        List<String> jsonLines() {
            return lines.stream().map(Line::toJson).toList();
        }

        int exitCode() {
            for (Line l : lines) {
                if (l.error() != null) {
                    return 1;
                }
                if (requireTwins && KernelSpec.hasTwin(l.kernel()) && l.twin() == null) {
                    return 1;
                }
            }
            return 0;
        }
    }

    /** A kernel's launch, checked run and timed runs. */
    record KernelSpec(String name, Kernel kernel, String twinEntry, Grid grid, Object[] args, Runnable reset,
                      Runnable beforeEach, Supplier<String> check, String checkText, long bytes, String bytesFormula) {
        static boolean hasTwin(String kernel) {
            return kernel.equals("pack") || kernel.equals("reduce");
        }
    }

    // ---- the run ----

    /** Runs every (tokens, kernel) of {@code s} on {@code dev}; prints the table on {@code out}. */
    static Report run(BenchDevice dev, Settings s, PrintStream out) {
        String date = LocalDate.now(ZoneOffset.UTC).toString();
        int sms = dev.multiprocessors();
        out.printf(Locale.ROOT, "kernel benchmark: %s, %d SMs (%s); preset %s, W=%d, tokens %s%n", dev.name(), sms,
                dev.kind(), s.preset(), s.world(), Arrays.toString(s.tokens()));
        out.println("twins: " + dev.twinStatus());
        boolean gpu = dev.kind().equals("gpu");
        out.printf(Locale.ROOT, "method: %s around each launch, %d warm-up + %d timed runs, Java and twin "
                + "interleaved; untimed memset of %d MiB before every run (L2 flush)%n",
                gpu ? "CUDA events" : "wall clock (CPU runner: a dry run, the times mean nothing)", s.warmups(), s.reps(),
                s.flushBytes() >> 20);
        List<Line> lines = new ArrayList<>();
        Buf flush = s.flushBytes() > 0 ? dev.allocate(s.flushBytes()) : null;
        try {
            Runnable flushRun = flush == null ? () -> { } : () -> dev.fill(flush, (byte) 0);
            Stats copy = s.copyBytes() > 0 ? copyBandwidth(dev, s, flushRun) : null;
            if (copy != null) {
                out.printf(Locale.ROOT, "copy baseline: %s of %d MiB: median %.1f us, p90 %.1f us, "
                        + "%.0f GB/s (read + write counted: 2 x %d MiB)%n", copyName(dev.kind()),
                        s.copyBytes() >> 20, copy.medianUs(),
                        copy.p90Us(), copy.gbps(2 * s.copyBytes()), s.copyBytes() >> 20);
            }
            Line base = new Line(null, s.preset(), 0, s.world(), null, null, null, 0, null, copy, s.copyBytes(),
                    s.flushBytes(), s.warmups(), s.reps(), null, null, null, null, null, dev.name(), sms, dev.kind(), date,
                    s.commit(), s.command());
            for (int m : s.tokens()) {
                lines.addAll(runTokens(dev, s, m, base, flushRun));
            }
        } finally {
            if (flush != null) {
                try {
                    dev.free(flush);
                } catch (RuntimeException e) {
                    System.err.println("freeing the flush buffer failed: " + e);
                }
            }
        }
        printTable(out, lines);
        return new Report(lines, s.requireTwins());
    }

    private static Stats copyBandwidth(BenchDevice dev, Settings s, Runnable flush) {
        return Stats.of(CopyBandwidth.samples(dev, s.copyBytes(), s.warmups(), s.reps(), flush));
    }

    /** The copy of the baseline on a device of {@code kind} ("gpu" or "cpu"). */
    private static String copyName(String kind) {
        return kind.equals("gpu") ? CopyBandwidth.GPU_COPY : CopyBandwidth.HOST_COPY;
    }

    private static Line with(Line base, String kernel, int tokens, Grid grid, Stats java, Stats twin, long bytes,
                             String formula, String check, String error, String twinNote, String jr, String tr) {
        return new Line(kernel, base.preset(), tokens, base.world(), grid, java, twin, bytes, formula, base.copy(),
                base.copyBytes(), base.flushBytes(), base.warmups(), base.reps(), check, error, twinNote, jr, tr, base.gpu(),
                base.sms(), base.device(), base.date(), base.commit(), base.command());
    }

    /** The four kernels at M = m: device buffers, inputs, then each kernel in protocol order. */
    static List<Line> runTokens(BenchDevice dev, Settings s, int m, Line base, Runnable flush) {
        List<Line> lines = new ArrayList<>();
        MoeConfig cfg = config(s.preset(), s.world(), m);
        List<Buf> bufs = new ArrayList<>();
        KernelWorkload w = null;
        try {
            w = new KernelWorkload(s.preset(), cfg, s.seed());
            KernelWorkload wl = w;
            java.util.function.LongFunction<Buf> alloc = bytes -> {
                Buf b = dev.allocate(bytes);
                bufs.add(b);
                return b;
            };
            int t = s.threads();
            int y = s.gridY() != null ? s.gridY() : defaultGridY(dev.multiprocessors(), w.w);
            int scatterY = s.scatterGridY() != null ? s.scatterGridY()
                    : s.gridY() != null ? s.gridY() : defaultGridY(dev.multiprocessors(), w.ng);
            int chunks = s.gatherChunks() != null ? s.gatherChunks() : (w.ng * m + 31) / 32;

            // pack
            Buf x = alloc.apply(w.xBytesTotal());
            Buf xScale = alloc.apply(w.xScaleBytes());
            Buf indices = alloc.apply(4L * m * w.k);
            Buf numTokens = alloc.apply(4);
            Buf send = alloc.apply(w.sendBytes());
            Buf sendRows = alloc.apply(4L * w.ng);
            Buf pairLocation = alloc.apply(4L * m * w.k);
            Buf inputReport = alloc.apply(4L * MoeKernels.REPORT_INTS);
            dev.fill(inputReport, (byte) 0); // ids are valid: the report stays empty
            w.uploadPackInputs(dev, x, xScale, indices, numTokens);
            KernelSpec pack = new KernelSpec("pack", new Kernel(MoeKernels.class, "pack"), "pack_twin",
                    Grid.of(w.w, y, t),
                    new Object[] {x, xScale, indices, numTokens, send, sendRows, pairLocation, inputReport, w.xBytes, w.s, w.k,
                        w.l, w.g, w.member, w.rowBytes, m, w.ppr, -1, 1},
                    () -> {
                        dev.fill(send, KernelWorkload.POISON);
                        dev.fill(sendRows, KernelWorkload.POISON);
                        dev.fill(pairLocation, KernelWorkload.POISON);
                    },
                    () -> { },
                    () -> wl.checkPack(dev, send, sendRows, pairLocation),
                    "dispatchSend, sendRows, pairLocation == host reference, bit for bit (whole buffers, poisoned first)",
                    w.packBytes(), KernelWorkload.PACK_BYTES);

            // scatter
            Buf recv = alloc.apply(w.sendBytes());
            Buf signals = alloc.apply(8L * w.ng);
            Buf expertNumTokens = alloc.apply(4L * w.l);
            Buf expertX = alloc.apply(w.expertXBytes());
            Buf expertXScale = alloc.apply(w.expertXScaleBytes());
            Buf expertOrigin = alloc.apply(4L * w.l * w.capacity);
            Buf pairsFromGroup = alloc.apply(4L * w.ng);
            w.uploadScatterInputs(dev, recv, signals);
            KernelSpec scatter = new KernelSpec("scatter", new Kernel(MoeKernels.class, "scatter"), null,
                    Grid.of(w.ng, scatterY, t),
                    new Object[] {recv, signals, expertNumTokens, expertX, expertXScale, expertOrigin, pairsFromGroup,
                        w.xBytes, w.s, w.k, w.rowBytes, m, w.ng, w.ppr},
                    () -> {
                        dev.fill(expertX, KernelWorkload.POISON);
                        dev.fill(expertXScale, KernelWorkload.POISON);
                        dev.fill(expertOrigin, KernelWorkload.POISON);
                        dev.fill(pairsFromGroup, KernelWorkload.POISON);
                        dev.fill(expertNumTokens, (byte) 0);
                    },
                    () -> dev.fill(expertNumTokens, (byte) 0),
                    () -> wl.checkScatter(dev, expertNumTokens, expertX, expertXScale, expertOrigin, pairsFromGroup),
                    "every received (row, pair) in its expert exactly once: counts, origins, token and scale bytes "
                            + "(slot order free)",
                    w.scatterBytes(), KernelWorkload.SCATTER_BYTES);

            // gather
            Buf expertY = alloc.apply(w.expertYBytes());
            Buf combineSend = alloc.apply(w.combineSendBytes());
            KernelSpec gather = new KernelSpec("gather", new Kernel(MoeKernels.class, "gather"), null,
                    Grid.of(w.l, chunks, t),
                    new Object[] {expertY, expertNumTokens, expertOrigin, combineSend, w.yBytes, w.capacity},
                    () -> dev.fill(combineSend, KernelWorkload.POISON),
                    () -> { },
                    () -> wl.checkGather(dev, expertNumTokens, expertOrigin, combineSend),
                    "every received pair's combine row == its expert output row, bit for bit",
                    w.gatherBytes(), KernelWorkload.GATHER_BYTES);

            // reduce
            Buf combineRecv = alloc.apply(w.combineRecvBytes());
            Buf weights = alloc.apply(4L * m * w.k);
            Buf outBuf = alloc.apply(w.outBytesTotal());
            KernelSpec reduce = new KernelSpec("reduce", new Kernel(MoeKernels.class, "reduce"), "reduce_twin",
                    Grid.of(m, t),
                    new Object[] {combineRecv, pairLocation, weights, numTokens, outBuf, w.h, w.k, w.yDtype, w.outDtype},
                    () -> dev.fill(outBuf, KernelWorkload.POISON),
                    () -> { },
                    () -> wl.checkReduce(dev, outBuf),
                    "out == host reference (float32, increasing k, no fma), bit for bit",
                    w.reduceBytes(), KernelWorkload.REDUCE_BYTES);

            boolean scatterGood = false;
            for (String name : KERNELS) {
                if (!s.kernels().contains(name)) {
                    continue;
                }
                Line line;
                switch (name) {
                    case "pack" -> line = measure(dev, s, m, base, pack, flush);
                    case "scatter" -> {
                        line = measure(dev, s, m, base, scatter, flush);
                        scatterGood = line.error() == null;
                    }
                    case "gather" -> {
                        if (!scatterGood) {
                            // gather's input without a working scatter: the state scatter would leave
                            w.uploadScatterState(dev, expertNumTokens, expertOrigin);
                        }
                        w.uploadExpertY(dev, expertY);
                        line = measure(dev, s, m, base, gather, flush);
                    }
                    default -> {
                        w.uploadReduceInputs(dev, combineRecv, pairLocation, weights);
                        line = measure(dev, s, m, base, reduce, flush);
                    }
                }
                lines.add(line);
            }
        } catch (RuntimeException | OutOfMemoryError e) {
            String msg = "failed at M=" + m + ": " + e;
            System.err.println(msg);
            e.printStackTrace();
            Set<String> done = new LinkedHashSet<>();
            lines.forEach(l -> done.add(l.kernel()));
            for (String name : KERNELS) {
                if (s.kernels().contains(name) && !done.contains(name)) {
                    lines.add(with(base, name, m, null, null, null, 0, null, null, msg, null, null, null));
                }
            }
        } finally {
            try {
                for (Buf b : bufs) {
                    dev.free(b);
                }
            } catch (RuntimeException e) {
                System.err.println("freeing the buffers of M=" + m + " failed: " + e);
            }
            if (w != null) {
                w.close();
            }
        }
        return lines;
    }

    /** Checked first run of the Java kernel and of its twin, then the timed runs, then a check of the last output. */
    static Line measure(BenchDevice dev, Settings s, int m, Line base, KernelSpec k, Runnable flush) {
        String jr = dev.resources(k.kernel(), k.grid(), k.args());
        k.reset().run();
        dev.launchChecked(k.kernel(), k.grid(), k.args());
        dev.synchronize();
        String err = k.check().get();
        if (err != null) {
            return with(base, k.name(), m, k.grid(), null, null, k.bytes(), k.bytesFormula(), k.checkText(),
                    "Java kernel output wrong on the first run: " + err, null, jr, null);
        }
        Runnable java = dev.prepare(k.kernel(), k.grid(), k.args());
        Runnable twin = null;
        String twinNote = null;
        String tr = null;
        boolean twinWrong = false;
        if (k.twinEntry() != null) {
            if (!dev.hasTwins()) {
                twinNote = "no twin: " + dev.twinStatus();
            } else {
                try {
                    twin = dev.prepareTwin(k.twinEntry(), k.grid(), k.args());
                    tr = dev.twinResources(k.twinEntry());
                } catch (RuntimeException e) {
                    twinNote = "twin " + k.twinEntry() + " unavailable: " + e.getMessage();
                }
                if (twin != null) {
                    k.reset().run();
                    twin.run();
                    dev.synchronize();
                    String te = k.check().get();
                    if (te != null) {
                        twinNote = "twin " + k.twinEntry() + " output wrong on the first run (not timed): " + te;
                        twin = null;
                        twinWrong = true;
                    } else {
                        twinNote = "twin " + k.twinEntry() + " output == Java kernel output == reference";
                    }
                }
            }
        }
        List<Runnable> works = twin == null ? List.of(java) : List.of(java, twin);
        Runnable setup = () -> {
            flush.run();
            k.beforeEach().run();
        };
        double[][] ms = dev.time(s.warmups(), s.reps(), setup, works);
        String after = k.check().get();
        String error = twinWrong ? "twin output differs from the reference" : null;
        if (after != null) {
            error = "output wrong after the timed runs: " + after;
        }
        Stats js = after == null ? Stats.of(ms[0]) : null;
        Stats ts = twin == null || after != null ? null : Stats.of(ms[1]);
        return with(base, k.name(), m, k.grid(), js, ts, k.bytes(), k.bytesFormula(), k.checkText(), error, twinNote, jr,
                tr);
    }

    // ---- table ----

    static void printTable(PrintStream out, List<Line> lines) {
        out.println();
        out.printf(Locale.ROOT, "%-8s %6s %-12s %10s %10s %10s %10s %7s %12s %9s %9s  %s%n", "kernel", "tokens", "grid",
                "java med", "java p90", "twin med", "twin p90", "ratio", "bytes", "java GB/s", "copy GB/s", "check");
        out.printf(Locale.ROOT, "%-8s %6s %-12s %10s %10s %10s %10s %7s %12s %9s %9s%n", "", "", "", "(us)", "(us)", "(us)",
                "(us)", "j/twin", "", "", "(2x size)");
        for (Line l : lines) {
            String grid = l.grid() == null ? "-" : l.grid().blocksX() + "x" + l.grid().blocksY() + "x" + l.grid().threads();
            out.printf(Locale.ROOT, "%-8s %6d %-12s %10s %10s %10s %10s %7s %12d %9s %9s  %s%n", l.kernel(), l.tokens(),
                    grid, us(l.java() == null ? null : l.java().medianUs()), us(l.java() == null ? null : l.java().p90Us()),
                    us(l.twin() == null ? null : l.twin().medianUs()), us(l.twin() == null ? null : l.twin().p90Us()),
                    l.ratio() == null ? "-" : String.format(Locale.ROOT, "%.2f", l.ratio()), l.bytes(),
                    l.java() == null ? "-" : String.format(Locale.ROOT, "%.0f", l.java().gbps(l.bytes())),
                    l.copyGBps() == null ? "-" : String.format(Locale.ROOT, "%.0f", l.copyGBps()),
                    l.error() != null ? "FAILED" : "ok");
        }
        for (Line l : lines) {
            if (l.error() != null) {
                out.println(l.kernel() + " M=" + l.tokens() + ": " + l.error());
            }
            if (l.twinNote() != null && l.twin() == null && KernelSpec.hasTwin(l.kernel())) {
                out.println(l.kernel() + " M=" + l.tokens() + ": " + l.twinNote());
            }
        }
        Set<String> shown = new LinkedHashSet<>();
        for (Line l : lines) {
            if (l.javaResources() != null && shown.add(l.kernel())) {
                out.println(l.kernel() + ": Java kernel " + l.javaResources()
                        + (l.twinResources() != null ? "; twin " + l.twinResources() : ""));
            }
        }
        out.println("bytes = bytes read + written by the kernel:");
        out.println("  pack:    " + KernelWorkload.PACK_BYTES);
        out.println("  scatter: " + KernelWorkload.SCATTER_BYTES);
        out.println("  gather:  " + KernelWorkload.GATHER_BYTES);
        out.println("  reduce:  " + KernelWorkload.REDUCE_BYTES);
    }

    private static String us(Double v) {
        return v == null ? "-" : String.format(Locale.ROOT, "%.2f", v);
    }
}
