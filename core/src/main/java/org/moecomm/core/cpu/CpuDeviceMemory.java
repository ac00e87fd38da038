package org.moecomm.core.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.moecomm.core.DeviceMemory;
import org.moecomm.kernels.api.Buf;

/**
 * Device memory of the CPU backend: off-heap segments of one shared arena (kernels and other
 * ranks' threads may touch them), freed together by {@link #close()}.
 */
public final class CpuDeviceMemory implements DeviceMemory, AutoCloseable {
    /** Alignment of every allocation, as on the GPU. */
    public static final long ALIGNMENT = 256;

    private final Arena arena = Arena.ofShared();

    @Override
    public Buf allocate(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate " + bytes + " bytes");
        }
        // Arena allocations are zero-initialised.
        return Buf.of(arena.allocate(Math.max(1, bytes), ALIGNMENT));
    }

    @Override
    public void copyFromHost(Buf dst, long dstOffset, MemorySegment src) {
        MemorySegment.copy(src, 0, dst.segment(), dstOffset, src.byteSize());
    }

    @Override
    public void copyToHost(Buf src, long srcOffset, MemorySegment dst) {
        MemorySegment.copy(src.segment(), srcOffset, dst, 0, dst.byteSize());
    }

    @Override
    public void fill(Buf buf, byte value) {
        buf.segment().fill(value);
    }

    /** Frees every buffer allocated here; idempotent. */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
