package org.moecomm.core.cpu;

import java.lang.foreign.MemorySegment;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.kernels.api.Buf;

/** One rank's view of a symmetric allocation of the CPU backend. */
final class CpuSymmetricBuffer implements SymmetricBuffer {
    private final SymmetricHeap.Allocation allocation;
    private final int rank;
    private final Buf local;

    CpuSymmetricBuffer(SymmetricHeap.Allocation allocation, int rank) {
        this.allocation = allocation;
        this.rank = rank;
        this.local = Buf.of(allocation.segment(rank));
    }

    @Override
    public Buf local() {
        return local;
    }

    /** The copy of this buffer on {@code peer}. */
    MemorySegment peer(int peer) {
        return allocation.segment(peer);
    }

    void release() {
        allocation.release(rank);
    }

    @Override
    public String toString() {
        return "symmetric#" + allocation.index + "[" + allocation.bytes + " bytes, rank " + rank + "]";
    }
}
