package org.moecomm.kernels.testkernels;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Compiler test kernels: atomics under contention. Results are independent of the order in
 * which threads win, so the CPU runner and the GPU must agree exactly.
 */
public final class AtomicKernels {
    private static final int MAX_BINS = 256;

    private AtomicKernels() {
    }

    /**
     * Every thread {@code < n} takes a slot from one shared counter with {@code atomicAdd}
     * (using the returned old value) and marks that slot. Args: {@code counter} int[1] (zero);
     * {@code marks} int[n] (zero); {@code n}. Grid: >= n threads, many blocks. Expect
     * {@code counter == n} and every mark {@code == 1} (each slot claimed exactly once).
     */
    public static void claimSlots(KernelContext ctx, Buf counter, Buf marks, int n) {
        int t = ctx.globalIdx();
        if (t < n) {
            int slot = ctx.atomicAdd(counter, 0, 1);
            ctx.atomicAdd(marks, slot, 1);
        }
    }

    /**
     * Threads claim slots in {@code buckets} regions of {@code capacity} slots, the bucket being
     * {@code t % buckets}; claims past the capacity are dropped. Args: {@code counters}
     * int[buckets] (zero); {@code marks} int[buckets * capacity] (zero); {@code n};
     * {@code buckets}; {@code capacity}. Grid: >= n threads. Expect {@code counters[b]} = number
     * of threads of bucket {@code b}; {@code marks} 1 for the first {@code min(count, capacity)}
     * slots of each bucket, else 0.
     */
    public static void bucketClaims(KernelContext ctx, Buf counters, Buf marks, int n, int buckets, int capacity) {
        int t = ctx.globalIdx();
        if (t >= n) {
            return;
        }
        int b = t % buckets;
        int slot = ctx.atomicAdd(counters, b, 1);
        if (slot < capacity) {
            ctx.atomicAdd(marks, (long) b * capacity + slot, 1);
        }
    }

    /**
     * Every thread {@code < n} increments one counter with a compare-and-swap loop. Args:
     * {@code counter} int[1] (zero); {@code n}. Grid: >= n threads. Expect {@code counter == n}.
     */
    public static void casIncrement(KernelContext ctx, Buf counter, int n) {
        if (ctx.globalIdx() >= n) {
            return;
        }
        int expected = counter.getInt(0);
        while (true) {
            int seen = ctx.atomicCas(counter, 0, expected, expected + 1);
            if (seen == expected) {
                break;
            }
            expected = seen;
        }
    }

    /**
     * A histogram in block-shared memory ({@code atomicAdd} on a local array), merged into the
     * global one. Args: {@code values} int[n] (any ints; bin = {@code value mod bins}, taken
     * non-negative); {@code hist} int[bins] (zero); {@code n}; {@code bins} (1..256). Grid: any
     * 1-D grid (grid-stride loop). Expect {@code hist[b]} = number of values in bin {@code b}.
     */
    public static void sharedHistogram(KernelContext ctx, Buf values, Buf hist, int n, int bins) {
        int[] local = ctx.allocateIntLocalArray(MAX_BINS);
        int tid = ctx.localIdx();
        for (int b = tid; b < MAX_BINS; b += ctx.localGroupSizeX()) {
            local[b] = 0;
        }
        ctx.localBarrier();
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            int bin = Math.floorMod(values.getInt(i), bins);
            ctx.atomicAdd(local, bin, 1);
        }
        ctx.localBarrier();
        for (int b = tid; b < bins; b += ctx.localGroupSizeX()) {
            if (local[b] != 0) {
                ctx.atomicAdd(hist, b, local[b]);
            }
        }
    }

    /**
     * The last block to finish sums the partial sums of all blocks ({@code globalFence} before
     * and after the block counter, as in CUDA's threadfence reduction). Args: {@code values}
     * int[n]; {@code partials} int[numGroupsX]; {@code counter} int[1] (zero); {@code total}
     * int[1]; {@code n}. Grid: any number of blocks of any size. Expect {@code total} = sum of
     * values (wrapping int sum) and {@code counter} = number of blocks.
     */
    public static void lastBlockSum(KernelContext ctx, Buf values, Buf partials, Buf counter, Buf total, int n) {
        int[] flag = ctx.allocateIntLocalArray(1);
        int[] sums = ctx.allocateIntLocalArray(1);
        if (ctx.localIdx() == 0) {
            sums[0] = 0;
        }
        ctx.localBarrier();
        int s = 0;
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            s += values.getInt(i);
        }
        ctx.atomicAdd(sums, 0, s);
        ctx.localBarrier();
        if (ctx.localIdx() == 0) {
            partials.setInt(ctx.groupIdx(), sums[0]);
            ctx.globalFence();
            int done = ctx.atomicAdd(counter, 0, 1);
            flag[0] = done == ctx.numGroupsX() - 1 ? 1 : 0;
        }
        ctx.localBarrier();
        if (flag[0] == 1 && ctx.localIdx() == 0) {
            ctx.globalFence();
            int sum = 0;
            for (int b = 0; b < ctx.numGroupsX(); b++) {
                sum += partials.getInt(b);
            }
            total.setInt(0, sum);
        }
    }
}
