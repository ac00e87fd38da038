package org.moecomm.kernels.cpu;

import java.util.concurrent.atomic.AtomicReference;

import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;

/** The first failure of a launch (later ones are consequences or duplicates), reported when the launch ends. */
final class FirstFailure {
    private record Failure(String where, Throwable cause) {
    }

    private final AtomicReference<Failure> failure = new AtomicReference<>();
    private volatile boolean failed;

    boolean failed() {
        return failed;
    }

    /** Records {@code cause} unless a failure came first; true if this one is the first. */
    boolean record(Block block, int thread, Throwable cause) {
        String where = "block (" + block.bx + ", " + block.by + ") thread " + thread;
        if (failure.compareAndSet(null, new Failure(where, cause))) {
            failed = true;
            return true;
        }
        return false;
    }

    /** @throws KernelExecutionException if a failure was recorded */
    void throwIfFailed(Kernel kernel, Grid grid) {
        Failure f = failure.get();
        if (f != null) {
            throw new KernelExecutionException("kernel " + kernel + " failed in " + f.where() + " of " + grid + ": "
                    + f.cause(), f.cause());
        }
    }
}
