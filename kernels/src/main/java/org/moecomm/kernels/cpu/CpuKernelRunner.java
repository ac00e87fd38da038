package org.moecomm.kernels.cpu;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.KernelRunner;

/**
 * Runs kernels on the JVM with the execution model of a GPU block: {@link KernelContext#localBarrier()}
 * waits for all threads of the block, and block-shared arrays are shared by exactly the threads of
 * one block. Blocks run in parallel, at most {@link #maxConcurrentBlocks()} at a time, and never wait
 * for each other. Two ways to execute a block ({@link Execution}):
 *
 * <p>{@link Execution#LOOPS}, the default: the kernel's loop form ({@link LoopFormCompiler}, made
 * once per kernel) runs the block's threads one after another up to each barrier, on a pool of
 * platform threads sized to the cores. A kernel the transformation cannot handle runs with
 * {@link Execution#THREADS} instead, and the reason is logged once (logger
 * {@code org.moecomm.kernels.cpu.CpuKernelRunner}, INFO).
 *
 * <p>{@link Execution#THREADS}: every kernel thread is a virtual thread. A block starts by running
 * its threads one after another on a single virtual thread. If thread 0 reaches a barrier, the
 * other threads are started then and the block goes on as a fully parallel block (a schedule a
 * GPU may pick too). A kernel without barriers thus costs one virtual thread per block instead of
 * one per kernel thread.
 *
 * <p>Errors: an exception in any kernel thread fails the launch with a
 * {@link KernelExecutionException} whose cause is that exception; other threads stop, and blocks
 * not yet started are skipped. Breaking the barrier rules (a thread returns while others wait at a
 * barrier, or reaches a barrier its predecessors skipped) fails the launch with an
 * {@link IllegalStateException} cause instead of hanging. Only a kernel thread that never returns
 * (an endless loop) can hang a launch.
 *
 * <p>Callers that size blocks for a GPU ask {@link #blockThreads(int)} first: on the JVM a
 * block's threads are turns of one loop, so a kernel that works at any block size runs with at
 * most {@link #maxBlockThreads()} threads per block (system property
 * {@code moecomm.cpu.blockThreads}, default {@value #DEFAULT_BLOCK_THREADS}).
 *
 * <p>Thread-safe: launches from several threads run independently.
 */
public final class CpuKernelRunner implements KernelRunner {
    private static final MethodType BOUND_TYPE = MethodType.methodType(void.class, KernelContext.class);
    private static final Logger LOG = LogManager.getLogger(CpuKernelRunner.class);
    /** Loop forms by kernel method (empty: it has none), made once per process. */
    private static final ConcurrentHashMap<Method, Optional<LoopForm>> LOOP_FORMS = new ConcurrentHashMap<>();
    private static final ConcurrentHashMap<Method, String> NO_LOOP_FORM = new ConcurrentHashMap<>();

    /** How a block's kernel threads are executed. */
    public enum Execution {
        /** As loops between barriers ({@link LoopFormCompiler}); kernels it cannot handle run as {@link #THREADS}. */
        LOOPS,
        /** A virtual thread per kernel thread (the reference the loop form is checked against). */
        THREADS;

        /** The system property {@code moecomm.cpu.execution} ({@code loops} or {@code threads}), else {@link #LOOPS}. */
        public static Execution byDefault() {
            return System.getProperty("moecomm.cpu.execution", "loops").equalsIgnoreCase("threads") ? THREADS : LOOPS;
        }
    }

    /**
     * Threads per block by default: one. Measured (JMH, W = 4 rounds at 128 tokens, 2 cores): 256
     * threads 17.8 / 41.4 ms (deepseek-v2-lite / -v3), 64 threads 12.1 / 33.4, 16 threads 10.4 /
     * 29.3, 1 thread 7.7 / 28.7 (docs/kernels-in-java.md).
     */
    public static final int DEFAULT_BLOCK_THREADS = 1;

    private final int maxConcurrentBlocks;
    private final PeerMemory peers;
    private final Execution execution;
    private final int maxBlockThreads;
    private final ConcurrentHashMap<Kernel, Resolved> resolved = new ConcurrentHashMap<>();

    private record Resolved(Method method, Class<?>[] parameters, MethodHandle handle, int maxThreads) {
    }

    /** A runner that runs up to {@code availableProcessors()} blocks at once. */
    public CpuKernelRunner() {
        this(Runtime.getRuntime().availableProcessors());
    }

    public CpuKernelRunner(int maxConcurrentBlocks) {
        this(maxConcurrentBlocks, null);
    }

    /**
     * A runner whose kernels may call the one-sided communication methods of
     * {@link KernelContext}, served by {@code peers} ({@code null}: such calls fail the launch).
     */
    public CpuKernelRunner(int maxConcurrentBlocks, PeerMemory peers) {
        this(maxConcurrentBlocks, peers, Execution.byDefault());
    }

    /** A runner that executes blocks as {@code execution} says. */
    public CpuKernelRunner(int maxConcurrentBlocks, PeerMemory peers, Execution execution) {
        this(maxConcurrentBlocks, peers, execution, defaultBlockThreads());
    }

    /**
     * A runner whose {@link #blockThreads(int)} gives at most {@code maxBlockThreads} (a value at
     * least the GPU's block size runs every kernel at that size, as on a GPU).
     */
    public CpuKernelRunner(int maxConcurrentBlocks, PeerMemory peers, Execution execution, int maxBlockThreads) {
        if (maxConcurrentBlocks < 1) {
            throw new IllegalArgumentException("maxConcurrentBlocks must be positive, got " + maxConcurrentBlocks);
        }
        if (maxBlockThreads < 1) {
            throw new IllegalArgumentException("maxBlockThreads must be positive, got " + maxBlockThreads);
        }
        this.maxConcurrentBlocks = maxConcurrentBlocks;
        this.peers = peers;
        this.execution = Objects.requireNonNull(execution, "execution");
        this.maxBlockThreads = maxBlockThreads;
    }

    /**
     * The system property {@code moecomm.cpu.blockThreads} (a positive number), else
     * {@value #DEFAULT_BLOCK_THREADS}.
     */
    public static int defaultBlockThreads() {
        String value = System.getProperty("moecomm.cpu.blockThreads");
        if (value == null || value.isBlank()) {
            return DEFAULT_BLOCK_THREADS;
        }
        try {
            int n = Integer.parseInt(value.trim());
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("system property moecomm.cpu.blockThreads must be a positive number, got '"
                + value + "'");
    }

    /** Whether {@code method}'s loop form has been built (or refused) in this JVM. */
    static boolean loopFormBuilt(Method method) {
        return LOOP_FORMS.containsKey(method);
    }

    public Execution execution() {
        return execution;
    }

    /**
     * Why {@code kernel} runs with a virtual thread per kernel thread under {@link Execution#LOOPS};
     * empty if it runs as loops.
     */
    public static Optional<String> loopFormRefusal(Kernel kernel) {
        return loopForm(kernel.method()).isPresent() ? Optional.empty()
                : Optional.of(NO_LOOP_FORM.get(kernel.method()));
    }

    /** {@code method}'s loop form, built on the first call, or empty (the reason in {@link #loopFormRefusal}). */
    static Optional<LoopForm> loopForm(Method method) {
        return LOOP_FORMS.computeIfAbsent(method, m -> {
            LoopFormJit.applyOnce();
            try {
                return Optional.of(LoopFormCompiler.compile(new Kernel(m.getDeclaringClass(), m.getName())));
            } catch (LoopFormCompiler.Unsupported e) {
                NO_LOOP_FORM.put(m, e.getMessage());
                LOG.info("kernel {}.{} runs with a virtual thread per kernel thread: {}",
                        m.getDeclaringClass().getSimpleName(), m.getName(), e.getMessage());
                return Optional.empty();
            }
        });
    }

    /** What serves the kernels' one-sided communication, or {@code null}. */
    public PeerMemory peerMemory() {
        return peers;
    }

    /**
     * Whether this JVM runs the weighted sums of bf16 rows on the Vector API (it was started with
     * {@code --add-modules jdk.incubator.vector}; docs/kernels-in-java.md, "Vector sums").
     */
    public static boolean vectorSums() {
        return RowReduction.VECTOR_SUMS;
    }

    /**
     * Whether only C1 compiles the loop forms in this JVM, the default (a HotSpot compiler
     * directive; {@code -Dmoecomm.cpu.loopFormsInC2=true} lets C2 compile them too, which pays off
     * after some hundreds of rounds: docs/kernels-in-java.md, "Which JIT compiles the loop forms").
     *
     * @throws IllegalArgumentException if that property is neither true nor false
     */
    public static boolean loopFormsInC1Only() {
        return LoopFormJit.C1_ONLY.equals(LoopFormJit.applyOnce());
    }

    /** Most threads per block {@link #blockThreads(int)} gives. */
    public int maxBlockThreads() {
        return maxBlockThreads;
    }

    /** {@code deviceThreads}, at most {@link #maxBlockThreads()}. */
    @Override
    public int blockThreads(int deviceThreads) {
        if (deviceThreads < 1) {
            throw new IllegalArgumentException("deviceThreads must be positive, got " + deviceThreads);
        }
        return Math.min(deviceThreads, maxBlockThreads);
    }

    /** Most blocks that run at the same time. */
    public int maxConcurrentBlocks() {
        return maxConcurrentBlocks;
    }

    @Override
    public int concurrentBlocks() {
        return maxConcurrentBlocks;
    }

    /** Always: a block whose threads all wait goes back to the end of the queue ({@link BlockPool}). */
    @Override
    public boolean blocksMayWaitForEachOther(Kernel kernel, Grid grid, Object... args) {
        return true;
    }

    /**
     * Runs {@code kernel} over {@code grid} and returns when every block has finished.
     *
     * @throws IllegalArgumentException  if the arguments do not match the kernel's parameters
     * @throws KernelExecutionException  if a kernel thread failed
     */
    @Override
    public void launch(Kernel kernel, Grid grid, Object... args) {
        Objects.requireNonNull(grid, "grid");
        Object[] arguments = args == null ? new Object[0] : args;
        Resolved r = checked(kernel, arguments);
        kernel.checkThreads(grid, r.maxThreads());
        if (execution == Execution.LOOPS) {
            Optional<LoopForm> form = loopForm(r.method());
            if (form.isPresent()) {
                new LoopLaunch(kernel, grid, form.get(), arguments, maxConcurrentBlocks, peers).run();
                return;
            }
        }
        MethodHandle body = MethodHandles.insertArguments(r.handle(), 1, arguments).asType(BOUND_TYPE);
        new KernelLaunch(kernel, grid, body, maxConcurrentBlocks, peers).run();
    }

    /**
     * Builds {@code kernel}'s loop form now (under {@link Execution#LOOPS}), after checking
     * {@code args} as {@link #launch} does, so that its first launch does not generate and verify
     * the class: the protocol prepares its kernels when a handle is created, as a GPU runner loads
     * its modules then.
     *
     * @throws IllegalArgumentException if the arguments do not match the kernel's parameters
     */
    @Override
    public void prepare(Kernel kernel, int threads, Object... args) {
        Resolved r = checked(kernel, args == null ? new Object[0] : args);
        if (execution == Execution.LOOPS) {
            loopForm(r.method());
        }
    }

    /** {@code kernel} resolved, after checking {@code args} against its parameters. */
    private Resolved checked(Kernel kernel, Object[] args) {
        Objects.requireNonNull(kernel, "kernel");
        Resolved r = resolved.computeIfAbsent(kernel, CpuKernelRunner::resolve);
        checkArguments(kernel, r.parameters(), args);
        return r;
    }

    private static Resolved resolve(Kernel kernel) {
        Method method = kernel.method();
        try {
            method.setAccessible(true);
            return new Resolved(method, method.getParameterTypes(), MethodHandles.lookup().unreflect(method),
                    kernel.maxThreadsPerBlock());
        } catch (IllegalAccessException | RuntimeException e) {
            throw new IllegalArgumentException("kernel " + kernel + ": cannot access " + method + ": " + e.getMessage(), e);
        }
    }

    /** Checks count and types; parameter numbers are those of the method (0 is the KernelContext). */
    private static void checkArguments(Kernel kernel, Class<?>[] parameters, Object[] args) {
        if (args.length != parameters.length - 1) {
            throw new IllegalArgumentException("kernel " + kernel + " takes " + (parameters.length - 1)
                    + " arguments after the KernelContext, got " + args.length);
        }
        for (int i = 0; i < args.length; i++) {
            Class<?> p = parameters[i + 1];
            Class<?> expected = p == int.class ? Integer.class : p == long.class ? Long.class
                    : p == float.class ? Float.class : Buf.class;
            Object a = args[i];
            if (a == null || a.getClass() != expected) {
                throw new IllegalArgumentException("kernel " + kernel + ": parameter " + (i + 1) + " (args[" + i
                        + "]) has type " + p.getSimpleName() + " and needs a " + expected.getSimpleName() + ", got "
                        + (a == null ? "null" : a.getClass().getSimpleName()));
            }
            if (a instanceof Buf b && !b.segment().isAccessibleBy(OTHER_THREAD)) {
                // a confined segment: the blocks run on other threads than its owner
                throw new IllegalArgumentException("kernel " + kernel + ": parameter " + (i + 1) + " (args[" + i
                        + "]) is a Buf of a confined arena (Arena.ofConfined()), which only its owner thread may"
                        + " access, and a kernel's blocks run on other threads: allocate kernel buffers from"
                        + " Arena.ofShared() or Arena.global()");
            }
        }
    }

    /** A thread that owns no segment: a segment it may not access is confined to some thread. */
    private static final Thread OTHER_THREAD = Thread.ofVirtual().unstarted(() -> { });
}
