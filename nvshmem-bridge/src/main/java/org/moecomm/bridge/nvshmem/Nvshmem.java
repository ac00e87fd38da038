package org.moecomm.bridge.nvshmem;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import org.bytedeco.javacpp.Loader;
import org.moecomm.bridge.Lazy;

/**
 * The NVSHMEM bridge of this process: loading the native library, initialisation (unique id or
 * NVSHMEM's own PMI/MPI bootstrap), symmetric memory, the bridge's bounded barrier kernel on a
 * CUDA stream, and the registration of modules whose kernels call NVSHMEM: puts, signals and
 * waits are made by kernels themselves, through the device functions of
 * {@code moe_nvshmem_devfns.cu} ({@link NvshmemDeviceLibrary}).
 *
 * <p>NVSHMEM is initialised at most once per process, so this class is static. Loading never
 * throws from a class initialiser: {@link #availability()} says whether the bridge can be used and
 * why not; every other method throws {@link NvshmemException} with that reason when it cannot.
 *
 * <p>The library {@value #JNI_LIBRARY} is found, in order, at the path in the system property
 * {@value #LIBRARY_PROPERTY}, at the path in the environment variable {@value #LIBRARY_ENV}, or
 * by JavaCPP's loader (class path resources, then {@code java.library.path}). It is built on a
 * GPU machine by {@code scripts/gpu-nvshmem-build.sh}.
 *
 * <p>Addresses and stream handles are {@code long}s: a CUDA driver {@code CUstream} (see
 * {@code org.moecomm.bridge.cuda.CudaStream#handle()}) is the runtime's {@code cudaStream_t}.
 * Call from a thread on which the device's primary context is current
 * ({@code CudaContext#bind()}).
 */
public final class Nvshmem {
    /** File name stem of the native library. */
    public static final String JNI_LIBRARY = "jniNvshmemNative";
    /** System property naming the library file. */
    public static final String LIBRARY_PROPERTY = "moecomm.nvshmem.library";
    /** Environment variable naming the library file. */
    public static final String LIBRARY_ENV = "MOECOMM_NVSHMEM_LIB";

    /**
     * Whether the bridge can be used in this process.
     *
     * @param available     the library loaded and sees at least one CUDA device
     * @param reason        why not, or a one-line description when available
     * @param headerVersion NVSHMEM version the library was compiled against (30405 for 3.4.5), 0 if unknown
     * @param deviceCount   CUDA devices visible, 0 if unknown
     */
    public record Availability(boolean available, String reason, int headerVersion, int deviceCount) {
    }

    private static final Lazy<Availability> AVAILABILITY = new Lazy<>(Nvshmem::probe);
    private static volatile boolean loaded;

    private Nvshmem() {
    }

    // ---- loading ----

    /** Loads the library once and reports whether the bridge can be used. Never throws. */
    public static Availability availability() {
        return AVAILABILITY.get();
    }

    public static boolean isAvailable() {
        return availability().available();
    }

    /** Throws {@link NvshmemException} with the reason unless the bridge can be used. */
    public static void require() {
        Availability a = availability();
        if (!a.available()) {
            throw new NvshmemException("the NVSHMEM bridge is not available: " + a.reason(), null);
        }
    }

    /** Throws unless the library loaded (it may still see no device). */
    static void requireLoaded() {
        if (loaded) {
            return;
        }
        Availability a = availability();
        if (!loaded) {
            throw new NvshmemException("the NVSHMEM bridge is not available: " + a.reason(), null);
        }
    }

    private static Availability probe() {
        String explicit = System.getProperty(LIBRARY_PROPERTY);
        String source;
        if (explicit == null || explicit.isBlank()) {
            explicit = System.getenv(LIBRARY_ENV);
            source = "environment variable " + LIBRARY_ENV;
        } else {
            source = "system property " + LIBRARY_PROPERTY;
        }
        try {
            if (explicit != null && !explicit.isBlank()) {
                Path p = Path.of(explicit).toAbsolutePath();
                if (!Files.isRegularFile(p)) {
                    return new Availability(false, source + " names " + p + ", which is not a file", 0, 0);
                }
                System.load(p.toString());
            } else {
                Loader.load(NvshmemNative.class);
            }
        } catch (Throwable t) {
            return new Availability(false, "the native library " + JNI_LIBRARY + " (NVSHMEM bridge) could not be"
                    + " loaded: " + t + ". It is built on a GPU machine with NVSHMEM by scripts/gpu-nvshmem-build.sh;"
                    + " point " + LIBRARY_ENV + " (or -D" + LIBRARY_PROPERTY + ") at the built file", 0, 0);
        }
        loaded = true;
        int header = NvshmemNative.headerVersion();
        int[] count = new int[1];
        int rc = NvshmemNative.deviceCount(count);
        if (rc != 0) {
            return new Availability(false, "no usable CUDA device: " + NvshmemNative.lastError(), header, 0);
        }
        if (count[0] < 1) {
            return new Availability(false, "no CUDA device is visible (CUDA_VISIBLE_DEVICES="
                    + System.getenv("CUDA_VISIBLE_DEVICES") + ")", header, 0);
        }
        return new Availability(true, "NVSHMEM bridge built against NVSHMEM " + version(header) + ", " + count[0]
                + " CUDA device(s) visible", header, count[0]);
    }

    static String version(int v) {
        return (v / 10000) + "." + (v / 100 % 100) + "." + (v % 100);
    }

    static void check(int rc, String call) {
        if (rc != 0) {
            throw new NvshmemException(call, rc, NvshmemNative.lastError());
        }
    }

    // ---- environment ----

    /**
     * Sets an environment variable of this process (NVSHMEM reads {@code NVSHMEM_*} at
     * initialisation, after the JVM started). Does not change {@link System#getenv()}.
     */
    public static void setEnv(String name, String value, boolean overwrite) {
        requireLoaded();
        check(NvshmemNative.setenv(Objects.requireNonNull(name), Objects.requireNonNull(value), overwrite ? 1 : 0),
                "setenv(" + name + ")");
    }

    /** The process's environment variable as native code sees it (including {@link #setEnv} changes). */
    public static String getEnv(String name) {
        requireLoaded();
        return NvshmemNative.getenv(Objects.requireNonNull(name));
    }

    // ---- device ----

    /** Selects the CUDA device of this process's runtime calls ({@code cudaSetDevice}). */
    public static void setDevice(int device) {
        require();
        check(NvshmemNative.setDevice(device), "cudaSetDevice(" + device + ")");
    }

    /** {free, total} bytes of the current device. */
    public static long[] memoryInfo() {
        require();
        long[] free = new long[1];
        long[] total = new long[1];
        check(NvshmemNative.memGetInfo(free, total), "cudaMemGetInfo");
        return new long[] {free[0], total[0]};
    }

    // ---- initialisation ----

    /** A fresh unique id (rank 0 makes it and hands it to the others). */
    public static UniqueId uniqueId() {
        require();
        int n = NvshmemNative.uniqueIdBytes();
        if (n != UniqueId.BYTES) {
            throw new NvshmemException("the bridge was built with a " + n + "-byte nvshmemx_uniqueid_t; this code expects "
                    + UniqueId.BYTES, null);
        }
        byte[] out = new byte[n];
        check(NvshmemNative.getUniqueId(out, n), "nvshmemx_get_uniqueid");
        return UniqueId.of(out);
    }

    /**
     * Initialises NVSHMEM as PE {@code rank} of {@code nranks} from {@code id}
     * ({@code NVSHMEMX_INIT_WITH_UNIQUEID}); collective over the job. NVSHMEM ends the process
     * itself (printing why) when its initialisation fails.
     */
    public static void initWithUniqueId(int rank, int nranks, UniqueId id) {
        require();
        byte[] b = id.bytes();
        check(NvshmemNative.initUniqueId(rank, nranks, b, b.length), "nvshmemx_init_attr(UNIQUEID, rank " + rank
                + " of " + nranks + ")");
    }

    /**
     * Initialises NVSHMEM with its default bootstrap, chosen by {@code NVSHMEM_BOOTSTRAP}
     * ({@code PMI}, {@code MPI}, ...): for jobs started by {@code srun} or {@code mpirun}.
     */
    public static void initWithDefaultBootstrap() {
        require();
        check(NvshmemNative.initDefault(), "nvshmem_init");
    }

    public static boolean isInitialized() {
        return loaded && NvshmemNative.initStatus() >= 2;
    }

    /**
     * {@code nvshmemx_init_status()} in words: with several PEs on one GPU NVSHMEM reports
     * "limited" multi-process-per-GPU mode (team APIs and on-stream collectives unavailable)
     * unless the PEs' {@code CUDA_MPS_ACTIVE_THREAD_PERCENTAGE} add up to at most 100.
     */
    public static String initStatus() {
        if (!loaded) {
            return "not loaded";
        }
        int s = NvshmemNative.initStatus();
        return switch (s) {
            case 0 -> "not initialised";
            case 1 -> "bootstrapped";
            case 2 -> "initialised";
            case 3 -> "initialised, limited multi-process-per-GPU mode";
            case 4 -> "initialised, full multi-process-per-GPU mode";
            default -> "status " + s;
        };
    }

    public static int myPe() {
        requireInitialized("nvshmem_my_pe");
        return NvshmemNative.myPe();
    }

    public static int nPes() {
        requireInitialized("nvshmem_n_pes");
        return NvshmemNative.nPes();
    }

    /** Finalises NVSHMEM (collective). */
    public static void finalizeNvshmem() {
        requireLoaded();
        check(NvshmemNative.finalizeNvshmem(), "nvshmem_finalize");
    }

    /**
     * For a process that leaves NVSHMEM unfinalised (its peers may be gone): its exit, whenever it
     * comes (after the JVM's shutdown hooks), ends the process at once with its status, without
     * the native exit handlers registered before this call. Those are CUDA's and NVSHMEM's
     * teardown, which raced with NVSHMEM's still running proxy thread and could kill the exiting
     * process with SIGSEGV after its work was done. Idempotent.
     */
    public static void exitWithoutTeardown() {
        requireLoaded();
        check(NvshmemNative.exitWithoutTeardown(), "exit_without_teardown");
    }

    private static void requireInitialized(String call) {
        requireLoaded();
        if (NvshmemNative.initStatus() < 2) {
            throw new NvshmemException(call, NvshmemNative.ERR_NOT_INITIALIZED, "NVSHMEM is not initialised");
        }
    }

    // ---- symmetric memory ----

    /**
     * Collective: allocates {@code bytes} of symmetric memory, zeroes it (on {@code stream}, then
     * synchronised) and ends with a barrier of all PEs. Returns the local address. Throws
     * {@link NvshmemException} with {@link NvshmemException#outOfSymmetricMemory()} when the heap
     * is full.
     */
    public static long mallocZeroed(long bytes, long stream) {
        requireInitialized("nvshmem_malloc");
        long[] p = new long[1];
        check(NvshmemNative.mallocZeroed(p, bytes, stream), "nvshmem_malloc(" + bytes + ")");
        return p[0];
    }

    /** Collective {@code nvshmem_free}. */
    public static void free(long address) {
        requireInitialized("nvshmem_free");
        check(NvshmemNative.free(address), "nvshmem_free");
    }

    /** {@code nvshmem_ptr}: where this process can load/store {@code pe}'s copy of {@code address}; 0 if only remote access works. */
    public static long peerPointer(long address, int pe) {
        requireInitialized("nvshmem_ptr");
        return NvshmemNative.ptr(address, pe);
    }

    /** Host {@code nvshmem_barrier_all} (unbounded; {@link #barrier} is the bounded one). */
    public static void barrierAll() {
        requireInitialized("nvshmem_barrier_all");
        check(NvshmemNative.barrierAll(), "nvshmem_barrier_all");
    }

    // ---- launches (asynchronous on stream) ----

    /**
     * Enqueues a bounded barrier of all PEs over the symmetric array {@code words [nPes]} of uint64:
     * completes this PE's earlier puts, sets word {@code me} to {@code epoch} on every PE, waits for
     * every local word to reach {@code epoch}. Epochs must grow.
     */
    public static void barrier(long stream, long words, long epoch, int nPes, int me, long timeoutNanos,
                               ErrorBuffer errors, int tag) {
        requireLoaded();
        check(NvshmemNative.barrierLaunch(stream, words, epoch, nPes, me, timeoutNanos, errors.context(), tag),
                "barrier launch");
    }

    /**
     * Enqueues, on {@code stream}, the setting of the symmetric uint64 {@code word} to
     * {@code value} (not 0) on every PE: how a PE raises its abort word on its peers.
     */
    public static void raiseAbort(long stream, long word, long value, int nPes) {
        requireLoaded();
        check(NvshmemNative.abortLaunch(stream, word, value, nPes), "abort launch");
    }

    /** Registers a driver-loaded module whose device code calls NVSHMEM ({@code nvshmemx_cumodule_init}). */
    public static void registerModule(long module) {
        requireInitialized("nvshmemx_cumodule_init");
        check(NvshmemNative.cumoduleInit(module), "nvshmemx_cumodule_init");
    }

    public static void unregisterModule(long module) {
        requireInitialized("nvshmemx_cumodule_finalize");
        check(NvshmemNative.cumoduleFinalize(module), "nvshmemx_cumodule_finalize");
    }
}
