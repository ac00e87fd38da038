package org.moecomm.bridge.nvshmem;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Optional;

/**
 * Where kernels record a failure (a kernel's bounded wait or the bridge's barrier that ran out):
 * a claim word in device memory and a record in page-locked host memory mapped into the GPU,
 * so {@link #poll()} reads it without synchronising with the GPU. The first failure wins.
 * Pass {@link #context()} to {@link Nvshmem#barrier} and, as the {@code errors} argument, to
 * kernels' {@code KernelContext.waitAtLeast}.
 */
public final class ErrorBuffer implements AutoCloseable {
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private final long context;
    private final long host;
    /** The record's first word, its kind (mnv_error_record.kind, written last by the device). */
    private final MemorySegment kind;
    private boolean closed;

    private ErrorBuffer(long context, long host) {
        this.context = context;
        this.host = host;
        this.kind = MemorySegment.ofAddress(host).reinterpret(Integer.BYTES);
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

    /**
     * The recorded failure, if any. Cheap: every launch polls, so the usual answer (none) is one
     * acquire load of the mapped host word from Java, no JNI call and no allocation.
     */
    public Optional<DeviceError> poll() {
        ensureOpen();
        if ((int) INT.getAcquire(kind, 0L) == NvshmemNative.ERROR_NONE) {
            return Optional.empty();
        }
        long[] slots = new long[NvshmemNative.ERROR_SLOTS];
        int kind = NvshmemNative.errorRead(host, slots);
        return kind == NvshmemNative.ERROR_NONE ? Optional.empty() : Optional.of(DeviceError.fromSlots(slots));
    }

    /**
     * Makes every wait given this context also watch the uint64 at device address
     * {@code abortWord} (0: none): a nonzero word ends the wait, recorded as
     * {@link DeviceError.Kind#PEER_ABORTED}.
     */
    public void watchAbortWord(long abortWord) {
        ensureOpen();
        Nvshmem.check(NvshmemNative.errorWatch(context, abortWord), "mnv_error_watch");
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
