package org.moecomm.kernels.cpu;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.foreign.ValueLayout;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/** The {@link KernelContext} of one kernel thread on the {@link CpuKernelRunner}. */
final class CpuKernelContext implements KernelContext {
    /** Aligned int in a memory segment; coordinates (segment, byte offset). */
    private static final VarHandle SEGMENT_INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle ARRAY_INT = MethodHandles.arrayElementVarHandle(int[].class);

    private final BlockExecution block;
    private final int thread;
    private int allocations;

    CpuKernelContext(BlockExecution block, int thread) {
        this.block = block;
        this.thread = thread;
    }

    @Override
    public int globalIdx() {
        return block.bx * block.threads + thread;
    }

    @Override
    public int localIdx() {
        return thread;
    }

    @Override
    public int groupIdx() {
        return block.bx;
    }

    @Override
    public int groupIdy() {
        return block.by;
    }

    @Override
    public int localGroupSizeX() {
        return block.threads;
    }

    @Override
    public int numGroupsX() {
        return block.launch.grid.blocksX();
    }

    @Override
    public int numGroupsY() {
        return block.launch.grid.blocksY();
    }

    @Override
    public int globalGroupSizeX() {
        return block.launch.grid.blocksX() * block.threads;
    }

    @Override
    public void localBarrier() {
        block.barrier(thread);
    }

    @Override
    public int[] allocateIntLocalArray(int length) {
        return (int[]) block.localArray(allocations++, int[].class, length);
    }

    @Override
    public float[] allocateFloatLocalArray(int length) {
        return (float[]) block.localArray(allocations++, float[].class, length);
    }

    @Override
    public long[] allocateLongLocalArray(int length) {
        return (long[]) block.localArray(allocations++, long[].class, length);
    }

    @Override
    public int atomicAdd(Buf buf, long index, int delta) {
        return (int) SEGMENT_INT.getAndAdd(buf.segment(), index << 2, delta);
    }

    @Override
    public int atomicAdd(int[] localArray, int index, int delta) {
        return (int) ARRAY_INT.getAndAdd(localArray, index, delta);
    }

    @Override
    public int atomicCas(Buf buf, long index, int expected, int update) {
        return (int) SEGMENT_INT.compareAndExchange(buf.segment(), index << 2, expected, update);
    }

    @Override
    public void globalFence() {
        VarHandle.fullFence();
    }
}
