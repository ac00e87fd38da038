package org.moecomm.kernels.api;

/**
 * Executes kernels: on the JVM ({@code CpuKernelRunner}) or on a GPU. A test runs the same
 * kernel through two runners and compares.
 *
 * <p>Arguments follow the kernel's parameters after the {@link KernelContext}: {@link Buf},
 * {@link Integer}, {@link Long} or {@link Float}. A runner checks count and types before
 * launching and throws {@link IllegalArgumentException} naming the kernel and the parameter.
 * On the JVM a launch completes before {@code launch} returns; a GPU runner may enqueue it on
 * its stream (then {@link #synchronize()} waits for it).
 */
public interface KernelRunner extends AutoCloseable {
    void launch(Kernel kernel, Grid grid, Object... args);

    /**
     * Blocks this runner's device executes at the same time (streaming multiprocessors on a GPU,
     * worker threads on the JVM). Callers size the grids of copy kernels from it, so that the
     * bytes of a few destinations are spread over the whole device. No default: a runner that
     * wraps another must pass its value on (a default of 1 once shrank the GPU copy grids to one
     * block per destination).
     */
    int concurrentBlocks();

    /**
     * Threads per block to launch a kernel with that works at every block size up to
     * {@code deviceThreads}, the size chosen for a GPU: on a GPU {@code deviceThreads} (a block's
     * threads run side by side); on the JVM fewer, since there a block's threads run one after
     * another, so each thread is a turn of a loop and state saved at every barrier, and adds
     * nothing that runs in parallel (docs/kernels-in-java.md, "Threads per block on the JVM").
     * No default, for the reason {@link #concurrentBlocks()} has none.
     */
    int blockThreads(int deviceThreads);

    /** Threads one unit of {@link #concurrentBlocks()} holds at once (a multiprocessor of current GPUs). */
    int THREADS_PER_UNIT = 2048;

    /**
     * Blocks of {@code threads} threads of {@code kernel}, launched with arguments like
     * {@code args}, that the device keeps resident at once: on a GPU the compiled kernel's
     * occupancy (its registers and shared memory against a multiprocessor's) times the
     * multiprocessors this process may use. Grids whose blocks loop over their work are sized
     * from it, so that they run in one wave, every block busy to the end. Default: as many blocks
     * as {@link #THREADS_PER_UNIT} threads per unit of {@link #concurrentBlocks()} hold.
     */
    default int residentBlocks(Kernel kernel, int threads, Object... args) {
        return concurrentBlocks() * Math.max(1, THREADS_PER_UNIT / threads);
    }

    /**
     * Whether blocks of {@code grid}, launched with arguments like {@code args}, may wait for other
     * blocks of the same grid: every block of it makes progress while others wait. On a GPU that
     * takes every block resident at once (the default: the grid within {@link #residentBlocks});
     * the JVM's runner puts a block whose threads all wait back in its queue, so there any grid may.
     */
    default boolean blocksMayWaitForEachOther(Kernel kernel, Grid grid, Object... args) {
        return (long) grid.blocksX() * grid.blocksY() <= residentBlocks(kernel, grid.threads(), args);
    }

    /**
     * Makes {@code kernel} ready to launch in blocks of {@code threads} threads with arguments
     * like {@code args} (on a GPU: compiled, specialised for the values of its {@code @Specialize}
     * parameters and for that block size, loaded), so that a later launch does no more than
     * enqueue it: launches captured into a CUDA graph must not load modules. A no-op where nothing
     * needs preparing.
     */
    default void prepare(Kernel kernel, int threads, Object... args) {
    }

    /** Waits for every launch made so far; a no-op where launches are synchronous. */
    default void synchronize() {
    }

    @Override
    default void close() {
    }
}
