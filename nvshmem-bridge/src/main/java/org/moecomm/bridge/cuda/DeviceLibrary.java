package org.moecomm.bridge.cuda;

/**
 * Device code that compiled kernels call as external functions ({@code .extern .func} in their
 * PTX), linked into their modules when a {@link GpuKernelRunner} loads them: the runner adds the
 * library's inputs to the JIT link of every module that calls one of its functions, and tells the
 * library about the loaded module (NVSHMEM must register such modules) before the first launch.
 */
public interface DeviceLibrary {
    /** For messages. */
    String name();

    /** Whether this library defines the device function {@code symbol}. */
    boolean defines(String symbol);

    /** Adds the library's inputs (fatbins, static device libraries) to {@code linker}. */
    void addTo(CudaModule.Linker linker);

    /** Called once a module linked with this library is loaded, before its first launch. */
    default void loaded(CudaModule module) {
    }

    /** Called before such a module is unloaded. */
    default void unloading(CudaModule module) {
    }
}
