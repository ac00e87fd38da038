package org.moecomm.kernels.testing;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.function.Executable;

/**
 * Bad input must be refused with a message that names what is wrong (for the tests of every
 * module: the kernels test jar).
 */
public final class Refusals {
    private Refusals() {
    }

    /** Asserts that {@code call} throws {@code type} with a message containing {@code says}. */
    public static <T extends Throwable> T assertRefused(Class<T> type, Executable call, String says) {
        T e = assertThrows(type, call);
        assertTrue(e.getMessage() != null && e.getMessage().contains(says),
                () -> "expected a message containing \"" + says + "\", got: " + e.getMessage());
        return e;
    }
}
