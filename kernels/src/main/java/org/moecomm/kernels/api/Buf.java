package org.moecomm.kernels.api;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * A flat, byte-addressed buffer that kernels read and write: the only memory type a kernel
 * parameter may have besides scalars.
 *
 * <p>Accessors take an <em>element index</em> in units of the accessed type's width
 * ({@code getShort(i)} reads bytes {@code [2i, 2i+2)}), in native (little-endian) order.
 * On the JVM the buffer is backed by a {@link MemorySegment}; on a GPU it wraps a device
 * address (a zero-length-checked segment the host never dereferences) and the compiler
 * lowers each accessor to a global load or store. The accessors are the kernel's view; host
 * code uses {@link #segment()} directly.
 */
public final class Buf {
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble DOUBLE = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private final MemorySegment segment;

    private Buf(MemorySegment segment) {
        this.segment = Objects.requireNonNull(segment, "segment");
    }

    /** Wraps an existing segment (heap or off-heap; kernels on the JVM work on both). */
    public static Buf of(MemorySegment segment) {
        return new Buf(segment);
    }

    /** Allocates {@code bytes} zeroed off-heap bytes, 64-byte aligned, owned by {@code arena}. */
    public static Buf allocate(Arena arena, long bytes) {
        return new Buf(arena.allocate(Math.max(bytes, 1), 64));
    }

    public MemorySegment segment() {
        return segment;
    }

    public long byteSize() {
        return segment.byteSize();
    }

    public long address() {
        return segment.address();
    }

    /** A view of {@code bytes} bytes starting at {@code byteOffset}. */
    public Buf slice(long byteOffset, long bytes) {
        return new Buf(segment.asSlice(byteOffset, bytes));
    }

    // ---- kernel accessors: element index in units of the type's width ----

    public byte getByte(long i) { return segment.get(ValueLayout.JAVA_BYTE, i); }

    public void setByte(long i, byte v) { segment.set(ValueLayout.JAVA_BYTE, i, v); }

    public short getShort(long i) { return segment.get(SHORT, i << 1); }

    public void setShort(long i, short v) { segment.set(SHORT, i << 1, v); }

    public int getInt(long i) { return segment.get(INT, i << 2); }

    public void setInt(long i, int v) { segment.set(INT, i << 2, v); }

    public long getLong(long i) { return segment.get(LONG, i << 3); }

    public void setLong(long i, long v) { segment.set(LONG, i << 3, v); }

    public float getFloat(long i) { return segment.get(FLOAT, i << 2); }

    public void setFloat(long i, float v) { segment.set(FLOAT, i << 2, v); }

    public double getDouble(long i) { return segment.get(DOUBLE, i << 3); }

    public void setDouble(long i, double v) { segment.set(DOUBLE, i << 3, v); }

    /**
     * Copies 16 bytes from {@code src} element {@code srcIndex} to this buffer's element
     * {@code dstIndex}, both in units of 16 bytes. On the GPU this is one 128-bit load and one
     * 128-bit store (both addresses must be 16-byte aligned there); it is how copy kernels
     * reach memory bandwidth.
     */
    public void copy16(long dstIndex, Buf src, long srcIndex) {
        long d = dstIndex << 4;
        long s = srcIndex << 4;
        segment.set(LONG, d, src.segment.get(LONG, s));
        segment.set(LONG, d + 8, src.segment.get(LONG, s + 8));
    }

    /**
     * Four 16-byte copies: elements {@code dstIndex + j*stride} from {@code srcIndex + j*stride},
     * {@code j = 0..3} (units of 16 bytes). On the GPU the four 128-bit loads are issued before
     * the four stores, so they are in flight together: a warp copying a row waits for memory once
     * per four pieces instead of once per piece (rows of a few kilobytes, as in decode, are
     * latency-bound otherwise). The ranges must not overlap.
     */
    public void copy16x4(long dstIndex, Buf src, long srcIndex, long stride) {
        copyStrided(dstIndex, src, srcIndex, stride, 4);
    }

    /**
     * The first {@code count} of {@link #copy16x4}'s four copies ({@code count} from 0 to 4; none
     * when it is 0 or less): the end of a row whose pieces do not fill four per lane takes one
     * round trip to memory, like the rest, instead of one per remaining piece. On the GPU the
     * loads and stores are predicated on {@code count}, the loads first.
     */
    public void copy16xN(long dstIndex, Buf src, long srcIndex, long stride, int count) {
        copyStrided(dstIndex, src, srcIndex, stride, Math.min(count, 4));
    }

    /**
     * Eight 16-byte copies, as {@link #copy16x4} does four: the eight loads are in flight
     * together on the GPU (128 bytes per thread), for copies that need more bytes in flight than
     * the threads resident on a multiprocessor give with four (docs/kernels-in-java.md). Its eight
     * values take about 32 registers more than copy16x4's (38-42 in the library's kernels). The
     * ranges must not overlap.
     */
    public void copy16x8(long dstIndex, Buf src, long srcIndex, long stride) {
        copyStrided(dstIndex, src, srcIndex, stride, 8);
    }

    /**
     * The first {@code count} of {@link #copy16x8}'s eight copies ({@code count} from 0 to 8; none
     * when it is 0 or less), predicated on the GPU as {@link #copy16xN} is.
     */
    public void copy16x8N(long dstIndex, Buf src, long srcIndex, long stride, int count) {
        copyStrided(dstIndex, src, srcIndex, stride, Math.min(count, 8));
    }

    /** The JVM's body of the strided copies: {@code count} of them, none when it is 0 or less (on the GPU each is an intrinsic). */
    private void copyStrided(long dstIndex, Buf src, long srcIndex, long stride, int count) {
        for (int j = 0; j < count; j++) {
            copy16(dstIndex + j * stride, src, srcIndex + j * stride);
        }
    }

    @Override
    public String toString() {
        return "Buf[" + segment.byteSize() + " bytes @0x" + Long.toHexString(segment.address()) + "]";
    }
}
