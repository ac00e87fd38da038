package org.moecomm.core.gpu;

/**
 * The failures of a close that carries on past a failing step, so that one failure does not leak
 * the remaining resources: the first is thrown at the end with the later ones suppressed.
 */
final class CloseFailures {
    private RuntimeException first;

    /** Runs {@code step}, keeping a {@link RuntimeException} it throws. */
    void run(Runnable step) {
        try {
            step.run();
        } catch (RuntimeException e) {
            add(e);
        }
    }

    /** Closes {@code c}, keeping what it throws (a checked exception wrapped in an {@link IllegalStateException}). */
    void close(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            add(e instanceof RuntimeException re ? re : new IllegalStateException(e));
        }
    }

    private void add(RuntimeException e) {
        if (first == null) {
            first = e;
        } else {
            first.addSuppressed(e);
        }
    }

    /** Throws the first failure, if any. */
    void throwIfAny() {
        if (first != null) {
            throw first;
        }
    }
}
