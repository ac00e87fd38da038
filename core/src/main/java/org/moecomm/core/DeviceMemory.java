package org.moecomm.core;

import java.lang.foreign.MemorySegment;
import org.moecomm.kernels.api.Buf;

/**
 * The memory a backend's kernels run on (host memory for the CPU backend, GPU memory for the
 * GPU backend), with the copies a caller needs to fill inputs and read outputs (both take the
 * device buffer and its offset first, then the host segment; {@link Tensor#fromFloats} and
 * {@link Tensor#toFloats} do it from and to Java arrays). Buffers are freed when the owner (the
 * handle or the caller's scope) closes.
 */
public interface DeviceMemory {
    /** Allocates {@code bytes} zeroed bytes, 256-byte aligned. */
    Buf allocate(long bytes);

    default Tensor allocate(DType dtype, long... shape) {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return Tensor.of(allocate(Math.max(1, n * dtype.bytes())), dtype, shape);
    }

    /** Copies all of {@code src} into {@code dst} from byte {@code dstOffset} on. */
    void copyFromHost(Buf dst, long dstOffset, MemorySegment src);

    /** Copies {@code dst.byteSize()} bytes of {@code src} from byte {@code srcOffset} on into {@code dst}. */
    void copyToHost(Buf src, long srcOffset, MemorySegment dst);

    /** Sets every byte of {@code buf} to {@code value} (tests poison outputs this way). */
    void fill(Buf buf, byte value);

    /**
     * Whether {@link #copyToHost} waits for the device's queued work (a GPU: yes). A check that
     * reads device memory then stalls the host until the device drains, so it belongs on the
     * device instead (see {@link #allocateHostVisible}).
     */
    default boolean hostReadsSynchronize() {
        return false;
    }

    /**
     * {@code bytes} zeroed bytes that kernels write and the host reads through the returned
     * {@link Buf}'s segment at any time, without a copy (a GPU: page-locked host memory mapped into
     * the device): for reports from the device. A value read while kernels may still write it can
     * be stale; after the work synchronised it is current.
     */
    default Buf allocateHostVisible(long bytes) {
        return allocate(bytes);
    }
}
