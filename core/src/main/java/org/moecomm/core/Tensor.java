package org.moecomm.core;

import java.util.Arrays;
import java.util.Objects;
import org.moecomm.kernels.api.Buf;

/**
 * A dense row-major tensor: a {@link Buf} (host or device memory) with a dtype and a shape.
 * The buffer may be larger than the tensor needs; it may not be smaller. {@link #fromFloats},
 * {@link #fromInts} and {@link #fromBytes} make one from a Java array in a backend's memory;
 * {@link #toFloats}, {@link #toInts} and {@link #toBytes} read one back.
 */
public record Tensor(Buf buf, DType dtype, long[] shape) {
    public Tensor {
        Objects.requireNonNull(buf, "buf");
        Objects.requireNonNull(dtype, "dtype");
        shape = shape.clone();
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            }
        }
        if (buf.byteSize() < elements(shape) * dtype.bytes()) {
            throw new IllegalArgumentException("buffer of " + buf.byteSize() + " bytes is too small for a "
                    + dtype.label() + " tensor of shape " + Arrays.toString(shape));
        }
    }

    public static Tensor of(Buf buf, DType dtype, long... shape) {
        return new Tensor(buf, dtype, shape);
    }

    /**
     * A new tensor in {@code memory} holding {@code values} converted to {@code dtype} (round to
     * nearest even, {@link DType#fromFloat}), of {@code shape} (default: one dimension).
     *
     * @throws IllegalArgumentException when the values do not fill the shape, or for int32
     */
    public static Tensor fromFloats(DeviceMemory memory, DType dtype, float[] values, long... shape) {
        return HostArrays.fromFloats(memory, dtype, values, shape);
    }

    /** A new int32 tensor in {@code memory} holding {@code values}, of {@code shape} (default: one dimension). */
    public static Tensor fromInts(DeviceMemory memory, int[] values, long... shape) {
        return HostArrays.fromInts(memory, values, shape);
    }

    /**
     * A new tensor in {@code memory} whose elements are {@code bytes} as they are (little-endian
     * elements of {@code dtype}: fp8 codes, for example), of {@code shape} (default: one dimension).
     */
    public static Tensor fromBytes(DeviceMemory memory, DType dtype, byte[] bytes, long... shape) {
        return HostArrays.fromBytes(memory, dtype, bytes, shape);
    }

    /** The elements as floats (exact: every element of a float dtype is a float), copied from {@code memory}. */
    public float[] toFloats(DeviceMemory memory) {
        return HostArrays.toFloats(memory, this);
    }

    /** The elements of this int32 tensor, copied from {@code memory}. */
    public int[] toInts(DeviceMemory memory) {
        return HostArrays.toInts(memory, this);
    }

    /** The elements' bytes as they lie (little-endian), copied from {@code memory}. */
    public byte[] toBytes(DeviceMemory memory) {
        return HostArrays.toBytes(memory, this);
    }

    private static long elements(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    public long elements() {
        return elements(shape);
    }

    public long byteSize() {
        return elements() * dtype.bytes();
    }

    public int rank() {
        return shape.length;
    }

    public long dim(int i) {
        return shape[i];
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Tensor t && t.buf == buf && t.dtype == dtype && Arrays.equals(t.shape, shape);
    }

    @Override
    public int hashCode() {
        return Objects.hash(System.identityHashCode(buf), dtype, Arrays.hashCode(shape));
    }

    @Override
    public String toString() {
        return dtype.label() + Arrays.toString(shape);
    }
}
