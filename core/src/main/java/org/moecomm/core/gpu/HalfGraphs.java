package org.moecomm.core.gpu;

import java.util.Objects;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.check.RankBuffers;

/**
 * A rank's round as two captured graphs, dispatch (send and receive) and combine (send and
 * receive), with the experts left to run between their replays: how the GPU tests and the
 * benchmark replay rounds on one {@link RankBuffers}.
 */
public record HalfGraphs(RoundGraph dispatch, RoundGraph combine) implements AutoCloseable {
    public HalfGraphs {
        Objects.requireNonNull(dispatch, "dispatch");
        Objects.requireNonNull(combine, "combine");
    }

    /**
     * Captures the halves of {@code buffers}' handle with dispatch input {@code in} (its tensors,
     * and its count in device memory, are what later rounds rewrite before each replay).
     */
    public static HalfGraphs capture(GpuBackend gpu, RankBuffers buffers, DispatchInput in) {
        MoeAllToAll h = buffers.handle();
        RoundGraph dispatch = gpu.capture(h, () -> {
            h.dispatchSend(in);
            h.dispatchRecv(buffers.dispatchOutput());
        });
        try {
            return new HalfGraphs(dispatch, gpu.capture(h, () -> {
                h.combineSend(buffers.expertY());
                h.combineRecv(buffers.weights(), buffers.out());
            }));
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
