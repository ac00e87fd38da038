package org.moecomm.kernels.cpu;

import java.lang.invoke.MethodHandle;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;

import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;

/** One launch: starts the blocks (bounded), waits for them, reports the first failure. */
final class KernelLaunch {
    final Kernel kernel;
    final Grid grid;
    /** The kernel with its arguments bound: {@code (KernelContext)void}. */
    final MethodHandle body;
    /** Serves one-sided communication; {@code null} when the runner has none. */
    final PeerMemory peers;

    private final int permits;
    private final Semaphore slots;
    private final Set<BlockExecution> active = ConcurrentHashMap.newKeySet();
    private final FirstFailure failure = new FirstFailure();

    KernelLaunch(Kernel kernel, Grid grid, MethodHandle body, int maxConcurrentBlocks, PeerMemory peers) {
        this.kernel = kernel;
        this.grid = grid;
        this.body = body;
        this.peers = peers;
        this.permits = (int) Math.min(maxConcurrentBlocks, (long) grid.blocksX() * grid.blocksY());
        this.slots = new Semaphore(permits);
    }

    void run() {
        start:
        for (int by = 0; by < grid.blocksY(); by++) {
            for (int bx = 0; bx < grid.blocksX(); bx++) {
                slots.acquireUninterruptibly();
                if (failure.failed()) {
                    slots.release();
                    break start;
                }
                BlockExecution block = new BlockExecution(this, bx, by);
                active.add(block);
                Thread.ofVirtual().start(block);
            }
        }
        // Every block returns its permit when done; the release/acquire pair also publishes
        // the kernel's writes to this thread.
        slots.acquireUninterruptibly(permits);
        failure.throwIfFailed(kernel, grid);
    }

    boolean failed() {
        return failure.failed();
    }

    /** Records the first failure and releases every thread waiting at a barrier. */
    void fail(BlockExecution block, int thread, Throwable cause) {
        if (failure.record(block, thread, cause)) {
            for (BlockExecution b : active) {
                b.wakeWaiters();
            }
        }
    }

    void blockDone(BlockExecution block) {
        active.remove(block);
        slots.release();
    }
}
