package org.moecomm.core.gpu;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.WeakHashMap;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.moecomm.bridge.cuda.Cuda;
import org.moecomm.bridge.cuda.CudaContext;
import org.moecomm.bridge.cuda.CudaGraph;
import org.moecomm.bridge.cuda.CudaStream;
import org.moecomm.bridge.nvshmem.ErrorBuffer;
import org.moecomm.bridge.nvshmem.Nvshmem;
import org.moecomm.bridge.nvshmem.UniqueId;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.launch.LaunchEnv;
import org.moecomm.core.launch.Rendezvous;
import org.moecomm.core.protocol.AllToAllProtocol;

/**
 * The GPU backend of this process: one rank (one NVSHMEM PE) on one CUDA device. It sizes the
 * symmetric heap, initialises NVSHMEM once, and makes dispatch/combine handles that run the
 * shared protocol ({@link AllToAllProtocol}) with the bridge's transport, GPU memory and the
 * Java kernels compiled to PTX.
 *
 * <pre>{@code
 * try (GpuBackend gpu = GpuBackend.start(config)) {          // collective over the job
 *     try (MoeAllToAll h = gpu.createHandle(config)) {       // collective
 *         ... h.dispatch(in, out); ... h.combine(combineIn, y);
 *     }
 * }
 * }</pre>
 *
 * <p>How the process finds its rank and peers ({@link Bootstrap#AUTO}): under
 * {@link org.moecomm.core.launch.LocalLauncher} rank 0 makes an NVSHMEM unique id and leaves it at
 * the launcher's loopback rendezvous for the others; under {@code mpirun}/{@code srun} (or when
 * {@code NVSHMEM_BOOTSTRAP} is set) NVSHMEM's own PMI/MPI bootstrap is used; otherwise the process
 * is a job of one. The device is {@code MOECOMM_DEVICE}, else the local rank modulo the visible
 * devices.
 *
 * <p>The symmetric heap: when {@code NVSHMEM_SYMMETRIC_SIZE} is not set, it is set (before
 * NVSHMEM starts) to the need of the given configurations plus a margin
 * ({@link SymmetricMemory#heapSizeFor}); when the user set it and it is too small, or the device
 * has less free memory than the heap, {@link #start} refuses with both numbers.
 */
public final class GpuBackend implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(GpuBackend.class);
    /** Rendezvous key of the NVSHMEM unique id. */
    static final String UNIQUE_ID_KEY = "nvshmem-unique-id";

    /** How NVSHMEM is bootstrapped. */
    public enum Bootstrap {
        /** Pick from the environment (see the class comment). */
        AUTO,
        /** Unique id made by rank 0, exchanged through the launcher's rendezvous. */
        LAUNCHER,
        /** NVSHMEM's default bootstrap ({@code nvshmem_init}): PMI, PMIx or MPI per {@code NVSHMEM_BOOTSTRAP}. */
        NVSHMEM,
        /** A job of one process. */
        SINGLE
    }

    /**
     * @param symmetricBytes symmetric memory this process will allocate (sizes the heap)
     * @param device         CUDA device ordinal, or -1 to choose from the environment
     * @param bootstrap      how to find the peers
     * @param bootstrapTimeout bound of the unique-id exchange
     */
    public record Options(long symmetricBytes, int device, Bootstrap bootstrap, Duration bootstrapTimeout) {
        public Options {
            Objects.requireNonNull(bootstrap, "bootstrap");
            Objects.requireNonNull(bootstrapTimeout, "bootstrapTimeout");
            if (symmetricBytes < 0) {
                throw new IllegalArgumentException("symmetricBytes must be >= 0, got " + symmetricBytes);
            }
        }

        /** Room for one handle of each of {@code configs} (plus an endpoint's few bytes). */
        public static Options forConfigs(MoeConfig... configs) {
            long need = 1L << 20;
            for (MoeConfig c : configs) {
                need = Math.addExact(need, SymmetricMemory.of(c).total());
            }
            return new Options(need, -1, Bootstrap.AUTO, Duration.ofMinutes(2));
        }

        public Options withDevice(int d) {
            return new Options(symmetricBytes, d, bootstrap, bootstrapTimeout);
        }

        public Options withBootstrap(Bootstrap b) {
            return new Options(symmetricBytes, device, b, bootstrapTimeout);
        }

        public Options withSymmetricBytes(long bytes) {
            return new Options(bytes, device, bootstrap, bootstrapTimeout);
        }
    }

    /** Whether this process can run the GPU backend, and why not. */
    public record Availability(boolean available, String reason) {
    }

    private static GpuBackend started;
    private static boolean startedOnce;

    private final CudaContext context;
    private final int rank;
    private final int worldSize;
    private final int device;
    private final SymmetricAccounting accounting;
    private final Bootstrap bootstrap;
    /** Whether close() may finalise collectively: not after any failure of a handle made here. */
    private final Teardown teardown = new Teardown();
    /** The longest wait timeout of the handles made here (sizes the bound of the collective finalisation). */
    private Duration longestWait = Duration.ZERO;
    /** The transport of each handle made here, for {@link #deviceTiming} (weak: a dropped handle is forgotten). */
    private final Map<MoeAllToAll, GpuTransport> transports = new WeakHashMap<>();
    private boolean closed;

    private GpuBackend(CudaContext context, int rank, int worldSize, int device, SymmetricAccounting accounting,
                       Bootstrap bootstrap) {
        this.context = context;
        this.bootstrap = bootstrap;
        this.rank = rank;
        this.worldSize = worldSize;
        this.device = device;
        this.accounting = accounting;
    }

    /** CUDA and the NVSHMEM bridge are both usable here (never throws). */
    public static Availability availability() {
        Cuda.Availability c = Cuda.availability();
        if (!c.available()) {
            return new Availability(false, "CUDA: " + c.reason());
        }
        Nvshmem.Availability n = Nvshmem.availability();
        if (!n.available()) {
            return new Availability(false, "NVSHMEM: " + n.reason());
        }
        return new Availability(true, c.reason() + "; " + n.reason());
    }

    /** {@link #start(Options)} with room for one handle of each config. */
    public static GpuBackend start(MoeConfig... configs) {
        return start(Options.forConfigs(configs));
    }

    /** Starts this process's rank: selects the device, sizes the heap, initialises NVSHMEM (collective). */
    public static synchronized GpuBackend start(Options options) {
        Objects.requireNonNull(options, "options");
        if (startedOnce) {
            throw new IllegalStateException("the GPU backend was already started in this process (NVSHMEM initialises"
                    + " once per process): use GpuBackend.current()");
        }
        Availability a = availability();
        if (!a.available()) {
            throw new MoeCommException("the GPU backend cannot run here: " + a.reason());
        }
        Map<String, String> env = System.getenv();
        LaunchEnv.Place place = LaunchEnv.place(env);
        Bootstrap mode = resolve(options.bootstrap(), env, place);
        int count = Cuda.deviceCount();
        int device = options.device() >= 0 ? options.device()
                : env.containsKey(LaunchEnv.DEVICE) ? Integer.parseInt(env.get(LaunchEnv.DEVICE).strip())
                : place.localRank() % count;
        CudaContext ctx = CudaContext.open(device);
        try {
            Nvshmem.setDevice(device);
            SymmetricAccounting accounting = sizeHeap(options.symmetricBytes(), env, ctx, place);
            int[] pe = init(mode, place, options.bootstrapTimeout());
            GpuBackend b = new GpuBackend(ctx, pe[0], pe[1], device, accounting, mode);
            LOG.info("rank {} of {}: NVSHMEM {} ({} bootstrap, {}), device {} ({}), symmetric heap {} ({})", pe[0],
                    pe[1], Nvshmem.initStatus(), mode, place.source(), device, ctx.deviceName(),
                    SymmetricMemory.mib(accounting.heapBytes()),
                    place.pesPerGpu() > 1 ? place.pesPerGpu() + " PEs share this GPU" : "one PE on this GPU");
            started = b;
            startedOnce = true;
            return b;
        } catch (RuntimeException | Error e) {
            ctx.close();
            throw e;
        }
    }

    /** The running backend of this process, or null. */
    public static synchronized GpuBackend current() {
        return started;
    }

    private static Bootstrap resolve(Bootstrap requested, Map<String, String> env, LaunchEnv.Place place) {
        if (requested != Bootstrap.AUTO) {
            return requested;
        }
        if (env.containsKey(LaunchEnv.RENDEZVOUS)) {
            return Bootstrap.LAUNCHER;
        }
        if (env.containsKey("NVSHMEM_BOOTSTRAP") || !place.source().equals("single process")) {
            return Bootstrap.NVSHMEM;
        }
        return Bootstrap.SINGLE;
    }

    private static SymmetricAccounting sizeHeap(long need, Map<String, String> env, CudaContext ctx,
                                                LaunchEnv.Place place) {
        String user = env.get("NVSHMEM_SYMMETRIC_SIZE");
        long heap;
        String source;
        if (user != null && !user.isBlank()) {
            try {
                heap = SymmetricMemory.parseSize(user);
            } catch (IllegalArgumentException e) {
                throw new MoeCommException("NVSHMEM_SYMMETRIC_SIZE=" + user + " is not a size (examples: 1073741824,"
                        + " 512M, 2G)", e);
            }
            source = "set by the user to " + user;
            if (heap < need) {
                throw new MoeCommException("rank " + place.rank() + ": the configuration needs " + need
                        + " bytes (" + SymmetricMemory.mib(need) + ") of symmetric memory per rank, but"
                        + " NVSHMEM_SYMMETRIC_SIZE=" + user + " gives " + heap + " bytes ("
                        + SymmetricMemory.mib(heap) + "). Raise NVSHMEM_SYMMETRIC_SIZE to at least "
                        + SymmetricMemory.heapSizeFor(need) + ", or unset it to have it sized automatically.");
            }
        } else {
            heap = SymmetricMemory.heapSizeFor(need);
            source = "sized for " + SymmetricMemory.mib(need) + " needed";
            Nvshmem.setEnv("NVSHMEM_SYMMETRIC_SIZE", Long.toString(heap), true);
        }
        long free = ctx.memoryInfo().freeBytes();
        if (heap > free) {
            throw new MoeCommException("rank " + place.rank() + ": the symmetric heap needs " + heap + " bytes ("
                    + SymmetricMemory.mib(heap) + ", NVSHMEM_SYMMETRIC_SIZE, " + source + ") but device "
                    + ctx.deviceName() + " has only " + free + " bytes (" + SymmetricMemory.mib(free) + ") free"
                    + (place.pesPerGpu() > 1 ? " (" + place.pesPerGpu() + " ranks share this GPU)" : ""));
        }
        return new SymmetricAccounting(heap, source);
    }

    /** Initialises NVSHMEM; returns {my PE, number of PEs}. */
    private static int[] init(Bootstrap mode, LaunchEnv.Place place, Duration timeout) {
        switch (mode) {
            case LAUNCHER -> {
                Rendezvous rv = Rendezvous.fromEnvironment(System.getenv());
                if (rv == null) {
                    throw new MoeCommException("launcher bootstrap requested but " + LaunchEnv.RENDEZVOUS + " is not set");
                }
                if (place.worldSize() < 1) {
                    throw new MoeCommException("launcher bootstrap needs " + LaunchEnv.WORLD_SIZE);
                }
                UniqueId id;
                if (place.rank() == 0) {
                    id = Nvshmem.uniqueId();
                    rv.put(UNIQUE_ID_KEY, id.bytes());
                } else {
                    id = UniqueId.of(rv.get(UNIQUE_ID_KEY, timeout));
                }
                Nvshmem.initWithUniqueId(place.rank(), place.worldSize(), id);
            }
            case NVSHMEM -> Nvshmem.initWithDefaultBootstrap();
            case SINGLE -> Nvshmem.initWithUniqueId(0, 1, Nvshmem.uniqueId());
            case AUTO -> throw new IllegalStateException("unresolved bootstrap");
        }
        int me = Nvshmem.myPe();
        int n = Nvshmem.nPes();
        if (mode == Bootstrap.LAUNCHER && (me != place.rank() || n != place.worldSize())) {
            throw new MoeCommException("NVSHMEM made this process PE " + me + " of " + n + " but the launcher says rank "
                    + place.rank() + " of " + place.worldSize());
        }
        return new int[] {me, n};
    }

    // ---- accessors ----

    public int rank() {
        return rank;
    }

    public int worldSize() {
        return worldSize;
    }

    /** CUDA device ordinal (as this process sees the devices). */
    public int device() {
        return device;
    }

    public CudaContext context() {
        return context;
    }

    /** Bytes of the symmetric heap (NVSHMEM_SYMMETRIC_SIZE as used by this process). */
    public long symmetricHeapBytes() {
        return accounting.heapBytes();
    }

    /** Bytes of the symmetric heap not yet allocated by this process's handles. */
    public long symmetricAvailableBytes() {
        return accounting.available();
    }

    /** What a handle of {@code config} takes from the symmetric heap on each rank. */
    public static SymmetricMemory memoryReport(MoeConfig config) {
        return SymmetricMemory.of(config);
    }

    // ---- handles ----

    /**
     * Collective: a dispatch/combine handle of {@code config} for this process's rank, returned
     * once every rank has its handle. Refuses, before allocating anything, a config whose
     * symmetric buffers do not fit in what is left of the heap.
     */
    public synchronized MoeAllToAll createHandle(MoeConfig config) {
        Objects.requireNonNull(config, "config");
        ensureOpen();
        if (config.worldSize() != worldSize) {
            throw new IllegalArgumentException("config.worldSize " + config.worldSize() + " differs from the job's "
                    + worldSize + " ranks");
        }
        SymmetricMemory need = SymmetricMemory.of(config);
        accounting.requireRoom(need.total(), rank, "a handle of " + config);
        GpuExecution exec = execution(config.waitTimeout());
        GpuTransport transport = null;
        GpuDeviceMemory memory = null;
        CheckedKernelRunner runner = null;
        AllToAllProtocol handle;
        try {
            transport = new GpuTransport(exec, accounting);
            memory = new GpuDeviceMemory(exec);
            runner = new CheckedKernelRunner(exec);
            CheckedKernelRunner r = runner;
            GpuDeviceMemory m = memory;
            handle = new AllToAllProtocol(config, transport, runner, memory, () -> closeAll(r, m, exec));
        } catch (RuntimeException | Error e) {
            closeQuietly(e, transport, runner, memory, exec);
            throw e;
        }
        try {
            transport.barrier();
        } catch (RuntimeException e) {
            handle.close();
            throw e;
        }
        transports.put(handle, transport);
        LOG.debug("rank {}: handle ready, {}", rank, need);
        return handle;
    }

    /**
     * What timing a handle's work on the device needs (benchmarks): the stream all of its work is
     * enqueued on, to record CUDA events on, a bounded barrier of all ranks that also waits for
     * that stream, and the same barrier enqueued on the stream without waiting for it
     * ({@code barrierOnStream}: what is enqueued next starts as every rank reaches it). Both are
     * collective; call them between whole protocol calls only.
     */
    public record DeviceTiming(CudaStream stream, Runnable barrier, Runnable barrierOnStream) {
    }

    /** {@link DeviceTiming} of a handle made by this backend's {@link #createHandle}. */
    public synchronized DeviceTiming deviceTiming(MoeAllToAll handle) {
        ensureOpen();
        GpuTransport t = transports.get(Objects.requireNonNull(handle, "handle"));
        if (t == null) {
            throw new IllegalArgumentException("not a handle of this GPU backend: " + handle);
        }
        return new DeviceTiming(CudaStream.wrap(context, t.stream()), t::barrier, t::barrierOnStream);
    }

    /**
     * Captures what {@code calls} enqueues on {@code handle}'s stream (its dispatch and combine
     * calls, and the caller's own launches on {@link DeviceTiming#stream()} between them) into a
     * CUDA graph: nothing runs during the capture, and the handle's calls go through their checks
     * and phases as usual. Capture a whole round, or dispatch and combine into two graphs with the
     * experts in between. Not collective; every rank captures the same calls.
     *
     * <pre>{@code
     * try (RoundGraph round = gpu.capture(a2a, () -> {
     *         a2a.dispatchSend(new DispatchInput(x, xScale, ids, TokenCount.inBuffer(m, 0)));
     *         a2a.dispatchRecv(dispatchOut);
     *         experts.launch(stream, dispatchOut, expertY);   // the caller's kernels
     *         a2a.combineSend(expertY);
     *         a2a.combineRecv(weights, out);
     *     })) {
     *     for (...) { write x, ids, weights, m; round.replay(); }
     * }
     * }</pre>
     *
     * @throws IllegalStateException if the handle checks its inputs on the host (set
     *                               {@code InputCheck.DEVICE}, or keep {@code AUTO} on a GPU): host
     *                               reads of device memory cannot be captured
     */
    public synchronized RoundGraph capture(MoeAllToAll handle, Runnable calls) {
        Objects.requireNonNull(calls, "calls");
        ensureOpen();
        GpuTransport t = transports.get(Objects.requireNonNull(handle, "handle"));
        if (t == null || !(handle instanceof AllToAllProtocol protocol)) {
            throw new IllegalArgumentException("not a handle of this GPU backend: " + handle);
        }
        if (protocol.checksInputsOnHost()) {
            throw new IllegalStateException("rank " + rank + ": the handle checks its inputs on the host ("
                    + handle.config().inputCheck() + "), which a CUDA graph cannot capture; use InputCheck.DEVICE");
        }
        t.checkErrors();
        CudaStream stream = CudaStream.wrap(context, t.stream());
        return new RoundGraph(CudaGraph.capture(stream, calls), stream, protocol, t);
    }

    /** Collective: a transport and device memory on a stream of their own, without the protocol. */
    public synchronized GpuEndpoint openEndpoint(Duration waitTimeout) {
        ensureOpen();
        GpuExecution exec = execution(waitTimeout);
        GpuTransport transport = null;
        GpuDeviceMemory memory = null;
        CheckedKernelRunner runner = null;
        try {
            transport = new GpuTransport(exec, accounting);
            memory = new GpuDeviceMemory(exec);
            runner = new CheckedKernelRunner(exec);
            return new GpuEndpoint(exec, transport, memory, runner, teardown::noteRecovered);
        } catch (RuntimeException | Error e) {
            closeQuietly(e, transport, runner, memory, exec);
            throw e;
        }
    }

    private GpuExecution execution(Duration waitTimeout) {
        Objects.requireNonNull(waitTimeout, "waitTimeout");
        if (waitTimeout.isNegative() || waitTimeout.isZero()) {
            throw new IllegalArgumentException("wait timeout must be positive, got " + waitTimeout);
        }
        if (waitTimeout.compareTo(longestWait) > 0) {
            longestWait = waitTimeout;
        }
        context.bind();
        CudaStream stream = context.createStream();
        ErrorBuffer errors;
        try {
            errors = ErrorBuffer.create();
        } catch (RuntimeException e) {
            stream.close();
            throw e;
        }
        return new GpuExecution(context, stream, errors, rank, waitTimeout.toNanos(), teardown::noteFailure);
    }

    private static void closeAll(AutoCloseable... all) throws Exception {
        Exception first = null;
        for (AutoCloseable c : all) {
            try {
                c.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private static void closeQuietly(Throwable primary, AutoCloseable... all) {
        for (AutoCloseable c : all) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    primary.addSuppressed(e);
                }
            }
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("the GPU backend is closed");
        }
    }

    /** True once any handle of this process recorded a failure (then {@link #close()} skips the collective finalisation). */
    public boolean failed() {
        return !teardown.collectiveAllowed();
    }

    /**
     * How long {@link #close()} waits for {@code nvshmem_finalize} when no failure was seen: the
     * system property {@code moecomm.gpu.finalizeTimeoutSeconds}, else twice the longest wait
     * timeout of this backend's handles, at least 60 s (ranks may reach their close some time apart).
     */
    Duration finalizeBound() {
        String p = System.getProperty("moecomm.gpu.finalizeTimeoutSeconds");
        if (p != null && !p.isBlank()) {
            return Duration.ofSeconds(Long.parseLong(p.strip()));
        }
        Duration twice = longestWait.multipliedBy(2);
        return twice.compareTo(Duration.ofSeconds(60)) > 0 ? twice : Duration.ofSeconds(60);
    }

    /**
     * Finalises NVSHMEM (collective: every rank closes its handles, then the backend). After a
     * failure of any handle made here (a timeout, a peer's abort, an abort raised here, a failed
     * CUDA call) the collective finalisation is skipped, since a peer may be gone: the symmetric
     * heap, NVSHMEM's own state and its proxy thread stay until the process exits, and the process
     * should exit (docs/contract.md); that exit skips the native teardown
     * ({@link Nvshmem#exitWithoutTeardown()}), which raced with the proxy thread. Without a failure,
     * {@code nvshmem_finalize} runs bounded ({@link #finalizeBound()}; on a thread of its own, except
     * under NVSHMEM's PMI/MPI bootstrap): a peer that died after its last call would hold it
     * forever, so past the bound close() logs an error and returns, leaving it running (and the
     * exit skips the teardown too).
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        boolean releaseContext = true;
        try {
            context.bind();
            if (failed()) {
                LOG.warn("rank {}: skipping the collective nvshmem_finalize after a failure ({}); the symmetric heap"
                        + " and NVSHMEM's state are left to the process's exit, which skips the native teardown",
                        rank, teardown.reason());
                Nvshmem.exitWithoutTeardown();
            } else if (Nvshmem.isInitialized() && bootstrap == Bootstrap.NVSHMEM) {
                // PMI/MPI bootstrap: an MPI library may require its finalisation on this thread;
                // the cluster's launcher supervises the job
                Nvshmem.finalizeNvshmem();
            } else if (Nvshmem.isInitialized()) {
                Duration bound = finalizeBound();
                boolean done = Teardown.runBounded(() -> {
                    context.bind();
                    Nvshmem.finalizeNvshmem();
                }, bound, "moecomm-nvshmem-finalize-rank-" + rank);
                if (!done) {
                    // the finalising thread may still use the context: leave it to the exit too
                    releaseContext = false;
                    Nvshmem.exitWithoutTeardown();
                    LOG.error("rank {}: nvshmem_finalize did not return within {} s (a peer is gone or never"
                            + " closed); returning without it: the process should exit", rank, bound.toSeconds());
                }
            }
        } finally {
            synchronized (GpuBackend.class) {
                if (started == this) {
                    started = null;
                }
            }
            if (releaseContext) {
                context.close();
            }
        }
    }

    @Override
    public String toString() {
        return "GpuBackend[rank " + rank + " of " + worldSize + ", device " + device + ", heap "
                + SymmetricMemory.mib(accounting.heapBytes()) + "]";
    }
}
