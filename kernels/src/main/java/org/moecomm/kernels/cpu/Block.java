package org.moecomm.kernels.cpu;

import java.util.ArrayList;
import java.util.List;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;

/**
 * What the kernel threads of one block share, whichever way the block is executed: its position in
 * the grid, its block-shared arrays, and its barrier. {@link BlockExecution} runs the threads as
 * virtual threads; {@link LoopBlock} runs them as loops over the code between barriers.
 */
abstract class Block {
    final Kernel kernel;
    final Grid grid;
    /** Serves one-sided communication; {@code null} when the runner has none. */
    final PeerMemory peers;
    final int bx;
    final int by;
    final int threads;

    private final List<Object> localArrays = new ArrayList<>();
    /**
     * The block's last {@link #onPeer} answer for each peer: its threads ask for the same peer
     * buffers again and again (one per row stored, for every member of the row's group), and a
     * kernel argument is the same {@link Buf} object each time. Threads of a block may share the
     * answers without a lock: a record's fields are final.
     */
    private final PeerAnswer[] lastPeer;

    private record PeerAnswer(Buf local, Buf peer) {
    }

    Block(Kernel kernel, Grid grid, PeerMemory peers, int bx, int by) {
        this.kernel = kernel;
        this.grid = grid;
        this.peers = peers;
        this.bx = bx;
        this.by = by;
        this.threads = grid.threads();
        this.lastPeer = new PeerAnswer[peers == null ? 0 : peers.worldSize()];
    }

    /** {@link org.moecomm.kernels.api.KernelContext#localBarrier()} for thread {@code thread}. */
    abstract void barrier(int thread);

    /**
     * Called by thread {@code thread} before it waits for something other threads do (a signal
     * another rank or a later thread of this block sends).
     */
    abstract void beforeWait(int thread);

    /** {@code pe}'s copy of {@code local}, from {@link #peers} (which must be there). */
    Buf onPeer(Buf local, int pe) {
        if (pe < 0 || pe >= lastPeer.length) {
            return peers.onPeer(local, pe); // which refuses it
        }
        PeerAnswer last = lastPeer[pe];
        if (last != null && last.local() == local) {
            return last.peer();
        }
        Buf peer = peers.onPeer(local, pe);
        lastPeer[pe] = new PeerAnswer(local, peer);
        return peer;
    }

    /** The block's {@code index}-th shared array, created by whichever thread asks first. */
    synchronized Object localArray(int index, Class<?> type, int length) {
        return sharedArray(index, type, length);
    }

    /** {@link #localArray} for a caller that holds the block's lock or is its only thread. */
    final Object sharedArray(int index, Class<?> type, int length) {
        if (index < localArrays.size()) {
            Object a = localArrays.get(index);
            int existing = length(a);
            if (a.getClass() != type || existing != length) {
                throw new IllegalStateException("local array " + index + " of block (" + bx + ", " + by
                        + ") was allocated as " + a.getClass().getSimpleName().replace("[]", "[" + existing + "]")
                        + " by another thread but is requested as "
                        + type.getSimpleName().replace("[]", "[" + length + "]")
                        + ": every thread must allocate the same arrays in the same order");
            }
            return a;
        }
        Object a;
        if (type == int[].class) {
            a = new int[length];
        } else if (type == float[].class) {
            a = new float[length];
        } else {
            a = new long[length];
        }
        localArrays.add(a);
        return a;
    }

    private static int length(Object array) {
        return switch (array) {
            case int[] a -> a.length;
            case float[] a -> a.length;
            case long[] a -> a.length;
            default -> throw new IllegalStateException("not a local array: " + array);
        };
    }
}
