package org.moecomm.bridge.cuda;

import java.lang.foreign.MemorySegment;

/** Page-locked host memory ({@code cuMemAllocHost}): host-readable, and asynchronous copies from or to it overlap with other work. */
public final class PinnedHostBuffer extends ContextResource {
    private final MemorySegment segment;

    private PinnedHostBuffer(CudaContext context, MemorySegment segment) {
        super(context, "pinned buffer is freed");
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
        ensureOpen();
        return segment;
    }

    @Override
    void release() {
        context.bind();
        Cuda.check(CudaNative.mcMemFreeHost(segment.address()), "cuMemFreeHost");
    }
}
