package org.moecomm.bridge.nvshmem;

import java.util.Optional;

/**
 * Where the bridge's kernels record a failure (a wait that ran out, a put with a bad count):
 * a claim word in device memory and a record in page-locked host memory mapped into the GPU,
 * so {@link #poll()} reads it without synchronising with the GPU. The first failure wins.
 * Pass {@link #context()} to the launches of {@link Nvshmem}.
 */
public final class ErrorBuffer implements AutoCloseable {
    private final long context;
    private final long host;
    private boolean closed;

    private ErrorBuffer(long context, long host) {
        this.context = context;
        this.host = host;
    }

    /** Allocates an error buffer on the current CUDA device. */
    public static ErrorBuffer create() {
        Nvshmem.requireLoaded();
        long[] ctx = new long[1];
        long[] host = new long[1];
        Nvshmem.check(NvshmemNative.errorCreate(ctx, host), "mnv_error_create");
        return new ErrorBuffer(ctx[0], host[0]);
    }

    /** The device address the launches take. */
    public long context() {
        ensureOpen();
        return context;
    }

    /** The recorded failure, if any (cheap: one read of host memory). */
    public Optional<DeviceError> poll() {
        ensureOpen();
        long[] slots = new long[NvshmemNative.ERROR_SLOTS];
        int kind = NvshmemNative.errorRead(host, slots);
        return kind == NvshmemNative.ERROR_NONE ? Optional.empty() : Optional.of(DeviceError.fromSlots(slots));
    }

    /** Forgets the recorded failure (waits for the whole device first). For tests and recovery. */
    public void clear() {
        ensureOpen();
        Nvshmem.check(NvshmemNative.errorClear(context, host), "mnv_error_clear");
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("error buffer is closed");
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Nvshmem.check(NvshmemNative.errorDestroy(context, host), "mnv_error_destroy");
        }
    }
}
