package org.moecomm.kernels.cpu;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Tokens' reductions for a whole loop block ({@link CollectiveHelpers#reduceSlice}), each
 * computed by the first of its threads to ask and kept, under the call that made it, until the
 * block's next barrier: a thread runs all of its tokens before the next thread starts, so the
 * block's later threads find every token's sums here and only store their own quads. Cleared at
 * every barrier, since a kernel may change the rows in between. At most {@link #CAPACITY} floats
 * are kept; a call that finds no room is summed by its thread alone, as without this class.
 * Not thread-safe: one pool thread at a time runs a loop block.
 *
 * <p>The arrays come from a pool shared by every block of every launch and go back to it at
 * the barrier: a block is made per launch, and arrays of its own, a whole hidden dimension per
 * token, cost a W = 4 deepseek-v3 round at 128 tokens about 15 MB of new, zeroed memory.
 */
final class BlockSums {
    /** Floats kept per block: 36 deepseek-v3 tokens (a 128-token round gives a block 8). */
    static final int CAPACITY = 1 << 18;
    /** Arrays the shared pool keeps at most (more are left to the garbage collector). */
    static final int POOLED = 512;

    private static final ConcurrentLinkedQueue<float[]> FREE = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger FREE_COUNT = new AtomicInteger();

    private final Map<Object, float[]> byCall = new HashMap<>();
    /** Arrays handed out since the last barrier. */
    private final List<float[]> arrays = new ArrayList<>();
    private int floats;

    /** The sums made for {@code call} since the last barrier, or {@code null}. */
    float[] of(Object call) {
        return byCall.get(call);
    }

    /**
     * An array of {@code size} floats or more, now {@code call}'s: the caller writes every sum it
     * reads later (an array from the pool is handed out as it is), or {@code null} when the block
     * keeps as many as it may.
     */
    float[] makeFor(Object call, int size) {
        if (floats + size > CAPACITY) {
            return null;
        }
        float[] sums = FREE.poll();
        if (sums != null) {
            FREE_COUNT.decrementAndGet();
        }
        if (sums == null || sums.length < size) {
            sums = new float[size];
        }
        arrays.add(sums);
        byCall.put(call, sums);
        floats += size;
        return sums;
    }

    /** Forgets every sum and gives the arrays back to the pool (at a barrier and at the block's end). */
    void clear() {
        if (!arrays.isEmpty()) {
            byCall.clear();
            for (float[] a : arrays) {
                if (FREE_COUNT.incrementAndGet() <= POOLED) {
                    FREE.add(a);
                } else {
                    FREE_COUNT.decrementAndGet();
                }
            }
            arrays.clear();
            floats = 0;
        }
    }
}
