package org.moecomm.kernels.cpu;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ObjIntConsumer;

import org.moecomm.kernels.api.KernelContext;

/**
 * One block of a launch: its barrier, its block-shared arrays and its threads.
 *
 * <p>The block starts sequential: {@link #run()} executes thread 0, 1, ... one after another
 * on the block's virtual thread. When thread 0 reaches its first barrier the block turns
 * parallel: threads 1..n-1 start as virtual threads of their own and thread 0 waits with them.
 * In a correct kernel (every thread reaches the same barriers) a block without barriers
 * therefore stays sequential and any other block turns parallel at thread 0's first barrier.
 * A thread about to wait for a signal turns the block parallel too ({@link #beforeWait}).
 */
final class BlockExecution extends Block implements Runnable {
    /** Thrown in threads released from a barrier because the launch failed; not a failure itself. */
    static final class Aborted extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Aborted() {
            super("launch failed elsewhere", null, false, false);
        }
    }

    private static final Aborted ABORTED = new Aborted();

    /**
     * Test hook, {@code null} outside tests: called with the block and the arrival count right
     * after a thread has counted itself in at a barrier, before its exit check, so that a test
     * can hold a thread in that window (a race there is otherwise rare).
     */
    static volatile ObjIntConsumer<BlockExecution> afterArrival;

    final KernelLaunch launch;
    private final AtomicInteger arrived = new AtomicInteger();
    /** Threads that have finished (package-private for tests). */
    final AtomicInteger exited = new AtomicInteger();
    private volatile int generation;
    private volatile boolean parallel;
    private volatile Thread[] workers;

    BlockExecution(KernelLaunch launch, int bx, int by) {
        super(launch.kernel, launch.grid, launch.peers, bx, by);
        this.launch = launch;
    }

    /** The sequential phase, on the block's own virtual thread. */
    @Override
    public void run() {
        for (int t = 0; t < threads && !launch.failed(); t++) {
            execute(new CpuKernelContext(this, t));
            if (parallel) {
                return; // thread 0 went parallel; the last thread to exit finishes the block
            }
        }
        launch.blockDone(this);
    }

    /** Runs one kernel thread to its end; failures go to the launch. */
    private void execute(CpuKernelContext ctx) {
        boolean returned = false;
        try {
            launch.body.invokeExact((KernelContext) ctx);
            returned = true;
        } catch (Aborted e) {
            // released from a barrier because another thread failed
        } catch (Throwable e) {
            launch.fail(this, ctx.localIdx(), e);
        }
        if (parallel) {
            threadExited(ctx.localIdx(), returned);
        }
    }

    private void threadExited(int thread, boolean returned) {
        int n = exited.incrementAndGet();
        // Pairs with the check in barrier(): one of the two sees the other.
        if (returned && arrived.get() > 0 && !launch.failed()) {
            launch.fail(this, thread, new IllegalStateException("thread " + thread
                    + " returned while other threads of its block wait at localBarrier(): every thread of a block"
                    + " must reach the same barriers"));
        }
        if (n == threads) {
            launch.blockDone(this);
        }
    }

    @Override
    void barrier(int thread) {
        if (launch.failed()) {
            throw ABORTED;
        }
        if (threads == 1) {
            return;
        }
        if (!parallel) {
            if (thread != 0) {
                throw new IllegalStateException("thread " + thread + " reached localBarrier() but threads 0.."
                        + (thread - 1) + " of its block returned without reaching it: every thread of a block"
                        + " must reach the same barriers");
            }
            goParallel(0);
        }
        int gen = generation;
        int n = arrived.incrementAndGet();
        ObjIntConsumer<BlockExecution> hook = afterArrival;
        if (hook != null) {
            hook.accept(this, n);
        }
        // An exit is a broken barrier only while this barrier is still open. Between the
        // increment above and this check the other threads may complete the barrier, pass it
        // and return (this thread's carrier was descheduled, say): that is the legal end of a
        // kernel whose last barrier this is. A thread returns after the barrier completed only
        // after the generation was advanced, so seeing its exit means seeing the new generation;
        // then the wait below ends at once.
        if (exited.get() > 0 && generation == gen) {
            if (launch.failed()) {
                throw ABORTED;
            }
            throw new IllegalStateException("thread " + thread + " reached localBarrier() but another thread of"
                    + " its block has returned: every thread of a block must reach the same barriers");
        }
        if (n == threads) {
            // Reset before publishing the new generation: released threads may arrive again at once.
            arrived.set(0);
            generation = gen + 1;
            for (Thread w : workers) {
                LockSupport.unpark(w);
            }
            return;
        }
        while (generation == gen) {
            if (launch.failed()) {
                throw ABORTED;
            }
            LockSupport.park(this);
        }
    }

    /**
     * A sequential block turns parallel here, since the threads after this one would otherwise
     * never run while it waits.
     */
    @Override
    void beforeWait(int thread) {
        if (!parallel && threads > 1) {
            goParallel(thread);
        }
    }

    /**
     * Starts threads {@code from+1..n-1}; the calling thread carries on as thread {@code from};
     * threads {@code 0..from-1} have already returned in the sequential phase.
     */
    private void goParallel(int from) {
        Thread[] w = new Thread[threads];
        w[from] = Thread.currentThread();
        for (int t = from + 1; t < threads; t++) {
            CpuKernelContext ctx = new CpuKernelContext(this, t);
            w[t] = Thread.ofVirtual().unstarted(() -> execute(ctx));
        }
        workers = w;
        exited.set(from);
        parallel = true;
        int t = from + 1;
        try {
            for (; t < threads; t++) {
                w[t].start();
            }
        } catch (Throwable e) {
            // Threads that never started count as exited, so that the block still finishes.
            for (int u = t; u < threads; u++) {
                threadExited(u, false);
            }
            throw e;
        }
    }

    /** Wakes the threads parked at the barrier so that they see the launch failed. */
    void wakeWaiters() {
        Thread[] w = workers;
        if (w != null) {
            for (Thread t : w) {
                LockSupport.unpark(t);
            }
        }
    }
}
