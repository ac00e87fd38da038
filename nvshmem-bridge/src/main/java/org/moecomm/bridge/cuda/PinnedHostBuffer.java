package org.moecomm.bridge.cuda;

import java.lang.foreign.MemorySegment;

/** Page-locked host memory ({@code cuMemAllocHost}): host-readable, and asynchronous copies from or to it overlap with other work. */
public final class PinnedHostBuffer implements AutoCloseable {
    private final CudaContext context;
    private final MemorySegment segment;
    private boolean closed;

    private PinnedHostBuffer(CudaContext context, MemorySegment segment) {
        this.context = context;
        this.segment = segment;
    }

    static PinnedHostBuffer allocate(CudaContext context, long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("pinned allocation of " + bytes + " bytes");
        }
        context.bind();
        long[] out = new long[1];
        Cuda.check(CudaNative.mcMemAllocHost(out, bytes), "cuMemAllocHost(" + bytes + ")");
        return new PinnedHostBuffer(context, MemorySegment.ofAddress(out[0]).reinterpret(bytes));
    }

    /** The memory; invalid after {@link #close()}. */
    public MemorySegment segment() {
        if (closed) {
            throw new IllegalStateException("pinned buffer is freed");
        }
        return segment;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        context.bind();
        Cuda.check(CudaNative.mcMemFreeHost(segment.address()), "cuMemFreeHost");
    }
}
