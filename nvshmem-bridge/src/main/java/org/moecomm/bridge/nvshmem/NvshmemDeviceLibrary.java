package org.moecomm.bridge.nvshmem;

import java.nio.file.Files;
import java.nio.file.Path;
import org.moecomm.bridge.cuda.CudaModule;
import org.moecomm.bridge.cuda.DeviceLibrary;

/**
 * The NVSHMEM bridge's device functions ({@code mnvd_*}, {@code moe_nvshmem_devfns.cu}) for
 * kernels compiled from Java that call the one-sided communication methods of
 * {@code KernelContext}: a module calling them is linked with the bridge's relocatable device
 * code and NVSHMEM's static device library, and registered with {@code nvshmemx_cumodule_init}
 * once loaded (NVSHMEM initialised first), {@code nvshmemx_cumodule_finalize} before unloading.
 *
 * <p>The two files are found at the paths in the system properties {@value #DEVFNS_PROPERTY} and
 * {@value #DEVICE_LIB_PROPERTY}, else in the environment variables {@value #DEVFNS_ENV} and
 * {@value #DEVICE_LIB_ENV} ({@code scripts/gpu-nvshmem-build.sh} writes them into its
 * {@code env.sh}). They are looked up when a module needs them, so a backend can always offer
 * this library.
 */
public final class NvshmemDeviceLibrary implements DeviceLibrary {
    public static final String DEVFNS_PROPERTY = "moecomm.nvshmem.devfns";
    public static final String DEVFNS_ENV = "MOECOMM_NVSHMEM_DEVFNS";
    public static final String DEVICE_LIB_PROPERTY = "moecomm.nvshmem.deviceLib";
    public static final String DEVICE_LIB_ENV = "MOECOMM_NVSHMEM_DEVICE_LIB";
    /** Prefix of the bridge's device functions (the compiler's names for them, in {@code DeviceFunctions}, share it). */
    public static final String PREFIX = "mnvd_";

    @Override
    public String name() {
        return "NVSHMEM bridge device functions";
    }

    @Override
    public boolean defines(String symbol) {
        return symbol.startsWith(PREFIX);
    }

    @Override
    public void addTo(CudaModule.Linker linker) {
        linker.addFile(CudaModule.InputType.FATBINARY, file(DEVFNS_PROPERTY, DEVFNS_ENV, "the bridge's device functions "
                + "(moe_nvshmem_devfns.fatbin)"));
        linker.addFile(CudaModule.InputType.LIBRARY, file(DEVICE_LIB_PROPERTY, DEVICE_LIB_ENV,
                "NVSHMEM's device library (libnvshmem_device.a)"));
    }

    @Override
    public void loaded(CudaModule module) {
        Nvshmem.registerModule(module.handle());
    }

    @Override
    public void unloading(CudaModule module) {
        Nvshmem.unregisterModule(module.handle());
    }

    private static Path file(String property, String env, String what) {
        String p = System.getProperty(property);
        String from = "system property " + property;
        if (p == null || p.isBlank()) {
            p = System.getenv(env);
            from = "environment variable " + env;
        }
        if (p == null || p.isBlank()) {
            throw new NvshmemException("a kernel calls the NVSHMEM bridge's device functions, but " + what
                    + " is not configured: set " + env + " (or -D" + property + "); scripts/gpu-nvshmem-build.sh "
                    + "builds it and writes env.sh", null);
        }
        Path path = Path.of(p);
        if (!Files.isRegularFile(path)) {
            throw new NvshmemException(what + " not found at " + path + " (from " + from + ")", null);
        }
        return path;
    }

    @Override
    public String toString() {
        return name();
    }
}
