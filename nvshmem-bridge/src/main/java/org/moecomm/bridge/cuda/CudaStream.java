package org.moecomm.bridge.cuda;

/** A CUDA stream: work on it runs in order; {@link #synchronize()} waits for it. */
public final class CudaStream extends ContextResource {
    /** {@code CU_STREAM_NON_BLOCKING}. */
    static final int NON_BLOCKING = 1;

    private final long handle;
    private final boolean owned;

    private CudaStream(CudaContext context, long handle, boolean owned) {
        super(context, "stream is closed");
        this.handle = handle;
        this.owned = owned;
    }

    static CudaStream create(CudaContext context, int flags) {
        context.bind();
        long[] out = new long[1];
        Cuda.check(CudaNative.mcStreamCreate(out, flags), "cuStreamCreate");
        return new CudaStream(context, out[0], true);
    }

    /** Wraps a stream made elsewhere (0 = legacy default stream); closing the wrapper does not destroy it. */
    public static CudaStream wrap(CudaContext context, long handle) {
        return new CudaStream(context, handle, false);
    }

    public CudaContext context() {
        return context;
    }

    /** The {@code CUstream} handle. */
    public long handle() {
        ensureOpen();
        return handle;
    }

    /** Waits until all work enqueued so far has finished; throws the first asynchronous error. */
    public void synchronize() {
        ensureOpen();
        context.bind();
        Cuda.check(CudaNative.mcStreamSynchronize(handle), "cuStreamSynchronize");
    }

    /** True when all work enqueued so far has finished. */
    public boolean isIdle() {
        ensureOpen();
        context.bind();
        int rc = CudaNative.mcStreamQuery(handle);
        if (rc == Cuda.CUDA_ERROR_NOT_READY) {
            return false;
        }
        Cuda.check(rc, "cuStreamQuery");
        return true;
    }

    /** Makes later work on this stream wait for {@code event} (recorded on any stream). */
    public void waitFor(CudaEvent event) {
        ensureOpen();
        context.bind();
        Cuda.check(CudaNative.mcStreamWaitEvent(handle, event.handle()), "cuStreamWaitEvent");
    }

    @Override
    void release() {
        if (owned) {
            context.bind();
            Cuda.check(CudaNative.mcStreamDestroy(handle), "cuStreamDestroy");
        }
    }

    @Override
    public String toString() {
        return "CudaStream[0x" + Long.toHexString(handle) + "]";
    }
}
