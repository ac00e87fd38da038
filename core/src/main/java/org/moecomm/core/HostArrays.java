package org.moecomm.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Tensors from and to Java arrays (what {@link Tensor}'s factories and readers do): elements are
 * laid out little-endian, row-major, as the kernels read them, and staged through native host
 * memory, which every backend's copies take.
 */
final class HostArrays {
    private HostArrays() {
    }

    static Tensor fromFloats(DeviceMemory memory, DType dtype, float[] values, long[] shape) {
        requireFloat(dtype);
        long[] s = shapeFor(values.length, shape);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate((long) values.length * dtype.bytes());
            for (int i = 0; i < values.length; i++) {
                put(host, dtype, i, dtype.fromFloat(values[i]));
            }
            return upload(memory, dtype, s, host);
        }
    }

    static Tensor fromInts(DeviceMemory memory, int[] values, long[] shape) {
        long[] s = shapeFor(values.length, shape);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate((long) values.length * Integer.BYTES);
            MemorySegment.copy(values, 0, host, ValueLayout.JAVA_INT_UNALIGNED, 0, values.length);
            return upload(memory, DType.INT32, s, host);
        }
    }

    static Tensor fromBytes(DeviceMemory memory, DType dtype, byte[] bytes, long[] shape) {
        if (bytes.length % dtype.bytes() != 0) {
            throw new IllegalArgumentException(bytes.length + " bytes are no whole number of " + dtype.label() + " elements");
        }
        long[] s = shapeFor(bytes.length / dtype.bytes(), shape);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(Math.max(1, bytes.length));
            MemorySegment.copy(bytes, 0, host, ValueLayout.JAVA_BYTE, 0, bytes.length);
            return upload(memory, dtype, s, host.asSlice(0, bytes.length));
        }
    }

    static float[] toFloats(DeviceMemory memory, Tensor t) {
        requireFloat(t.dtype());
        int n = count(t);
        float[] out = new float[n];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = download(memory, t, arena);
            for (int i = 0; i < n; i++) {
                out[i] = t.dtype().toFloat(get(host, t.dtype(), i));
            }
        }
        return out;
    }

    static int[] toInts(DeviceMemory memory, Tensor t) {
        if (t.dtype() != DType.INT32) {
            throw new IllegalArgumentException("toInts reads int32 tensors, not " + t + " (toFloats reads that one)");
        }
        try (Arena arena = Arena.ofConfined()) {
            return download(memory, t, arena).toArray(ValueLayout.JAVA_INT_UNALIGNED);
        }
    }

    static byte[] toBytes(DeviceMemory memory, Tensor t) {
        count(t);
        try (Arena arena = Arena.ofConfined()) {
            return download(memory, t, arena).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /** {@code shape}, or {@code [n]} when none is given; its elements must be {@code n}. */
    private static long[] shapeFor(int n, long[] shape) {
        long[] s = shape.length == 0 ? new long[] {n} : shape;
        long elements = 1;
        for (long d : s) {
            elements = Math.multiplyExact(elements, d);
        }
        if (elements != n) {
            throw new IllegalArgumentException(n + " values do not fill the shape " + Arrays.toString(s));
        }
        return s;
    }

    private static Tensor upload(DeviceMemory memory, DType dtype, long[] shape, MemorySegment host) {
        Tensor t = memory.allocate(dtype, shape);
        if (host.byteSize() > 0) {
            memory.copyFromHost(t.buf(), 0, host);
        }
        return t;
    }

    private static MemorySegment download(DeviceMemory memory, Tensor t, Arena arena) {
        MemorySegment host = arena.allocate(Math.max(1, t.byteSize()));
        if (t.byteSize() > 0) {
            memory.copyToHost(t.buf(), 0, host.asSlice(0, t.byteSize()));
        }
        return host.asSlice(0, t.byteSize());
    }

    private static int count(Tensor t) {
        if (t.elements() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a " + t + " tensor does not fit a Java array");
        }
        return (int) t.elements();
    }

    private static void requireFloat(DType dtype) {
        if (!dtype.isFloat()) {
            throw new IllegalArgumentException(dtype.label() + " holds no floats (fromInts and toInts take int32)");
        }
    }

    private static void put(MemorySegment host, DType dtype, long i, int bits) {
        switch (dtype.bytes()) {
            case 1 -> host.set(ValueLayout.JAVA_BYTE, i, (byte) bits);
            case 2 -> host.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i, (short) bits);
            default -> host.set(ValueLayout.JAVA_INT_UNALIGNED, 4 * i, bits);
        }
    }

    private static int get(MemorySegment host, DType dtype, long i) {
        return switch (dtype.bytes()) {
            case 1 -> host.get(ValueLayout.JAVA_BYTE, i) & 0xff;
            case 2 -> host.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i) & 0xffff;
            default -> host.get(ValueLayout.JAVA_INT_UNALIGNED, 4 * i);
        };
    }
}
