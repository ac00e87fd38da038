package org.moecomm.core.backend;

import java.util.List;
import org.moecomm.kernels.api.Buf;

/**
 * What the host does for the protocol's communication, and what its communicating kernels need
 * from the host. The puts, signals and waits themselves are not here: each step of the protocol
 * is one kernel that puts, signals and waits through {@code KernelContext}'s one-sided methods
 * (NVSHMEM device functions on the GPU, the cluster's {@code PeerMemory} on the JVM).
 *
 * <p>The host's part: symmetric allocation (collective), a bounded barrier of all ranks, and
 * releasing the symmetric memory at {@link #close()} (collective on the GPU). The kernels' part: the error context their bounded
 * waits record a timeout in ({@link #waitErrors}), the names of the signals waited for
 * ({@link #registerWaits}), and whether a peer's memory can be stored to directly
 * ({@link #mapped}).
 *
 * <p>Signals are 64-bit words in symmetric memory. The protocol writes {@code round << 32 | count}:
 * rounds only grow, so a wait for {@code >= round << 32} never mistakes an old signal for a new
 * one, and no signal is ever reset.
 */
public interface Transport extends AutoCloseable {
    int rank();

    int worldSize();

    /** Collective: every rank allocates the same sizes in the same order. Zeroed. */
    SymmetricBuffer allocateSymmetric(long bytes);

    // ---- what kernels that communicate need from the host ----

    /**
     * The error context the kernels' bounded waits record a timeout in (the {@code errors}
     * argument of {@code KernelContext.waitAtLeast}); the transport raises a recorded timeout as a
     * {@link org.moecomm.core.WaitTimeoutException} naming the signal ({@link #registerWaits}).
     */
    Buf waitErrors();

    /**
     * Names the signals of consecutive wait tags for error messages: returns the tag of
     * {@code names.get(0)}; {@code names.get(i)} has that tag {@code + i}.
     */
    int registerWaits(List<String> names);

    /**
     * Whether this rank's kernels can load and store {@code peer}'s copy of {@code buffer}
     * directly ({@code KernelContext.peerBuf}: NVLink or P2P; never over a network transport).
     */
    boolean mapped(SymmetricBuffer buffer, int peer);

    /** Collective and bounded by the transport's timeout: all ranks arrive before any leaves. */
    void barrier();

    @Override
    void close();
}
