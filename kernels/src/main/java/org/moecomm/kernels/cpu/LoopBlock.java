package org.moecomm.kernels.cpu;

import java.lang.invoke.MethodHandle;
import java.util.Arrays;

import org.moecomm.kernels.api.KernelContext;

/**
 * One block of a loop-form launch. Its threads run one after another up to their next split point
 * ({@link LoopForm}): when every thread stands at a barrier, all go on to the next one; a thread
 * whose signal wait did not succeed yet runs again after the others. The whole state of the block
 * is on the heap, so {@link #advance()} can return when every unfinished thread waits for a signal
 * and continue later, on any pool thread.
 */
final class LoopBlock extends Block {
    private static final byte RUNNABLE = 0;
    private static final byte AT_BARRIER = 1;
    private static final byte DONE = 2;

    private final LoopLaunch launch;
    /** The launch's loop form with its arguments bound: {@code (Object[], long[], int, KernelContext)int}. */
    private final MethodHandle run;
    private final boolean[] waits;
    private final CpuKernelContext[] contexts;
    private final LoopForm.ThreadStates states;
    private final int[] resume;
    private final byte[] status;
    private int done;
    /** Times in a row {@link #advance()} returned without the block finishing. */
    int stalls;

    LoopBlock(LoopLaunch launch, int bx, int by) {
        super(launch.kernel, launch.grid, launch.peers, bx, by);
        this.launch = launch;
        this.run = launch.run;
        this.waits = launch.form.waits();
        this.contexts = new CpuKernelContext[threads];
        for (int t = 0; t < threads; t++) {
            contexts[t] = new CpuKernelContext(this, t);
        }
        this.states = launch.form.takeStates(threads);
        this.resume = new int[threads];
        this.status = new byte[threads];
    }

    /**
     * Runs the block until it has finished (true; also when the launch failed) or until every
     * unfinished thread waits for a signal that has not come (false: call again later).
     */
    boolean advance() {
        while (!launch.failed()) {
            boolean progress = false;
            boolean waiting = false;
            for (int t = 0; t < threads; t++) {
                if (status[t] != RUNNABLE) {
                    continue;
                }
                int from = resume[t];
                Object[] refs = states == null ? null : states.refs[t];
                long[] prims = states == null ? null : states.prims[t];
                int to;
                try {
                    to = (int) run.invokeExact(refs, prims, from, (KernelContext) contexts[t]);
                } catch (Throwable e) {
                    launch.fail(this, t, e);
                    return true;
                }
                resume[t] = to;
                if (to == 0) {
                    status[t] = DONE;
                    done++;
                    progress = true;
                } else if (waits[to]) {
                    waiting = true;
                    progress |= to != from;
                } else {
                    status[t] = AT_BARRIER;
                    progress = true;
                }
            }
            if (!waiting) {
                if (done == threads) {
                    return true;
                }
                if (done > 0) {
                    launch.fail(this, firstDone(), new IllegalStateException("thread " + firstDone()
                            + " returned while other threads of its block wait at localBarrier(): every thread of"
                            + " a block must reach the same barriers"));
                    return true;
                }
                Arrays.fill(status, RUNNABLE); // every thread is at a barrier: all pass it
            } else if (!progress) {
                return false;
            }
        }
        return true;
    }

    private int firstDone() {
        for (int t = 0; t < threads; t++) {
            if (status[t] == DONE) {
                return t;
            }
        }
        return -1;
    }

    /** Gives the saved-locals arrays back for later blocks. */
    void release() {
        launch.form.giveBack(states);
    }

    @Override
    void barrier(int thread) {
        // The loop form has no calls of localBarrier(); one here came by a path the compiler did not see.
        throw new IllegalStateException("localBarrier() reached outside the loop form of kernel " + kernel);
    }

    @Override
    void beforeWait(int thread) {
        throw new IllegalStateException("waitAtLeast reached outside the loop form of kernel " + kernel);
    }
}
