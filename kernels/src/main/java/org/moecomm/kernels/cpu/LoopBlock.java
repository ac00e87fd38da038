package org.moecomm.kernels.cpu;

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
    /** The loop block that this thread (not one of the pool's) runs, for {@link CollectiveHelpers}. */
    private static final ThreadLocal<LoopBlock> RUNNING = new ThreadLocal<>();

    private final LoopLaunch launch;
    private final boolean[] waits;
    private final KernelContext[] contexts;
    private final LoopForm.ThreadStates states;
    private final int[] resume;
    /** {@link #resume} before the pass: a wait that fails again where it stood is no progress. */
    private final int[] before;
    private final byte[] status;
    /** The thread that {@code sweep} runs: the one that failed when it throws. */
    private final int[] current = new int[1];
    /** The collective calls of the threads since the block's last barrier. */
    private final CollectiveLedger ledger;
    /** A token's reduction for the whole block since its last barrier (reduceSlice). */
    private final BlockSums sums = new BlockSums();
    private int done;
    /** Times in a row {@link #advance()} returned without the block finishing. */
    int stalls;

    LoopBlock(LoopLaunch launch, int bx, int by) {
        super(launch.kernel, launch.grid, launch.peers, bx, by);
        this.launch = launch;
        this.waits = launch.form.waits();
        // an array of the exact class stored: a KernelContext[] made C2 trap on the store's type
        // check and compile this constructor four times
        this.contexts = new CpuKernelContext[threads];
        for (int t = 0; t < threads; t++) {
            contexts[t] = new CpuKernelContext(this, t);
        }
        this.states = launch.form.takeStates(threads);
        this.resume = new int[threads];
        this.before = new int[threads];
        this.status = new byte[threads];
        this.ledger = new CollectiveLedger(threads);
    }

    /**
     * Runs the block until it has finished (true; also when the launch failed) or until every
     * unfinished thread waits for a signal that has not come (false: call again later).
     */
    boolean advance() {
        if (Thread.currentThread() instanceof BlockPool.Worker w) {
            LoopBlock outer = w.running;
            w.running = this;
            try {
                return sweepUntilStalled();
            } finally {
                w.running = outer;
            }
        }
        LoopBlock outer = RUNNING.get();
        RUNNING.set(this);
        try {
            return sweepUntilStalled();
        } finally {
            RUNNING.set(outer);
        }
    }

    private boolean sweepUntilStalled() {
        while (!launch.failed()) {
            System.arraycopy(resume, 0, before, 0, threads);
            try {
                launch.form.sweep().invokeExact(states.refs, states.prims, resume, status, current, contexts,
                        launch.args);
            } catch (Throwable e) {
                launch.fail(this, current[0], e);
                return true;
            }
            boolean progress = false;
            boolean waiting = false;
            for (int t = 0; t < threads; t++) {
                if (status[t] != RUNNABLE) {
                    continue;
                }
                int to = resume[t];
                if (to == 0) {
                    status[t] = DONE;
                    done++;
                    progress = true;
                } else if (waits[to]) {
                    waiting = true;
                    progress |= to != before[t];
                } else {
                    status[t] = AT_BARRIER;
                    progress = true;
                }
            }
            if (!waiting) {
                if (done == threads) {
                    closeLedger();
                    return true;
                }
                if (done > 0) {
                    launch.fail(this, firstDone(), new IllegalStateException("thread " + firstDone()
                            + " returned while other threads of its block wait at localBarrier(): every thread of"
                            + " a block must reach the same barriers"));
                    return true;
                }
                if (!closeLedger()) {
                    return true;
                }
                Arrays.fill(status, RUNNABLE); // every thread is at a barrier: all pass it
            } else if (!progress) {
                return false;
            }
        }
        return true;
    }

    /**
     * Checks the collective calls of the stretch that ends here and forgets its block sums; false
     * when that failed the launch.
     */
    private boolean closeLedger() {
        sums.clear();
        try {
            ledger.close();
            return true;
        } catch (IllegalStateException e) {
            launch.fail(this, -1, e);
            return false;
        }
    }

    /** The loop block whose threads this thread runs now, or {@code null}. */
    static LoopBlock running() {
        return Thread.currentThread() instanceof BlockPool.Worker w ? w.running : RUNNING.get();
    }

    /** The kernel thread that {@code sweep} runs now (valid while {@link #running()} is this block). */
    int runningThread() {
        return current[0];
    }

    CollectiveLedger ledger() {
        return ledger;
    }

    BlockSums sums() {
        return sums;
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

    /** Without the lock: one pool thread at a time runs the block's threads, one after another. */
    @Override
    Object localArray(int index, Class<?> type, int length) {
        return sharedArray(index, type, length);
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
