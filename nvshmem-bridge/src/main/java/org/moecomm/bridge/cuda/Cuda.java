package org.moecomm.bridge.cuda;

import java.nio.charset.StandardCharsets;
import org.bytedeco.javacpp.Loader;
import org.moecomm.bridge.Lazy;

/**
 * Entry point of the CUDA driver binding: loads the JNI library, opens the driver, and turns
 * result codes into {@link CudaException}s.
 *
 * <p>Nothing here throws on a machine without CUDA: {@link #availability()} says whether CUDA
 * can be used and, if not, why (the JNI library {@value #JNI_LIBRARY} missing from this build,
 * no {@code libcuda.so.1}, {@code cuInit} failing, no device). Code that needs CUDA calls
 * {@link #require()}, which throws {@link CudaUnavailableException} with that reason; GPU
 * tests use {@link #availability()} to skip with it.
 */
public final class Cuda {
    /** Name of the JNI library built from {@code src/main/cpp/cuda_shim.h}. */
    public static final String JNI_LIBRARY = "jniCudaNative";

    static final int CUDA_SUCCESS = 0;
    static final int CUDA_ERROR_NOT_READY = 600;

    /**
     * Whether CUDA can be used in this process.
     *
     * @param available     true when the driver is loaded, initialised and sees at least one device
     * @param reason        why not (empty when available), or a one-line description when available
     * @param code          the failing {@code CUresult} or shim code (0 when available)
     * @param errorName     its name ({@code CUDA_ERROR_NO_DEVICE}, {@code MC_ERROR_NO_DRIVER},
     *                      {@code NO_JNI_LIBRARY}), or {@code CUDA_SUCCESS}
     * @param driverVersion the driver's CUDA version ({@code 13000} for 13.0), 0 if unknown
     * @param headerVersion the CUDA version of the headers the JNI library was compiled with, 0 if unknown
     * @param deviceCount   devices the driver sees, 0 if unknown
     */
    public record Availability(boolean available, String reason, int code, String errorName,
                               int driverVersion, int headerVersion, int deviceCount) {
    }

    private static final Lazy<Availability> AVAILABILITY = new Lazy<>(Cuda::probe);
    private static volatile boolean jniLoaded;

    private Cuda() {
    }

    /** Loads the JNI library and the driver once, and reports whether CUDA can be used. Never throws. */
    public static Availability availability() {
        return AVAILABILITY.get();
    }

    public static boolean isAvailable() {
        return availability().available();
    }

    /** Throws {@link CudaUnavailableException} (with the reason) unless CUDA can be used. */
    public static void require() {
        Availability a = availability();
        if (!a.available()) {
            throw new CudaUnavailableException(a);
        }
    }

    /** Whether the JNI library itself loaded (it does on machines without a driver too). */
    public static boolean nativeLibraryLoaded() {
        availability();
        return jniLoaded;
    }

    private static Availability probe() {
        try {
            Loader.load(CudaNative.class);
        } catch (Throwable t) {
            return new Availability(false, "the JNI library " + JNI_LIBRARY + " (the CUDA driver binding of"
                    + " moecomm-nvshmem-bridge) could not be loaded: " + t
                    + ". It is built only where the CUDA headers (cuda.h) were found at build time"
                    + " (CUDA_HOME, CUDA_PATH or nvcc on PATH); check the nvshmem-bridge build log",
                    -100, "NO_JNI_LIBRARY", 0, 0, 0);
        }
        jniLoaded = true;
        int header = CudaNative.mcHeaderVersion();
        int rc = CudaNative.mcLoad();
        if (rc != CUDA_SUCCESS) {
            return new Availability(false, "no CUDA driver: " + CudaNative.mcLoadMessage(), rc, errorName(rc),
                    0, header, 0);
        }
        int[] out = new int[1];
        rc = CudaNative.mcInit(0);
        if (rc != CUDA_SUCCESS) {
            return new Availability(false, "cuInit failed: " + errorName(rc) + ": " + errorString(rc), rc,
                    errorName(rc), 0, header, 0);
        }
        rc = CudaNative.mcDriverGetVersion(out);
        int driver = rc == CUDA_SUCCESS ? out[0] : 0;
        rc = CudaNative.mcDeviceGetCount(out);
        if (rc != CUDA_SUCCESS) {
            return new Availability(false, "cuDeviceGetCount failed: " + errorName(rc), rc, errorName(rc),
                    driver, header, 0);
        }
        if (out[0] < 1) {
            return new Availability(false, "the CUDA driver sees no device", 100, "CUDA_ERROR_NO_DEVICE",
                    driver, header, 0);
        }
        return new Availability(true, "CUDA driver " + version(driver) + ", " + out[0] + " device(s), JNI library built"
                + " against CUDA " + version(header) + " headers", CUDA_SUCCESS, "CUDA_SUCCESS", driver, header, out[0]);
    }

    static String version(int v) {
        return (v / 1000) + "." + (v % 1000) / 10;
    }

    /** The CUDA name of a result code ({@code CUDA_ERROR_INVALID_VALUE}); never null. */
    public static String errorName(int code) {
        String s = jniLoaded ? CudaNative.mcErrorName(code) : null;
        return s != null ? s : "CUresult " + code;
    }

    /** The driver's description of a result code; never null. */
    public static String errorString(int code) {
        String s = jniLoaded ? CudaNative.mcErrorString(code) : null;
        return s != null ? s : "";
    }

    /** Throws a {@link CudaException} naming {@code call} unless {@code rc} is {@code CUDA_SUCCESS}. */
    static void check(int rc, String call) {
        if (rc != CUDA_SUCCESS) {
            throw new CudaException(call, rc, errorName(rc), errorString(rc), "");
        }
    }

    static void check(int rc, String call, String log) {
        if (rc != CUDA_SUCCESS) {
            throw new CudaException(call, rc, errorName(rc), errorString(rc), log);
        }
    }

    /** The driver's CUDA version, such as 13000. */
    public static int driverVersion() {
        require();
        return availability().driverVersion();
    }

    /** Number of CUDA devices. */
    public static int deviceCount() {
        require();
        return availability().deviceCount();
    }

    /** Bytes of memory of device {@code ordinal} ({@code cuDeviceTotalMem}; no context is created). */
    public static long deviceTotalMemory(int ordinal) {
        require();
        int[] device = new int[1];
        check(CudaNative.mcDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
        long[] bytes = new long[1];
        check(CudaNative.mcDeviceTotalMem(bytes, device[0]), "cuDeviceTotalMem");
        return bytes[0];
    }

    /** Waits for all work of the current thread's context. */
    public static void synchronizeCurrentContext() {
        require();
        check(CudaNative.mcCtxSynchronize(), "cuCtxSynchronize");
    }

    static String cString(byte[] bytes) {
        int n = 0;
        while (n < bytes.length && bytes[n] != 0) {
            n++;
        }
        return new String(bytes, 0, n, StandardCharsets.UTF_8);
    }
}
