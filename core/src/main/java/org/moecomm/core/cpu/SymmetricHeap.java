package org.moecomm.core.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The symmetric heaps of all ranks of a {@link CpuCluster}: the k-th allocation of every rank
 * is one {@link Allocation} holding one zeroed off-heap segment per rank, so a rank reaches a
 * peer's copy through the same object (the CPU analogue of the same offset in every PE's
 * NVSHMEM heap). An allocation is freed when every rank has released it, or when the cluster
 * closes.
 */
final class SymmetricHeap {
    private final int worldSize;
    private final List<Allocation> allocations = new ArrayList<>();
    /** The allocations, for {@link #onPeer}'s lookups without the lock (replaced, never changed). */
    private volatile Allocation[] lookup = new Allocation[0];
    private final int[] nextIndex;

    SymmetricHeap(int worldSize) {
        this.worldSize = worldSize;
        this.nextIndex = new int[worldSize];
    }

    /** The {@code rank}'s next allocation; the first rank to arrive creates it for everyone. */
    synchronized Allocation allocate(int rank, long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate " + bytes + " symmetric bytes");
        }
        int k = nextIndex[rank]++;
        if (k == allocations.size()) {
            allocations.add(new Allocation(k, bytes, worldSize));
            lookup = allocations.toArray(Allocation[]::new);
        }
        Allocation a = allocations.get(k);
        if (a.bytes != bytes) {
            throw new IllegalStateException("symmetric allocation #" + k + " of rank " + rank + " asks for " + bytes
                    + " bytes but another rank allocated " + a.bytes + ": symmetric allocations must be collective"
                    + " (same sizes, same order on every rank)");
        }
        return a;
    }

    /**
     * {@code pe}'s copy of the bytes {@code local} views, where {@code local} lies inside one of
     * {@code rank}'s symmetric segments (the same offset and size in {@code pe}'s segment).
     *
     * Lock-free (kernels of several blocks ask at once).
     *
     * @throws IllegalArgumentException if {@code local} is not symmetric memory of {@code rank}
     */
    MemorySegment onPeer(int rank, MemorySegment local, int pe) {
        if (pe < 0 || pe >= worldSize) {
            throw new IllegalArgumentException("peer " + pe + " is outside [0, " + worldSize + ")");
        }
        long address = local.address();
        for (Allocation a : lookup) {
            MemorySegment mine = a.segments[rank];
            long offset = address - mine.address();
            if (mine.scope().isAlive() && offset >= 0 && offset + local.byteSize() <= mine.byteSize()) {
                return a.segments[pe].asSlice(offset, local.byteSize());
            }
        }
        throw new IllegalArgumentException(local + " is not symmetric memory of rank " + rank);
    }

    /** Frees everything still allocated. */
    synchronized void closeAll() {
        for (Allocation a : allocations) {
            a.free();
        }
    }

    /** One symmetric buffer: a segment per rank. */
    static final class Allocation {
        final int index;
        final long bytes;
        private final Arena arena = Arena.ofShared();
        private final MemorySegment[] segments;
        private final boolean[] released;
        private int live;

        private Allocation(int index, long bytes, int worldSize) {
            this.index = index;
            this.bytes = bytes;
            this.segments = new MemorySegment[worldSize];
            this.released = new boolean[worldSize];
            this.live = worldSize;
            for (int r = 0; r < worldSize; r++) {
                // Zeroed, 256-byte aligned (signal words need 8-byte alignment for atomic access).
                segments[r] = arena.allocate(Math.max(1, bytes), CpuDeviceMemory.ALIGNMENT).asSlice(0, bytes);
            }
        }

        MemorySegment segment(int rank) {
            return segments[rank];
        }

        /** Rank {@code rank} no longer uses this buffer; the last release frees it. */
        synchronized void release(int rank) {
            if (!released[rank]) {
                released[rank] = true;
                if (--live == 0) {
                    free();
                }
            }
        }

        private synchronized void free() {
            if (arena.scope().isAlive()) {
                arena.close();
            }
        }
    }
}
