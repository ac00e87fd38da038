package org.moecomm.kernels.api;

/**
 * A launch shape: {@code blocksX x blocksY} blocks of {@code threads} threads each, and whether
 * the launch may overlap the one before it on the stream ({@link #overlappingPrevious()}).
 */
public record Grid(int blocksX, int blocksY, int threads, boolean overlapsPrevious) {
    /** Largest block the runners accept (the CUDA limit). */
    public static final int MAX_THREADS = 1024;

    public Grid {
        if (blocksX < 1 || blocksY < 1) {
            throw new IllegalArgumentException("grid must have at least one block, got " + blocksX + "x" + blocksY);
        }
        if (threads < 1 || threads > MAX_THREADS) {
            throw new IllegalArgumentException("threads per block must be in [1, " + MAX_THREADS + "], got " + threads);
        }
    }

    /** A launch that starts after the previous operation on its stream has completed. */
    public Grid(int blocksX, int blocksY, int threads) {
        this(blocksX, blocksY, threads, false);
    }

    public static Grid of(int blocksX, int threads) {
        return new Grid(blocksX, 1, threads);
    }

    public static Grid of(int blocksX, int blocksY, int threads) {
        return new Grid(blocksX, blocksY, threads);
    }

    /**
     * This shape launched so that it may begin while the previous kernel on the stream still
     * runs, once every block of that kernel has called {@link KernelContext#allowDependentLaunch()}
     * or exited (CUDA's programmatic dependent launch; a CUDA graph captures it as such). The
     * kernel must call {@link KernelContext#waitForPreviousGrid()} before it touches what earlier
     * work of the stream writes or reads, and before it ends. On the JVM launches run one after
     * the other, so the flag changes nothing there.
     */
    public Grid overlappingPrevious() {
        return new Grid(blocksX, blocksY, threads, true);
    }

    public long totalThreads() {
        return (long) blocksX * blocksY * threads;
    }
}
