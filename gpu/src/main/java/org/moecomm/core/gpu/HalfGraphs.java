package org.moecomm.core.gpu;

import java.util.Objects;
import org.moecomm.core.CombineInput;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.Tensor;

/**
 * A rank's round as two captured graphs, dispatch ({@code MoeAllToAll.dispatch}: one launch at
 * decode sizes) and combine (send and receive), with the experts left to run between their
 * replays: how the GPU tests and the benchmark replay rounds on one rank's buffers.
 */
public record HalfGraphs(RoundGraph dispatch, RoundGraph combine) implements AutoCloseable {
    public HalfGraphs {
        Objects.requireNonNull(dispatch, "dispatch");
        Objects.requireNonNull(combine, "combine");
    }

    /**
     * Captures the halves of handle {@code h}: dispatch from {@code in} into {@code received},
     * combine from {@code combine} into {@code out} (the tensors, and a count in device memory, are
     * what later rounds rewrite before each replay).
     */
    public static HalfGraphs capture(GpuBackend gpu, MoeAllToAll h, DispatchInput in, DispatchOutput received,
                                     CombineInput combine, Tensor out) {
        RoundGraph dispatch = gpu.capture(h, () -> h.dispatch(in, received));
        try {
            return new HalfGraphs(dispatch, gpu.capture(h, () -> h.combine(combine, out)));
        } catch (RuntimeException | Error e) {
            dispatch.close();
            throw e;
        }
    }

    @Override
    public void close() {
        try {
            combine.close();
        } finally {
            dispatch.close();
        }
    }
}
