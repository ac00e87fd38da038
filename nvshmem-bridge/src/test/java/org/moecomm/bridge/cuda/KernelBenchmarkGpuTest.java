package org.moecomm.bridge.cuda;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.moe.MoeKernels;
import org.moecomm.kernels.testkernels.CopyKernels;

/**
 * Kernel timings on the GPU (tag {@code gpu-bench}, run by the benchmark section of
 * scripts/gpu-check.sh, not by the GPU tests): a copy baseline (driver memcpy versus the compiled
 * 16-byte copy kernel) and the four MoE kernels at a DeepSeek-V3-like shape on one rank
 * (W = 8, 256 experts, top-8, H = 7168 bf16, 128 tokens). Prints one line per kernel and, when
 * the system property {@code moecomm.bench.dir} names a folder, writes {@code kernels.jsonl} there.
 */
@Tag("gpu-bench")
class KernelBenchmarkGpuTest {
    private static final int WARMUPS = 5;
    private static final int REPS = 50;

    private static GpuKernelRunner gpu;
    private static final List<String> results = new ArrayList<>();

    @BeforeAll
    static void open() {
        GpuTestSupport.assumeGpu();
        gpu = new GpuKernelRunner();
    }

    @AfterAll
    static void close() throws IOException {
        if (gpu != null) {
            gpu.close();
        }
        String dir = System.getProperty("moecomm.bench.dir");
        if (dir != null && !results.isEmpty()) {
            Files.createDirectories(Path.of(dir));
            Files.write(Path.of(dir, "kernels.jsonl"), results);
        }
    }

    private static void report(GpuKernelTimer.Timing t, long bytes, String shape) {
        System.out.println(t + String.format(Locale.ROOT, ", %.0f GB/s (%d bytes moved) [%s]", t.gbPerSecond(bytes), bytes, shape));
        results.add(String.format(Locale.ROOT,
                "{\"name\":\"%s\",\"shape\":\"%s\",\"median_us\":%.3f,\"min_us\":%.3f,\"mean_us\":%.3f,\"runs\":%d,\"bytes\":%d,\"gb_per_s\":%.1f}",
                t.name(), shape, t.median() * 1e3, t.min() * 1e3, t.mean() * 1e3, t.samples().length, bytes,
                t.gbPerSecond(bytes)));
    }

    @Test
    void copyBaseline() {
        long bytes = 1L << 30;
        Buf src = gpu.allocate(bytes);
        Buf dst = gpu.allocate(bytes);
        gpu.fill(src, (byte) 1);
        GpuKernelTimer timer = new GpuKernelTimer(gpu.stream());
        report(timer.time("cuMemcpyDtoDAsync", WARMUPS, 20, () -> gpu.copy(dst, src)), 2 * bytes, "1 GiB");
        Kernel copy16 = new Kernel(CopyKernels.class, "copy16");
        int sms = gpu.context().multiprocessorCount();
        for (int blocksPerSm : new int[] {4, 8, 16}) {
            Grid grid = Grid.of(sms * blocksPerSm, 256);
            report(timer.time("CopyKernels.copy16 " + grid.blocksX() + "x256", WARMUPS, 20,
                    () -> gpu.launch(copy16, grid, dst, src, bytes / 16)), 2 * bytes, "1 GiB");
        }
        gpu.free(src);
        gpu.free(dst);
    }

    @Test
    void moeKernelsDeepSeekShape() {
        int w = 8;
        int l = 32;
        int k = 8;
        int h = 7168;
        int m = 128;
        int kd = Math.min(k, l);
        int ng = w;
        int xBytes = 2 * h;
        int rowBytes = xBytes + ((4 * (2 + k) + 15) & -16);
        int maxPairs = m * kd;
        int cap = ng * m;
        int t = MoeKernels.THREADS;
        String shape = "W=8 G=1 E=256 K=8 H=7168 bf16 M=m=128";

        SplittableRandom r = new SplittableRandom(1);
        int[] indices = new int[m * k];
        for (int i = 0; i < m; i++) {
            int[] experts = r.ints(0, w * l).distinct().limit(k).toArray();
            System.arraycopy(experts, 0, indices, i * k, k);
        }
        float[] weights = new float[m * k];
        for (int i = 0; i < weights.length; i++) {
            weights[i] = (float) r.nextDouble();
        }
        Buf x = gpu.allocate((long) m * xBytes);
        Buf xScale = gpu.allocate(16);
        Buf idx = gpu.allocate(4L * m * k);
        Buf numTokens = gpu.allocate(4);
        Buf send = gpu.allocate((long) ng * m * rowBytes);
        Buf sendRows = gpu.allocate(4L * ng);
        Buf pairLocation = gpu.allocate(4L * m * k);
        Buf inputReport = gpu.allocate(4L * MoeKernels.REPORT_INTS);
        gpu.fill(inputReport, (byte) 0);
        Buf signals = gpu.allocate(8L * ng);
        Buf expertNumTokens = gpu.allocate(4L * l);
        Buf expertX = gpu.allocate((long) l * cap * xBytes);
        Buf expertXScale = gpu.allocate(16);
        Buf expertOrigin = gpu.allocate(4L * l * cap);
        Buf pairsFromGroup = gpu.allocate(4L * ng);
        Buf combine = gpu.allocate((long) ng * maxPairs * xBytes);
        Buf w8 = gpu.allocate(4L * m * k);
        Buf out = gpu.allocate(2L * m * h);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment hx = arena.allocate((long) m * xBytes);
            for (long i = 0; i < hx.byteSize(); i += 8) {
                hx.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong() & 0x3f7f3f7f3f7f3f7fL);
            }
            gpu.upload(x, hx);
            gpu.upload(idx, MemorySegment.ofArray(indices));
            gpu.upload(numTokens, MemorySegment.ofArray(new int[] {m}));
            gpu.upload(w8, MemorySegment.ofArray(weights));
        }
        GpuKernelTimer timer = new GpuKernelTimer(gpu.stream());
        Kernel pack = new Kernel(MoeKernels.class, "pack");
        Kernel scatter = new Kernel(MoeKernels.class, "scatter");
        Kernel gather = new Kernel(MoeKernels.class, "gather");
        Kernel reduce = new Kernel(MoeKernels.class, "reduce");

        long pairs = (long) m * k;
        GpuKernelTimer.Timing tp = timer.time("MoeKernels.pack", WARMUPS, REPS, () -> gpu.launch(pack, Grid.of(w, t),
                x, xScale, idx, numTokens, send, sendRows, pairLocation, inputReport, xBytes, 0, k, l, 1, 0, rowBytes, m,
                maxPairs, -1, 1));
        // Loop the send area back as if every group had sent it: signals = (1 << 32) | rows.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(4L * ng);
            gpu.download(rows, sendRows);
            long[] sig = new long[ng];
            long totalRows = 0;
            for (int g = 0; g < ng; g++) {
                sig[g] = (1L << 32) | rows.getAtIndex(ValueLayout.JAVA_INT, g);
                totalRows += rows.getAtIndex(ValueLayout.JAVA_INT, g);
            }
            report(tp, (long) m * xBytes + totalRows * rowBytes, shape); // tokens read once + rows written
            gpu.upload(signals, MemorySegment.ofArray(sig));
            GpuKernelTimer.Timing ts = timer.time("MoeKernels.scatter", WARMUPS, REPS,
                    () -> gpu.fill(expertNumTokens, (byte) 0),
                    () -> gpu.launch(scatter, Grid.of(ng, t), send, signals, expertNumTokens, expertX, expertXScale,
                            expertOrigin, pairsFromGroup, xBytes, 0, k, rowBytes, m, ng, maxPairs));
            report(ts, totalRows * xBytes + pairs * xBytes, shape);
        }
        for (int chunks : new int[] {1, 4, 16}) {
            GpuKernelTimer.Timing tg = timer.time("MoeKernels.gather chunks=" + chunks, WARMUPS, REPS,
                    () -> gpu.launch(gather, Grid.of(l, chunks, t), expertX, expertNumTokens, expertOrigin, combine,
                            xBytes, cap));
            report(tg, 2 * pairs * xBytes, shape);
        }
        GpuKernelTimer.Timing tr = timer.time("MoeKernels.reduce", WARMUPS, REPS,
                () -> gpu.launch(reduce, Grid.of(m, t), combine, pairLocation, w8, numTokens, out, h, k,
                        MoeKernels.DTYPE_BF16, MoeKernels.DTYPE_BF16));
        report(tr, pairs * xBytes + 2L * m * h, shape);
    }
}
