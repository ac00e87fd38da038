package org.moecomm.core;

import java.util.Objects;
import org.moecomm.kernels.api.Buf;

/**
 * The number of valid tokens m of one call: a Java int, or an int32 element of a buffer that
 * the backend's kernels read where it lies (so a count produced on the GPU needs no host
 * synchronisation). A count in a buffer is checked against M where the kernels read it.
 */
public sealed interface TokenCount {
    static TokenCount of(int m) {
        return new Fixed(m);
    }

    static TokenCount inBuffer(Buf buf, long index) {
        return new InBuffer(buf, index);
    }

    /** The count in element {@code index} of an int32 tensor. */
    static TokenCount inBuffer(Tensor counts, long index) {
        if (counts.dtype() != DType.INT32) {
            throw new IllegalArgumentException("a token count is int32, got a " + counts + " tensor");
        }
        if (index < 0 || index >= counts.elements()) {
            throw new IllegalArgumentException("token count index " + index + " is outside the " + counts + " tensor");
        }
        return new InBuffer(counts.buf(), index);
    }

    record Fixed(int value) implements TokenCount {
        public Fixed {
            if (value < 0) {
                throw new IllegalArgumentException("token count must be >= 0, got " + value);
            }
        }
    }

    record InBuffer(Buf buf, long index) implements TokenCount {
        public InBuffer {
            Objects.requireNonNull(buf, "buf");
            if (index < 0 || (index + 1) * 4 > buf.byteSize()) {
                throw new IllegalArgumentException("token count index " + index + " is outside " + buf);
            }
        }
    }
}
