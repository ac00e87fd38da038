package org.moecomm.bridge.nvshmem;

import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Platform;

/**
 * The JNI surface over {@code src/main/cpp/nvshmem/moe_nvshmem.h} (the NVSHMEM bridge), compiled
 * into the library {@value Nvshmem#JNI_LIBRARY}.
 *
 * <p>NVSHMEM's headers and libraries exist only on GPU machines, so this library is not built by
 * the Maven build: JavaCPP's glue for this class is generated on the development machine
 * ({@code -nocompile}, by {@code scripts/gpu-nvshmem-build.sh prepare}) and compiled with the
 * bridge on the GPU machine ({@code scripts/gpu-nvshmem-build.sh build}). A test of every build
 * generates the glue and compiles it against the header, so a binding that does not match
 * {@code moe_nvshmem.h} fails here rather than there.
 *
 * <p>Every method returns the C function's status (0, a positive {@code cudaError_t}, or a
 * negative {@code MNV_ERR_*} code) unless noted; results come back through one-element arrays.
 * Nothing here checks anything and nothing loads the library: use {@link Nvshmem}.
 */
@Platform(value = "linux-x86_64", include = "moe_nvshmem.h", compiler = "cpp11")
final class NvshmemNative {
    static final int ERR_NOT_INITIALIZED = -1;
    static final int ERR_NVSHMEM = -2;
    static final int ERR_OUT_OF_SYMMETRIC_MEMORY = -3;
    static final int ERR_ARGUMENT = -4;

    static final int ERROR_NONE = 0;
    static final int ERROR_WAIT_TIMEOUT = 1;
    // 2 was ERROR_PUT_COUNT (the bridge's put kernel, removed); the numbers of the others are kept
    static final int ERROR_BARRIER_TIMEOUT = 3;
    static final int ERROR_PEER_ABORTED = 4;
    static final int ERROR_SLOTS = 8;

    private NvshmemNative() {
    }

    @Name("mnv_uniqueid_bytes") static native int uniqueIdBytes();

    @Name("mnv_header_version") static native int headerVersion();

    @Name("mnv_last_error") @Cast("const char*") static native String lastError();

    // ---- environment ----
    @Name("mnv_setenv") static native int setenv(String name, String value, int overwrite);

    @Name("mnv_getenv") @Cast("const char*") static native String getenv(String name);

    // ---- device ----
    @Name("mnv_device_count") static native int deviceCount(int[] count);

    @Name("mnv_set_device") static native int setDevice(int device);

    @Name("mnv_mem_get_info") static native int memGetInfo(@Cast("long long*") long[] freeBytes,
            @Cast("long long*") long[] totalBytes);

    // ---- initialisation ----
    @Name("mnv_get_uniqueid") static native int getUniqueId(@Cast("void*") byte[] out, int outBytes);

    @Name("mnv_init_uniqueid") static native int initUniqueId(int rank, int nranks, @Cast("const void*") byte[] id,
            int idBytes);

    @Name("mnv_init_default") static native int initDefault();

    @Name("mnv_init_status") static native int initStatus();

    @Name("mnv_my_pe") static native int myPe();

    @Name("mnv_n_pes") static native int nPes();

    @Name("mnv_finalize") static native int finalizeNvshmem();

    @Name("mnv_exit_without_teardown") static native int exitWithoutTeardown();

    // ---- symmetric memory ----
    @Name("mnv_malloc_zeroed") static native int mallocZeroed(@Cast("long long*") long[] ptr, long bytes, long stream);

    @Name("mnv_free") static native int free(long ptr);

    @Name("mnv_ptr") static native long ptr(long ptr, int pe);

    @Name("mnv_barrier_all") static native int barrierAll();

    // ---- error context ----
    @Name("mnv_error_create") static native int errorCreate(@Cast("long long*") long[] ctx,
            @Cast("long long*") long[] host);

    @Name("mnv_error_destroy") static native int errorDestroy(long ctx, long host);

    @Name("mnv_error_read") static native int errorRead(long host, @Cast("long long*") long[] out);

    @Name("mnv_error_clear") static native int errorClear(long ctx, long host);

    @Name("mnv_error_watch") static native int errorWatch(long ctx, long abortWord);

    // ---- launches ----
    @Name("mnv_barrier_launch") static native int barrierLaunch(long stream, long bar, long epoch, int nPes, int me,
            long timeoutNs, long errCtx, int tag);

    @Name("mnv_abort_launch") static native int abortLaunch(long stream, long word, long value, int nPes);

    @Name("mnv_cumodule_init") static native int cumoduleInit(long module);

    @Name("mnv_cumodule_finalize") static native int cumoduleFinalize(long module);
}
