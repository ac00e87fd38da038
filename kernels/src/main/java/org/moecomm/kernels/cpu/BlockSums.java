package org.moecomm.kernels.cpu;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
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
    /** Arrays handed out since the last barrier ({@code used} of them), kept for the next stretches. */
    private final List<float[]> arrays = new ArrayList<>();
    private int used;
    private int floats;

    /** The sums made for {@code call} since the last barrier, or {@code null}. */
    float[] of(Object call) {
        return byCall.get(call);
    }

    /**
     * An array of {@code size} floats or more, now {@code call}'s: the caller writes every sum it
     * reads later (an array of an earlier stretch is handed out again, as it is), or {@code null}
     * when the block keeps as many as it may.
     */
    float[] makeFor(Object call, int size) {
        if (floats + size > CAPACITY) {
            return null;
        }
        if (used == arrays.size()) {
            arrays.add(new float[size]);
        } else if (arrays.get(used).length < size) {
            arrays.set(used, new float[size]);
        }
        float[] sums = arrays.get(used++);
        byCall.put(call, sums);
        floats += size;
        return sums;
    }

    void clear() {
        if (used > 0) {
            byCall.clear();
            used = 0;
            floats = 0;
        }
    }
}
