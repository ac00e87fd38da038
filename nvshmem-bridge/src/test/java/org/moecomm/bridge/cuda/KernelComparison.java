package org.moecomm.bridge.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * Runs a {@link KernelCase} through the CPU runner and the GPU runner from the same initial bytes
 * and compares every buffer afterwards, bit for bit (after the case's normalizers).
 */
final class KernelComparison {
    private final GpuKernelRunner gpu;
    private final CpuKernelRunner cpu;
    private final Set<Kernel> compared = new HashSet<>();

    KernelComparison(GpuKernelRunner gpu, CpuKernelRunner cpu) {
        this.gpu = gpu;
        this.cpu = cpu;
    }

    /** Kernels compared so far. */
    Set<Kernel> compared() {
        return compared;
    }

    /** Runs the case on both runners; throws an AssertionError describing every differing buffer. */
    void check(KernelCase c) {
        long t0 = System.nanoTime();
        gpu.function(c.kernel); // compile and load before timing
        long t1 = System.nanoTime();
        try (Arena arena = Arena.ofShared()) {
            Map<String, MemorySegment> gpuResults = new LinkedHashMap<>();
            Object[] gpuArgs = new Object[c.args.size()];
            List<Buf> deviceBufs = new ArrayList<>();
            try {
                for (int i = 0; i < gpuArgs.length; i++) {
                    Object a = c.args.get(i);
                    if (a instanceof KernelCase.BufArg b) {
                        Buf dev = gpu.allocate(b.initial().length);
                        deviceBufs.add(dev);
                        gpu.upload(dev, MemorySegment.ofArray(b.initial()));
                        gpuArgs[i] = dev;
                    } else {
                        gpuArgs[i] = ((KernelCase.ScalarArg) a).value();
                    }
                }
                long t2 = System.nanoTime();
                gpu.launch(c.kernel, c.grid, gpuArgs);
                gpu.synchronize();
                long t3 = System.nanoTime();
                Map<String, MemorySegment> cpuResults = runOnCpu(cpu, c, arena);
                long t4 = System.nanoTime();
                for (int i = 0; i < gpuArgs.length; i++) {
                    if (gpuArgs[i] instanceof Buf dev) {
                        String name = ((KernelCase.BufArg) c.args.get(i)).name();
                        MemorySegment back = arena.allocate(dev.byteSize(), 16);
                        gpu.download(back, dev);
                        gpuResults.put(name, back);
                    }
                }
                for (KernelCase.Normalizer n : c.normalizers) {
                    n.normalize(gpuResults);
                }
                List<String> problems = new ArrayList<>();
                long bytes = 0;
                for (String name : cpuResults.keySet()) {
                    MemorySegment a = cpuResults.get(name);
                    MemorySegment b = gpuResults.get(name);
                    bytes += a.byteSize();
                    String d = describeDifference(name, a, b);
                    if (d != null) {
                        problems.add(d);
                    }
                }
                System.out.printf("%s %s: %d buffers, %d bytes; compile+load %.1f ms, gpu launch+sync %.2f ms, cpu %.1f ms%n",
                        problems.isEmpty() ? "SAME" : "DIFF", c, cpuResults.size(), bytes, (t1 - t0) / 1e6,
                        (t3 - t2) / 1e6, (t4 - t3) / 1e6);
                compared.add(c.kernel);
                if (!problems.isEmpty()) {
                    throw new AssertionError(c + ": GPU and CPU results differ\n" + String.join("\n", problems));
                }
            } finally {
                for (Buf d : deviceBufs) {
                    gpu.free(d);
                }
            }
        }
    }

    /**
     * Runs only the CPU side of a case (no GPU needed): checks that the case's arguments fit its
     * kernel, that the run meets the case's expectations and that its normalizers run, so that the
     * cases themselves are tested on every build.
     */
    static void runOnCpu(CpuKernelRunner cpu, KernelCase c) {
        try (Arena arena = Arena.ofShared()) {
            runOnCpu(cpu, c, arena);
        }
    }

    /** The CPU side of a case: its buffers by name after the launch and the normalizers. */
    static Map<String, MemorySegment> runOnCpu(CpuKernelRunner cpu, KernelCase c, Arena arena) {
        Map<String, MemorySegment> results = new LinkedHashMap<>();
        Object[] args = new Object[c.args.size()];
        for (int i = 0; i < args.length; i++) {
            Object a = c.args.get(i);
            if (a instanceof KernelCase.BufArg b) {
                Buf host = Buf.allocate(arena, b.initial().length);
                MemorySegment.copy(b.initial(), 0, host.segment(), ValueLayout.JAVA_BYTE, 0, b.initial().length);
                args[i] = host;
                results.put(b.name(), host.segment());
            } else {
                args[i] = ((KernelCase.ScalarArg) a).value();
            }
        }
        cpu.launch(c.kernel, c.grid, args);
        checkExpectations(c, results);
        for (KernelCase.Normalizer n : c.normalizers) {
            n.normalize(results);
        }
        return results;
    }

    /**
     * What the case expects of its run besides the comparison, on the raw results (before the
     * normalizers): every output written somewhere, every {@code unwritten} buffer still all
     * poison, every report buffer not all zero.
     */
    private static void checkExpectations(KernelCase c, Map<String, MemorySegment> results) {
        for (String name : c.outputs) {
            if (allBytes(results.get(name), KernelCase.POISON)) {
                throw new AssertionError(c + ": output " + name + " is still all poison: the case checks nothing there");
            }
        }
        for (String name : c.untouched) {
            if (!allBytes(results.get(name), KernelCase.POISON)) {
                throw new AssertionError(c + ": " + name + " was written, which the kernel must not do here");
            }
        }
        for (String name : c.reports) {
            if (allBytes(results.get(name), (byte) 0)) {
                throw new AssertionError(c + ": the bad input was not reported in " + name);
            }
        }
    }

    private static boolean allBytes(MemorySegment s, byte value) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != value) {
                return false;
            }
        }
        return true;
    }

    /** Null when equal, else where and how the two results differ (as 4-byte words). */
    static String describeDifference(String name, MemorySegment cpu, MemorySegment gpu) {
        long first = cpu.mismatch(gpu);
        if (first < 0) {
            return null;
        }
        long differing = 0;
        long n = Math.min(cpu.byteSize(), gpu.byteSize());
        for (long i = 0; i < n; i++) {
            if (cpu.get(ValueLayout.JAVA_BYTE, i) != gpu.get(ValueLayout.JAVA_BYTE, i)) {
                differing++;
            }
        }
        StringBuilder b = new StringBuilder();
        b.append("  buffer ").append(name).append(": ").append(differing).append(" of ").append(n)
                .append(" bytes differ, first at byte ").append(first).append(" (int index ").append(first / 4).append(')');
        long word = first & ~3L;
        int shown = 0;
        for (long i = word; i + 4 <= n && shown < 8; i += 4) {
            int c = cpu.get(ValueLayout.JAVA_INT_UNALIGNED, i);
            int g = gpu.get(ValueLayout.JAVA_INT_UNALIGNED, i);
            if (c != g) {
                b.append(String.format("%n    int[%d]: cpu 0x%08x (%d, %s f)  gpu 0x%08x (%d, %s f)", i / 4, c, c,
                        Float.intBitsToFloat(c), g, g, Float.intBitsToFloat(g)));
                shown++;
            }
        }
        return b.toString();
    }
}
