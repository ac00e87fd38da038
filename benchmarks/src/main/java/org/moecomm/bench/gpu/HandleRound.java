package org.moecomm.bench.gpu;

import java.util.concurrent.ThreadLocalRandom;
import org.moecomm.bridge.cuda.CudaStream;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.core.gpu.HalfGraphs;

/**
 * A GPU handle in a job of one process (W = 1, one NVSHMEM PE) with a rank's inputs uploaded, at
 * the decode size of {@code moecomm bench}'s first row (deepseek-v3, 1 token): the handle calls
 * whose host time {@link LaunchCostBenchmark} measures. A round's halves are the whole calls
 * ({@code dispatch}, {@code combine}) or, {@code replayed}, the replays of their captured graphs
 * ({@link HalfGraphs}, the count then in device memory).
 *
 * <p>The calls are timed on an idle stream: before a timed half, {@link #readyForDispatch} /
 * {@link #readyForCombine} run the other half as needed and wait for the GPU, so that the queue
 * never fills and a half is timed from the host's side alone. Every round's outputs are those of
 * the same inputs; one round with poisoned outputs is checked against the reference when the
 * object is made and again by {@link #close}, so that a wrong handle fails the benchmark.
 */
final class HandleRound implements AutoCloseable {
    static final Preset PRESET = Preset.DEEPSEEK_V3;
    static final int TOKENS = 1;

    private final Workload workload;
    private final GpuBackend gpu;
    private final MoeAllToAll handle;
    private final RankBuffers buffers;
    private final DispatchInput in;
    private final CudaStream stream;
    private final HalfGraphs graphs;
    private boolean dispatched;

    HandleRound(boolean replayed) {
        MoeConfig config = PRESET.config(1, 1, TOKENS).build();
        long seed = ThreadLocalRandom.current().nextLong();
        workload = Workload.generate(config, seed, Workload.Options.defaults().tokens(TOKENS));
        workload.reference();
        gpu = GpuBackend.start(config);
        try {
            handle = gpu.createHandle(config);
            buffers = RankBuffers.allocate(handle);
            // a graph keeps the launch arguments of its capture: with it, m is read from device memory
            in = buffers.upload(workload.rank(0), replayed);
            stream = gpu.deviceTiming(handle).stream();
            graphs = replayed ? HalfGraphs.capture(gpu, handle, in, buffers.dispatchOutput(), buffers.combineInput(),
                    buffers.out()) : null;
            checkedRound("before the measurement (seed " + seed + ")");
        } catch (RuntimeException | Error e) {
            release();
            throw e;
        }
    }

    /** The dispatch half: {@code dispatch} (one launch at this size) or its graph's replay. */
    void dispatch() {
        if (graphs != null) {
            graphs.dispatch().replay();
        } else {
            handle.dispatch(in, buffers.dispatchOutput());
        }
        dispatched = true;
    }

    /** The combine half: {@code combine} (send and receive) or its graph's replay. */
    void combine() {
        if (graphs != null) {
            graphs.combine().replay();
        } else {
            handle.combine(buffers.combineInput(), buffers.out());
        }
        dispatched = false;
    }

    /** Completes a round a dispatch began, then waits for the GPU. */
    void readyForDispatch() {
        if (dispatched) {
            combine();
        }
        stream.synchronize();
    }

    /** Dispatches unless a dispatch was the last half, then waits for the GPU. */
    void readyForCombine() {
        if (!dispatched) {
            dispatch();
        }
        stream.synchronize();
    }

    /** One round with poisoned outputs and the experts played, checked against the reference. */
    private void checkedRound(String when) {
        readyForDispatch();
        buffers.poisonOutputs();
        dispatch();
        buffers.runExperts();
        combine();
        stream.synchronize();
        ResultCheck.Report report = CheckedRound.outputs(buffers, workload);
        if (!report.ok()) {
            throw new IllegalStateException("the W = 1 handle's round " + when + " differs from the reference: "
                    + report);
        }
    }

    /** Checks one more round, then closes the graphs, the handle and the backend. */
    @Override
    public void close() {
        try {
            checkedRound("after the measurement");
        } finally {
            release();
        }
    }

    /** Closes the graphs, the handle and the backend, each that was made. */
    private void release() {
        try {
            if (graphs != null) {
                graphs.close();
            }
        } finally {
            try {
                if (handle != null) {
                    handle.close();
                }
            } finally {
                gpu.close();
            }
        }
    }
}
