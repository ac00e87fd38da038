package org.moecomm.core.gpu;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.moecomm.bridge.cuda.CudaEvent;
import org.moecomm.bridge.cuda.DeviceBuffer;
import org.moecomm.bridge.cuda.PinnedHostBuffer;
import org.moecomm.core.DeviceMemory;
import org.moecomm.kernels.api.Buf;

/**
 * GPU memory of one handle, with copies ordered on the handle's stream (after every launch,
 * put and wait enqueued before them).
 *
 * <ul>
 *   <li>{@link #allocate}: {@code cuMemAlloc} (256-byte aligned), zeroed on the stream;</li>
 *   <li>{@link #copyFromHost}: small copies (up to {@value #SLOT_BYTES} bytes, such as a token
 *       count) go through a page-locked staging slot and do not wait for the GPU; larger ones
 *       wait for the stream, since the caller may reuse its memory once the call returns;</li>
 *   <li>{@link #copyToHost}: waits for the stream, then throws a failure a kernel recorded (a
 *       wait that ran out), so a caller never reads the results of a failed round;</li>
 *   <li>{@link #fill}: enqueued on the stream.</li>
 * </ul>
 */
public final class GpuDeviceMemory implements DeviceMemory, AutoCloseable {
    static final int SLOT_BYTES = 4096;
    private static final int SLOTS = 16;

    private final GpuExecution exec;
    private final List<DeviceBuffer> owned = new ArrayList<>();
    private final List<PinnedHostBuffer> hostVisible = new ArrayList<>();
    private PinnedHostBuffer staging;
    private final CudaEvent[] slotEvents = new CudaEvent[SLOTS];
    private final boolean[] slotPending = new boolean[SLOTS];
    private int nextSlot;
    private boolean closed;

    GpuDeviceMemory(GpuExecution exec) {
        this.exec = Objects.requireNonNull(exec, "exec");
    }

    @Override
    public synchronized Buf allocate(long bytes) {
        ensureOpen();
        if (bytes < 0) {
            throw new IllegalArgumentException("allocation of " + bytes + " bytes");
        }
        exec.enter();
        DeviceBuffer d = exec.context().allocate(Math.max(1, bytes));
        owned.add(d);
        d.fill((byte) 0, exec.stream());
        return d.asBuf();
    }

    @Override
    public synchronized void copyFromHost(Buf dst, long dstOffset, MemorySegment src) {
        ensureOpen();
        long n = src.byteSize();
        checkRange(dst, dstOffset, n, "copyFromHost");
        exec.enter();
        if (n == 0) {
            return;
        }
        DeviceBuffer target = DeviceBuffer.wrap(exec.context(), dst.address() + dstOffset, n);
        if (n <= SLOT_BYTES) {
            int slot = nextSlot;
            nextSlot = (nextSlot + 1) % SLOTS;
            MemorySegment staged = stagingSlot(slot);
            if (slotPending[slot]) {
                slotEvents[slot].synchronize();
            }
            MemorySegment.copy(src, 0, staged, 0, n);
            target.copyFromHost(staged.asSlice(0, n), exec.stream());
            slotEvents[slot].record(exec.stream());
            slotPending[slot] = true;
            return;
        }
        target.copyFromHost(src, exec.stream());
        exec.synchronize();
    }

    @Override
    public synchronized void copyToHost(Buf src, long srcOffset, MemorySegment dst) {
        ensureOpen();
        long n = dst.byteSize();
        checkRange(src, srcOffset, n, "copyToHost");
        exec.enter();
        if (n > 0) {
            DeviceBuffer.wrap(exec.context(), src.address() + srcOffset, n).copyToHost(dst, exec.stream());
        }
        exec.synchronize();
    }

    @Override
    public synchronized void fill(Buf buf, byte value) {
        ensureOpen();
        exec.enter();
        if (buf.byteSize() > 0) {
            DeviceBuffer.wrap(exec.context(), buf.address(), buf.byteSize()).fill(value, exec.stream());
        }
    }

    /** Copies to the host wait for the stream. */
    @Override
    public boolean hostReadsSynchronize() {
        return true;
    }

    /** Page-locked host memory: with unified addressing its host address is also its device address. */
    @Override
    public synchronized Buf allocateHostVisible(long bytes) {
        ensureOpen();
        if (bytes < 1) {
            throw new IllegalArgumentException("host-visible allocation of " + bytes + " bytes");
        }
        exec.enter();
        PinnedHostBuffer b = exec.context().allocatePinned(bytes);
        hostVisible.add(b);
        b.segment().fill((byte) 0);
        return Buf.of(b.segment());
    }

    private MemorySegment stagingSlot(int slot) {
        if (staging == null) {
            staging = exec.context().allocatePinned((long) SLOT_BYTES * SLOTS);
            for (int i = 0; i < SLOTS; i++) {
                slotEvents[i] = exec.context().createEvent(false);
            }
        }
        return staging.segment().asSlice((long) slot * SLOT_BYTES, SLOT_BYTES);
    }

    private static void checkRange(Buf buf, long offset, long n, String what) {
        if (offset < 0 || n < 0 || offset + n > buf.byteSize()) {
            throw new IllegalArgumentException(what + ": " + n + " bytes at offset " + offset + " do not fit in " + buf);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("rank " + exec.rank() + ": device memory is closed");
        }
    }

    /** Waits for the stream (errors ignored) and frees every buffer allocated here. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        CloseFailures failures = new CloseFailures();
        failures.run(() -> {
            exec.context().bind();
            exec.stream().synchronize();
        });
        for (DeviceBuffer d : owned) {
            failures.run(d::close);
        }
        owned.clear();
        for (PinnedHostBuffer b : hostVisible) {
            failures.run(b::close);
        }
        hostVisible.clear();
        for (CudaEvent e : slotEvents) {
            if (e != null) {
                failures.run(e::close);
            }
        }
        if (staging != null) {
            failures.run(staging::close);
        }
        failures.throwIfAny();
    }
}
