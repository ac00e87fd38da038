package org.moecomm.kernels.ptx;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.LaunchBounds;

/**
 * Compiles a kernel (a static Java method, see {@link Kernel}) from its bytecode to PTX.
 *
 * <p>The kernel's class file is read with the JDK class-file API; every static method it calls is
 * inlined, and calls of the {@code KernelContext}, {@code Buf}, {@code Numerics} and a few
 * {@code java.lang} methods become PTX instructions. What is supported, and what is not, is
 * described in {@code docs/kernels-in-java.md}; anything else fails with a
 * {@link KernelCompileException} naming the construct and its source line.
 *
 * <p>Setting the system property {@value #DUMP_PROPERTY} to a directory writes every compiled
 * module there as {@code <entryName>.ptx}, a specialised one as {@link #dumpName}.
 */
public final class PtxCompiler {
    /** System property naming a directory to write each compiled kernel's PTX into. */
    public static final String DUMP_PROPERTY = "moecomm.ptx.dump";
    /** Static shared memory a block may use without opting in to more (48 KiB). */
    public static final int MAX_STATIC_SHARED_BYTES = 48 * 1024;

    private static final Logger LOG = LogManager.getLogger(PtxCompiler.class);
    private static final PtxCompiler HOPPER = new PtxCompiler(PtxTarget.HOPPER);
    private static final ConcurrentHashMap<CacheKey, PtxKernel> CACHE = new ConcurrentHashMap<>();

    private record CacheKey(Kernel kernel, PtxTarget target) {
    }

    private final PtxTarget target;

    public PtxCompiler(PtxTarget target) {
        this.target = Objects.requireNonNull(target, "target");
    }

    /** A compiler for Hopper, {@code sm_90a} ({@link PtxTarget#HOPPER}). */
    public static PtxCompiler hopper() {
        return HOPPER;
    }

    public PtxTarget target() {
        return target;
    }

    /**
     * Compiles {@code kernel} for {@link PtxTarget#HOPPER}, once per process: later calls return
     * the same {@link PtxKernel}.
     *
     * @throws KernelCompileException if the kernel uses something the compiler does not support
     */
    public static PtxKernel compileCached(Kernel kernel) {
        return compileCached(kernel, PtxTarget.HOPPER);
    }

    /** Like {@link #compileCached(Kernel)}, for another target. */
    public static PtxKernel compileCached(Kernel kernel, PtxTarget target) {
        Objects.requireNonNull(kernel, "kernel");
        CacheKey key = new CacheKey(kernel, target);
        PtxKernel cached = CACHE.get(key);
        if (cached != null) {
            return cached;
        }
        PtxKernel compiled = (target.equals(PtxTarget.HOPPER) ? HOPPER : new PtxCompiler(target)).compile(kernel);
        PtxKernel raced = CACHE.putIfAbsent(key, compiled);
        return raced != null ? raced : compiled;
    }

    /**
     * The PTX entry name of a kernel: its class's simple binary name and the method name, joined
     * by {@code _} ({@code MoeKernels_pack}; a nested class {@code A$B} gives {@code A_B_...}).
     */
    public static String entryName(Kernel kernel) {
        String cls = kernel.owner().getName();
        String raw = cls.substring(cls.lastIndexOf('.') + 1) + "_" + kernel.name();
        StringBuilder sb = new StringBuilder(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
            sb.append(ok ? c : '_');
        }
        if (!Character.isLetter(sb.charAt(0))) {
            sb.insert(0, 'k');
        }
        return sb.toString();
    }

    /**
     * Compiles {@code kernel} to a PTX module with one entry.
     *
     * @throws KernelCompileException if the kernel uses something the compiler does not support
     */
    public PtxKernel compile(Kernel kernel) {
        Objects.requireNonNull(kernel, "kernel");
        long start = System.nanoTime();
        Method method;
        LaunchBounds bounds;
        try {
            method = kernel.method();
            bounds = kernel.launchBounds();
        } catch (IllegalArgumentException e) {
            throw new KernelCompileException("cannot compile kernel " + kernel + ": " + e.getMessage(),
                    kernel.owner().getName(), kernel.name(), -1, "not a kernel method");
        }
        ClassFiles classes = new ClassFiles(kernel.owner().getClassLoader());
        MethodCode code = classes.uniqueMethod(kernel.owner().getName().replace('.', '/'), kernel.name());
        Scope scope = new Scope(kernel, code, null, -1);
        String entry = entryName(kernel);
        PtxFunction f = new PtxFunction(kernel, target, entry);
        if (kernel.blockThreads() > kernel.maxThreadsPerBlock()) {
            throw new KernelCompileException("cannot compile kernel " + kernel + " for blocks of "
                    + kernel.blockThreads() + " threads: its most is " + kernel.maxThreadsPerBlock(),
                    kernel.owner().getName(), kernel.name(), -1, "block size above the kernel's launch bounds");
        }
        // Only @LaunchBounds sets a directive, also for a kernel compiled for one block size: a
        // .reqntid where there was none would change ptxas's register budget (combine recv took 56
        // registers for 32 and half the resident blocks); Kernel.checkThreads keeps its launches at that size.
        if (bounds != null) {
            f.launchBounds(bounds.maxThreads(), bounds.minBlocksPerMultiprocessor());
        }
        int frame = f.newFrame();

        Value[] locals = new Value[Math.max(code.maxLocals, 1)];
        locals[0] = Value.of(Kind.CTX);
        int slot = 1;
        Class<?>[] params = method.getParameterTypes();
        for (int p = 1; p < params.length; p++) {
            Class<?> t = params[p];
            Kind k;
            Integer constant = kernel.constants().get(p - 1);
            if (t == Buf.class) {
                k = Kind.BUF;
                String param = f.param("u64", p - 1);
                String raw = f.tmp("b64");
                f.op("ld.param.u64 " + raw + ", [" + param + "]");
                f.op("cvta.to.global.u64 " + f.reg(k, 'L', slot, frame) + ", " + raw);
            } else {
                k = t == int.class ? Kind.INT : t == long.class ? Kind.LONG : Kind.FLOAT;
                String type = t == int.class ? "u32" : t == long.class ? "u64" : "f32";
                if (constant != null) {
                    // A specialisation constant: its value is compiled in, so that ptxas folds branches
                    // on it and unrolls loops it bounds, and it leaves the entry's parameters, so that
                    // a launch does not pass it (PtxKernel#passedPositions).
                    f.op("mov.u32 " + f.reg(k, 'L', slot, frame) + ", " + constant);
                } else {
                    f.op("ld.param." + type + " " + f.reg(k, 'L', slot, frame) + ", [" + f.param(type, p - 1) + "]");
                }
            }
            // A specialised parameter is a constant for the analysis too: branches on it are dropped.
            locals[slot] = constant != null ? Value.constant(k, constant) : Value.of(k);
            slot += k.slots;
        }

        Analysis analysis = LoopUnrolling.analyse(scope, classes, new Frame(locals, new Value[0]));
        new Lowering(f, classes, analysis, frame, null, null).lower();
        long shared = f.sharedBytes();
        if (shared > MAX_STATIC_SHARED_BYTES) {
            throw new KernelCompileException("cannot compile kernel " + kernel + ": its shared arrays take " + shared
                    + " bytes, more than the " + MAX_STATIC_SHARED_BYTES + " bytes of static shared memory a block may use",
                    kernel.owner().getName(), kernel.name(), code.firstLine, "too much shared memory");
        }
        String ptx = f.render();
        PtxKernel result = new PtxKernel(kernel, entry, ptx, f.externNames());
        dump(result);
        if (LOG.isDebugEnabled()) {
            LOG.debug("compiled kernel {} to PTX entry {} for {} in {} ms ({} lines, {} bytes of shared memory)",
                    kernel, entry, target, String.format("%.2f", (System.nanoTime() - start) / 1e6),
                    ptx.lines().count(), shared);
        }
        return result;
    }

    /**
     * The file {@value #DUMP_PROPERTY} writes {@code kernel}'s module to: {@code <entryName>.ptx},
     * and for a kernel compiled for constants or a block size its values in position order and
     * the block size too, so that every specialisation a run compiles (a sweep's handles) is kept:
     * {@code AllToAllKernels_combineRecv-4_4_7168_1024_8_0_0-b256.ptx} (a negative value as
     * {@code m1}).
     */
    public static String dumpName(Kernel kernel) {
        StringBuilder name = new StringBuilder(entryName(kernel));
        if (!kernel.constants().isEmpty()) {
            name.append('-').append(kernel.constants().values().stream()
                    .map(v -> v < 0 ? "m" + -(long) v : v.toString()).collect(java.util.stream.Collectors.joining("_")));
        }
        if (kernel.blockThreads() != 0) {
            name.append("-b").append(kernel.blockThreads());
        }
        return name.append(".ptx").toString();
    }

    private static void dump(PtxKernel k) {
        String dir = System.getProperty(DUMP_PROPERTY);
        if (dir == null || dir.isBlank()) {
            return;
        }
        try {
            Path d = Path.of(dir);
            Files.createDirectories(d);
            Path file = d.resolve(dumpName(k.kernel()));
            Files.writeString(file, k.ptx());
            LOG.debug("wrote PTX of {} to {}", k.kernel(), file);
        } catch (IOException e) {
            LOG.warn("cannot write PTX of {} to {}: {}", k.kernel(), dir, e.toString());
        }
    }
}
