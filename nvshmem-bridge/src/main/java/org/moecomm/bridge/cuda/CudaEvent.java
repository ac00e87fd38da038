package org.moecomm.bridge.cuda;

/** A CUDA event: a point in a stream, for ordering between streams and for GPU-side timing. */
public final class CudaEvent extends ContextResource {
    private static final int DISABLE_TIMING = 2;

    private final long handle;
    private final boolean timing;

    private CudaEvent(CudaContext context, long handle, boolean timing) {
        super(context, "event is closed");
        this.handle = handle;
        this.timing = timing;
    }

    static CudaEvent create(CudaContext context, boolean timing) {
        context.bind();
        long[] out = new long[1];
        Cuda.check(CudaNative.mcEventCreate(out, timing ? 0 : DISABLE_TIMING), "cuEventCreate");
        return new CudaEvent(context, out[0], timing);
    }

    public long handle() {
        ensureOpen();
        return handle;
    }

    public boolean timing() {
        return timing;
    }

    /** Records the event at the current end of {@code stream}. */
    public CudaEvent record(CudaStream stream) {
        ensureOpen();
        context.bind();
        Cuda.check(CudaNative.mcEventRecord(handle, stream.handle()), "cuEventRecord");
        return this;
    }

    /** Waits until the work before the recorded point has finished. */
    public void synchronize() {
        ensureOpen();
        context.bind();
        Cuda.check(CudaNative.mcEventSynchronize(handle), "cuEventSynchronize");
    }

    /** True when the work before the recorded point has finished. */
    public boolean isComplete() {
        ensureOpen();
        context.bind();
        int rc = CudaNative.mcEventQuery(handle);
        if (rc == Cuda.CUDA_ERROR_NOT_READY) {
            return false;
        }
        Cuda.check(rc, "cuEventQuery");
        return true;
    }

    /** Milliseconds of GPU time from {@code start} to this event (both recorded and completed). */
    public float elapsedMillisSince(CudaEvent start) {
        ensureOpen();
        context.bind();
        float[] ms = new float[1];
        Cuda.check(CudaNative.mcEventElapsedTime(ms, start.handle(), handle), "cuEventElapsedTime");
        return ms[0];
    }

    @Override
    void release() {
        context.bind();
        Cuda.check(CudaNative.mcEventDestroy(handle), "cuEventDestroy");
    }
}
