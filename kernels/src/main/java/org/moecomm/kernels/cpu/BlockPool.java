package org.moecomm.kernels.cpu;

import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The platform threads that run the blocks of loop-form launches, one per core, shared by every
 * runner of the process (on the CPU backend the ranks' launches run at the same time and share the
 * cores). A task never blocks its thread: a block whose threads all wait for signals goes back to
 * the end of the queue ({@link #later}), so the block that raises the signal always gets a thread.
 */
final class BlockPool {
    private static final ThreadPoolExecutor WORKERS = workers(Runtime.getRuntime().availableProcessors());
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(
            r -> daemon(r, "moecomm-cpu-block-timer"));
    /** Resubmissions of a stalled block before it is put back only after a pause. */
    private static final int SPINS = 4;
    private static final long PAUSE_MICROS = 50;

    private BlockPool() {
    }

    private static ThreadPoolExecutor workers(int n) {
        AtomicInteger count = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(n, n, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                r -> daemon(r, "moecomm-cpu-block-" + count.incrementAndGet()));
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Worker(r, name);
        t.setDaemon(true);
        return t;
    }

    /** A thread of the pool (or its timer). */
    static final class Worker extends Thread {
        /** The loop block this thread runs now ({@link LoopBlock#running}): a field, cheaper than a thread local. */
        LoopBlock running;

        Worker(Runnable r, String name) {
            super(r, name);
        }
    }

    /** Whether the calling thread is one of the pool's. */
    static boolean isWorker() {
        return Thread.currentThread() instanceof Worker;
    }

    static void run(Runnable task) {
        WORKERS.execute(task);
    }

    /**
     * Runs {@code task} again after the tasks queued now: at once for the first few stalls of a
     * block, after a short pause later on (a peer that is slow to signal should not cost a core).
     */
    static void later(Runnable task, int stalls) {
        if (stalls < SPINS) {
            WORKERS.execute(task);
        } else {
            TIMER.schedule(() -> WORKERS.execute(task), PAUSE_MICROS, TimeUnit.MICROSECONDS);
        }
    }
}
