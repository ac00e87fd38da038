package org.moecomm.bridge.cuda;

import java.util.concurrent.atomic.AtomicLong;

/**
 * One CUDA device and its primary context (the context the runtime API, NVSHMEM and other
 * libraries of the same process share).
 *
 * <p>Driver calls act on the calling thread's current context; every wrapper class makes its
 * context current first ({@link #bind()}; cheap once bound). Objects made from a context must be
 * closed before it. Instances are not thread-safe beyond what the driver guarantees: use one
 * stream per thread.
 */
public final class CudaContext implements AutoCloseable {
    /** {@code CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT}. */
    public static final int ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
    /** {@code CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE} (bytes). */
    public static final int ATTRIBUTE_L2_CACHE_SIZE = 38;
    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR}. */
    public static final int ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR}. */
    public static final int ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN} (bytes). */
    public static final int ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

    /** Per thread: the handle this class last made current, and the {@link #GENERATION} it did so in. */
    private static final ThreadLocal<long[]> CURRENT = ThreadLocal.withInitial(() -> new long[2]);
    /** Bumped whenever a context is released: a released primary context may come back under the same handle. */
    private static final AtomicLong GENERATION = new AtomicLong();

    /** Free and total device memory in bytes. */
    public record MemoryInfo(long freeBytes, long totalBytes) {
    }

    private final int ordinal;
    private final int device;
    private final long handle;
    private final String name;
    private final int computeCapability;
    private final int multiprocessorCount;
    private final long totalMemory;
    private boolean closed;

    private CudaContext(int ordinal, int device, long handle) {
        this.ordinal = ordinal;
        this.device = device;
        this.handle = handle;
        bind();
        byte[] buf = new byte[256];
        Cuda.check(CudaNative.mcDeviceGetName(buf, buf.length, device), "cuDeviceGetName");
        this.name = Cuda.cString(buf);
        this.computeCapability = attribute(ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10
                + attribute(ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        this.multiprocessorCount = attribute(ATTRIBUTE_MULTIPROCESSOR_COUNT);
        long[] out = new long[1];
        Cuda.check(CudaNative.mcDeviceTotalMem(out, device), "cuDeviceTotalMem");
        this.totalMemory = out[0];
    }

    /** Retains the primary context of device 0. */
    public static CudaContext open() {
        return open(0);
    }

    /** Retains the primary context of the device with this ordinal. */
    public static CudaContext open(int ordinal) {
        Cuda.require();
        int count = Cuda.deviceCount();
        if (ordinal < 0 || ordinal >= count) {
            throw new IllegalArgumentException("device ordinal " + ordinal + " out of range: " + count + " device(s)");
        }
        int[] dev = new int[1];
        Cuda.check(CudaNative.mcDeviceGet(dev, ordinal), "cuDeviceGet(" + ordinal + ")");
        long[] ctx = new long[1];
        Cuda.check(CudaNative.mcDevicePrimaryCtxRetain(ctx, dev[0]), "cuDevicePrimaryCtxRetain(" + ordinal + ")");
        try {
            return new CudaContext(ordinal, dev[0], ctx[0]);
        } catch (RuntimeException e) {
            CudaNative.mcDevicePrimaryCtxRelease(dev[0]);
            throw e;
        }
    }

    /** Makes this context current on the calling thread (a no-op when it already is, as far as this class knows). */
    public void bind() {
        long[] current = CURRENT.get();
        long generation = GENERATION.get();
        if (current[0] != handle || current[1] != generation) {
            ensureOpen();
            Cuda.check(CudaNative.mcCtxSetCurrent(handle), "cuCtxSetCurrent");
            current[0] = handle;
            current[1] = generation;
        }
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("CUDA context of device " + ordinal + " is closed");
        }
    }

    public int ordinal() {
        return ordinal;
    }

    /** The {@code CUcontext} handle. */
    public long handle() {
        return handle;
    }

    public String deviceName() {
        return name;
    }

    /** Compute capability as {@code 10 * major + minor}: 90 for Hopper. */
    public int computeCapability() {
        return computeCapability;
    }

    public int multiprocessorCount() {
        return multiprocessorCount;
    }

    public long totalMemory() {
        return totalMemory;
    }

    /** A {@code CUdevice_attribute} of this device. */
    public int attribute(int cuDeviceAttribute) {
        int[] out = new int[1];
        Cuda.check(CudaNative.mcDeviceGetAttribute(out, cuDeviceAttribute, device),
                "cuDeviceGetAttribute(" + cuDeviceAttribute + ")");
        return out[0];
    }

    public MemoryInfo memoryInfo() {
        bind();
        long[] free = new long[1];
        long[] total = new long[1];
        Cuda.check(CudaNative.mcMemGetInfo(free, total), "cuMemGetInfo");
        return new MemoryInfo(free[0], total[0]);
    }

    /** A new stream that does not synchronise with the legacy default stream. */
    public CudaStream createStream() {
        return CudaStream.create(this, CudaStream.NON_BLOCKING);
    }

    /** The legacy default stream (handle 0); closing it does nothing. */
    public CudaStream defaultStream() {
        return CudaStream.wrap(this, 0L);
    }

    /** A new event that records timing. */
    public CudaEvent createEvent() {
        return CudaEvent.create(this, true);
    }

    public CudaEvent createEvent(boolean timing) {
        return CudaEvent.create(this, timing);
    }

    /** {@code bytes} of device memory ({@code cuMemAlloc}, 256-byte aligned), freed by {@link DeviceBuffer#close()}. */
    public DeviceBuffer allocate(long bytes) {
        return DeviceBuffer.allocate(this, bytes);
    }

    /** {@code bytes} of page-locked host memory, freed by {@link PinnedHostBuffer#close()}. */
    public PinnedHostBuffer allocatePinned(long bytes) {
        return PinnedHostBuffer.allocate(this, bytes);
    }

    /** Starts a JIT link (PTX, cubins, device libraries) into one module of this context. */
    public CudaModule.Linker linker() {
        return new CudaModule.Linker(this, false, -1);
    }

    /** Starts a JIT link with a verbose info log and an optimisation level (0..4; negative: default). */
    public CudaModule.Linker linker(boolean verbose, int optimizationLevel) {
        return new CudaModule.Linker(this, verbose, optimizationLevel);
    }

    /** Compiles and loads one PTX module through the JIT linker. */
    public CudaModule loadPtx(String name, String ptx) {
        try (CudaModule.Linker l = linker()) {
            return l.addPtx(name, ptx).link();
        }
    }

    /** Waits for all work in this context. */
    public void synchronize() {
        bind();
        Cuda.check(CudaNative.mcCtxSynchronize(), "cuCtxSynchronize");
    }

    /** Releases the primary context (the driver destroys it when its last user releases it). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        GENERATION.incrementAndGet();
        Cuda.check(CudaNative.mcDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
    }

    @Override
    public String toString() {
        return "CudaContext[" + ordinal + ": " + name + ", sm_" + computeCapability + ", " + multiprocessorCount
                + " SMs, " + (totalMemory >> 20) + " MiB]";
    }
}
