package org.moecomm.core.gpu;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Whether this process may still take part in a collective teardown ({@code nvshmem_free},
 * {@code nvshmem_finalize}): not once any of its handles saw a failure (a wait or barrier that ran
 * out, a peer's abort, an abort it raised, a failed CUDA call), since a collective call waits for
 * every PE and a peer that is dead, or has skipped it too, never comes. The first reason is kept
 * for the log.
 *
 * <p>{@link #runBounded} is the last resort for the case no failure was seen (a peer killed after
 * the last call of the round): the collective step runs on a thread of its own, and the close
 * returns after the bound even when the step does not.
 */
final class Teardown {
    private final AtomicInteger failures = new AtomicInteger();
    private final AtomicReference<String> firstReason = new AtomicReference<>();

    /** A handle failed: from now on no collective teardown (unless every failure is recovered). */
    void noteFailure(String why) {
        failures.incrementAndGet();
        firstReason.compareAndSet(null, Objects.requireNonNullElse(why, "a failure"));
    }

    /** A failure was cleared by a recovery every rank agreed to ({@code GpuEndpoint.recover()}). */
    void noteRecovered() {
        if (failures.updateAndGet(n -> Math.max(0, n - 1)) == 0) {
            firstReason.set(null);
        }
    }

    /** True while no failure is outstanding: the collective teardown can run. */
    boolean collectiveAllowed() {
        return failures.get() == 0;
    }

    /** Why the collective teardown is skipped (the first failure seen), or null when it is not. */
    String reason() {
        return collectiveAllowed() ? null : firstReason.get();
    }

    /**
     * Runs {@code step} on a daemon thread named {@code name} and waits up to {@code bound}.
     * Returns true when it finished in time (its exception, if any, is rethrown), false when it is
     * still running (it is left running: a native collective call cannot be interrupted).
     */
    static boolean runBounded(Runnable step, Duration bound, String name) {
        Objects.requireNonNull(step, "step");
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                step.run();
            } catch (Throwable e) {
                thrown.set(e);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        try {
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(bound.toNanos())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
        if (t.isAlive()) {
            return false;
        }
        Throwable e = thrown.get();
        if (e instanceof RuntimeException re) {
            throw re;
        }
        if (e instanceof Error err) {
            throw err;
        }
        return true;
    }
}
