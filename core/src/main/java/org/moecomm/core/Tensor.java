package org.moecomm.core;

import java.util.Arrays;
import java.util.Objects;
import org.moecomm.kernels.api.Buf;

/**
 * A dense row-major tensor: a {@link Buf} (host or device memory) with a dtype and a shape.
 * The buffer may be larger than the tensor needs; it may not be smaller.
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
