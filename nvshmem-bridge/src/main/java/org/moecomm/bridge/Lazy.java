package org.moecomm.bridge;

import java.util.Objects;
import java.util.function.Supplier;

/**
 * A value computed on first use, at most once even under concurrent first calls (double-checked
 * locking). Used for the native-library probes, which must not run in a class initialiser.
 *
 * @param <T> the value's type; the supplier must not return null
 */
public final class Lazy<T> {
    private final Supplier<T> supplier;
    private volatile T value;

    public Lazy(Supplier<T> supplier) {
        this.supplier = Objects.requireNonNull(supplier, "supplier");
    }

    /** The value, computing it on the first call. */
    public T get() {
        T v = value;
        if (v == null) {
            synchronized (this) {
                v = value;
                if (v == null) {
                    v = supplier.get();
                    value = v;
                }
            }
        }
        return v;
    }
}
