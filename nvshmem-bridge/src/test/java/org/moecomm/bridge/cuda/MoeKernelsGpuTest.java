package org.moecomm.bridge.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Numerics;
import org.moecomm.kernels.cpu.CpuKernelRunner;
import org.moecomm.kernels.moe.MoeKernels;
import org.moecomm.kernels.moe.MoeShape;
import org.moecomm.kernels.moe.PackQuantizationTest;
import org.moecomm.kernels.moe.QuantizingPack;

/**
 * The library kernels ({@link MoeKernels}: pack, scatter, gather, reduce; buffers as in
 * docs/protocol.md) compiled to PTX and run on the GPU, against the CPU runner on the same random
 * inputs, bit for bit. Scatter's slot order depends on which thread wins each atomic, so its
 * expert rows are compared after sorting each expert's rows by origin (the order is the
 * backend's choice by the protocol); everything else must match exactly.
 */
@Tag("gpu")
class MoeKernelsGpuTest {
    private static final int T = MoeKernels.THREADS;

    private static GpuKernelRunner gpu;
    private static KernelComparison comparison;

    @BeforeAll
    static void open() {
        GpuTestSupport.assumeGpu();
        gpu = new GpuKernelRunner();
        comparison = new KernelComparison(gpu, new CpuKernelRunner());
    }

    @AfterAll
    static void close() {
        if (gpu != null) {
            gpu.close();
        }
    }



    // ---- pack ----

    /** Every case of this class (the CPU-only check of the cases runs them too). */
    static List<KernelCase> allCases() {
        List<KernelCase> all = new ArrayList<>();
        all.addAll(packCases());
        all.addAll(quantizingPackCases());
        all.addAll(scatterCases());
        all.addAll(gatherCases());
        all.addAll(reduceCases());
        return all;
    }

    @Test
    void pack() {
        packCases().forEach(comparison::check);
    }

    static List<KernelCase> packCases() {
        return List.of(
                packCase(new MoeShape(4, 2, 4, 4, 256, 50, false), 37, 1, T, 1),
                packCase(new MoeShape(8, 1, 2, 6, 512, 300, true), 290, 0, T, 2),
                packCase(new MoeShape(4, 2, 8, 8, 128, 70, true), 70, 0, 96, 3),
                packCase(new MoeShape(2, 1, 4, 2, 64, 20, false), 0, 0, T, 4),
                packCase(new MoeShape(4, 1, 8, 4, 256, 64, false), 50, 0, T, 5, 33 * 4 + 1, true),
                packCase(new MoeShape(4, 2, 8, 8, 128, 70, true), 70, 1, 96, 6, 69 * 8 + 7, false),
                packCase(new MoeShape(2, 1, 4, 2, 64, 20, false), 27, 0, T, 7, -1, false)); // count > M: reported
    }

    private static KernelCase packCase(MoeShape c, int m, int member, int threads, long seed) {
        return packCase(c, m, member, threads, seed, -1, seed % 2 == 0);
    }

    /**
     * pack with the ids checked: valid ids but, when {@code badAt >= 0}, one out of range there
     * (the report is then the same whichever thread finds it); m given as an int when
     * {@code fixed} (the count buffer starts poisoned and pack writes m into it). A bad id or
     * m over M must be reported ({@link KernelCase#reportsInto}).
     */
    private static KernelCase packCase(MoeShape c, int m, int member, int threads, long seed, int badAt, boolean fixed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] indices = randomIndices(c, r);
        if (badAt >= 0) {
            indices[badAt] = c.e() + 3;
        }
        float[] scales = new float[Math.max(1, c.m() * c.s())];
        for (int i = 0; i < scales.length; i++) {
            scales[i] = (float) (0.5 + 1.5 * r.nextDouble());
        }
        KernelCase k = KernelCase.of(MoeKernels.class, "pack", Grid.of(c.w(), threads))
                .label(c + " m=" + m + (fixed ? " (m as an int)" : "") + (badAt >= 0 ? " bad id at " + badAt : ""))
                .buf("x", TestData.bytes(c.m() * c.xBytes(), seed * 31))
                .floats("xScale", scales)
                .ints("indices", indices);
        k = fixed ? k.out("numTokens", 4) : k.ints("numTokens", m);
        long sendBytes = (long) c.ng() * c.m() * c.rowBytes();
        k = m == 0 ? k.unwritten("dispatchSend", sendBytes) : k.out("dispatchSend", sendBytes);
        k = k.out("sendRows", 4L * c.ng());
        long locationBytes = 4L * c.m() * c.k();
        k = (m == 0 ? k.unwritten("pairLocation", locationBytes) : k.out("pairLocation", locationBytes))
                .ints("inputReport", new int[MoeKernels.REPORT_INTS])
                .arg(c.xBytes()).arg(c.s()).arg(c.k()).arg(c.l()).arg(c.g()).arg(member).arg(c.rowBytes())
                .arg(c.m()).arg(c.maxPairs()).arg(fixed ? m : -1).arg(1);
        return badAt >= 0 || m > c.m() ? k.reportsInto("inputReport") : k;
    }

    /** pack's quantising copy (bf16 or fp16 tokens to fp8 codes and block scales), through {@link QuantizingPack}. */
    @Test
    void quantizingPack() {
        quantizingPackCases().forEach(comparison::check);
    }

    static List<KernelCase> quantizingPackCases() {
        return List.of(
                quantizingPackCase(new MoeShape(4, 1, 8, 8, 7168, 40, true), 40, 0, T, 2, false, 11),
                quantizingPackCase(new MoeShape(4, 2, 4, 4, 384, 300, true), 290, 1, T, 3, true, 12),
                quantizingPackCase(new MoeShape(2, 1, 4, 2, 256, 30, true), 30, 0, 100, 1, false, 13),
                quantizingPackCase(new MoeShape(2, 1, 4, 2, 128, 12, true), 11, 0, 7, 2, true, 14));
    }

    /**
     * {@link QuantizingPack} on tokens of random 16-bit patterns and edge blocks
     * ({@code PackQuantizationTest.edgeTokens}: NaNs, infinities, subnormals, zeros of both signs).
     */
    private static KernelCase quantizingPackCase(MoeShape c, int m, int member, int threads, int blocksY,
                                                 boolean fp16, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] indices = randomIndices(c, r);
        return KernelCase.of(QuantizingPack.class, "pack", Grid.of(c.w(), blocksY, threads))
                .label(c + " m=" + m + " threads=" + threads + " y=" + blocksY + (fp16 ? " fp16" : " bf16"))
                .shorts("x", PackQuantizationTest.edgeTokens(c.m() * c.h(), fp16, r))
                .ints("indices", indices)
                .ints("numTokens", m)
                .out("dispatchSend", (long) c.ng() * c.m() * c.rowBytes())
                .out("sendRows", 4L * c.ng())
                .out("pairLocation", 4L * c.m() * c.k())
                .ints("inputReport", new int[MoeKernels.REPORT_INTS])
                .arg(c.h()).arg(c.k()).arg(c.l()).arg(c.g()).arg(member).arg(c.rowBytes()).arg(c.m())
                .arg(c.maxPairs()).arg(fp16 ? MoeKernels.DTYPE_FP16 : MoeKernels.DTYPE_BF16);
    }

    /** K distinct experts per token of M, about one slot in seven -1. */
    private static int[] randomIndices(MoeShape c, SplittableRandom r) {
        int[] indices = new int[c.m() * c.k()];
        for (int t = 0; t < c.m(); t++) {
            int[] experts = r.ints(0, c.e()).distinct().limit(c.k()).toArray();
            for (int k = 0; k < c.k(); k++) {
                indices[t * c.k() + k] = r.nextInt(7) == 0 ? -1 : experts[k];
            }
        }
        return indices;
    }

    // ---- scatter ----

    @Test
    void scatter() {
        scatterCases().forEach(comparison::check);
    }

    static List<KernelCase> scatterCases() {
        return List.of(
                scatterCase(new MoeShape(4, 2, 4, 4, 256, 50, false), T, 5),
                scatterCase(new MoeShape(8, 1, 3, 8, 512, 120, true), T, 6),
                scatterCase(new MoeShape(4, 1, 8, 2, 128, 40, true), 64, 7));
    }

    private static KernelCase scatterCase(MoeShape c, int threads, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int ng = c.ng();
        int rowBytes = c.rowBytes();
        MemorySegment recv = MemorySegment.ofArray(TestData.bytes(ng * c.m() * rowBytes, seed * 17));
        long[] signals = new long[ng];
        int metaOffset = MoeShape.align16(c.xBytes()) + MoeShape.align16(4 * c.s());
        for (int g = 0; g < ng; g++) {
            int rows = g == ng - 1 ? 0 : r.nextInt(c.m() / 2, c.m() + 1); // one group sends nothing
            signals[g] = (5L << 32) | rows;
            int pairBase = 0;
            for (int j = 0; j < rows; j++) {
                long row = ((long) g * c.m() + j) * rowBytes;
                for (int s = 0; s < c.s(); s++) {
                    recv.set(ValueLayout.JAVA_FLOAT_UNALIGNED, row + MoeShape.align16(c.xBytes()) + 4L * s,
                            (float) (0.5 + r.nextDouble()));
                }
                int pairs = r.nextInt(1, c.kd() + 1);
                int[] locals = r.ints(0, c.l()).distinct().limit(pairs).sorted().toArray();
                long meta = row + metaOffset;
                for (int i = 0; i < MoeShape.align16(4 * (2 + c.k())) / 4; i++) {
                    recv.set(ValueLayout.JAVA_INT_UNALIGNED, meta + 4L * i, 0);
                }
                recv.set(ValueLayout.JAVA_INT_UNALIGNED, meta, pairBase);
                recv.set(ValueLayout.JAVA_INT_UNALIGNED, meta + 4, pairs);
                for (int p = 0; p < pairs; p++) {
                    recv.set(ValueLayout.JAVA_INT_UNALIGNED, meta + 8 + 4L * p, locals[p]);
                }
                pairBase += pairs;
            }
        }
        int cap = c.capacity();
        return KernelCase.of(MoeKernels.class, "scatter", Grid.of(ng, threads)).label(c.toString())
                .buf("dispatchRecv", KernelCase.toBytes(recv))
                .longs("dispatchSignals", signals)
                .zeros("expertNumTokens", 4L * c.l())
                .out("expertX", (long) c.l() * cap * c.xBytes())
                .out("expertXScale", 4L * c.l() * cap * c.s())
                .out("expertOrigin", 4L * c.l() * cap)
                .out("pairsFromGroup", 4L * ng)
                .arg(c.xBytes()).arg(c.s()).arg(c.k()).arg(rowBytes).arg(c.m()).arg(ng).arg(c.maxPairs())
                .normalize(results -> sortExpertRowsByOrigin(c, results));
    }

    /** Each expert's filled slots, reordered by origin (the slot order is free); untouched slots stay as they are. */
    static void sortExpertRowsByOrigin(MoeShape c, java.util.Map<String, MemorySegment> results) {
        MemorySegment counts = results.get("expertNumTokens");
        MemorySegment x = results.get("expertX");
        MemorySegment scale = results.get("expertXScale");
        MemorySegment origin = results.get("expertOrigin");
        int cap = c.capacity();
        int xb = c.xBytes();
        int sb = 4 * c.s();
        for (int l = 0; l < c.l(); l++) {
            int n = Math.min(Math.max(counts.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, l), 0), cap);
            record Row(int origin, byte[] x, byte[] scale) {
            }
            List<Row> rows = new ArrayList<>();
            for (int s = 0; s < n; s++) {
                long slot = (long) l * cap + s;
                rows.add(new Row(origin.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, slot),
                        x.asSlice(slot * xb, xb).toArray(ValueLayout.JAVA_BYTE),
                        sb == 0 ? new byte[0] : scale.asSlice(slot * sb, sb).toArray(ValueLayout.JAVA_BYTE)));
            }
            rows.sort(Comparator.comparingInt(Row::origin).thenComparing(Row::x, Arrays::compare));
            for (int s = 0; s < n; s++) {
                long slot = (long) l * cap + s;
                Row row = rows.get(s);
                origin.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, slot, row.origin());
                MemorySegment.copy(row.x(), 0, x, ValueLayout.JAVA_BYTE, slot * xb, xb);
                if (sb > 0) {
                    MemorySegment.copy(row.scale(), 0, scale, ValueLayout.JAVA_BYTE, slot * sb, sb);
                }
            }
        }
    }

    // ---- gather ----

    @Test
    void gather() {
        gatherCases().forEach(comparison::check);
    }

    static List<KernelCase> gatherCases() {
        return List.of(
                gatherCase(4, 2, 40, 3, 384, 3, T, 8),
                gatherCase(3, 4, 64, 2, 2048, 1, T, 9),
                gatherCase(8, 1, 30, 4, 128, 4, 64, 10));
    }

    private static KernelCase gatherCase(int l, int ng, int m, int kd, int h, int chunks, int threads, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int yBytes = 2 * h;
        int cap = ng * m;
        int destinations = ng * m * kd;
        int[] perm = r.ints(0, destinations).distinct().limit(destinations).toArray();
        int[] counts = new int[l];
        int[] origin = new int[l * cap];
        Arrays.fill(origin, -1);
        int next = 0;
        for (int e = 0; e < l; e++) {
            counts[e] = Math.min(r.nextInt(0, Math.min(cap, destinations / l) + 1), destinations - next);
            for (int s = 0; s < counts[e]; s++) {
                origin[e * cap + s] = perm[next++];
            }
        }
        return KernelCase.of(MoeKernels.class, "gather", Grid.of(l, chunks, threads))
                .label("L=" + l + " NG=" + ng + " M=" + m + " Kd=" + kd + " H=" + h)
                .buf("expertY", TestData.bytes(l * cap * yBytes, seed * 13))
                .ints("expertNumTokens", counts)
                .ints("expertOrigin", origin)
                .out("combineSend", (long) destinations * yBytes)
                .arg(yBytes).arg(cap);
    }

    // ---- reduce ----

    @Test
    void reduce() {
        reduceCases().forEach(comparison::check);
    }

    static List<KernelCase> reduceCases() {
        List<KernelCase> cases = new ArrayList<>();
        int[][] dtypes = {
            {MoeKernels.DTYPE_BF16, MoeKernels.DTYPE_BF16},
            {MoeKernels.DTYPE_FP16, MoeKernels.DTYPE_FP16},
            {MoeKernels.DTYPE_FP32, MoeKernels.DTYPE_FP32},
            {MoeKernels.DTYPE_BF16, MoeKernels.DTYPE_FP32},
            {MoeKernels.DTYPE_FP32, MoeKernels.DTYPE_BF16},
        };
        long seed = 11;
        for (int[] d : dtypes) {
            cases.add(reduceCase(4, 64, 8, 3, 512, 50, d[0], d[1], T, seed++));
        }
        cases.add(reduceCase(2, 33, 4, 4, 7168, 33, MoeKernels.DTYPE_BF16, MoeKernels.DTYPE_BF16, T, seed++));
        cases.add(reduceCase(8, 16, 6, 2, 96, 16, MoeKernels.DTYPE_FP16, MoeKernels.DTYPE_BF16, 40, seed));
        return cases;
    }

    static int bytesOf(int dtype) {
        return dtype == MoeKernels.DTYPE_FP32 ? 4 : dtype == MoeKernels.DTYPE_FP8_E4M3 ? 1 : 2;
    }

    private static KernelCase reduceCase(int w, int m, int k, int kd, int h, int numTokens, int yDtype, int outDtype, int threads,
            long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int rows = w * m * kd;
        int yb = bytesOf(yDtype);
        MemorySegment y = MemorySegment.ofArray(new byte[rows * h * yb]);
        for (long i = 0; i < (long) rows * h; i++) {
            float v = (float) (r.nextDouble() * 8 - 4);
            switch (yDtype) {
                case MoeKernels.DTYPE_BF16 -> y.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i, Numerics.floatToBf16(v));
                case MoeKernels.DTYPE_FP16 -> y.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i, Numerics.floatToFp16(v));
                default -> y.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * i, v);
            }
        }
        int[] location = new int[m * k];
        float[] weights = new float[m * k];
        for (int i = 0; i < m * k; i++) {
            location[i] = r.nextInt(6) == 0 ? -1 : r.nextInt(rows);
            weights[i] = (float) r.nextDouble();
        }
        return KernelCase.of(MoeKernels.class, "reduce", Grid.of(m, threads))
                .label("W=" + w + " M=" + m + " K=" + k + " H=" + h + " m=" + numTokens + " y=" + yDtype + " out=" + outDtype)
                .buf("combineRecv", KernelCase.toBytes(y))
                .ints("pairLocation", location)
                .floats("weights", weights)
                .ints("numTokens", numTokens)
                .out("out", (long) m * h * bytesOf(outDtype))
                .arg(h).arg(k).arg(yDtype).arg(outDtype);
    }
}
