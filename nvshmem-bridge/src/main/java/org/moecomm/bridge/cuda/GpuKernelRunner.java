package org.moecomm.bridge.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelRunner;
import org.moecomm.kernels.ptx.PtxCompiler;
import org.moecomm.kernels.ptx.PtxKernel;

/**
 * Runs kernels on a CUDA GPU: compiles each kernel once with
 * {@link PtxCompiler#compileCached(Kernel)}, loads its module once through the driver's JIT
 * linker, and enqueues launches on this runner's stream ({@link #synchronize()} waits).
 *
 * <p>Arguments follow the {@link PtxKernel} ABI: a {@link Buf} is passed as its address and must
 * be device memory ({@link #allocate(long)}, {@link DeviceBuffer#asBuf()}, NVSHMEM's heap); by
 * default every {@code Buf} argument is checked to lie inside one CUDA allocation, so a host
 * buffer fails with an {@link IllegalArgumentException} instead of a GPU fault
 * ({@link #checkPointers(boolean)} turns the two driver queries per buffer off). {@code int} and
 * {@code float} are 32-bit, {@code long} 64-bit parameters. Shared memory is static.
 *
 * <p>Load a kernel (a first launch, or {@link #function(Kernel)}) before capturing launches in a
 * {@link CudaGraph} on {@link #stream()}: module loading is not allowed during capture.
 * Not thread-safe: use one runner per thread.
 */
public final class GpuKernelRunner implements KernelRunner {
    /**
     * A loaded kernel; {@code parameters}: its argument types after the context, {@code passed}:
     * the positions of those a launch passes ({@link PtxKernel#passedPositions()}).
     */
    private record Loaded(PtxKernel ptx, CudaModule module, CudaFunction function, Class<?>[] parameters,
                          int[] passed, List<DeviceLibrary> libraries, int maxThreads) {
    }

    /**
     * What launches of one kernel resolve to: its {@code @Specialize} positions, its latest
     * specialisation (launches mostly repeat it) and, once loaded, that kernel's module, so a
     * repeated launch costs one lookup.
     */
    private static final class Target {
        final int[] positions;
        final Object[] values;
        final Kernel kernel;
        Loaded loaded;

        Target(int[] positions, Object[] values, Kernel kernel) {
            this.positions = positions;
            this.values = values;
            this.kernel = kernel;
        }

        /** Whether this target is the kernel for {@code args} in blocks of {@code threads} threads. */
        boolean matches(Object[] args, int threads) {
            if (kernel.blockThreads() != 0 && threads != kernel.blockThreads()) {
                return false;
            }
            for (int i = 0; i < positions.length; i++) {
                int p = positions[i];
                if (p >= args.length || !values[i].equals(args[p])) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Checks a {@code Buf} argument (index from 0) before a launch. */
    @FunctionalInterface
    interface BufCheck {
        void check(Kernel kernel, int index, Buf buf);
    }

    private static final Object[] NO_ARGS = {};
    private static final int[] NO_POSITIONS = {};
    private static final int INITIAL_SLOTS = 32;

    private final Map<Kernel, Target> specialized = new HashMap<>();
    /** The kernel launched last and its target: launching it again skips even the map's hashing. */
    private Kernel lastKernel;
    private Target lastTarget;
    /**
     * Every launch's 8-byte parameter slots, off-heap and reused (grown for a kernel with more
     * parameters): JNI would copy a {@code long[]} in and back out on every launch.
     */
    private MemorySegment slots = Arena.ofAuto().allocate(INITIAL_SLOTS * (long) Long.BYTES, Long.BYTES);
    /** Where {@link #checkDevice} has the driver write an allocation's start and size. */
    private final MemorySegment range = Arena.ofAuto().allocate(2L * Long.BYTES, Long.BYTES);
    private final BufCheck deviceCheck = this::checkDevice;
    private final CudaContext context;
    private final boolean ownsContext;
    private final CudaStream stream;
    private final boolean ownsStream;
    private final Function<Kernel, PtxKernel> compiler;
    private final Map<Kernel, Loaded> loaded = new HashMap<>();
    private final Map<Long, DeviceBuffer> allocations = new LinkedHashMap<>();
    private final List<DeviceLibrary> libraries = new ArrayList<>();
    private boolean checkPointers = true;
    /** Percent of shared memory every kernel loaded from now on asks for; -1: the driver's choice. */
    private int sharedCarveout = -1;
    private boolean closed;

    /** A runner on device 0, with its own context reference and stream. */
    public GpuKernelRunner() {
        this(CudaContext.open(0), true);
    }

    /** A runner on {@code context} (not closed by the runner) with its own stream. */
    public GpuKernelRunner(CudaContext context) {
        this(context, false);
    }

    private GpuKernelRunner(CudaContext context, boolean ownsContext) {
        this.context = Objects.requireNonNull(context, "context");
        this.ownsContext = ownsContext;
        CudaStream s;
        try {
            s = context.createStream();
        } catch (RuntimeException e) {
            if (ownsContext) {
                context.close();
            }
            throw e;
        }
        this.stream = s;
        this.ownsStream = true;
        this.compiler = PtxCompiler::compileCached;
    }

    /**
     * A runner on {@code context} launching on {@code stream} (neither is closed by the runner),
     * with {@code compiler} turning kernels into PTX (normally {@code PtxCompiler::compileCached}).
     */
    public GpuKernelRunner(CudaContext context, CudaStream stream, Function<Kernel, PtxKernel> compiler) {
        this.context = Objects.requireNonNull(context, "context");
        this.ownsContext = false;
        this.stream = Objects.requireNonNull(stream, "stream");
        this.ownsStream = false;
        this.compiler = Objects.requireNonNull(compiler, "compiler");
    }

    public CudaContext context() {
        return context;
    }

    /** The stream every launch and copy of this runner is enqueued on. */
    public CudaStream stream() {
        return stream;
    }

    /** Whether {@code Buf} arguments are checked to be CUDA memory before each launch (default true). */
    public GpuKernelRunner checkPointers(boolean check) {
        this.checkPointers = check;
        return this;
    }

    /**
     * Has every kernel loaded from now on ask for {@code percent} (0-100) of the L1/shared split as
     * shared memory ({@link CudaFunction#setPreferredSharedCarveout}); -1 (the default) leaves it to
     * the driver.
     */
    public GpuKernelRunner sharedCarveout(int percent) {
        if (percent < -1 || percent > 100) {
            throw new IllegalArgumentException("a carveout is 0-100 percent, or -1 for the driver's choice, got "
                    + percent);
        }
        this.sharedCarveout = percent;
        return this;
    }

    /**
     * Links {@code library} into the module of every kernel that calls one of its device functions
     * (for example the NVSHMEM bridge's, for kernels using the one-sided communication methods of
     * {@link org.moecomm.kernels.api.KernelContext}).
     */
    public GpuKernelRunner withDeviceLibrary(DeviceLibrary library) {
        ensureOpen();
        libraries.add(Objects.requireNonNull(library, "library"));
        return this;
    }

    /** The device's streaming multiprocessors. */
    @Override
    public int concurrentBlocks() {
        return context.multiprocessorCount();
    }

    /** {@code deviceThreads}: a block's threads run side by side. */
    @Override
    public int blockThreads(int deviceThreads) {
        return deviceThreads;
    }

    /** The occupancy of {@code kernel} as loaded for {@code args} times the multiprocessors (loads it). */
    @Override
    public int residentBlocks(Kernel kernel, int threads, Object... args) {
        Objects.requireNonNull(kernel, "kernel");
        ensureOpen();
        CudaFunction f = loaded(target(kernel, args == null ? NO_ARGS : args, threads)).function();
        return Math.max(1, f.residentBlocksPerMultiprocessor(threads, 0)) * context.multiprocessorCount();
    }

    /**
     * Enqueues {@code kernel} on {@link #stream()}. Once loaded, a launch is one lookup (none for
     * the kernel launched last), the arguments packed into reused off-heap slots and one JNI call
     * with scalar arguments: no arrays or strings made (measured by {@code LaunchCostBenchmark}).
     */
    @Override
    public void launch(Kernel kernel, Grid grid, Object... args) {
        Object[] arguments = args == null ? NO_ARGS : args;
        Loaded l = launched(kernel, grid, arguments);
        int n = l.passed().length;
        if ((long) n * Long.BYTES > slots.byteSize()) {
            slots = Arena.ofAuto().allocate(Math.max(n, 2 * slots.byteSize() / Long.BYTES) * Long.BYTES, Long.BYTES);
        }
        pack(kernel, l.parameters(), arguments, l.passed(), slots, checkPointers ? deviceCheck : null);
        l.function().launch(stream, grid.blocksX(), grid.blocksY(), 1, grid.threads(), 1, 1, 0, slots, n);
    }

    /**
     * A launch of {@code kernel} on {@code grid} with {@code args}, resolved, loaded, checked and
     * packed now (as {@link #launch} does) and enqueued on {@link #stream()} each time it runs: one
     * driver call, for timing a kernel without the runner's per-launch work. The arguments are
     * read once; Buf contents may change between runs.
     */
    public Runnable launcher(Kernel kernel, Grid grid, Object... args) {
        Object[] arguments = args == null ? NO_ARGS : args;
        Loaded l = launched(kernel, grid, arguments);
        MemorySegment packed = Arena.ofAuto().allocate(Math.max(1, l.passed().length) * (long) Long.BYTES, Long.BYTES);
        pack(kernel, l.parameters(), arguments, l.passed(), packed, checkPointers ? deviceCheck : null);
        long[] params = java.util.Arrays.copyOf(packed.toArray(ValueLayout.JAVA_LONG), l.passed().length);
        CudaFunction f = l.function();
        int gx = grid.blocksX();
        int gy = grid.blocksY();
        int threads = grid.threads();
        return () -> f.launch(stream, gx, gy, 1, threads, 1, 1, 0, params);
    }

    /** The loaded kernel a launch of {@code kernel} on {@code grid} runs (loading it), its block size checked. */
    private Loaded launched(Kernel kernel, Grid grid, Object[] arguments) {
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(grid, "grid");
        ensureOpen();
        Target t = target(kernel, arguments, grid.threads());
        Loaded l = loaded(t);
        t.kernel.checkThreads(grid, l.maxThreads());
        return l;
    }

    /**
     * {@code kernel} as this runner compiles and launches it for these arguments and blocks of
     * {@code threads} threads: the one rule of {@link Kernel#specializedFor(int[], Object[], int)}
     * (its {@link org.moecomm.kernels.api.Specialize}d parameters' values, and the block size unless
     * it is declared {@link org.moecomm.kernels.api.AnyBlockSize}).
     */
    public Kernel specialize(Kernel kernel, int threads, Object... args) {
        return target(kernel, args, threads).kernel;
    }

    private Target target(Kernel kernel, Object[] args, int threads) {
        Target t = kernel == lastKernel ? lastTarget : specialized.get(kernel);
        if (t == null || !t.matches(args, threads)) {
            // a kernel with constants is specialised already
            int[] positions = t != null ? t.positions
                    : kernel.constants().isEmpty() ? kernel.specializedPositions() : NO_POSITIONS;
            // compiled per handle: for its launches' block size too (a handle keeps one)
            Kernel k = kernel.specializedFor(positions, args, threads);
            Object[] values = new Object[positions.length];
            for (int i = 0; i < positions.length; i++) {
                values[i] = args[positions[i]];
            }
            t = new Target(positions, values, k);
            specialized.put(kernel, t);
        }
        lastKernel = kernel;
        lastTarget = t;
        return t;
    }

    /** What {@link #launch} with these arguments would compile and load, done now. */
    @Override
    public void prepare(Kernel kernel, int threads, Object... args) {
        Objects.requireNonNull(kernel, "kernel");
        ensureOpen();
        loaded(target(kernel, args == null ? NO_ARGS : args, threads));
    }

    /** The target's loaded module, loading it at its first use (modules stay loaded until close()). */
    private Loaded loaded(Target t) {
        if (t.loaded == null) {
            t.loaded = load(t.kernel);
        }
        return t.loaded;
    }

    /** Compiles (once) and loads (once) {@code kernel}; returns its loaded entry. */
    public CudaFunction function(Kernel kernel) {
        ensureOpen();
        return load(kernel).function();
    }

    /** The PTX this runner loaded for {@code kernel} (compiling and loading it if needed). */
    public PtxKernel ptx(Kernel kernel) {
        ensureOpen();
        return load(kernel).ptx();
    }

    /** The JIT linker's info log for {@code kernel}'s module. */
    public String jitLog(Kernel kernel) {
        ensureOpen();
        return load(kernel).module().infoLog();
    }

    private Loaded load(Kernel kernel) {
        Loaded l = loaded.get(kernel);
        if (l != null) {
            return l;
        }
        Class<?>[] p = kernel.method().getParameterTypes();
        Class<?>[] parameters = new Class<?>[p.length - 1];
        System.arraycopy(p, 1, parameters, 0, parameters.length);
        PtxKernel ptx = compiler.apply(kernel);
        List<DeviceLibrary> needed = librariesFor(ptx);
        CudaModule module;
        try (CudaModule.Linker linker = context.linker()) {
            linker.addPtx(ptx.entryName() + ".ptx", ptx.ptx());
            for (DeviceLibrary lib : needed) {
                lib.addTo(linker);
            }
            module = linker.link();
        }
        List<DeviceLibrary> registered = new ArrayList<>();
        try {
            for (DeviceLibrary lib : needed) {
                lib.loaded(module);
                registered.add(lib);
            }
            CudaFunction function = module.function(ptx.entryName());
            if (sharedCarveout >= 0) {
                function.setPreferredSharedCarveout(sharedCarveout);
            }
            l = new Loaded(ptx, module, function, parameters, ptx.passedPositions(), List.copyOf(needed),
                    kernel.maxThreadsPerBlock());
        } catch (RuntimeException e) {
            for (DeviceLibrary lib : registered) {
                run(new ArrayList<>(), () -> lib.unloading(module));
            }
            module.close();
            throw e;
        }
        loaded.put(kernel, l);
        return l;
    }

    /** The libraries defining the device functions {@code ptx} calls; fails naming one nothing defines. */
    private List<DeviceLibrary> librariesFor(PtxKernel ptx) {
        List<DeviceLibrary> needed = new ArrayList<>();
        for (String fn : ptx.deviceFunctions()) {
            DeviceLibrary lib = libraries.stream().filter(d -> d.defines(fn)).findFirst()
                    .orElseThrow(() -> new IllegalStateException("kernel " + ptx.kernel() + " calls device function "
                            + fn + ", which no device library of this runner defines (libraries: "
                            + libraries.stream().map(DeviceLibrary::name).toList()
                            + "); add one with withDeviceLibrary, e.g. the NVSHMEM bridge's NvshmemDeviceLibrary"));
            if (!needed.contains(lib)) {
                needed.add(lib);
            }
        }
        return needed;
    }

    /**
     * Writes the arguments at {@code passed} (positions in {@code args}, ascending: those the
     * compiled entry takes, {@link PtxKernel#passedPositions()}) into the first 8-byte slots of
     * {@code slots}, in order, by the {@link PtxKernel} ABI ({@code types}: the kernel's parameter
     * types after the context), checking each {@code Buf} with {@code bufCheck} first (none when
     * null). The arguments left out are the values the kernel was compiled for (the launch's target
     * matched them). Runs on every launch: messages are built only on failure.
     */
    static void pack(Kernel kernel, Class<?>[] types, Object[] args, int[] passed, MemorySegment slots,
                     BufCheck bufCheck) {
        if (args.length != types.length) {
            throw new IllegalArgumentException("kernel " + kernel + " takes " + types.length
                    + " arguments after the KernelContext, got " + args.length);
        }
        for (int s = 0; s < passed.length; s++) {
            int i = passed[s];
            Object a = args[i];
            Class<?> t = types[i];
            long slot;
            if (t == Buf.class && a instanceof Buf b) {
                if (bufCheck != null) {
                    bufCheck.check(kernel, i, b);
                }
                slot = b.address();
            } else if (t == int.class && a instanceof Integer v) {
                slot = CudaFunction.param(v.intValue());
            } else if (t == long.class && a instanceof Long v) {
                slot = CudaFunction.param(v.longValue());
            } else if (t == float.class && a instanceof Float v) {
                slot = CudaFunction.param(v.floatValue());
            } else {
                throw new IllegalArgumentException(where(kernel, i) + " must be "
                        + (t == Buf.class ? "a Buf" : "a " + t.getName())
                        + ", got " + (a == null ? "null" : a.getClass().getName()));
            }
            slots.setAtIndex(ValueLayout.JAVA_LONG, s, slot);
        }
    }

    private static String where(Kernel kernel, int index) {
        return "kernel " + kernel + ": argument " + (index + 1);
    }

    private void checkDevice(Kernel kernel, int index, Buf b) {
        long address = b.address();
        long size = b.byteSize();
        if (address == 0 && size == 0) {
            return;
        }
        context.bind();
        int rc = CudaNative.mcPointerGetRangeAt(range.address(), range.address() + Long.BYTES, address);
        long start = range.getAtIndex(ValueLayout.JAVA_LONG, 0);
        long bytes = range.getAtIndex(ValueLayout.JAVA_LONG, 1);
        if (rc != Cuda.CUDA_SUCCESS) {
            throw new IllegalArgumentException(where(kernel, index) + " (" + b + ") is not CUDA memory ("
                    + Cuda.errorName(rc)
                    + "): a GPU kernel needs device memory, e.g. from GpuKernelRunner.allocate or DeviceBuffer.asBuf()");
        }
        if (address + size > start + bytes) {
            throw new IllegalArgumentException(where(kernel, index) + " (" + b + ") runs past the end of its CUDA allocation ("
                    + bytes + " bytes at 0x" + Long.toHexString(start) + ")");
        }
    }

    @Override
    public void synchronize() {
        ensureOpen();
        stream.synchronize();
    }

    // ---- device memory owned by this runner ----

    /** {@code bytes} of device memory, freed by {@link #free(Buf)} or {@link #close()}. */
    public Buf allocate(long bytes) {
        ensureOpen();
        DeviceBuffer d = context.allocate(bytes);
        allocations.put(d.address(), d);
        return d.asBuf();
    }

    /** Frees a buffer made by {@link #allocate(long)} (after the work using it: this synchronises the stream first). */
    public void free(Buf deviceBuf) {
        ensureOpen();
        DeviceBuffer d = allocations.remove(deviceBuf.address());
        if (d == null) {
            throw new IllegalArgumentException(deviceBuf + " was not allocated by this runner");
        }
        stream.synchronize();
        d.close();
    }

    /** Copies {@code src} into the start of device buffer {@code dst}, after the work enqueued so far; returns when done. */
    public void upload(Buf dst, MemorySegment src) {
        ensureOpen();
        DeviceBuffer.copyHostToDevice(context, dst.address(), dst.byteSize(), src, stream);
        stream.synchronize();
    }

    /** Copies the start of device buffer {@code src} into all of {@code dst}, after the work enqueued so far; returns when done. */
    public void download(MemorySegment dst, Buf src) {
        ensureOpen();
        DeviceBuffer.copyDeviceToHost(context, dst, src.address(), src.byteSize(), stream);
        stream.synchronize();
    }

    /** Enqueues setting every byte of device buffer {@code dst} to {@code value}. */
    public void fill(Buf dst, byte value) {
        ensureOpen();
        DeviceBuffer.fill(context, dst.address(), dst.byteSize(), value, stream);
    }

    /** Enqueues a device-to-device copy of all of {@code src} into the start of {@code dst}. */
    public void copy(Buf dst, Buf src) {
        ensureOpen();
        DeviceBuffer.copyDeviceToDevice(context, dst.address(), dst.byteSize(), src.address(), src.byteSize(), stream);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("GPU kernel runner is closed");
        }
    }

    /** Waits for the stream, frees this runner's buffers, unloads its modules, and releases what it owns. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<RuntimeException> errors = new ArrayList<>();
        run(errors, stream::synchronize);
        for (DeviceBuffer d : allocations.values()) {
            run(errors, d::close);
        }
        allocations.clear();
        for (Loaded l : loaded.values()) {
            for (DeviceLibrary lib : l.libraries()) {
                run(errors, () -> lib.unloading(l.module()));
            }
            run(errors, l.module()::close);
        }
        loaded.clear();
        specialized.clear();
        lastKernel = null;
        lastTarget = null;
        if (ownsStream) {
            run(errors, stream::close);
        }
        if (ownsContext) {
            run(errors, context::close);
        }
        if (!errors.isEmpty()) {
            RuntimeException first = errors.getFirst();
            for (int i = 1; i < errors.size(); i++) {
                first.addSuppressed(errors.get(i));
            }
            throw first;
        }
    }

    private static void run(List<RuntimeException> errors, Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            errors.add(e);
        }
    }

    @Override
    public String toString() {
        return "GpuKernelRunner[" + context + ", " + loaded.size() + " kernels loaded]";
    }
}
