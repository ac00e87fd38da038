package org.moecomm.core.gpu;

import org.moecomm.bridge.cuda.DeviceBuffer;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.kernels.api.Buf;

/**
 * A block of NVSHMEM's symmetric heap: the same offset on every PE. {@link #local()} is this
 * PE's copy as a device {@link Buf} (the host never dereferences it).
 */
public final class GpuSymmetricBuffer implements SymmetricBuffer {
    private final long address;
    private final long bytes;
    private final Buf local;
    private volatile boolean freed;

    GpuSymmetricBuffer(long address, long bytes) {
        this.address = address;
        this.bytes = bytes;
        this.local = DeviceBuffer.wrapBuf(address, bytes);
    }

    @Override
    public Buf local() {
        if (freed) {
            throw new IllegalStateException(this + " was freed");
        }
        return local;
    }

    @Override
    public long byteSize() {
        return bytes;
    }

    /** This PE's device address of the block. */
    public long address() {
        return address;
    }

    boolean freed() {
        return freed;
    }

    void markFreed() {
        freed = true;
    }

    @Override
    public String toString() {
        return "GpuSymmetricBuffer[" + bytes + " bytes @0x" + Long.toHexString(address) + "]";
    }
}
