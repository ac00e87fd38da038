package org.moecomm.bridge.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.moecomm.kernels.api.Buf;

/**
 * Device memory: an address and a size in the device's (unified) address space.
 *
 * <p>{@link #asBuf()} gives the {@link Buf} that kernel launches take: a segment at the device
 * address that the host must never dereference (reading it on the host crashes the JVM). Host
 * copies take {@link MemorySegment}s; native (off-heap) segments are copied directly, heap
 * segments through a temporary native copy.
 */
public final class DeviceBuffer extends ContextResource {
    private final long address;
    private final long bytes;
    private final boolean owned;

    private DeviceBuffer(CudaContext context, long address, long bytes, boolean owned) {
        super(context, "device buffer is freed");
        this.address = address;
        this.bytes = bytes;
        this.owned = owned;
    }

    static DeviceBuffer allocate(CudaContext context, long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("device allocation of " + bytes + " bytes");
        }
        context.bind();
        long[] out = new long[1];
        Cuda.check(CudaNative.mcMemAlloc(out, bytes), "cuMemAlloc(" + bytes + ")");
        return new DeviceBuffer(context, out[0], bytes, true);
    }

    /** Wraps device memory owned elsewhere (NVSHMEM's heap, a module global); close() does not free it. */
    public static DeviceBuffer wrap(CudaContext context, long address, long bytes) {
        return new DeviceBuffer(context, address, bytes, false);
    }

    /** A device {@link Buf} for {@code bytes} at {@code address}: {@code Buf.of(MemorySegment.ofAddress(address).reinterpret(bytes))}. */
    public static Buf wrapBuf(long address, long bytes) {
        return Buf.of(MemorySegment.ofAddress(address).reinterpret(bytes));
    }

    public CudaContext context() {
        return context;
    }

    public long address() {
        ensureOpen();
        return address;
    }

    public long byteSize() {
        return bytes;
    }

    /** The kernel-argument view of this memory (valid until {@link #close()}). */
    public Buf asBuf() {
        ensureOpen();
        return wrapBuf(address, bytes);
    }

    /** A view of part of this buffer (not owned). */
    public DeviceBuffer slice(long offset, long length) {
        ensureOpen();
        Objects.checkFromIndexSize(offset, length, bytes);
        return new DeviceBuffer(context, address + offset, length, false);
    }

    /** Copies {@code src} into the start of this buffer and waits for the copy. */
    public void copyFromHost(MemorySegment src) {
        ensureOpen();
        copyHostToDevice(context, address, bytes, src, null);
    }

    /**
     * Enqueues a copy of {@code src} into the start of this buffer on {@code stream}. {@code src} must
     * stay alive and unchanged until the stream reaches the copy (pinned memory makes it truly async).
     * Heap segments are copied synchronously.
     */
    public void copyFromHost(MemorySegment src, CudaStream stream) {
        ensureOpen();
        copyHostToDevice(context, address, bytes, src, Objects.requireNonNull(stream, "stream"));
    }

    /** Copies the start of this buffer into {@code dst} (all of {@code dst}) and waits for the copy. */
    public void copyToHost(MemorySegment dst) {
        ensureOpen();
        copyDeviceToHost(context, dst, address, bytes, null);
    }

    /** Enqueues a copy into {@code dst} on {@code stream}; heap segments are copied synchronously. */
    public void copyToHost(MemorySegment dst, CudaStream stream) {
        ensureOpen();
        copyDeviceToHost(context, dst, address, bytes, Objects.requireNonNull(stream, "stream"));
    }

    /** Copies all of {@code src} (device) into the start of this buffer, synchronously. */
    public void copyFrom(DeviceBuffer src) {
        ensureOpen();
        copyDeviceToDevice(context, address, bytes, src.address(), src.byteSize(), null);
    }

    /** Sets every byte to {@code value}, synchronously. */
    public void fill(byte value) {
        ensureOpen();
        fill(context, address, bytes, value, null);
    }

    /** Enqueues setting every byte to {@code value} on {@code stream}. */
    public void fill(byte value, CudaStream stream) {
        ensureOpen();
        fill(context, address, bytes, value, Objects.requireNonNull(stream, "stream"));
    }

    // ---- shared by DeviceBuffer and GpuKernelRunner; stream == null means synchronous ----

    static void copyHostToDevice(CudaContext context, long dst, long dstBytes, MemorySegment src, CudaStream stream) {
        long n = src.byteSize();
        checkFits(n, dstBytes, "host-to-device copy");
        context.bind();
        if (n == 0) {
            return;
        }
        if (!src.isNative()) {
            if (stream != null) {
                stream.synchronize();
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment tmp = arena.allocate(n, 16);
                tmp.copyFrom(src);
                Cuda.check(CudaNative.mcMemcpyHtoD(dst, tmp.address(), n, 0, 0), "cuMemcpyHtoD");
            }
            return;
        }
        if (stream == null) {
            Cuda.check(CudaNative.mcMemcpyHtoD(dst, src.address(), n, 0, 0), "cuMemcpyHtoD");
        } else {
            Cuda.check(CudaNative.mcMemcpyHtoD(dst, src.address(), n, stream.handle(), 1), "cuMemcpyHtoDAsync");
        }
    }

    static void copyDeviceToHost(CudaContext context, MemorySegment dst, long src, long srcBytes, CudaStream stream) {
        long n = dst.byteSize();
        checkFits(n, srcBytes, "device-to-host copy");
        context.bind();
        if (n == 0) {
            return;
        }
        if (!dst.isNative()) {
            if (stream != null) {
                stream.synchronize();
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment tmp = arena.allocate(n, 16);
                Cuda.check(CudaNative.mcMemcpyDtoH(tmp.address(), src, n, 0, 0), "cuMemcpyDtoH");
                dst.copyFrom(tmp);
            }
            return;
        }
        if (stream == null) {
            Cuda.check(CudaNative.mcMemcpyDtoH(dst.address(), src, n, 0, 0), "cuMemcpyDtoH");
        } else {
            Cuda.check(CudaNative.mcMemcpyDtoH(dst.address(), src, n, stream.handle(), 1), "cuMemcpyDtoHAsync");
        }
    }

    static void copyDeviceToDevice(CudaContext context, long dst, long dstBytes, long src, long srcBytes,
            CudaStream stream) {
        checkFits(srcBytes, dstBytes, "device-to-device copy");
        context.bind();
        if (srcBytes == 0) {
            return;
        }
        if (stream == null) {
            Cuda.check(CudaNative.mcMemcpyDtoD(dst, src, srcBytes, 0, 0), "cuMemcpyDtoD");
        } else {
            Cuda.check(CudaNative.mcMemcpyDtoD(dst, src, srcBytes, stream.handle(), 1), "cuMemcpyDtoDAsync");
        }
    }

    static void fill(CudaContext context, long dst, long bytes, byte value, CudaStream stream) {
        context.bind();
        if (stream == null) {
            Cuda.check(CudaNative.mcMemsetD8(dst, value, bytes, 0, 0), "cuMemsetD8");
        } else {
            Cuda.check(CudaNative.mcMemsetD8(dst, value, bytes, stream.handle(), 1), "cuMemsetD8Async");
        }
    }

    private static void checkFits(long n, long capacity, String what) {
        if (n > capacity) {
            throw new IllegalArgumentException(what + " of " + n + " bytes into/from a device range of " + capacity + " bytes");
        }
    }

    /** Frees the memory if this buffer owns it. */
    @Override
    void release() {
        if (owned) {
            context.bind();
            Cuda.check(CudaNative.mcMemFree(address), "cuMemFree");
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer[" + bytes + " bytes @0x" + Long.toHexString(address) + (owned ? "" : ", not owned") + "]";
    }
}
