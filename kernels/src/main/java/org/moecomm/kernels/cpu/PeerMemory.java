package org.moecomm.kernels.cpu;

import org.moecomm.kernels.api.Buf;

/**
 * The symmetric memory of a group of ranks on the JVM, as the one-sided communication methods of
 * {@link org.moecomm.kernels.api.KernelContext} ({@code peerBuf}, the puts, {@code signalSet},
 * {@code signalAdd}, {@code waitAtLeast}) see it when a {@link CpuKernelRunner} made with it runs
 * them: the GPU's NVSHMEM heap, in Java.
 */
public interface PeerMemory {
    /** The rank whose kernels the runner runs. */
    int rank();

    /** Ranks in the group. */
    int worldSize();

    /**
     * {@code pe}'s copy of {@code local}: the same bytes (offset and size) of {@code pe}'s buffer,
     * where {@code local} is one of this rank's symmetric buffers or a slice of one.
     *
     * @throws IllegalArgumentException if {@code local} is not symmetric memory of this rank or
     *                                  {@code pe} is not a rank of the group
     */
    Buf onPeer(Buf local, int pe);
}
