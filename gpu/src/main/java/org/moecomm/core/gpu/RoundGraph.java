package org.moecomm.core.gpu;

import java.util.Objects;
import org.moecomm.bridge.cuda.CudaGraph;
import org.moecomm.bridge.cuda.CudaStream;
import org.moecomm.core.protocol.AllToAllProtocol;

/**
 * Calls of a GPU handle captured once into a CUDA graph ({@link GpuBackend#capture}) and replayed
 * round after round: every launch of a round is the same as the round before (the round number,
 * the signal values and the counts live in device memory), so one {@link #replay()} enqueues the
 * captured calls, and the caller's own work captured between them, with a single driver call.
 *
 * <p>Before a replay the caller may write new tokens, ids, weights and (with
 * {@code TokenCount.inBuffer}) a new m into the buffers the captured calls were given; a count
 * given as {@code TokenCount.of(m)} is fixed in the graph. Replays skip the handle's call-order
 * checks: replay graphs in the order their calls make rounds (dispatch before combine).
 */
public final class RoundGraph implements AutoCloseable {
    private final CudaGraph graph;
    private final CudaStream stream;
    private final AllToAllProtocol handle;
    private final GpuTransport transport;

    RoundGraph(CudaGraph graph, CudaStream stream, AllToAllProtocol handle, GpuTransport transport) {
        this.graph = Objects.requireNonNull(graph, "graph");
        this.stream = Objects.requireNonNull(stream, "stream");
        this.handle = Objects.requireNonNull(handle, "handle");
        this.transport = Objects.requireNonNull(transport, "transport");
    }

    /**
     * Enqueues one replay on the handle's stream; first throws what earlier work reported (a wait
     * that ran out, a bad input found on the device). Never waits for the device.
     */
    public void replay() {
        transport.checkErrors();
        handle.checkDeviceReports();
        graph.launch(stream);
    }

    /** The stream replays are enqueued on (the handle's: record events on it, or synchronise it). */
    public CudaStream stream() {
        return stream;
    }

    @Override
    public void close() {
        graph.close();
    }
}
