package org.moecomm.kernels.api;

/**
 * What a kernel sees of its launch, in the style of TornadoVM's {@code KernelContext}.
 *
 * <p>A kernel is a {@code public static void} method whose first parameter is a
 * {@code KernelContext} and whose other parameters are {@link Buf}, {@code int}, {@code long}
 * or {@code float}. Launches are a grid of {@code numGroupsX x numGroupsY} blocks of
 * {@code localGroupSizeX} threads (one dimension of threads). Every method here has a JVM
 * implementation (the CPU runner) and a PTX lowering (the compiler); they are accessed as
 * methods, never as fields, so javac cannot fold them into constants.
 *
 * <p>Rules the compiler and the CPU runner both rely on: every thread of a block must reach
 * the same sequence of {@link #localBarrier()} calls (no early return before a barrier);
 * local arrays are allocated in the same order by every thread of a block, with sizes that are
 * compile-time constants or kernel-uniform values fixed at launch.
 */
public interface KernelContext {
    /** Threads per warp on NVIDIA GPUs; the CPU runner uses the same value. */
    int WARP_SIZE = 32;

    /** {@code groupIdx() * localGroupSizeX() + localIdx()}. */
    int globalIdx();

    /** Thread index within the block ({@code threadIdx.x}). */
    int localIdx();

    /** Block index, x ({@code blockIdx.x}). */
    int groupIdx();

    /** Block index, y ({@code blockIdx.y}). */
    int groupIdy();

    /** Threads per block ({@code blockDim.x}). */
    int localGroupSizeX();

    /** Blocks in x ({@code gridDim.x}). */
    int numGroupsX();

    /** Blocks in y ({@code gridDim.y}). */
    int numGroupsY();

    /** {@code numGroupsX() * localGroupSizeX()}. */
    int globalGroupSizeX();

    /** Barrier over the threads of one block ({@code bar.sync 0}); also orders shared memory. */
    void localBarrier();

    /** Block-shared int array (shared memory on the GPU); the same array for every thread of the block. */
    int[] allocateIntLocalArray(int length);

    /** Block-shared float array. */
    float[] allocateFloatLocalArray(int length);

    /** Block-shared long array. */
    long[] allocateLongLocalArray(int length);

    /** Atomically adds {@code delta} to int element {@code index} of {@code buf}; returns the old value. */
    int atomicAdd(Buf buf, long index, int delta);

    /** Atomically adds {@code delta} to element {@code index} of a block-shared array; returns the old value. */
    int atomicAdd(int[] localArray, int index, int delta);

    /**
     * Atomically replaces int element {@code index} of {@code buf} by {@code update} if it equals
     * {@code expected}; returns the old value either way.
     */
    int atomicCas(Buf buf, long index, int expected, int update);

    /**
     * Orders this thread's global memory accesses before it (and what it observed of its block's
     * through a {@link #localBarrier()} before it) before its later ones, for every thread of this
     * device: a release-acquire fence ({@code fence.acq_rel.gpu}; on the JVM a full fence), what
     * the "last block" pattern and other message passing need, like {@link #systemFence()} at
     * device scope.
     */
    void globalFence();

    /**
     * A free-running counter for timing sections of a kernel from inside it: on the GPU the
     * multiprocessor's cycle counter ({@code %clock64}; compare values of one block only, since
     * each multiprocessor counts on its own), on the JVM {@link System#nanoTime()}.
     */
    long clock();

    /**
     * Nanoseconds of a clock that every block of every kernel on this device reads alike, for
     * timelines across blocks, kernels and processes that share the device: on the GPU the global
     * timer ({@code %globaltimer}; its resolution is the device's, coarser than {@link #clock()}), on
     * the JVM {@link System#nanoTime()}.
     */
    long globalTimerNanos();

    // ---- one-sided communication between ranks ----
    //
    // Symmetric buffers are allocated by every rank with the same size in the same order; a
    // kernel names the copy on another rank ("pe") by its own local Buf (or a slice of it). On
    // the GPU these calls are the NVSHMEM bridge's device functions, linked into the kernel's
    // module (docs/kernels-in-java.md); on the JVM the CpuKernelRunner serves them from its
    // PeerMemory. Signals are 64-bit words; a signal Buf starts at the word.

    /**
     * Block-collective put: copies {@code bytes} from {@code src} to {@code pe}'s copy of the
     * symmetric {@code dst}, then sets {@code pe}'s copy of the symmetric signal word {@code signal}
     * to {@code value}; the data is visible at {@code pe} before the signal. Every thread of the
     * block calls it with the same arguments (like {@link #localBarrier()}, which it implies).
     */
    void putSignalBlock(Buf dst, Buf src, long bytes, Buf signal, long value, int pe);

    /**
     * Like {@link #putSignalBlock}, but adds {@code value} to {@code pe}'s signal word: several
     * blocks that each put a part of one message and add their share let a wait for the total
     * see every part.
     */
    void putSignalAddBlock(Buf dst, Buf src, long bytes, Buf signal, long value, int pe);

    /** One thread: atomically sets {@code pe}'s copy of the symmetric signal word {@code signal} to {@code value}. */
    void signalSet(Buf signal, long value, int pe);

    /** One thread: atomically adds {@code value} to {@code pe}'s copy of the symmetric signal word {@code signal}. */
    void signalAdd(Buf signal, long value, int pe);

    /**
     * One thread: waits until this rank's signal word {@code signal} is {@code >= value} (acquire:
     * what the peer wrote before the signal is visible afterwards), for at most
     * {@code timeoutNanos}. Compared modulo 2^64 ({@link #reached}): a word that counts up may
     * wrap around, and the wait is right while {@code value} is less than 2^63 ahead of it.
     * Returns the word's value the wait saw last: {@code reached(result, value)} when the value
     * arrived. A caller that needs the word's value (a count in it) takes it from the result: a
     * load of its own after the wait would cost one more round trip to memory.
     *
     * <p>On the GPU a wait that runs out records (rank, peer, tag, expected, seen) in the error
     * context {@code errors} (the backend's, see {@code GpuEndpoint.errorContext()}) and returns
     * a value that has not reached {@code value}; so it does at once when {@code errors} already
     * holds a failure, so a failed round does not wait its bound again. The host raises the record
     * as an exception. On the JVM a wait that runs out fails the launch with the same facts (a
     * {@code org.moecomm.kernels.cpu.PeerWaitTimeoutException}).
     *
     * <p>{@code errors} also carries the abort word the wait watches besides its signal: on the
     * GPU the error context points at it ({@code mnv_error_watch}), and a set word is recorded as
     * a failure of kind "peer aborted" and the wait returns (not reached); on the JVM
     * {@code errors} is the word itself (8 bytes; an empty buffer watches nothing), and a set word
     * fails the launch with a {@code org.moecomm.kernels.cpu.PeerWaitAbortedException}.
     * {@code rank}, {@code peer} and {@code tag} only describe the wait.
     */
    long waitAtLeast(Buf signal, long value, long timeoutNanos, Buf errors, int rank, int peer, int tag);

    /**
     * Whether a signal word that counts up, seen as {@code seen}, has reached {@code value}:
     * compared modulo 2^64, as {@code seen - value >= 0} for signed longs, as the waits compare
     * ({@link #waitAtLeast}).
     */
    static boolean reached(long seen, long value) {
        return seen - value >= 0;
    }

    /**
     * {@code pe}'s copy of the symmetric buffer {@code symmetric} (or of a slice of one), for direct
     * loads and stores by this kernel: the same offset and size in {@code pe}'s memory. On the GPU
     * it is the address {@code nvshmem_ptr} gives, which exists only for peers the GPU reaches by
     * loads and stores (the same GPU, NVLink or PCIe peer-to-peer mappings): call it only for a
     * peer the host found mapped; for any other the result must not be used (on the GPU it is a
     * null address; calling early, before the host's verdict is read, lets the call overlap that
     * load). On the JVM it is
     * {@code PeerMemory.onPeer}. Stores through it are ordinary stores into another rank's memory:
     * follow them with {@link #systemFence()} before a signal that publishes them.
     */
    Buf peerBuf(Buf symmetric, int pe);

    /**
     * {@link #peerBuf(Buf, int)} from a table the host filled: {@code peerOffsets} (int64
     * {@code [W]}) holds, for every PE, the byte offset of its copy of {@code symmetric}'s buffer
     * from this PE's as this kernel addresses them ({@code nvshmem_ptr} minus the local address,
     * taken once on the host). On the GPU it is one load in flight with the kernel's others, where
     * {@link #peerBuf(Buf, int)} is a call of a device function that waits for the loads before it
     * and that the loads after it wait for. On the JVM the table is not read ({@code PeerMemory}).
     * The same rules hold: only for a peer the host found mapped.
     */
    Buf peerBuf(Buf symmetric, int pe, Buf peerOffsets);

    /**
     * Block-collective, non-blocking put ({@code nvshmemx_putmem_nbi_block}): copies {@code bytes}
     * from {@code src} to {@code pe}'s copy of the symmetric {@code dst}. The copy is complete
     * (visible at {@code pe}) only after {@link #quiet()}; until then {@code src} must not change.
     * Every thread of the block calls it with the same arguments (like {@link #localBarrier()},
     * which it implies on the JVM). On the JVM the copy is complete when it returns.
     */
    void putBlockNbi(Buf dst, Buf src, long bytes, int pe);

    /**
     * Warp-collective, non-blocking put ({@code nvshmemx_putmem_nbi_warp}): like
     * {@link #putBlockNbi}, by the 32 threads of one warp, all of which call it with the same
     * arguments; complete after {@link #quiet()}. On the JVM the lanes of a warp are not
     * synchronised: the warp's lane 0 ({@code localIdx() % 32 == 0}) copies and the other lanes
     * return at once, so what the put reads must be written before a {@link #localBarrier()} that
     * precedes the put (not just by the warp's own lanes before the call).
     */
    void putWarpNbi(Buf dst, Buf src, long bytes, int pe);

    /**
     * Completes this thread's earlier non-blocking puts ({@code nvshmem_quiet}): their bytes are
     * visible at their destinations afterwards, so a {@link #signalSet} after it publishes them.
     * After a block (warp) put, let every thread of the block (warp) call it, then reach a
     * {@link #localBarrier()} before one of them signals. On the JVM every put is complete when it
     * returns and this is a full fence.
     */
    void quiet();

    /**
     * Orders this thread's memory accesses before it (stores into peers' memory through
     * {@link #peerBuf} included, and what it observed of its block's through a
     * {@link #localBarrier()} before it) before its later ones, for every observer in the system:
     * other GPUs, other processes. A release-acquire fence ({@code fence.acq_rel.sys}; on the JVM
     * a full fence): what message passing needs (data, fence, flag; flag seen, fence, data), the
     * only pattern the protocol uses; it is not sequentially consistent ({@code fence.sc} also
     * orders a store before a later load of another location, which no kernel here relies on).
     */
    void systemFence();

    /**
     * One thread: stores int64 element {@code index} of {@code buf} (local, or a peer's through
     * {@link #peerBuf}) as a release for every observer in the system: this thread's earlier
     * accesses, and what it observed of its block's through a {@link #localBarrier()} before it,
     * are visible to whoever sees the value with an acquire load ({@link #waitAtLeast} does).
     * Into a mapped peer's signal word it is {@link #systemFence()} and {@link #signalSet} in one
     * instruction ({@code st.release.sys}; on the JVM {@code setRelease}), without the signal's
     * own lookup of the peer's address.
     */
    void storeRelease(Buf buf, long index, long value);

    /**
     * One thread: stores int64 element {@code index} of {@code buf} (local, or a peer's through
     * {@link #peerBuf}) as a relaxed store for every observer in the system ({@code st.relaxed.sys};
     * on the JVM {@code setOpaque}): no order with this thread's other accesses, but a reader's
     * {@link #waitAtLeast} or {@link #loadAcquire} of the word races with it within the memory
     * model and sees the old value or this one whole. For words that say by themselves which round
     * they belong to (the dispatch's pair notes), where a plain store would be a data race.
     */
    void storeRelaxed(Buf buf, long index, long value);

    /**
     * One thread: adds {@code delta} to int64 element {@code index} of {@code buf} (local, or a
     * peer's through {@link #peerBuf}) atomically, as a release for every observer in the system,
     * like {@link #storeRelease}: into a mapped peer's signal word it is {@link #systemFence()} and
     * {@link #signalAdd} in one instruction ({@code red.release.sys.add.u64}; on the JVM
     * {@code getAndAddRelease}), without the signal's own lookup of the peer's address.
     */
    void addRelease(Buf buf, long index, long delta);

    /**
     * One thread: loads int64 element {@code index} of {@code buf} as an acquire for the whole
     * system ({@code ld.acquire.sys}; on the JVM {@code getAcquire}): what a peer wrote before a
     * release store or add of that value is visible afterwards, as after {@link #waitAtLeast}.
     * A kernel issues it beside its other first loads and calls {@link #waitAtLeast} only when
     * the value is not there yet, so a wait that is met at once costs one round trip to memory.
     */
    long loadAcquire(Buf buf, long index);
}
