package org.moecomm.kernels.cpu;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;

/**
 * One launch of a kernel in loop form. Up to {@code maxConcurrentBlocks} chains take the blocks in
 * order, each running one block after another on the {@link BlockPool}; the launching thread
 * waits. A block that stalls on signal waits is put back in the pool's queue, and its chain goes
 * on with the next block, so no thread ever sits in a wait.
 */
final class LoopLaunch {
    final Kernel kernel;
    final Grid grid;
    final PeerMemory peers;
    final LoopForm form;
    /** The launch's arguments after the KernelContext, as {@code sweep} takes them. */
    final Object[] args;

    private final int chains;
    private final int blocks;
    private final AtomicInteger next = new AtomicInteger();
    private final CountDownLatch finished;
    private final FirstFailure failure = new FirstFailure();

    LoopLaunch(Kernel kernel, Grid grid, LoopForm form, Object[] args, int maxConcurrentBlocks, PeerMemory peers) {
        this.kernel = kernel;
        this.grid = grid;
        this.peers = peers;
        this.form = form;
        this.args = args;
        this.blocks = grid.blocksX() * grid.blocksY();
        this.chains = Math.min(maxConcurrentBlocks, blocks);
        this.finished = new CountDownLatch(blocks);
    }

    void run() {
        // The launching thread only waits: the pool's threads, one per core, are all that run
        // blocks, so the ranks' launching threads do not take cores from them (measured: a W = 4
        // round used 10-25% less CPU and 15-40% less time than with a chain on the caller). A
        // launch from a pool thread runs one chain itself: its thread must not sit out the launch.
        boolean fromPool = BlockPool.isWorker();
        for (int c = fromPool ? 1 : 0; c < chains; c++) {
            BlockPool.run(this::chain);
        }
        if (fromPool) {
            chain();
        }
        // Every block counts down when done; that also publishes the kernel's writes to this thread.
        boolean interrupted = false;
        while (true) {
            try {
                finished.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        failure.throwIfFailed(kernel, grid);
    }

    /** Runs blocks in order until none is left to start. */
    private void chain() {
        for (int i; (i = next.getAndIncrement()) < blocks; ) {
            if (failure.failed()) {
                finished.countDown();
            } else {
                step(new LoopBlock(this, i % grid.blocksX(), i / grid.blocksX()));
            }
        }
    }

    private void step(LoopBlock block) {
        boolean ended;
        try {
            ended = block.advance();
        } catch (Throwable e) {
            // advance() reports the kernel's own failures; this is the runner's (out of memory, say)
            fail(block, -1, e);
            ended = true;
        }
        if (ended) {
            block.release();
            finished.countDown();
        } else {
            BlockPool.later(() -> step(block), block.stalls++);
        }
    }

    boolean failed() {
        return failure.failed();
    }

    void fail(Block block, int thread, Throwable cause) {
        failure.record(block, thread, cause);
    }
}
