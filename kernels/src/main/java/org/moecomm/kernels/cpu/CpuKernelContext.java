package org.moecomm.kernels.cpu;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.locks.LockSupport;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/** The {@link KernelContext} of one kernel thread on the {@link CpuKernelRunner}. */
final class CpuKernelContext implements KernelContext {
    /** Aligned int in a memory segment; coordinates (segment, byte offset). */
    private static final VarHandle SEGMENT_INT = ValueLayout.JAVA_INT.varHandle();
    /** Aligned long in a memory segment: the signal words. */
    private static final VarHandle SEGMENT_LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle ARRAY_INT = MethodHandles.arrayElementVarHandle(int[].class);

    private static final long NOT_WAITING = Long.MIN_VALUE;

    private final Block block;
    private final int thread;
    private int allocations;
    /** When the pending {@link #pollWait} first failed, {@link #NOT_WAITING} when none is pending. */
    private long waitStart = NOT_WAITING;
    /** The value the last {@link #pollWait} that passed saw: its wait's result in the loop form. */
    private long passedWith;

    CpuKernelContext(Block block, int thread) {
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
        return block.grid.blocksX();
    }

    @Override
    public int numGroupsY() {
        return block.grid.blocksY();
    }

    @Override
    public int globalGroupSizeX() {
        return block.grid.blocksX() * block.threads;
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

    @Override
    public long clock() {
        return System.nanoTime();
    }

    @Override
    public long globalTimerNanos() {
        return System.nanoTime();
    }

    // ---- one-sided communication, served by the runner's PeerMemory ----

    @Override
    public void putSignalBlock(Buf dst, Buf src, long bytes, Buf signal, long value, int pe) {
        putSignal("putSignalBlock", dst, src, bytes, signal, value, pe, false);
    }

    @Override
    public void putSignalAddBlock(Buf dst, Buf src, long bytes, Buf signal, long value, int pe) {
        putSignal("putSignalAddBlock", dst, src, bytes, signal, value, pe, true);
    }

    private void putSignal(String call, Buf dst, Buf src, long bytes, Buf signal, long value, int pe, boolean add) {
        PeerMemory peers = peers(call);
        // Block-collective, like the GPU's: everyone arrives, one thread moves the bytes and then
        // publishes the signal (release), everyone leaves.
        block.barrier(thread);
        putSignalOnce(call, peers, dst, src, bytes, signal, value, pe, add);
        block.barrier(thread);
    }

    /** The part of a block-collective put with signal between its two barriers: thread 0 does it. */
    void putSignalOnce(String call, PeerMemory peers, Buf dst, Buf src, long bytes, Buf signal, long value, int pe,
                       boolean add) {
        if (thread == 0) {
            put(call, peers, dst, src, bytes, pe);
            MemorySegment word = peers.onPeer(signal, pe).segment();
            if (add) {
                SEGMENT_LONG.getAndAddRelease(word, 0L, value);
            } else {
                SEGMENT_LONG.setRelease(word, 0L, value);
            }
        }
    }

    @Override
    public void signalSet(Buf signal, long value, int pe) {
        SEGMENT_LONG.setRelease(peers("signalSet").onPeer(signal, pe).segment(), 0L, value);
    }

    @Override
    public void signalAdd(Buf signal, long value, int pe) {
        SEGMENT_LONG.getAndAddRelease(peers("signalAdd").onPeer(signal, pe).segment(), 0L, value);
    }

    @Override
    public long waitAtLeast(Buf signal, long value, long timeoutNanos, Buf errors, int rank, int peer, int tag) {
        MemorySegment word = signal.segment();
        long first = (long) SEGMENT_LONG.getAcquire(word, 0L);
        if (KernelContext.reached(first, value)) {
            return first;
        }
        block.beforeWait(thread);
        long start = System.nanoTime();
        for (int polls = 0; ; polls++) {
            long seen = (long) SEGMENT_LONG.getAcquire(word, 0L);
            if (KernelContext.reached(seen, value)) {
                return seen;
            }
            checkAbort(errors, rank, peer, tag);
            long waited = System.nanoTime() - start;
            if (waited >= timeoutNanos) {
                throw new PeerWaitTimeoutException(rank, peer, tag, value, seen, waited);
            }
            // Other kernel threads of this and other ranks are virtual threads too: let them run.
            if (polls < 1000) {
                Thread.yield();
            } else {
                LockSupport.parkNanos(20_000);
            }
        }
    }

    /**
     * One look at the signal word of a {@link #waitAtLeast} that a thread of a {@link LoopBlock}
     * cannot block in: true once the word has reached {@code value}; false while it has not, and
     * then the caller lets the block's other threads run and asks again. The bound counts from the
     * first look that failed.
     *
     * @throws PeerWaitTimeoutException once the bound has passed
     * @throws PeerWaitAbortedException when the abort word {@code errors} is set
     */
    boolean pollWait(Buf signal, long value, long timeoutNanos, Buf errors, int rank, int peer, int tag) {
        long seen = (long) SEGMENT_LONG.getAcquire(signal.segment(), 0L);
        if (KernelContext.reached(seen, value)) {
            waitStart = NOT_WAITING;
            passedWith = seen;
            return true;
        }
        checkAbort(errors, rank, peer, tag);
        long now = System.nanoTime();
        if (waitStart == NOT_WAITING) {
            waitStart = now;
        } else if (now - waitStart >= timeoutNanos) {
            throw new PeerWaitTimeoutException(rank, peer, tag, value, seen, now - waitStart);
        }
        return false;
    }

    /** The value the last {@link #pollWait} that returned true saw: the loop form's result of the wait. */
    long passedWith() {
        return passedWith;
    }

    /**
     * On the JVM a wait's error context is the abort word it watches (8 bytes; an empty buffer
     * watches nothing): a set word ends the wait with a {@link PeerWaitAbortedException}.
     */
    private static void checkAbort(Buf errors, int rank, int peer, int tag) {
        if (errors.byteSize() >= Long.BYTES) {
            long aborted = (long) SEGMENT_LONG.getAcquire(errors.segment(), 0L);
            if (aborted != 0) {
                throw new PeerWaitAbortedException(rank, peer, tag, aborted);
            }
        }
    }

    @Override
    public Buf peerBuf(Buf symmetric, int pe, Buf peerOffsets) {
        return peerBuf(symmetric, pe); // the JVM's peers are PeerMemory's segments, not addresses
    }

    @Override
    public Buf peerBuf(Buf symmetric, int pe) {
        peers("peerBuf");
        return block.onPeer(symmetric, pe);
    }

    @Override
    public void putBlockNbi(Buf dst, Buf src, long bytes, int pe) {
        PeerMemory peers = peers("putBlockNbi");
        // Block-collective like putSignal; the copy is complete when it returns, so quiet() has
        // nothing left to do.
        block.barrier(thread);
        putBlockOnce(peers, dst, src, bytes, pe);
        block.barrier(thread);
    }

    /** The part of a block-collective put between its two barriers: thread 0 copies. */
    void putBlockOnce(PeerMemory peers, Buf dst, Buf src, long bytes, int pe) {
        if (thread == 0) {
            put("putBlockNbi", peers, dst, src, bytes, pe);
        }
    }

    @Override
    public void putWarpNbi(Buf dst, Buf src, long bytes, int pe) {
        PeerMemory peers = peers("putWarpNbi");
        // The lanes of a warp are not synchronised on the JVM: lane 0 copies, the others return at
        // once (what the put reads must be written before a barrier that precedes it).
        if (thread % WARP_SIZE == 0) {
            put("putWarpNbi", peers, dst, src, bytes, pe);
        }
    }

    private static void put(String call, PeerMemory peers, Buf dst, Buf src, long bytes, int pe) {
        if (bytes < 0 || bytes > src.byteSize() || bytes > dst.byteSize()) {
            throw new IllegalArgumentException(call + " of " + bytes + " bytes from " + src + " to " + dst);
        }
        MemorySegment.copy(src.segment(), 0, peers.onPeer(dst, pe).segment(), 0, bytes);
    }

    @Override
    public void quiet() {
        // Every put completed when it returned; order them before what follows, like nvshmem_quiet.
        VarHandle.fullFence();
    }

    @Override
    public void systemFence() {
        VarHandle.fullFence();
    }

    @Override
    public void storeRelease(Buf buf, long index, long value) {
        SEGMENT_LONG.setRelease(buf.segment(), index << 3, value);
    }

    @Override
    public void storeRelaxed(Buf buf, long index, long value) {
        SEGMENT_LONG.setOpaque(buf.segment(), index << 3, value);
    }

    @Override
    public long loadAcquire(Buf buf, long index) {
        return (long) SEGMENT_LONG.getAcquire(buf.segment(), index << 3);
    }

    @Override
    public void addRelease(Buf buf, long index, long delta) {
        SEGMENT_LONG.getAndAddRelease(buf.segment(), index << 3, delta);
    }

    PeerMemory peers(String call) {
        PeerMemory p = block.peers;
        if (p == null) {
            throw new IllegalStateException("kernel " + block.kernel + " calls KernelContext." + call
                    + ", but its CpuKernelRunner has no PeerMemory (make it with CpuKernelRunner(int, PeerMemory))");
        }
        return p;
    }
}
