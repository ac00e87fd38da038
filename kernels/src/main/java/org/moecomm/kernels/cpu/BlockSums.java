package org.moecomm.kernels.cpu;

import java.util.HashMap;
import java.util.Map;

/**
 * Tokens' reductions for a whole loop block ({@link CollectiveHelpers#reduceSlice}), each
 * computed by the first of its threads to ask and kept, under the call that made it, until the
 * block's next barrier: a thread runs all of its tokens before the next thread starts, so the
 * block's later threads find every token's sums here and only store their own quads. Cleared at
 * every barrier, since a kernel may change the rows in between. At most {@link #CAPACITY} floats
 * are kept; a call that finds no room is summed by its thread alone, as without this class.
 * Not thread-safe: one pool thread at a time runs a loop block.
 */
final class BlockSums {
    /** Floats kept per block: 36 deepseek-v3 tokens (a 128-token round gives a block 8). */
    static final int CAPACITY = 1 << 18;

    private final Map<Object, float[]> byCall = new HashMap<>();
    private int floats;

    /** The sums made for {@code call} since the last barrier, or {@code null}. */
    float[] of(Object call) {
        return byCall.get(call);
    }

    /**
     * A zeroed array of {@code size} floats, now {@code call}'s (the caller fills it), or {@code
     * null} when the block keeps as many as it may.
     */
    float[] makeFor(Object call, int size) {
        if (floats + size > CAPACITY) {
            return null;
        }
        float[] sums = new float[size];
        byCall.put(call, sums);
        floats += size;
        return sums;
    }

    void clear() {
        if (floats > 0) {
            byCall.clear();
            floats = 0;
        }
    }
}
