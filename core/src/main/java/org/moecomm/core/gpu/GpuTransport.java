package org.moecomm.core.gpu;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.moecomm.bridge.nvshmem.Nvshmem;
import org.moecomm.bridge.nvshmem.NvshmemException;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.core.backend.Transport;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.moe.TransportKernels;

/**
 * {@link Transport} over NVSHMEM: every operation is a launch of one of the bridge's
 * single-block kernels on the handle's stream, so puts, signals and waits execute in issue
 * order with the protocol's kernels and nothing blocks the host.
 *
 * <ul>
 *   <li>{@link #putWithSignal}: the count is read on the GPU from {@code countBuf} when the put
 *       runs; the signal is set after the data ({@code nvshmemx_putmem_signal_block}); a count
 *       that is negative or too large for the destination sends nothing and fails the handle
 *       instead of writing out of bounds;</li>
 *   <li>{@link #waitAtLeast}: a bounded wait kernel; when it runs out it records the rank, the
 *       peer, the signal (named by the caller), the expected and the seen value, and returns; the
 *       next call (or {@link #synchronize()}) throws {@link org.moecomm.core.WaitTimeoutException};</li>
 *   <li>{@link #barrier}: a bounded barrier kernel over a symmetric word per PE, then a stream
 *       synchronisation.</li>
 * </ul>
 *
 * <p>Symmetric allocation and {@link #close()} are collective (NVSHMEM's {@code nvshmem_malloc}
 * and {@code nvshmem_free}); after a failure {@link #close()} skips the collective frees (a peer
 * may be gone) and leaves the memory to {@code nvshmem_finalize}.
 */
public final class GpuTransport implements Transport {
    private static final Logger LOG = LogManager.getLogger(GpuTransport.class);

    /** Threads of the put kernel's block (system property {@code moecomm.gpu.putThreads}). */
    static final int PUT_THREADS = Integer.getInteger("moecomm.gpu.putThreads", 1024);
    /** Threads of each block of a batched put (system property {@code moecomm.gpu.batchPutThreads}). */
    static final int BATCH_PUT_THREADS = Integer.getInteger("moecomm.gpu.batchPutThreads", 512);
    /** Most blocks per put of a batch (a power of two). */
    static final int MAX_CHUNKS = 64;
    private static final Kernel PUT_EACH = new Kernel(TransportKernels.class, "putEach");
    private static final Kernel WAIT_EACH = new Kernel(TransportKernels.class, "waitEach");
    private static final Kernel SIGNAL_EACH = new Kernel(TransportKernels.class, "signalEach");

    private final GpuExecution exec;
    private final SymmetricAccounting accounting;
    private final int rank;
    private final int worldSize;
    private final List<GpuSymmetricBuffer> owned = new ArrayList<>();
    private final GpuSymmetricBuffer barrierWords;
    /** Launches the batch kernels on the transport's stream. */
    private final CheckedKernelRunner runner;
    /** Holds the batch tables. */
    private final GpuDeviceMemory tables;
    /** Each batch's table in device memory, uploaded at the batch's first use. */
    private final Map<Object, Buf> batchTables = new IdentityHashMap<>();
    private long barrierEpoch;
    private boolean closed;

    GpuTransport(GpuExecution exec, SymmetricAccounting accounting) {
        this.exec = Objects.requireNonNull(exec, "exec");
        this.accounting = Objects.requireNonNull(accounting, "accounting");
        exec.enter();
        this.rank = Nvshmem.myPe();
        this.worldSize = Nvshmem.nPes();
        if (rank != exec.rank()) {
            throw new IllegalStateException("NVSHMEM says this is PE " + rank + " but the handle was made for rank "
                    + exec.rank());
        }
        this.barrierWords = (GpuSymmetricBuffer) allocateSymmetric(8L * worldSize);
        this.runner = new CheckedKernelRunner(exec);
        this.tables = new GpuDeviceMemory(exec);
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    /** Collective: {@code nvshmem_malloc}, zeroed, followed by a barrier of all PEs. */
    @Override
    public synchronized SymmetricBuffer allocateSymmetric(long bytes) {
        ensureOpen();
        if (bytes < 1) {
            throw new IllegalArgumentException("symmetric allocation of " + bytes + " bytes");
        }
        exec.enter();
        long rounded = (bytes + 255) & ~255L;
        accounting.reserve(rounded, rank);
        long address;
        try {
            address = Nvshmem.mallocZeroed(rounded, exec.streamHandle());
        } catch (NvshmemException e) {
            accounting.release(rounded);
            if (e.outOfSymmetricMemory()) {
                throw new MoeCommException(accounting.describeShortage(rounded, rank), e);
            }
            throw new MoeCommException("rank " + rank + ": symmetric allocation of " + bytes + " bytes failed: "
                    + e.getMessage(), e);
        }
        GpuSymmetricBuffer b = new GpuSymmetricBuffer(address, rounded);
        owned.add(b);
        return b;
    }

    @Override
    public void putWithSignal(Buf src, long srcOffset, SymmetricBuffer dst, long dstOffset, Buf countBuf,
                              long countIndex, long bytesPerCount, SymmetricBuffer signals, int signalIndex,
                              long signalBase, int peer) {
        ensureOpen();
        checkPeer(peer);
        GpuSymmetricBuffer d = sym(dst);
        GpuSymmetricBuffer s = sym(signals);
        checkPut(src, srcOffset, d, dstOffset, countBuf, countIndex, bytesPerCount);
        long sig = signalAddress(s, signalIndex);
        long maxBytes = Math.min(src.byteSize() - srcOffset, d.byteSize() - dstOffset);
        exec.enter();
        int tag = exec.register("put to peer " + peer + " (signal " + signalIndex + ")");
        call(() -> Nvshmem.putWithSignal(exec.streamHandle(), d.address() + dstOffset, src.address() + srcOffset,
                countBuf.address() + 4 * countIndex, bytesPerCount, maxBytes, sig, signalBase, peer, PUT_THREADS,
                exec.errors(), rank, tag), "putWithSignal to peer " + peer);
    }

    @Override
    public void signal(SymmetricBuffer signals, int index, long value, SignalOp op, int peer) {
        ensureOpen();
        checkPeer(peer);
        long sig = signalAddress(sym(signals), index);
        exec.enter();
        int nativeOp = op == SignalOp.ADD ? Nvshmem.SIGNAL_ADD : Nvshmem.SIGNAL_SET;
        call(() -> Nvshmem.signal(exec.streamHandle(), sig, value, nativeOp, peer), "signal to peer " + peer);
    }

    @Override
    public void waitAtLeast(SymmetricBuffer signals, int index, long value, int peer, String signalName) {
        ensureOpen();
        long sig = signalAddress(sym(signals), index);
        exec.enter();
        int tag = exec.register(signalName);
        call(() -> Nvshmem.waitAtLeast(exec.streamHandle(), sig, value, exec.timeoutNanos(), exec.errors(), rank, peer,
                tag), "wait for " + signalName);
    }

    // ---- batches: one launch of a TransportKernels kernel each ----

    /** All puts of the batch in one launch of {@link TransportKernels#putEach}, one block per put. */
    @Override
    public void putWithSignal(PutBatch batch, long signalBase) {
        ensureOpen();
        if (batch.puts().isEmpty()) {
            return;
        }
        Buf table = batchTables.computeIfAbsent(batch, b -> putTable(batch));
        exec.enter();
        int puts = batch.puts().size();
        runner.launch(PUT_EACH, Grid.of(puts, chunksPerPut(puts), BATCH_PUT_THREADS), batch.src(),
                sym(batch.dst()).local(), batch.countBuf(), sym(batch.signals()).local(), table, batch.bytesPerCount(),
                signalBase);
    }

    /**
     * Blocks that share one put of a batch of {@code puts}: about the device's streaming
     * multiprocessors in all, a power of two of at most {@value #MAX_CHUNKS} (what
     * {@link TransportKernels#putEach} requires). A put of megabytes by one block moves a few
     * tens of GB/s; small messages use one block of theirs anyway.
     */
    private int chunksPerPut(int puts) {
        int wanted = Math.max(1, Math.min(MAX_CHUNKS, runner.concurrentBlocks() / puts));
        return Integer.highestOneBit(wanted);
    }

    /** All waits of the batch in one single-block launch of {@link TransportKernels#waitEach}. */
    @Override
    public void waitAtLeast(WaitBatch batch, long value) {
        ensureOpen();
        if (batch.waits().isEmpty()) {
            return;
        }
        Buf table = batchTables.computeIfAbsent(batch, b -> waitTable(batch));
        exec.enter();
        runner.launch(WAIT_EACH, Grid.of(1, threadsFor(batch.waits().size())), sym(batch.signals()).local(), table,
                batch.waits().size(), value, exec.timeoutNanos(), exec.errorContext(), rank);
    }

    /** The batch's signal to every peer in one single-block launch of {@link TransportKernels#signalEach}. */
    @Override
    public void signal(SignalBatch batch, long value) {
        ensureOpen();
        if (batch.peers().isEmpty()) {
            return;
        }
        GpuSymmetricBuffer signals = sym(batch.signals());
        signalAddress(signals, batch.index()); // range check
        Buf peers = batchTables.computeIfAbsent(batch, b -> peerTable(batch));
        exec.enter();
        runner.launch(SIGNAL_EACH, Grid.of(1, threadsFor(batch.peers().size())), signals.local(), peers,
                batch.peers().size(), (long) batch.index(), value, batch.op() == SignalOp.ADD ? 1 : 0);
    }

    private Buf putTable(PutBatch batch) {
        GpuSymmetricBuffer d = sym(batch.dst());
        GpuSymmetricBuffer s = sym(batch.signals());
        long[] rows = new long[batch.puts().size() * TransportKernels.PUT_COLUMNS];
        int r = 0;
        for (Put p : batch.puts()) {
            checkPeer(p.peer());
            checkPut(batch.src(), p.srcOffset(), d, p.dstOffset(), batch.countBuf(), p.countIndex(), batch.bytesPerCount());
            signalAddress(s, p.signalIndex());
            rows[r + TransportKernels.PUT_SRC_OFFSET] = p.srcOffset();
            rows[r + TransportKernels.PUT_DST_OFFSET] = p.dstOffset();
            rows[r + TransportKernels.PUT_COUNT_INDEX] = p.countIndex();
            rows[r + TransportKernels.PUT_SIGNAL_INDEX] = p.signalIndex();
            rows[r + TransportKernels.PUT_PEER] = p.peer();
            rows[r + TransportKernels.PUT_MAX_BYTES] = Math.min(batch.src().byteSize() - p.srcOffset(),
                    d.byteSize() - p.dstOffset());
            r += TransportKernels.PUT_COLUMNS;
        }
        return upload(rows);
    }

    private Buf waitTable(WaitBatch batch) {
        GpuSymmetricBuffer s = sym(batch.signals());
        long[] rows = new long[batch.waits().size() * TransportKernels.WAIT_COLUMNS];
        int r = 0;
        for (Wait w : batch.waits()) {
            signalAddress(s, w.index());
            rows[r + TransportKernels.WAIT_SIGNAL_INDEX] = w.index();
            rows[r + TransportKernels.WAIT_PEER] = w.peer();
            // named once for the batch's lifetime (the name table keeps the latest 65536 names)
            rows[r + TransportKernels.WAIT_TAG] = exec.register(w.signalName());
            r += TransportKernels.WAIT_COLUMNS;
        }
        return upload(rows);
    }

    private Buf peerTable(SignalBatch batch) {
        int[] peers = new int[batch.peers().size()];
        for (int i = 0; i < peers.length; i++) {
            checkPeer(batch.peers().get(i));
            peers[i] = batch.peers().get(i);
        }
        return upload(MemorySegment.ofArray(peers));
    }

    private Buf upload(long[] rows) {
        return upload(MemorySegment.ofArray(rows));
    }

    /** A batch table into device memory of the transport's own (freed when it closes). */
    private Buf upload(MemorySegment host) {
        Buf b = tables.allocate(host.byteSize());
        tables.copyFromHost(host, b, 0);
        return b;
    }

    private static int threadsFor(int operations) {
        return Math.min(1024, Math.max(32, (operations + 31) / 32 * 32));
    }

    /** Bounded barrier of all PEs (completes this PE's puts first), then waits for the stream. */
    @Override
    public void barrier() {
        ensureOpen();
        exec.enter();
        long epoch = ++barrierEpoch;
        int tag = exec.register("barrier #" + epoch);
        call(() -> Nvshmem.barrier(exec.streamHandle(), barrierWords.address(), epoch, worldSize, rank,
                exec.timeoutNanos(), exec.errors(), tag), "barrier");
        exec.synchronize();
    }

    /** Waits for everything enqueued so far; throws a failure a bridge kernel recorded. */
    public void synchronize() {
        exec.synchronize();
    }

    /** Throws a failure a bridge kernel recorded so far, without waiting. */
    public void checkErrors() {
        exec.check();
    }

    /**
     * {@code nvshmem_ptr}: the address at which this process's kernels can load and store
     * {@code peer}'s copy of {@code buffer}, or 0 when the peer is reachable only over the network.
     */
    public long peerAddress(SymmetricBuffer buffer, int peer) {
        checkPeer(peer);
        exec.enter();
        return Nvshmem.peerPointer(sym(buffer).address(), peer);
    }

    /** The stream this transport enqueues on ({@code CUstream}). */
    public long stream() {
        return exec.streamHandle();
    }

    /**
     * Frees the symmetric buffers (collective {@code nvshmem_free}, in reverse order of allocation)
     * after the stream drained. After a recorded failure, frees nothing (a collective call could
     * wait forever for a dead peer); NVSHMEM releases the heap at finalisation.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        boolean failed;
        try {
            exec.synchronize();
            failed = false;
        } catch (RuntimeException e) {
            failed = true;
            LOG.warn("rank {}: closing a failed transport: {} symmetric buffers are left to nvshmem_finalize ({})",
                    rank, owned.size(), e.getMessage());
        }
        if (!failed) {
            for (int i = owned.size() - 1; i >= 0; i--) {
                GpuSymmetricBuffer b = owned.get(i);
                b.markFreed();
                Nvshmem.free(b.address());
                accounting.release(b.byteSize());
            }
        }
        owned.clear();
        batchTables.clear();
        CloseFailures failures = new CloseFailures();
        failures.close(runner);
        failures.close(tables);
        failures.throwIfAny();
    }

    private void call(Runnable launch, String what) {
        try {
            launch.run();
        } catch (NvshmemException e) {
            throw new MoeCommException("rank " + rank + ": " + what + " failed: " + e.getMessage(), e);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("rank " + rank + ": transport is closed");
        }
    }

    private static void checkPut(Buf src, long srcOffset, GpuSymmetricBuffer d, long dstOffset, Buf countBuf,
                                 long countIndex, long bytesPerCount) {
        if (srcOffset < 0 || srcOffset > src.byteSize() || dstOffset < 0 || dstOffset > d.byteSize()) {
            throw new IllegalArgumentException("put offsets out of range: src " + srcOffset + " of " + src.byteSize()
                    + ", dst " + dstOffset + " of " + d.byteSize());
        }
        if (countIndex < 0 || (countIndex + 1) * 4 > countBuf.byteSize()) {
            throw new IllegalArgumentException("count index " + countIndex + " is outside " + countBuf);
        }
        if (bytesPerCount < 0) {
            throw new IllegalArgumentException("bytesPerCount must be >= 0, got " + bytesPerCount);
        }
    }

    private void checkPeer(int peer) {
        if (peer < 0 || peer >= worldSize) {
            throw new IllegalArgumentException("peer " + peer + " is outside [0, " + worldSize + ")");
        }
    }

    private static long signalAddress(GpuSymmetricBuffer signals, int index) {
        long offset = 8L * index;
        if (index < 0 || offset + 8 > signals.byteSize()) {
            throw new IllegalArgumentException("signal index " + index + " is outside " + signals);
        }
        return signals.address() + offset;
    }

    private GpuSymmetricBuffer sym(SymmetricBuffer b) {
        if (b instanceof GpuSymmetricBuffer g) {
            if (g.freed()) {
                throw new IllegalStateException(g + " was freed");
            }
            return g;
        }
        throw new IllegalArgumentException(b + " was not allocated by a GPU transport");
    }
}
