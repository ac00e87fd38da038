package org.moecomm.core.gpu;

/**
 * A transport and device memory on one stream, without the dispatch/combine protocol: for tests
 * and micro-benchmarks of the NVSHMEM layer itself (ping-pong, bounded waits). Made by
 * {@link GpuBackend#openEndpoint}; closing it is collective (symmetric buffers are freed with
 * {@code nvshmem_free}).
 */
public final class GpuEndpoint implements AutoCloseable {
    private final GpuExecution exec;
    private final GpuTransport transport;
    private final GpuDeviceMemory memory;
    private boolean closed;

    private final Runnable onRecover;

    GpuEndpoint(GpuExecution exec, GpuTransport transport, GpuDeviceMemory memory, Runnable onRecover) {
        this.exec = exec;
        this.transport = transport;
        this.memory = memory;
        this.onRecover = onRecover;
    }

    /**
     * Waits for the stream and forgets a recorded failure (a wait that ran out, a refused put), so
     * the endpoint can be used again. Only sound when every rank saw its failure and all go on
     * together, as the error-path tests do; a real job should end instead.
     */
    public void recover() {
        if (exec.clearFailure()) {
            onRecover.run();
        }
    }

    public GpuTransport transport() {
        return transport;
    }

    public GpuDeviceMemory memory() {
        return memory;
    }

    /** The {@code CUstream} every operation of this endpoint is enqueued on. */
    public long stream() {
        return exec.streamHandle();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        CloseFailures failures = new CloseFailures();
        for (AutoCloseable c : new AutoCloseable[] {transport, memory, exec}) {
            failures.close(c);
        }
        failures.throwIfAny();
    }
}
