package org.moecomm.core;

/**
 * How the kernels move rows into a peer's receive buffers.
 */
public enum PeerWrites {
    /**
     * Store straight into the buffers of every peer whose memory this rank's kernels can address
     * (same GPU, NVLink, P2P: {@code nvshmem_ptr} is not null; every peer on the CPU backend);
     * stage and put (NVSHMEM non-blocking puts) to the others (InfiniBand, EFA). The default.
     */
    AUTO,
    /** Stage and put to every peer, also mapped ones: the path remote peers take, testable on one GPU. */
    PUTS
}
