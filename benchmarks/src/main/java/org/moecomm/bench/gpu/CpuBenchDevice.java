package org.moecomm.bench.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * The benchmark on the JVM, through {@link CpuKernelRunner}: for tests and dry runs of the
 * input construction and the output checks on machines without a GPU. Its times are wall-clock
 * times of the CPU runner and mean nothing for the GPU. There are no CUDA C++ twins on the CPU;
 * {@code standIns} may name Java kernels that play them (to exercise the comparison path).
 */
final class CpuBenchDevice implements BenchDevice {
    private final CpuKernelRunner runner;
    private final Map<String, Kernel> standIns;
    private final Map<Long, Arena> arenas = new HashMap<>();

    CpuBenchDevice(Map<String, Kernel> standIns) {
        this.runner = new CpuKernelRunner();
        this.standIns = Map.copyOf(standIns);
    }

    @Override
    public String name() {
        return "CPU (CpuKernelRunner)";
    }

    @Override
    public String kind() {
        return "cpu";
    }

    @Override
    public int multiprocessors() {
        return Runtime.getRuntime().availableProcessors();
    }

    @Override
    public Buf allocate(long bytes) {
        Arena arena = Arena.ofShared();
        MemorySegment s = arena.allocate(Math.max(bytes, 1), 16).asSlice(0, bytes);
        // Like cuMemAlloc, contents are undefined: make them visibly so.
        s.fill((byte) 0x5A);
        Buf b = Buf.of(s);
        arenas.put(b.address(), arena);
        return b;
    }

    @Override
    public void free(Buf buf) {
        Arena a = arenas.remove(buf.address());
        if (a == null) {
            throw new IllegalArgumentException(buf + " was not allocated here");
        }
        a.close();
    }

    @Override
    public void upload(Buf dst, MemorySegment src) {
        MemorySegment.copy(src, 0, dst.segment(), 0, src.byteSize());
    }

    @Override
    public void download(MemorySegment dst, Buf src) {
        MemorySegment.copy(src.segment(), 0, dst, 0, dst.byteSize());
    }

    @Override
    public void fill(Buf dst, byte value) {
        dst.segment().fill(value);
    }

    @Override
    public void copy(Buf dst, Buf src) {
        MemorySegment.copy(src.segment(), 0, dst.segment(), 0, src.byteSize());
    }

    @Override
    public void synchronize() {
    }

    @Override
    public void launchChecked(Kernel kernel, Grid grid, Object... args) {
        runner.launch(kernel, grid, args);
    }

    @Override
    public Runnable prepare(Kernel kernel, Grid grid, Object... args) {
        Object[] a = args.clone();
        return () -> runner.launch(kernel, grid, a);
    }

    @Override
    public Runnable prepareTwin(String entry, Grid grid, Object... args) {
        Kernel k = standIns.get(entry);
        return k == null ? null : prepare(k, grid, args);
    }

    @Override
    public String twinStatus() {
        return standIns.isEmpty() ? "no twins on the CPU" : "CPU stand-ins (Java kernels) for " + standIns.keySet();
    }

    @Override
    public boolean hasTwins() {
        return !standIns.isEmpty();
    }

    @Override
    public String resources(Kernel kernel, Grid grid, Object... args) {
        return null;
    }

    @Override
    public String twinResources(String entry) {
        return null;
    }

    @Override
    public double[][] time(int warmups, int reps, Runnable setup, List<Runnable> works) {
        int n = works.size();
        for (int i = 0; i < warmups; i++) {
            for (Runnable w : works) {
                setup.run();
                w.run();
            }
        }
        double[][] ms = new double[n][reps];
        for (int i = 0; i < reps; i++) {
            for (int o = 0; o < n; o++) {
                int j = i % 2 == 0 ? o : n - 1 - o;
                setup.run();
                long t0 = System.nanoTime();
                works.get(j).run();
                ms[j][i] = (System.nanoTime() - t0) / 1e6;
            }
        }
        return ms;
    }

    @Override
    public void close() {
        arenas.values().forEach(Arena::close);
        arenas.clear();
        runner.close();
    }
}
