package org.moecomm.core.gpu;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelRunner;

/**
 * A transport, device memory and a kernel runner on one stream, without the dispatch/combine
 * protocol: for tests and micro-benchmarks of the NVSHMEM layer itself (Java kernels calling the
 * bridge's device functions: ping-pong, exchanges, bounded waits). Made by
 * {@link GpuBackend#openEndpoint}; closing it is collective (symmetric buffers are freed with
 * {@code nvshmem_free}).
 */
public final class GpuEndpoint implements AutoCloseable {
    private final GpuExecution exec;
    private final GpuTransport transport;
    private final GpuDeviceMemory memory;
    private final CheckedKernelRunner runner;
    private boolean closed;

    private final Runnable onRecover;

    GpuEndpoint(GpuExecution exec, GpuTransport transport, GpuDeviceMemory memory, CheckedKernelRunner runner,
                Runnable onRecover) {
        this.exec = exec;
        this.transport = transport;
        this.memory = memory;
        this.runner = runner;
        this.onRecover = onRecover;
    }

    /**
     * Waits for the stream and forgets a recorded failure (a kernel's wait or a barrier that ran
     * out), so the endpoint can be used again. Only sound when every rank saw its failure and all go on
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

    /**
     * Runs kernels on the endpoint's stream, in order with the transport's barriers; kernels
     * calling the one-sided communication methods of {@code KernelContext} are linked with the
     * bridge's device functions. A launch or synchronisation throws a failure recorded before it.
     */
    public KernelRunner runner() {
        return runner;
    }

    /**
     * The endpoint's error context as a buffer, for the {@code errors} argument of
     * {@code KernelContext.waitAtLeast}: a wait that runs out is raised as a
     * {@link org.moecomm.core.WaitTimeoutException} at the next launch or synchronisation.
     */
    public Buf errorContext() {
        return exec.errorContext();
    }

    /**
     * A tag for the {@code tag} argument of a kernel's {@code KernelContext.waitAtLeast}: the
     * timeout exception of that wait then names the signal {@code name}.
     */
    public int tagFor(String name) {
        return exec.register(name);
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
        for (AutoCloseable c : new AutoCloseable[] {transport, runner, memory, exec}) {
            failures.close(c);
        }
        failures.throwIfAny();
    }
}
