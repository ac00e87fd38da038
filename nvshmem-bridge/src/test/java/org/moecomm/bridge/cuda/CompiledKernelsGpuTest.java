package org.moecomm.bridge.cuda;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.cpu.CpuKernelRunner;
import org.moecomm.kernels.testkernels.ArithmeticKernels;
import org.moecomm.kernels.testkernels.AtomicKernels;
import org.moecomm.kernels.testkernels.ControlFlowKernels;
import org.moecomm.kernels.testkernels.ConversionKernels;
import org.moecomm.kernels.testkernels.CopyKernels;
import org.moecomm.kernels.testkernels.IndexKernels;
import org.moecomm.kernels.testkernels.SharedMemoryKernels;

/**
 * Every compiler test kernel (package {@code org.moecomm.kernels.testkernels} of the kernels
 * test jar) compiled to PTX and run on the GPU, against the CPU runner on the same random inputs,
 * bit for bit. Kernels are discovered on the class path: one without a case here fails by name.
 */
@Tag("gpu")
class CompiledKernelsGpuTest {
    static final String TEST_KERNELS = "org.moecomm.kernels.testkernels";
    private static final int T = 256;

    private static GpuKernelRunner gpu;
    private static CpuKernelRunner cpu;
    private static KernelComparison comparison;

    @BeforeAll
    static void open() {
        GpuTestSupport.assumeGpu();
        gpu = new GpuKernelRunner();
        cpu = new CpuKernelRunner();
        comparison = new KernelComparison(gpu, cpu);
        System.out.println("comparing on " + gpu.context());
    }

    @AfterAll
    static void close() {
        if (gpu != null) {
            gpu.close();
        }
    }

    static Grid cover(int n, int threads) {
        return Grid.of((n + threads - 1) / threads, threads);
    }

    @TestFactory
    Stream<DynamicTest> everyTestKernelAgreesWithTheCpuRunner() {
        List<Kernel> kernels = KernelCatalog.kernelsIn(TEST_KERNELS);
        assertFalse(kernels.isEmpty(), "no kernels found in " + TEST_KERNELS + " (is the kernels test jar on the class path?)");
        Map<String, Supplier<List<KernelCase>>> cases = cases();
        List<DynamicTest> tests = new ArrayList<>();
        for (Kernel k : kernels) {
            Supplier<List<KernelCase>> s = cases.get(k.toString());
            tests.add(DynamicTest.dynamicTest(k.toString(), () -> {
                if (s == null) {
                    fail("no GPU comparison case for test kernel " + k + ": add one to CompiledKernelsGpuTest.cases()");
                }
                for (KernelCase c : s.get()) {
                    comparison.check(c);
                }
            }));
        }
        return tests.stream();
    }

    @Test
    void bridgeKernels() {
        bridgeCases().forEach(comparison::check);
    }

    static List<KernelCase> bridgeCases() {
        int n = 70_001;
        return List.of(KernelCase.of(BridgeTestKernels.class, "fill", cover(n, T)).out("out", 4L * n).arg(n).arg(-17),
                KernelCase.of(BridgeTestKernels.class, "axpyCount", cover(n, 128))
                        .floats("x", TestData.finiteFloats(n, 100, 1)).floats("y", TestData.finiteFloats(n, 100, 2))
                        .zeros("count", 4).arg(0.731f).arg(n));
    }

    // ---- cases, keyed by "Class.kernel" ----

    static Map<String, Supplier<List<KernelCase>>> cases() {
        Map<String, Supplier<List<KernelCase>>> m = new LinkedHashMap<>();
        arithmetic(m);
        atomics(m);
        controlFlow(m);
        conversions(m);
        copies(m);
        indexing(m);
        sharedMemory(m);
        return m;
    }

    private static void put(Map<String, Supplier<List<KernelCase>>> m, Class<?> owner, String name,
            Supplier<List<KernelCase>> s) {
        m.put(owner.getSimpleName() + "." + name, s);
    }

    private static void arithmetic(Map<String, Supplier<List<KernelCase>>> m) {
        int n = 20_000;
        Class<?> c = ArithmeticKernels.class;
        put(m, c, "intOps", () -> List.of(KernelCase.of(c, "intOps", cover(n, T))
                .ints("a", TestData.ints(n, 11)).ints("b", TestData.ints(n, 12))
                .out("out", 4L * n * ArithmeticKernels.INT_RESULTS).arg(n)));
        put(m, c, "longOps", () -> List.of(KernelCase.of(c, "longOps", cover(n, T))
                .longs("a", TestData.longs(n, 13)).longs("b", TestData.longs(n, 14))
                .out("out", 8L * n * ArithmeticKernels.LONG_RESULTS).arg(n)));
        put(m, c, "constantDivisions", () -> List.of(KernelCase.of(c, "constantDivisions", cover(n, T))
                .ints("ints", TestData.ints(n, 48)).longs("longs", TestData.longs(n, 49))
                .out("intOut", 4L * n * ArithmeticKernels.INT_CONSTANT_DIVISION_RESULTS)
                .out("longOut", 8L * n * ArithmeticKernels.LONG_CONSTANT_DIVISION_RESULTS).arg(n)));
        put(m, c, "floatOps", () -> List.of(KernelCase.of(c, "floatOps", cover(n, T))
                .floats("a", TestData.floats(n, 15)).floats("b", TestData.floats(n, 16))
                .out("out", 4L * n * ArithmeticKernels.FLOAT_RESULTS).arg(n).floatNaNsEqual("out")));
        put(m, c, "doubleOps", () -> List.of(KernelCase.of(c, "doubleOps", cover(n, T))
                .doubles("a", TestData.doubles(n, 17)).doubles("b", TestData.doubles(n, 18))
                .out("out", 8L * n * ArithmeticKernels.DOUBLE_RESULTS).arg(n).doubleNaNsEqual("out")));
        put(m, c, "conversions", () -> List.of(KernelCase.of(c, "conversions", cover(n, 128))
                .ints("ints", TestData.ints(n, 19)).longs("longs", TestData.longs(n, 20))
                .floats("floats", TestData.floats(n, 21)).doubles("doubles", TestData.doubles(n, 22))
                .out("out", 8L * n * 16).arg(n)
                // slot 8 is a double widened from a float: NaN payloads may differ
                .normalize("out", s -> canonicalDoubleNaNs(s, 16, 8))));
        put(m, c, "narrowings", () -> List.of(KernelCase.of(c, "narrowings", cover(n, T))
                .ints("ints", TestData.ints(n, 46)).longs("longs", TestData.longs(n, 47))
                .out("out", 4L * n * ArithmeticKernels.NARROW_RESULTS).arg(n)));
    }

    private static void atomics(Map<String, Supplier<List<KernelCase>>> m) {
        Class<?> c = AtomicKernels.class;
        put(m, c, "claimSlots", () -> {
            int n = 100_000;
            return List.of(KernelCase.of(c, "claimSlots", cover(n, T)).zeros("counter", 4).zeros("marks", 4L * n).arg(n));
        });
        put(m, c, "bucketClaims", () -> {
            int n = 50_000;
            int buckets = 37;
            int capacity = 1000;
            return List.of(KernelCase.of(c, "bucketClaims", cover(n, T)).zeros("counters", 4L * buckets)
                    .zeros("marks", 4L * buckets * capacity).arg(n).arg(buckets).arg(capacity));
        });
        put(m, c, "casIncrement", () -> {
            int n = 20_000;
            return List.of(KernelCase.of(c, "casIncrement", cover(n, T)).zeros("counter", 4).arg(n));
        });
        put(m, c, "sharedHistogram", () -> {
            int n = 200_000;
            return List.of(
                    KernelCase.of(c, "sharedHistogram", Grid.of(64, T)).ints("values", TestData.ints(n, 23))
                            .zeros("hist", 4 * 100).arg(n).arg(100),
                    KernelCase.of(c, "sharedHistogram", Grid.of(7, 1000)).ints("values", TestData.ints(n, 24))
                            .zeros("hist", 4 * 256).arg(n).arg(256));
        });
        put(m, c, "lastBlockSum", () -> {
            int n = 100_000;
            int blocks = 40;
            return List.of(KernelCase.of(c, "lastBlockSum", Grid.of(blocks, T)).ints("values", TestData.ints(n, 25))
                    .out("partials", 4L * blocks).zeros("counter", 4).out("total", 4).arg(n));
        });
    }

    private static void controlFlow(Map<String, Supplier<List<KernelCase>>> m) {
        Class<?> c = ControlFlowKernels.class;
        put(m, c, "nestedLoops", () -> {
            int n = 5000;
            return List.of(KernelCase.of(c, "nestedLoops", cover(n, T)).out("out", 4L * n).arg(n).arg(40),
                    KernelCase.of(c, "nestedLoops", cover(n, 64)).out("out", 4L * n).arg(n).arg(0));
        });
        put(m, c, "earlyExit", () -> {
            int n = 3000;
            int cols = 50;
            return List.of(KernelCase.of(c, "earlyExit", cover(n, T)).ints("data", TestData.intsIn(n * cols, -5, 1000, 26))
                    .out("out", 4L * n).arg(n).arg(cols));
        });
        put(m, c, "switches", () -> {
            int n = 10_000;
            int[] in = TestData.ints(n, 27);
            int[] specials = {-1000, 7, 100000, Integer.MIN_VALUE, 0, 1, 2, 3, 4, 5, 6};
            SplittableRandom r = new SplittableRandom(28);
            for (int i = 0; i < n; i += 2) {
                in[i] = specials[r.nextInt(specials.length)];
            }
            return List.of(KernelCase.of(c, "switches", cover(n, T)).ints("in", in).out("out", 4L * n).arg(n));
        });
        put(m, c, "collatz", () -> {
            int n = 20_000;
            return List.of(KernelCase.of(c, "collatz", cover(n, T)).ints("in", TestData.intsIn(n, 1, 1_000_000, 29))
                    .out("out", 4L * n).arg(n));
        });
        put(m, c, "helpers", () -> {
            int n = 10_000;
            return List.of(KernelCase.of(c, "helpers", cover(n, T)).floats("in", TestData.floats(n, 30))
                    .out("out", 8L * n * 4).arg(n).normalize("out", s -> canonicalDoubleNaNs(s, 4, 2)));
        });
    }

    private static void conversions(Map<String, Supplier<List<KernelCase>>> m) {
        Class<?> c = ConversionKernels.class;
        put(m, c, "fromFloat", () -> {
            int n = 200_000;
            return List.of(KernelCase.of(c, "fromFloat", Grid.of(120, T)).floats("in", TestData.floats(n, 31))
                    .out("bf16", 2L * n).out("fp16", 2L * n).out("fp8", n).arg(n)
                    .normalize(CompiledKernelsGpuTest::canonicalNarrowNaNs));
        });
        put(m, c, "toFloat", () -> {
            int n = 65536;
            short[] s = new short[n];
            byte[] b = new byte[n];
            for (int i = 0; i < n; i++) {
                s[i] = (short) i;
                b[i] = (byte) i;
            }
            return List.of(KernelCase.of(c, "toFloat", Grid.of(64, T)).shorts("bf16", s).shorts("fp16", s).buf("fp8", b)
                    .out("out", 12L * n).arg(n).floatNaNsEqual("out"));
        });
        put(m, c, "sweep", () -> {
            List<KernelCase> list = new ArrayList<>();
            int n = 1 << 20;
            // zero and subnormals, around 1, fp8's and fp16's largest values, infinity and NaN, negatives
            int[] starts = {0x00000000, 0x33000000, 0x3f780000, 0x43d80000, 0x477f0000, 0x7f780000, 0xc3d80000, 0xff780000};
            for (int first : starts) {
                list.add(KernelCase.of(c, "sweep", Grid.of(264, T)).label(String.format("from 0x%08x", first))
                        .out("bf16", 2L * n).out("fp16", 2L * n).out("fp8", n).arg(first).arg(n)
                        .normalize(CompiledKernelsGpuTest::canonicalNarrowNaNs));
            }
            return list;
        });
        put(m, c, "roundTrip", () -> {
            int n = 100_000;
            return List.of(
                    KernelCase.of(c, "roundTrip", Grid.of(50, T)).floats("in", TestData.floats(n, 32)).out("out", 8L * n)
                            .arg(0.37f).arg(n).floatNaNsEqual("out"),
                    KernelCase.of(c, "roundTrip", Grid.of(50, T)).floats("in", TestData.finiteFloats(n, 1000, 33))
                            .out("out", 8L * n).arg(2.5f).arg(n).floatNaNsEqual("out"));
        });
    }

    private static void copies(Map<String, Supplier<List<KernelCase>>> m) {
        Class<?> c = CopyKernels.class;
        put(m, c, "copy16", () -> {
            int chunks = 100_000;
            return List.of(KernelCase.of(c, "copy16", Grid.of(200, T)).out("dst", 16L * chunks)
                    .buf("src", TestData.bytes(16 * chunks, 34)).arg((long) chunks));
        });
        put(m, c, "copyBytes", () -> {
            int bytes = 300_001;
            return List.of(KernelCase.of(c, "copyBytes", Grid.of(100, T)).out("dst", bytes)
                    .buf("src", TestData.bytes(bytes, 35)).arg((long) bytes));
        });
        put(m, c, "widths", () -> {
            int n = 50_000;
            long region = 8L * n;
            return List.of(KernelCase.of(c, "widths", Grid.of(100, T)).buf("src", TestData.bytes(8 * n, 36))
                    .out("dst", 7 * region).arg(n)
                    .normalize("dst", s -> {
                        // float*2 (region 4) and double/4 (region 5) of random bits: NaN payloads may differ
                        canonicalFloatNaNs(s.asSlice(4 * region, 4L * n));
                        canonicalDoubleNaNs(s.asSlice(5 * region, 8L * n), 1, 0);
                    }));
        });
        put(m, c, "sliceCopy", () -> {
            int n = 10_000;
            long offset = 1000;
            return List.of(KernelCase.of(c, "sliceCopy", Grid.of(13, T)).out("dst", offset + 4L * n)
                    .ints("src", TestData.ints(n, 37)).arg(offset).arg(n));
        });
    }

    private static void indexing(Map<String, Supplier<List<KernelCase>>> m) {
        Class<?> c = IndexKernels.class;
        put(m, c, "stridedCopy", () -> {
            int rows = 64;
            int cols = 1000;
            long srcStride = 1100;
            long dstStride = 1200;
            return List.of(KernelCase.of(c, "stridedCopy", Grid.of((cols + T - 1) / T, rows, T))
                    .ints("dst", TestData.ints((int) (rows * dstStride), 38))
                    .ints("src", TestData.ints((int) (rows * srcStride), 39))
                    .arg(srcStride).arg(dstStride).arg(rows).arg(cols));
        });
        put(m, c, "bigIndex", () -> {
            int n = 10_000;
            return List.of(KernelCase.of(c, "bigIndex", cover(n, T)).out("out", 16L * n).arg((3L << 31) + 5).arg(n),
                    KernelCase.of(c, "bigIndex", cover(n, T)).out("out", 16L * n).arg(Long.MAX_VALUE / 3).arg(n));
        });
        put(m, c, "grid2d", () -> List.of(KernelCase.of(c, "grid2d", Grid.of(7, 5, 96)).out("out", 16L * 7 * 5 * 96),
                KernelCase.of(c, "grid2d", Grid.of(300, 1, 32)).out("out", 16L * 300 * 32)));
    }

    private static void sharedMemory(Map<String, Supplier<List<KernelCase>>> m) {
        Class<?> c = SharedMemoryKernels.class;
        put(m, c, "blockReduceSum", () -> {
            int n = 100_000;
            return List.of(KernelCase.of(c, "blockReduceSum", cover(n, T)).ints("in", TestData.ints(n, 40))
                            .out("out", 4L * cover(n, T).blocksX()).arg(n),
                    KernelCase.of(c, "blockReduceSum", cover(n, 1024)).ints("in", TestData.ints(n, 41))
                            .out("out", 4L * cover(n, 1024).blocksX()).arg(n));
        });
        put(m, c, "blockReduceFloat", () -> {
            int n = 100_000;
            return List.of(KernelCase.of(c, "blockReduceFloat", cover(n, 512)).floats("in", TestData.finiteFloats(n, 1e3f, 42))
                    .out("out", 4L * cover(n, 512).blocksX()).arg(n));
        });
        put(m, c, "blockReverse", () -> {
            int n = 50_000;
            return List.of(KernelCase.of(c, "blockReverse", cover(n, 192)).ints("in", TestData.ints(n, 43))
                    .out("out", 4L * n).arg(n));
        });
        put(m, c, "blockScanLong", () -> {
            int n = 30_000;
            return List.of(KernelCase.of(c, "blockScanLong", cover(n, 1024)).longs("in", TestData.longs(n, 44))
                            .out("out", 8L * n).arg(n),
                    KernelCase.of(c, "blockScanLong", cover(n, 96)).longs("in", TestData.longs(n, 45))
                            .out("out", 8L * n).arg(n));
        });
        put(m, c, "warpLanes", () -> List.of(KernelCase.of(c, "warpLanes", Grid.of(13, 160)).out("out", 4L * 13 * 160),
                KernelCase.of(c, "warpLanes", Grid.of(3, 1024)).out("out", 4L * 3 * 1024)));
    }

    // ---- normalizers ----

    /** Canonical NaN for the double in slot {@code slot} of every group of {@code perElement} 8-byte values. */
    static void canonicalDoubleNaNs(MemorySegment s, int perElement, int slot) {
        for (long i = (long) slot * 8; i + 8 <= s.byteSize(); i += 8L * perElement) {
            if (Double.isNaN(s.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, i))) {
                s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, 0x7ff8000000000000L);
            }
        }
    }

    static void canonicalFloatNaNs(MemorySegment s) {
        for (long i = 0; i + 4 <= s.byteSize(); i += 4) {
            if (Float.isNaN(s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, i))) {
                s.set(ValueLayout.JAVA_INT_UNALIGNED, i, 0x7fc00000);
            }
        }
    }

    /** NaNs of bf16, fp16 and fp8-e4m3 results become each format's canonical NaN (the kernels' javadoc allows any NaN). */
    static void canonicalNarrowNaNs(Map<String, MemorySegment> r) {
        MemorySegment bf16 = r.get("bf16");
        MemorySegment fp16 = r.get("fp16");
        MemorySegment fp8 = r.get("fp8");
        for (long i = 0; i + 2 <= bf16.byteSize(); i += 2) {
            short v = bf16.get(ValueLayout.JAVA_SHORT_UNALIGNED, i);
            if ((v & 0x7f80) == 0x7f80 && (v & 0x7f) != 0) {
                bf16.set(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) 0x7fff);
            }
        }
        for (long i = 0; i + 2 <= fp16.byteSize(); i += 2) {
            short v = fp16.get(ValueLayout.JAVA_SHORT_UNALIGNED, i);
            if ((v & 0x7c00) == 0x7c00 && (v & 0x3ff) != 0) {
                fp16.set(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) 0x7e00);
            }
        }
        for (long i = 0; i < fp8.byteSize(); i++) {
            byte v = fp8.get(ValueLayout.JAVA_BYTE, i);
            if ((v & 0x7f) == 0x7f) {
                fp8.set(ValueLayout.JAVA_BYTE, i, (byte) 0x7f);
            }
        }
    }
}
