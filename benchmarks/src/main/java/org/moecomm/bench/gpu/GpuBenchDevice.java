package org.moecomm.bench.gpu;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.moecomm.bridge.cuda.CudaContext;
import org.moecomm.bridge.cuda.CudaEvent;
import org.moecomm.bridge.cuda.CudaFunction;
import org.moecomm.bridge.cuda.CudaModule;
import org.moecomm.bridge.cuda.CudaStream;
import org.moecomm.bridge.cuda.GpuKernelRunner;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;

/**
 * The benchmark on CUDA device 0: memory and Java kernels through {@link GpuKernelRunner}
 * (the library's own launcher), CUDA C++ twins from a PTX file loaded through the same driver
 * JIT linker ({@link CudaContext#loadPtx}), and every timed launch of either made by the same
 * call, {@link CudaFunction#launch}, with arguments converted once. Timing uses CUDA events on
 * the runner's stream.
 */
final class GpuBenchDevice implements BenchDevice {
    private final GpuKernelRunner runner;
    private final CudaModule twins;
    private final String twinStatus;

    /** Opens device 0; loads {@code twinPtx} when given (a failure is reported by {@link #twinStatus()}, not thrown). */
    GpuBenchDevice(Path twinPtx) {
        this(new GpuKernelRunner(), twinPtx);
    }

    /** On {@code context} (left open by {@link #close()}), with a stream of its own and no twins. */
    GpuBenchDevice(CudaContext context) {
        this(new GpuKernelRunner(context), null);
    }

    private GpuBenchDevice(GpuKernelRunner runner, Path twinPtx) {
        this.runner = runner;
        CudaModule module = null;
        String status;
        if (twinPtx == null) {
            status = "no twin PTX given (--twin-ptx)";
        } else if (!Files.isRegularFile(twinPtx)) {
            status = "twin PTX not found: " + twinPtx + " (scripts/make-gpu-bundle.sh builds it with nvcc)";
        } else {
            try {
                module = runner.context().loadPtx(twinPtx.getFileName().toString(), Files.readString(twinPtx));
                status = "loaded " + twinPtx.getFileName() + " (" + Files.size(twinPtx) + " bytes of PTX)";
            } catch (IOException | RuntimeException e) {
                status = "twin PTX " + twinPtx + " failed to load: " + e.getMessage();
            }
        }
        this.twins = module;
        this.twinStatus = status;
    }

    @Override
    public String name() {
        return runner.context().deviceName();
    }

    @Override
    public String kind() {
        return "gpu";
    }

    @Override
    public int multiprocessors() {
        return runner.context().multiprocessorCount();
    }

    @Override
    public Buf allocate(long bytes) {
        return runner.allocate(bytes);
    }

    @Override
    public void free(Buf buf) {
        runner.free(buf);
    }

    @Override
    public void upload(Buf dst, MemorySegment src) {
        runner.upload(dst, src);
    }

    @Override
    public void download(MemorySegment dst, Buf src) {
        runner.download(dst, src);
    }

    @Override
    public void fill(Buf dst, byte value) {
        runner.fill(dst, value);
    }

    @Override
    public void copy(Buf dst, Buf src) {
        runner.copy(dst, src);
    }

    @Override
    public void synchronize() {
        runner.synchronize();
    }

    @Override
    public void launchChecked(Kernel kernel, Grid grid, Object... args) {
        runner.launch(kernel, grid, args);
    }

    @Override
    public Runnable prepare(Kernel kernel, Grid grid, Object... args) {
        return runner.launcher(kernel, grid, args);
    }

    @Override
    public Runnable prepareTwin(String entry, Grid grid, Object... args) {
        if (twins == null) {
            return null;
        }
        return launcher(twins.function(entry), grid, args);
    }

    private Runnable launcher(CudaFunction f, Grid grid, Object[] args) {
        long[] params = params(args);
        CudaStream stream = runner.stream();
        int gx = grid.blocksX();
        int gy = grid.blocksY();
        int threads = grid.threads();
        return () -> f.launch(stream, gx, gy, 1, threads, 1, 1, 0, params);
    }

    /** The 8-byte parameter slots of {@code args} (the kernel ABI: Buf as its address, int and float 32-bit). */
    static long[] params(Object[] args) {
        long[] p = new long[args.length];
        for (int i = 0; i < args.length; i++) {
            p[i] = switch (args[i]) {
                case Buf b -> CudaFunction.param(b);
                case Integer v -> CudaFunction.param(v.intValue());
                case Long v -> CudaFunction.param(v.longValue());
                case Float v -> CudaFunction.param(v.floatValue());
                case null, default -> throw new IllegalArgumentException("argument " + (i + 1)
                        + " must be a Buf, Integer, Long or Float, got " + (args[i] == null ? "null" : args[i].getClass()));
            };
        }
        return p;
    }

    @Override
    public String twinStatus() {
        return twinStatus;
    }

    @Override
    public boolean hasTwins() {
        return twins != null;
    }

    @Override
    public String resources(Kernel kernel, Grid grid, Object... args) {
        return describe(runner.function(runner.specialize(kernel, grid.threads(), args)));
    }

    @Override
    public String twinResources(String entry) {
        return twins == null ? null : describe(twins.function(entry));
    }

    private static String describe(CudaFunction f) {
        return String.format(Locale.ROOT, "%d regs, %d B smem, %d B local", f.numRegisters(), f.staticSharedBytes(),
                f.localBytesPerThread());
    }

    @Override
    public double[][] time(int warmups, int reps, Runnable setup, List<Runnable> works) {
        CudaContext context = runner.context();
        CudaStream stream = runner.stream();
        int n = works.size();
        for (int i = 0; i < warmups; i++) {
            for (Runnable w : works) {
                setup.run();
                w.run();
            }
        }
        stream.synchronize();
        CudaEvent[][] start = new CudaEvent[n][reps];
        CudaEvent[][] end = new CudaEvent[n][reps];
        try {
            for (int j = 0; j < n; j++) {
                for (int i = 0; i < reps; i++) {
                    start[j][i] = context.createEvent();
                    end[j][i] = context.createEvent();
                }
            }
            for (int i = 0; i < reps; i++) {
                for (int o = 0; o < n; o++) {
                    int j = i % 2 == 0 ? o : n - 1 - o;
                    // The setup (an L2-flushing memset) keeps the stream busy while the launch is
                    // enqueued, so the start event is not stamped before the kernel can start.
                    setup.run();
                    start[j][i].record(stream);
                    works.get(j).run();
                    end[j][i].record(stream);
                }
            }
            stream.synchronize();
            double[][] ms = new double[n][reps];
            for (int j = 0; j < n; j++) {
                for (int i = 0; i < reps; i++) {
                    ms[j][i] = end[j][i].elapsedMillisSince(start[j][i]);
                }
            }
            return ms;
        } finally {
            for (int j = 0; j < n; j++) {
                for (int i = 0; i < reps; i++) {
                    if (start[j][i] != null) {
                        start[j][i].close();
                    }
                    if (end[j][i] != null) {
                        end[j][i].close();
                    }
                }
            }
        }
    }

    @Override
    public void close() {
        try {
            if (twins != null) {
                runner.synchronize();
                twins.close();
            }
        } finally {
            runner.close();
        }
    }
}
