package org.moecomm.kernels.ptx;

/**
 * What the analysis knows of one local slot or stack entry: its kind, its value where it is a
 * compile-time constant ({@code int} and {@code long} only), and for shared arrays which
 * allocation it is.
 */
record Value(Kind kind, Long constant, SharedArray array) {
    static Value of(Kind kind) {
        return new Value(kind, null, null);
    }

    static Value constant(Kind kind, long value) {
        return new Value(kind, value, null);
    }

    static Value array(SharedArray array) {
        return new Value(array.arrayKind, null, array);
    }

    boolean isConstant() {
        return constant != null;
    }

    int intConstant() {
        return (int) (long) constant;
    }

    /** The join of two values in the same slot; {@code null} (unusable) when their kinds differ. */
    static Value merge(Value a, Value b) {
        if (a == null || b == null || a.kind != b.kind) {
            return null;
        }
        if (a.equals(b)) {
            return a;
        }
        Long c = a.constant != null && a.constant.equals(b.constant) ? a.constant : null;
        SharedArray arr = a.array == b.array ? a.array : null;
        return new Value(a.kind, c, arr);
    }
}
