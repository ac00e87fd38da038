package org.moecomm.bridge.cuda;

import java.util.Objects;

/**
 * A CUDA graph captured from a stream and instantiated: the captured launches and copies replay
 * with one {@link #launch(CudaStream)} and little CPU cost.
 */
public final class CudaGraph extends ContextResource {
    /** {@code CU_STREAM_CAPTURE_MODE_THREAD_LOCAL}: other threads' unsafe calls do not break the capture. */
    private static final int CAPTURE_THREAD_LOCAL = 1;

    private final long graph;
    private final long exec;

    private CudaGraph(CudaContext context, long graph, long exec) {
        super(context, "graph is closed");
        this.graph = graph;
        this.exec = exec;
    }

    /**
     * Captures the work {@code body} enqueues on {@code stream} (nothing runs during capture) and
     * instantiates it. If {@code body} throws, the capture is ended and discarded and the exception
     * propagates.
     */
    public static CudaGraph capture(CudaStream stream, Runnable body) {
        Objects.requireNonNull(body, "body");
        CudaContext context = stream.context();
        context.bind();
        Cuda.check(CudaNative.mcStreamBeginCapture(stream.handle(), CAPTURE_THREAD_LOCAL), "cuStreamBeginCapture");
        long[] graph = new long[1];
        try {
            body.run();
        } catch (RuntimeException | Error e) {
            int rc = CudaNative.mcStreamEndCapture(graph, stream.handle());
            if (rc == Cuda.CUDA_SUCCESS && graph[0] != 0) {
                CudaNative.mcGraphDestroy(graph[0]);
            }
            throw e;
        }
        Cuda.check(CudaNative.mcStreamEndCapture(graph, stream.handle()), "cuStreamEndCapture");
        long[] exec = new long[1];
        int rc = CudaNative.mcGraphInstantiate(exec, graph[0], 0);
        if (rc != Cuda.CUDA_SUCCESS) {
            CudaNative.mcGraphDestroy(graph[0]);
            Cuda.check(rc, "cuGraphInstantiate");
        }
        return new CudaGraph(context, graph[0], exec[0]);
    }

    /** Enqueues one replay of the graph on {@code stream}. */
    public void launch(CudaStream stream) {
        ensureOpen();
        context.bind();
        Cuda.check(CudaNative.mcGraphLaunch(exec, stream.handle()), "cuGraphLaunch");
    }

    @Override
    void release() {
        context.bind();
        Cuda.check(CudaNative.mcGraphExecDestroy(exec), "cuGraphExecDestroy");
        Cuda.check(CudaNative.mcGraphDestroy(graph), "cuGraphDestroy");
    }
}
