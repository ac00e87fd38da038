package org.moecomm.kernels.ptx;

import java.util.List;
import java.util.Objects;
import org.moecomm.kernels.api.Kernel;

/**
 * A compiled kernel: a PTX module holding one {@code .visible .entry} named {@code entryName}.
 *
 * <p>The entry's parameters follow the Java kernel's parameters after its
 * {@link org.moecomm.kernels.api.KernelContext}, in declaration order: a
 * {@link org.moecomm.kernels.api.Buf} is a {@code .param .u64} global device address, an
 * {@code int} a {@code .param .u32}, a {@code long} a {@code .param .u64}, a {@code float} a
 * {@code .param .f32}; an argument the kernel was specialised for (its {@link Kernel#constants()})
 * is compiled in and has no parameter, so a launch passes the arguments at
 * {@link #passedPositions()} only. Each parameter is named {@code <entryName>_param_<position>}.
 * Launch it on a grid of {@code blocksX x blocksY} blocks of
 * {@code threads x 1 x 1} threads; its shared memory is static (no dynamic shared memory).
 *
 * @param kernel    the Java kernel it was compiled from
 * @param entryName the PTX name of the entry function (a valid PTX identifier derived from the
 *                  kernel's class and method names)
 * @param ptx       the PTX module text
 * @param deviceFunctions external device functions the module calls (declared {@code .extern .func});
 *                  loading it needs a linker input that defines them: for the {@code mnvd_} functions
 *                  of the one-sided communication methods, the NVSHMEM bridge's device library
 */
public record PtxKernel(Kernel kernel, String entryName, String ptx, List<String> deviceFunctions) {
    public PtxKernel {
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(entryName, "entryName");
        Objects.requireNonNull(ptx, "ptx");
        deviceFunctions = List.copyOf(deviceFunctions);
    }

    /** A self-contained module (no external device functions). */
    public PtxKernel(Kernel kernel, String entryName, String ptx) {
        this(kernel, entryName, ptx, List.of());
    }

    /**
     * The positions (0: the first argument after the context) of the arguments the entry takes as
     * parameters, in order: every argument but those the kernel was specialised for.
     */
    public int[] passedPositions() {
        int arguments = kernel.method().getParameterCount() - 1;
        return java.util.stream.IntStream.range(0, arguments)
                .filter(i -> !kernel.constants().containsKey(i)).toArray();
    }

    @Override
    public String toString() {
        return "PtxKernel[" + kernel + " -> " + entryName + ", " + ptx.length() + " chars]";
    }
}
