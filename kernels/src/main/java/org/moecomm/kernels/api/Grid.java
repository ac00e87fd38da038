package org.moecomm.kernels.api;

/**
 * A launch shape: {@code blocksX x blocksY} blocks of {@code threads} threads each.
 */
public record Grid(int blocksX, int blocksY, int threads) {
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

    public static Grid of(int blocksX, int threads) {
        return new Grid(blocksX, 1, threads);
    }

    public static Grid of(int blocksX, int blocksY, int threads) {
        return new Grid(blocksX, blocksY, threads);
    }

    public long totalThreads() {
        return (long) blocksX * blocksY * threads;
    }
}
