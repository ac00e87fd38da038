package org.moecomm.bridge.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;
import org.moecomm.kernels.api.Buf;

/**
 * A kernel entry of a {@link CudaModule}.
 *
 * <p>Launch parameters are 8-byte slots, one per kernel parameter in order: the driver reads as
 * many bytes from each slot as the parameter has, so 32-bit values sit in the low half
 * ({@link #param(int)}, {@link #param(float)}, {@link #param(long)}, {@link #param(Buf)}).
 */
public final class CudaFunction {
    /** {@code CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK}. */
    public static final int ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
    /** {@code CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES} (static shared memory). */
    public static final int ATTRIBUTE_SHARED_SIZE_BYTES = 1;
    /** {@code CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES} (per-thread local memory: spills, stack). */
    public static final int ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
    /** {@code CU_FUNC_ATTRIBUTE_NUM_REGS}. */
    public static final int ATTRIBUTE_NUM_REGS = 4;
    /** {@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}. */
    public static final int ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
    /** {@code CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT} (percent of the L1/shared split given to shared memory). */
    public static final int ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9;

    private final CudaModule module;
    private final String name;
    private final long handle;

    CudaFunction(CudaModule module, String name, long handle) {
        this.module = module;
        this.name = name;
        this.handle = handle;
    }

    public static long param(int v) {
        return v & 0xffff_ffffL;
    }

    public static long param(float v) {
        return Float.floatToRawIntBits(v) & 0xffff_ffffL;
    }

    public static long param(long v) {
        return v;
    }

    /** A device buffer's address. */
    public static long param(Buf deviceBuf) {
        return deviceBuf.address();
    }

    public String name() {
        return name;
    }

    public long handle() {
        module.ensureOpen();
        return handle;
    }

    public CudaModule module() {
        return module;
    }

    /**
     * Enqueues a launch of {@code gridX x gridY x gridZ} blocks of {@code blockX x blockY x blockZ}
     * threads with {@code sharedBytes} of dynamic shared memory on {@code stream}.
     */
    public void launch(CudaStream stream, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int sharedBytes, long... params) {
        module.ensureOpen();
        module.context().bind();
        int rc = CudaNative.mcLaunchKernel(handle, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                stream.handle(), params, params.length);
        if (rc != Cuda.CUDA_SUCCESS) {
            failed(rc, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes);
        }
    }

    /**
     * {@link #launch(CudaStream, int, int, int, int, int, int, int, long...)} with the first
     * {@code count} 8-byte slots of the native segment {@code params} as the parameters: JNI then
     * passes an address instead of copying a {@code long[]} in and out (the runner's per-launch path).
     */
    void launch(CudaStream stream, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int sharedBytes, MemorySegment params, int count) {
        if ((long) count * Long.BYTES > params.byteSize()) {
            throw new IllegalArgumentException(count + " parameter slots do not fit in " + params);
        }
        module.ensureOpen();
        module.context().bind();
        int rc = CudaNative.mcLaunchKernelAt(handle, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                stream.handle(), params.address(), count);
        Reference.reachabilityFence(params); // the driver read the slots during the call: keep them alive until here
        if (rc != Cuda.CUDA_SUCCESS) {
            failed(rc, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes);
        }
    }

    private void failed(int rc, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedBytes) {
        Cuda.check(rc, "cuLaunchKernel(" + name + ", grid " + gridX + "x" + gridY + "x" + gridZ + ", block "
                + blockX + "x" + blockY + "x" + blockZ + ", shared " + sharedBytes + ")");
    }

    /** Enqueues a one-dimensional-block launch: {@code gridX x gridY} blocks of {@code threads}. */
    public void launch(CudaStream stream, int gridX, int gridY, int threads, long... params) {
        launch(stream, gridX, gridY, 1, threads, 1, 1, 0, params);
    }

    /** A {@code CUfunction_attribute}. */
    public int attribute(int cuFunctionAttribute) {
        module.ensureOpen();
        module.context().bind();
        int[] out = new int[1];
        Cuda.check(CudaNative.mcFuncGetAttribute(out, cuFunctionAttribute, handle),
                "cuFuncGetAttribute(" + name + ", " + cuFunctionAttribute + ")");
        return out[0];
    }

    /**
     * Blocks of {@code threads} threads (and {@code dynamicSharedBytes} of dynamic shared memory)
     * that one multiprocessor keeps resident at once, as its registers, shared memory and thread
     * slots allow ({@code cuOccupancyMaxActiveBlocksPerMultiprocessor}).
     */
    public int residentBlocksPerMultiprocessor(int threads, long dynamicSharedBytes) {
        if (threads < 1 || dynamicSharedBytes < 0) {
            throw new IllegalArgumentException("threads must be positive and shared bytes non-negative, got " + threads
                    + " and " + dynamicSharedBytes);
        }
        module.ensureOpen();
        module.context().bind();
        int[] out = new int[1];
        Cuda.check(CudaNative.mcOccupancyMaxActiveBlocks(out, handle, threads, dynamicSharedBytes),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor(" + name + ", " + threads + " threads)");
        return out[0];
    }

    public int numRegisters() {
        return attribute(ATTRIBUTE_NUM_REGS);
    }

    public int maxThreadsPerBlock() {
        return attribute(ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    }

    public int staticSharedBytes() {
        return attribute(ATTRIBUTE_SHARED_SIZE_BYTES);
    }

    public int localBytesPerThread() {
        return attribute(ATTRIBUTE_LOCAL_SIZE_BYTES);
    }

    /** Allows launches with up to {@code bytes} of dynamic shared memory (above 48 KiB needs this). */
    public void setMaxDynamicSharedBytes(int bytes) {
        module.ensureOpen();
        module.context().bind();
        Cuda.check(CudaNative.mcFuncSetAttribute(handle, ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
                "cuFuncSetAttribute(" + name + ", MAX_DYNAMIC_SHARED_SIZE_BYTES, " + bytes + ")");
    }

    /**
     * Asks for {@code percent} (0-100) of the multiprocessor's L1/shared memory as shared memory when
     * this function runs (a hint; kernels of one stream with the same carveout need no
     * reconfiguration of the split between them).
     */
    public void setPreferredSharedCarveout(int percent) {
        if (percent < 0 || percent > 100) {
            throw new IllegalArgumentException("a carveout is 0-100 percent, got " + percent);
        }
        module.ensureOpen();
        module.context().bind();
        Cuda.check(CudaNative.mcFuncSetAttribute(handle, ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent),
                "cuFuncSetAttribute(" + name + ", PREFERRED_SHARED_MEMORY_CARVEOUT, " + percent + ")");
    }

    @Override
    public String toString() {
        return "CudaFunction[" + name + "]";
    }
}
