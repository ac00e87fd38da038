package org.moecomm.bridge.cuda;

import java.lang.foreign.MemorySegment;
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
    private record Loaded(PtxKernel ptx, CudaModule module, CudaFunction function, Class<?>[] parameters,
                          List<DeviceLibrary> libraries) {
    }

    /** A kernel's {@code @Specialize} positions and its latest specialisation (launches mostly repeat it). */
    private record Specialized(int[] positions, Object[] values, Kernel kernel) {
        boolean matches(Object[] args) {
            for (int i = 0; i < positions.length; i++) {
                int p = positions[i];
                if (p >= args.length || !values[i].equals(args[p])) {
                    return false;
                }
            }
            return true;
        }
    }

    private final Map<Kernel, Specialized> specialized = new HashMap<>();
    private final CudaContext context;
    private final boolean ownsContext;
    private final CudaStream stream;
    private final boolean ownsStream;
    private final Function<Kernel, PtxKernel> compiler;
    private final Map<Kernel, Loaded> loaded = new HashMap<>();
    private final Map<Long, DeviceBuffer> allocations = new LinkedHashMap<>();
    private final List<DeviceLibrary> libraries = new ArrayList<>();
    private boolean checkPointers = true;
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

    @Override
    public void launch(Kernel kernel, Grid grid, Object... args) {
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(grid, "grid");
        ensureOpen();
        Object[] arguments = args == null ? new Object[0] : args;
        Loaded l = load(specialize(kernel, arguments));
        long[] params = parameters(kernel, l.parameters(), arguments);
        l.function().launch(stream, grid.blocksX(), grid.blocksY(), 1, grid.threads(), 1, 1, 0, params);
    }

    /**
     * {@code kernel} specialised for the values {@code args} give its {@link org.moecomm.kernels.api.Specialize}d
     * parameters: the kernel this runner compiles and launches for those arguments.
     */
    public Kernel specialize(Kernel kernel, Object... args) {
        if (!kernel.constants().isEmpty()) {
            return kernel;
        }
        Specialized last = specialized.get(kernel);
        int[] positions = last != null ? last.positions() : kernel.specializedPositions();
        if (positions.length == 0 || (last != null && last.matches(args))) {
            if (last == null) {
                specialized.put(kernel, new Specialized(positions, new Object[0], kernel));
            }
            return last != null ? last.kernel() : kernel;
        }
        Kernel k = kernel.specializedFor(positions, args);
        Object[] values = new Object[positions.length];
        for (int i = 0; i < positions.length; i++) {
            values[i] = args[positions[i]];
        }
        specialized.put(kernel, new Specialized(positions, values, k));
        return k;
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
            l = new Loaded(ptx, module, module.function(ptx.entryName()), parameters, List.copyOf(needed));
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

    private long[] parameters(Kernel kernel, Class<?>[] types, Object[] args) {
        if (args.length != types.length) {
            throw new IllegalArgumentException("kernel " + kernel + " takes " + types.length
                    + " arguments after the KernelContext, got " + args.length);
        }
        long[] params = new long[args.length];
        for (int i = 0; i < args.length; i++) {
            Object a = args[i];
            Class<?> t = types[i];
            String where = "kernel " + kernel + ": argument " + (i + 1);
            if (t == Buf.class && a instanceof Buf b) {
                if (checkPointers) {
                    checkDevice(where, b);
                }
                params[i] = b.address();
            } else if (t == int.class && a instanceof Integer v) {
                params[i] = CudaFunction.param(v.intValue());
            } else if (t == long.class && a instanceof Long v) {
                params[i] = CudaFunction.param(v.longValue());
            } else if (t == float.class && a instanceof Float v) {
                params[i] = CudaFunction.param(v.floatValue());
            } else {
                throw new IllegalArgumentException(where + " must be " + (t == Buf.class ? "a Buf" : "a " + t.getName())
                        + ", got " + (a == null ? "null" : a.getClass().getName()));
            }
        }
        return params;
    }

    private void checkDevice(String where, Buf b) {
        long address = b.address();
        long size = b.byteSize();
        if (address == 0 && size == 0) {
            return;
        }
        long[] start = new long[1];
        long[] range = new long[1];
        context.bind();
        int rc = CudaNative.mcPointerGetRange(start, range, address);
        if (rc != Cuda.CUDA_SUCCESS) {
            throw new IllegalArgumentException(where + " (" + b + ") is not CUDA memory (" + Cuda.errorName(rc)
                    + "): a GPU kernel needs device memory, e.g. from GpuKernelRunner.allocate or DeviceBuffer.asBuf()");
        }
        if (address + size > start[0] + range[0]) {
            throw new IllegalArgumentException(where + " (" + b + ") runs past the end of its CUDA allocation ("
                    + range[0] + " bytes at 0x" + Long.toHexString(start[0]) + ")");
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
