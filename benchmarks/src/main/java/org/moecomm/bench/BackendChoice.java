package org.moecomm.bench;

import java.util.Locale;
import java.util.function.Supplier;
import org.moecomm.core.gpu.GpuBackend;

/**
 * Which backend a run uses: {@code auto} takes the GPU backend when a CUDA GPU and the NVSHMEM
 * bridge are usable here ({@link GpuBackend#availability()}: {@code Cuda.availability()} and
 * {@code Nvshmem.availability()}), else the CPU backend; {@code gpu} and {@code cpu} force one.
 */
final class BackendChoice {
    enum Backend { CPU, GPU }

    /** The choice and why (the GPU probe's reason). */
    record Choice(Backend backend, String reason) {
    }

    private BackendChoice() {
    }

    static Choice choose(String requested) {
        return choose(requested, GpuBackend::availability);
    }

    /**
     * @throws IllegalArgumentException for an unknown name, or {@code gpu} where the GPU backend
     *         cannot run (naming why)
     */
    static Choice choose(String requested, Supplier<GpuBackend.Availability> probe) {
        String r = requested == null ? "auto" : requested.strip().toLowerCase(Locale.ROOT);
        switch (r) {
            case "cpu" -> {
                return new Choice(Backend.CPU, "requested");
            }
            case "gpu" -> {
                GpuBackend.Availability a = probe.get();
                if (!a.available()) {
                    throw new IllegalArgumentException("--backend gpu: the GPU backend cannot run here: " + a.reason()
                            + " (a CUDA GPU and the NVSHMEM bridge library are needed: see docs/nvshmem.md,"
                            + " MOECOMM_NVSHMEM_LIB; --backend auto falls back to the CPU backend)");
                }
                return new Choice(Backend.GPU, a.reason());
            }
            case "auto" -> {
                GpuBackend.Availability a = probe.get();
                return a.available() ? new Choice(Backend.GPU, a.reason())
                        : new Choice(Backend.CPU, "no GPU backend here: " + a.reason());
            }
            default -> throw new IllegalArgumentException("unknown backend '" + requested + "' (auto, cpu, gpu)");
        }
    }
}
