package org.moecomm.core.gpu;

import org.moecomm.core.MoeCommException;

/**
 * Bookkeeping of this process's symmetric heap (NVSHMEM_SYMMETRIC_SIZE): refuses an allocation
 * that cannot fit with a message naming what is needed and what is available, before NVSHMEM is
 * asked. Every PE runs the same sequence of allocations with the same heap size, so every PE
 * refuses the same one and none is left waiting in the collective {@code nvshmem_malloc}.
 */
final class SymmetricAccounting {
    private final long heapBytes;
    private final String heapSource;
    private long used;

    SymmetricAccounting(long heapBytes, String heapSource) {
        this.heapBytes = heapBytes;
        this.heapSource = heapSource;
    }

    long heapBytes() {
        return heapBytes;
    }

    synchronized long used() {
        return used;
    }

    synchronized long available() {
        return heapBytes - used;
    }

    synchronized void reserve(long bytes, int rank) {
        if (bytes > heapBytes - used) {
            throw new MoeCommException(describeShortage(bytes, rank));
        }
        used += bytes;
    }

    synchronized void release(long bytes) {
        used = Math.max(0, used - bytes);
    }

    /** Refuses {@code needed} bytes unless they fit, naming the handle that needs them. */
    synchronized void requireRoom(long needed, int rank, String what) {
        if (needed > heapBytes - used) {
            throw new MoeCommException("rank " + rank + ": " + what + " needs " + SymmetricMemory.mib(needed)
                    + " of symmetric memory per rank, but only " + SymmetricMemory.mib(heapBytes - used)
                    + " of the symmetric heap are available (NVSHMEM_SYMMETRIC_SIZE = " + heapBytes + " bytes, "
                    + heapSource + "; " + SymmetricMemory.mib(used) + " in use). Raise NVSHMEM_SYMMETRIC_SIZE, or"
                    + " lower maxTokensPerRank / hidden.");
        }
    }

    synchronized String describeShortage(long bytes, int rank) {
        return "rank " + rank + ": a symmetric allocation of " + bytes + " bytes does not fit: "
                + (heapBytes - used) + " of " + heapBytes + " bytes available (NVSHMEM_SYMMETRIC_SIZE, " + heapSource
                + "). Raise NVSHMEM_SYMMETRIC_SIZE, or lower maxTokensPerRank / hidden.";
    }
}
