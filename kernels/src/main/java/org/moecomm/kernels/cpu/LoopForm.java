package org.moecomm.kernels.cpu;

import java.lang.invoke.MethodHandle;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A kernel split at its barriers, as {@link LoopFormCompiler} makes it: a hidden class with a
 * static method {@code int run(Object[] refs, long[] prims, int resume, KernelContext ctx, args...)}
 * that runs one kernel thread from split point {@code resume} (0: the start) to the next split
 * point and returns its number, or 0 when the thread has returned. At a split point the thread's
 * locals are saved in {@code refs} and {@code prims} (indexed by local slot), and restored from
 * there when it resumes. The runner calls it through {@link SweepMethod}'s {@code sweep}, which
 * runs every runnable thread of a block once.
 *
 * @param sweep the generated {@code sweep} method ({@link SweepMethod#TYPE})
 * @param waits {@code waits[k]}: split point {@code k} is a signal wait that did not succeed yet
 *              (the thread runs again from there), not a barrier
 * @param slots local slots of the generated method: the length of {@code refs} and {@code prims}
 */
record LoopForm(MethodHandle sweep, boolean[] waits, int slots, ConcurrentLinkedQueue<ThreadStates> spare) {
    LoopForm(MethodHandle sweep, boolean[] waits, int slots) {
        this(sweep, waits, slots, new ConcurrentLinkedQueue<>());
    }

    /** Split points, the start not counted. */
    int sites() {
        return waits.length - 1;
    }

    /** Saved locals of the threads of one block, reused by later blocks. */
    static final class ThreadStates {
        final Object[][] refs;
        final long[][] prims;

        ThreadStates(int threads, int slots) {
            refs = new Object[threads][slots];
            prims = new long[threads][slots];
        }
    }

    /**
     * Saved-locals arrays for a block of {@code threads} threads (of no slots when nothing is
     * ever saved: {@code sweep} still passes each thread its element).
     */
    ThreadStates takeStates(int threads) {
        ThreadStates s = spare.poll();
        return s != null && s.refs.length == threads ? s : new ThreadStates(threads, sites() == 0 ? 0 : slots);
    }

    void giveBack(ThreadStates s) {
        // Stale references in a spare only keep buffers reachable a little longer.
        if (s != null && spare.size() < 64) {
            spare.add(s);
        }
    }
}
