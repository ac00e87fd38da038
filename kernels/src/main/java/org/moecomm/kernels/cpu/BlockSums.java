package org.moecomm.kernels.cpu;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import org.moecomm.kernels.api.Buf;

/**
 * Tokens' reductions for a whole loop block ({@link CollectiveHelpers#reduceSlice}), each
 * computed by the first of its threads to ask and kept, by token, until the
 * block's next barrier: a thread runs all of its tokens before the next thread starts, so the
 * block's later threads find every token's sums here and only store their own quads. Cleared at
 * every barrier, since a kernel may change the rows in between. At most {@link #CAPACITY} floats
 * are kept, all of calls of one shape (the arguments but the token); a call that finds no room,
 * or has another shape, is summed by its thread alone, as without this class. Looking a call up
 * is a comparison of its shape and an index by token: no key is made per call (a record per call
 * and a hash map cost a deepseek-v2-lite round at 128 tokens about 8% of its samples).
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

    /** The shape of the calls whose sums are kept (every argument but the token), when {@code shaped}. */
    private boolean shaped;
    private int base;
    private int step;
    private Buf combineRecv;
    private Buf pairLocation;
    private Buf weights;
    private int hidden;
    private int topK;
    private int yDtype;
    /** Sums by token; {@code byToken[t]} is this stretch's when {@code stamp[t] == stretch}. */
    private float[][] byToken = new float[0][];
    private int[] stamp = new int[0];
    private int stretch = 1;
    /** Arrays handed out since the last barrier. */
    private final List<float[]> arrays = new ArrayList<>();
    private int floats;

    /**
     * Whether the sums kept since the last barrier are of calls of this shape (all of
     * {@code reduceSlice}'s arguments that the sums depend on but the token), taking it when none
     * are kept: a block keeps one shape per stretch (a call of another is summed by its thread alone).
     */
    boolean takesShape(int base, int step, Buf combineRecv, Buf pairLocation, Buf weights, int hidden, int topK,
                       int yDtype) {
        if (!shaped) {
            this.base = base;
            this.step = step;
            this.combineRecv = combineRecv;
            this.pairLocation = pairLocation;
            this.weights = weights;
            this.hidden = hidden;
            this.topK = topK;
            this.yDtype = yDtype;
            shaped = true;
            return true;
        }
        return base == this.base && step == this.step && hidden == this.hidden && topK == this.topK
                && yDtype == this.yDtype && CollectiveHelpers.sameMemory(combineRecv, this.combineRecv)
                && CollectiveHelpers.sameMemory(pairLocation, this.pairLocation)
                && CollectiveHelpers.sameMemory(weights, this.weights);
    }

    /** Token {@code t}'s sums made since the last barrier (of the shape taken), or {@code null}. */
    float[] of(int t) {
        return t < stamp.length && stamp[t] == stretch ? byToken[t] : null;
    }

    /**
     * An array of {@code size} floats or more, now token {@code t}'s: the caller writes every sum
     * it reads later (an array from the pool is handed out as it is), or {@code null} when the
     * block keeps as many as it may.
     */
    float[] makeFor(int t, int size) {
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
        if (t >= stamp.length) {
            int n = Math.max(t + 1, 2 * stamp.length);
            byToken = Arrays.copyOf(byToken, n);
            stamp = Arrays.copyOf(stamp, n);
        }
        byToken[t] = sums;
        stamp[t] = stretch;
        arrays.add(sums);
        floats += size;
        return sums;
    }

    /** Forgets every sum and the shape, and gives the arrays back to the pool (at a barrier and at the block's end). */
    void clear() {
        if (!shaped) {
            return;
        }
        shaped = false;
        combineRecv = null;
        pairLocation = null;
        weights = null;
        if (++stretch == Integer.MAX_VALUE) { // never seen: a stamp of an old stretch could match again
            Arrays.fill(stamp, 0);
            stretch = 1;
        }
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
