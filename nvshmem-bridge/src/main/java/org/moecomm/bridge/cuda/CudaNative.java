package org.moecomm.bridge.cuda;

import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Platform;

/**
 * The JNI surface over {@code cuda_shim.h} (in {@code src/main/cpp}), generated and compiled
 * by the JavaCPP Maven plugin into the library {@code jniCudaNative}.
 *
 * <p>Every method returns a {@code CUresult} (0 = success) or a negative shim code
 * ({@link #NO_DRIVER}, {@link #MISSING_SYMBOL}, {@link #SHIM_ERROR}); results come back
 * through one-element arrays; handles and addresses are {@code long}s. Nothing here checks
 * anything: use {@link Cuda} and the wrapper classes, which turn codes into
 * {@link CudaException}s. The library itself is loaded by {@link Cuda#load()}, never by this
 * class's initialiser, so a missing library is reported rather than thrown from a static
 * initialiser.
 *
 * <p>A {@code long[]} argument costs JNI a copy in and a copy back out on every call
 * ({@code Get/ReleaseLongArrayElements}); the {@code ...At} variants of calls made on every
 * launch take the native address of off-heap memory instead (same C function, {@code @Name}).
 */
@Platform(value = "linux-x86_64", include = "cuda_shim.h", compiler = "cpp11")
final class CudaNative {
    static final int NO_DRIVER = -1;
    static final int MISSING_SYMBOL = -2;
    static final int SHIM_ERROR = -3;

    private CudaNative() {
    }

    // ---- loading and errors ----
    static native int mcLoad();

    @Cast("const char*") static native String mcLoadMessage();

    @Cast("const char*") static native String mcErrorName(int code);

    @Cast("const char*") static native String mcErrorString(int code);

    static native int mcHeaderVersion();

    // ---- driver, devices, contexts ----
    static native int mcInit(int flags);

    static native int mcDriverGetVersion(int[] version);

    static native int mcDeviceGetCount(int[] count);

    static native int mcDeviceGet(int[] device, int ordinal);

    static native int mcDeviceGetName(@Cast("char*") byte[] name, int length, int device);

    static native int mcDeviceGetAttribute(int[] value, int attribute, int device);

    static native int mcDeviceTotalMem(@Cast("long long*") long[] bytes, int device);

    static native int mcDevicePrimaryCtxRetain(@Cast("long long*") long[] context, int device);

    static native int mcDevicePrimaryCtxRelease(int device);

    static native int mcCtxSetCurrent(long context);

    static native int mcCtxSynchronize();

    // ---- memory ----
    static native int mcMemGetInfo(@Cast("long long*") long[] freeBytes, @Cast("long long*") long[] totalBytes);

    static native int mcMemAlloc(@Cast("long long*") long[] devicePtr, long bytes);

    static native int mcMemFree(long devicePtr);

    static native int mcMemAllocHost(@Cast("long long*") long[] hostPtr, long bytes);

    static native int mcMemFreeHost(long hostPtr);

    static native int mcMemsetD8(long devicePtr, int value, long count, long stream, int async);

    static native int mcMemsetD32(long devicePtr, int value, long count, long stream, int async);

    static native int mcMemcpyHtoD(long dst, long srcHost, long bytes, long stream, int async);

    static native int mcMemcpyDtoH(long dstHost, long src, long bytes, long stream, int async);

    static native int mcMemcpyDtoD(long dst, long src, long bytes, long stream, int async);

    static native int mcPointerGetRange(@Cast("long long*") long[] start, @Cast("long long*") long[] size, long ptr);

    /** {@link #mcPointerGetRange} writing into native memory at addresses {@code start} and {@code size}. */
    @Name("mcPointerGetRange")
    static native int mcPointerGetRangeAt(@Cast("long long*") long start, @Cast("long long*") long size, long ptr);

    // ---- JIT linking and modules ----
    static native int mcLinkCreate(@Cast("long long*") long[] handle, int verbose, int optLevel);

    static native int mcLinkAddData(long handle, int type, @Cast("const void*") byte[] data, long size, String name);

    static native int mcLinkAddFile(long handle, int type, String path);

    static native int mcLinkCompleteAndLoad(long handle, @Cast("long long*") long[] module);

    @Cast("const char*") static native String mcLinkInfoLog(long handle);

    @Cast("const char*") static native String mcLinkErrorLog(long handle);

    static native int mcLinkDestroy(long handle);

    static native int mcModuleUnload(long module);

    static native int mcModuleGetFunction(@Cast("long long*") long[] function, long module, String name);

    static native int mcModuleGetGlobal(@Cast("long long*") long[] devicePtr, @Cast("long long*") long[] bytes,
            long module, String name);

    static native int mcFuncGetAttribute(int[] value, int attribute, long function);

    static native int mcFuncSetAttribute(long function, int attribute, int value);

    static native int mcOccupancyMaxActiveBlocks(int[] blocks, long function, int threads, long dynamicSharedBytes);

    static native int mcLaunchKernel(long function, int gridX, int gridY, int gridZ, int blockX, int blockY,
            int blockZ, int sharedBytes, long stream, @Cast("long long*") long[] params, int paramCount);

    /** {@link #mcLaunchKernel} reading the {@code paramCount} 8-byte slots from native memory at address {@code params}. */
    @Name("mcLaunchKernel")
    static native int mcLaunchKernelAt(long function, int gridX, int gridY, int gridZ, int blockX, int blockY,
            int blockZ, int sharedBytes, long stream, @Cast("long long*") long params, int paramCount);

    // ---- streams and events ----
    static native int mcStreamCreate(@Cast("long long*") long[] stream, int flags);

    static native int mcStreamDestroy(long stream);

    static native int mcStreamSynchronize(long stream);

    static native int mcStreamQuery(long stream);

    static native int mcStreamWaitEvent(long stream, long event);

    static native int mcEventCreate(@Cast("long long*") long[] event, int flags);

    static native int mcEventDestroy(long event);

    static native int mcEventRecord(long event, long stream);

    static native int mcEventSynchronize(long event);

    static native int mcEventQuery(long event);

    static native int mcEventElapsedTime(float[] milliseconds, long start, long end);

    // ---- graphs ----
    static native int mcStreamBeginCapture(long stream, int mode);

    static native int mcStreamEndCapture(@Cast("long long*") long[] graph, long stream);

    static native int mcGraphInstantiate(@Cast("long long*") long[] exec, long graph, long flags);

    static native int mcGraphLaunch(long exec, long stream);

    static native int mcGraphExecDestroy(long exec);

    static native int mcGraphDestroy(long graph);
}
