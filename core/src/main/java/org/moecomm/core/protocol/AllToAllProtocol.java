package org.moecomm.core.protocol;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.moecomm.core.AbortReason;
import org.moecomm.core.DeviceMemory;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.PeerWrites;
import org.moecomm.core.Tensor;
import org.moecomm.core.TokenCount;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.core.backend.Transport;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelRunner;
import org.moecomm.kernels.moe.AllToAllKernels;
import org.moecomm.kernels.moe.MoeKernels;

/**
 * The dispatch/combine protocol of docs/protocol.md over any backend: a {@link Transport}
 * moves bytes and signals between ranks, a {@link KernelRunner} runs the MoE kernels, and a
 * {@link DeviceMemory} holds the local buffers. The host only issues launches, puts and waits
 * and knows the round number; every count stays in device memory (except where validation
 * reads it, see {@link Validator}).
 *
 * <p>A backend that queues work (a GPU stream) must execute this class's launches, memory
 * operations, puts, signals and waits in the order they are issued.
 *
 * <p>Not thread-safe: one thread drives a handle (calls are collective across ranks anyway).
 */
public final class AllToAllProtocol implements MoeAllToAll {
    private static final Logger LOG = LogManager.getLogger(AllToAllProtocol.class);

    static final Kernel DISPATCH_SEND = new Kernel(AllToAllKernels.class, "dispatchSend");
    static final Kernel DISPATCH_RECV = new Kernel(AllToAllKernels.class, "dispatchRecv");
    static final Kernel COMBINE_SEND = new Kernel(AllToAllKernels.class, "combineSend");
    static final Kernel COMBINE_RECV = new Kernel(AllToAllKernels.class, "combineRecv");
    /** Combine recv with more registers per thread, for a grid the device holds at once ({@link #combineRecvKernel}). */
    static final Kernel COMBINE_RECV_RESIDENT = new Kernel(AllToAllKernels.class, "combineRecvResident");
    /** Dispatch send and the source-order dispatch recv in one launch ({@link #dispatch}). */
    static final Kernel DISPATCH = new Kernel(AllToAllKernels.class, "dispatch");

    /** Cap on the y extent of the dispatch grids (each of dispatch send's blocks repeats the numbering). */
    static final int MAX_BLOCKS_PER_UNIT = 64;
    /** Fewest rows of M a dispatch block is given: tiny rounds (decode) use one block per destination or source. */
    static final int MIN_ROWS_PER_BLOCK = 4;
    /**
     * Up to this M (decode sizes) dispatch send has one block per destination (no count, the
     * release-store signal), and dispatch recv takes its slots in source order with
     * {@link #receiveParts} blocks per source group.
     */
    static final int ONE_BLOCK_TOKENS = 8;
    /**
     * Pairs one block of the source-order receive copies on average ({@code M*K/W} per source
     * group, uniform routing, over its parts; {@link #receiveParts}). With one block per group the
     * copy was the longest step after the last signal at 8 tokens: 6.0-6.3 us at W = 2 (32 pairs),
     * 2.8-3.6 us at W = 4 (16), benchmarks/results/2026-12-06-one-launch-trace/. Measured at 8
     * tokens (H100, deepseek-v3, graph replay, benchmarks/results/2026-12-06-receive-parts-experiment/):
     * W = 2 dispatch 21.8 us with one block, 19.8 / 19.3 / 18.1 with 16 / 8 / 4 pairs per block (2, 4,
     * 8 parts); W = 4 31.1, 31.2 / 30.6 / 30.1 (1, 2, 4 parts). Two pairs per block against four
     * (benchmarks/results/2026-12-06-poll-experiment/, four runs each over two calls): W = 4, 8 tokens
     * (8 parts instead of 4) 29.0 against 29.4 us, W = 2, 1 token (2 instead of 1) 15.4 against 15.8.
     */
    static final int PAIRS_PER_RECEIVE_BLOCK = 2;
    /** Rows of one local expert that one combine send block copies at least (the y extent is at most capacity / this). */
    static final int GATHER_ROWS_PER_BLOCK = 32;
    /**
     * Combine recv blocks per unit of device parallelism: x takes every grid-th token, y splits
     * the hidden dimension when there are fewer tokens than blocks (decode). Measured, not
     * derived: one wave of the resident blocks (4 per SM for DeepSeek-V3's reduce) took 1161 us
     * at 4096 tokens, 8 per SM 989 us, 16 and 32 per SM 996 and 1003 us, and more blocks cost
     * at 128 tokens (benchmarks/results/2026-12-04-combine-recv-grid-experiment).
     */
    static final int REDUCE_BLOCKS_PER_UNIT = 8;

    private final MoeConfig config;
    private final BufferLayout layout;
    private final Validator validator;
    private final Transport transport;
    private final KernelRunner runner;
    private final DeviceMemory memory;
    private final AutoCloseable resources;
    private final int rank;

    // symmetric
    private final SymmetricBuffer dispatchRecv;
    private final SymmetricBuffer dispatchSend;
    private final SymmetricBuffer combineRecv;
    private final SymmetricBuffer combineSend;
    private final SymmetricBuffer signals;
    // local
    private final Buf roundState;
    private final Buf slotCounts;
    private final Buf peerModes;
    private final Buf peerOffsets;
    private final Buf pairLocation;
    private final Buf pairsFromGroup;
    private final Buf expertOrigin;
    private final Buf numTokens;
    private final Buf dummy;
    /** Where the device reports a bad expert id, when the ids are checked there ({@code null} otherwise). */
    private final Buf inputReport;
    /** The error context the kernels' waits record a timeout in (the transport's). */
    private final Buf waitErrors;
    /** Tag of the wait for signal word 0 (word i: + i), named for error messages. */
    private final int waitTag;
    /** 1 when some peer is reached by puts (combine send's second pass). */
    private final int anyPut;
    /**
     * 1 when dispatch recv takes its slots in source order, counted in shared memory (a grid of
     * one block per source group: decode; {@code AllToAllKernels.dispatchRecv}), else 0.
     */
    private final int orderedSlots;
    /** Threads per block of every kernel: the runner's for {@link MoeKernels#THREADS} (fewer on the JVM). */
    private final int threads;
    private final Grid dispatchSendGrid;
    private final Grid dispatchRecvGrid;
    /**
     * The grid of {@link #DISPATCH} ({@code (W + NG*P) x 1}, {@code P} the receive parts), or null
     * where {@link #dispatch} makes the two launches ({@link #oneLaunchDispatch(Grid)}).
     */
    private final Grid dispatchGrid;
    private final Grid combineSendGrid;
    private final Grid combineRecvGrid;
    /**
     * {@link #COMBINE_RECV_RESIDENT} where every block of {@link #combineRecvGrid} is resident
     * with its register budget (decode handles), else {@link #COMBINE_RECV}.
     */
    private final Kernel combineRecvKernel;

    private Phase phase = Phase.IDLE;
    /** What failed the handle (phase FAILED), for the later calls' exceptions. */
    private RuntimeException failure;
    private long round;
    /**
     * Of the current round: the rows the token tensors must have (m, or M when m stays on the
     * device), where the kernels read m, where dispatch wrote the expert counts.
     */
    private int m;
    private Buf countBuf;
    private Buf expertNumTokens;

    /**
     * Allocates the handle's buffers (collective through {@code transport}). {@code resources} is
     * closed with the handle, after the transport (for example the backend's device memory).
     */
    public AllToAllProtocol(MoeConfig config, Transport transport, KernelRunner runner, DeviceMemory memory,
                            AutoCloseable resources) {
        this.config = Objects.requireNonNull(config, "config");
        this.transport = Objects.requireNonNull(transport, "transport");
        this.runner = Objects.requireNonNull(runner, "runner");
        this.memory = Objects.requireNonNull(memory, "memory");
        this.resources = resources;
        if (transport.worldSize() != config.worldSize()) {
            throw new IllegalArgumentException("transport has " + transport.worldSize() + " ranks but config.worldSize is "
                    + config.worldSize());
        }
        this.layout = new BufferLayout(config);
        this.validator = new Validator(config, memory);
        this.rank = transport.rank();

        this.dispatchRecv = transport.allocateSymmetric(layout.dispatchRecvBytes());
        this.dispatchSend = transport.allocateSymmetric(layout.dispatchSendBytes());
        this.combineRecv = transport.allocateSymmetric(layout.combineRecvBytes());
        this.combineSend = transport.allocateSymmetric(layout.combineSendBytes());
        this.signals = transport.allocateSymmetric(layout.signalBytes());

        this.roundState = zeroed(layout.roundStateBytes());
        this.slotCounts = zeroed(layout.slotCountsBytes());
        this.peerModes = memory.allocate(layout.peerModesBytes());
        this.peerOffsets = memory.allocate(layout.peerOffsetsBytes());
        this.pairLocation = memory.allocate(layout.pairLocationBytes());
        this.pairsFromGroup = memory.allocate(layout.pairsFromGroupBytes());
        this.expertOrigin = memory.allocate(layout.expertOriginBytes());
        this.numTokens = memory.allocate(layout.numTokensBytes());
        this.dummy = memory.allocate(BufferLayout.DUMMY_BYTES);
        this.inputReport = validator.checksOnHost() ? null : memory.allocateHostVisible(4L * MoeKernels.REPORT_INTS);

        int[] modes = new int[config.worldSize()];
        int puts = 0;
        for (int peer = 0; peer < modes.length; peer++) {
            boolean direct = config.peerWrites() == PeerWrites.AUTO && transport.mapped(dispatchRecv, peer)
                    && transport.mapped(combineRecv, peer);
            modes[peer] = direct ? AllToAllKernels.PEER_DIRECT : AllToAllKernels.PEER_PUT;
            puts += direct ? 0 : 1;
        }
        this.anyPut = puts > 0 ? 1 : 0;
        memory.copyFromHost(peerModes, 0, MemorySegment.ofArray(modes));
        memory.copyFromHost(peerOffsets, 0, MemorySegment.ofArray(peerOffsetTable()));
        // the kernels' waits report tag waitTag + signal word index
        String[] names = new String[layout.signalCount()];
        for (int g = 0; g < config.numGroups(); g++) {
            names[layout.dispatchSignal(g)] = "dispatch[" + g + "]";
        }
        for (int d = 0; d < config.worldSize(); d++) {
            names[layout.combineSignal(d)] = "combine[" + d + "]";
            names[layout.combineDoneSignal(d)] = "combineDone[" + d + "]";
        }
        this.waitTag = transport.registerWaits(List.of(names));
        this.waitErrors = transport.waitErrors();

        int ws = config.worldSize();
        int ng = config.numGroups();
        int capacity = config.expertCapacity();
        int l = config.expertsPerRank();
        this.threads = runner.blockThreads(MoeKernels.THREADS);
        this.dispatchSendGrid = Grid.of(ws, blocksPer(ws, true), threads);
        this.orderedSlots = orderedSlots() ? 1 : 0;
        this.dispatchRecvGrid = Grid.of(ng, orderedSlots != 0 ? receiveParts() : blocksPer(ng, false), threads);
        Grid joined = Grid.of(ws + ng * dispatchRecvGrid.blocksY(), 1, threads);
        this.dispatchGrid = oneLaunchDispatch(joined) ? joined : null;
        // Combine send's blocks loop over their rows: as many as the device keeps resident at once
        // (the compiled kernel's occupancy), since every block with rows also waits, fences and
        // signals, and blocks beyond the rows there can be only add their start.
        int chunks = Math.max(1, Math.min((capacity + GATHER_ROWS_PER_BLOCK - 1) / GATHER_ROWS_PER_BLOCK,
                (runner.residentBlocks(COMBINE_SEND, threads, combineSendArgs(dummy, dummy)) + l - 1) / l));
        this.combineSendGrid = Grid.of(l, chunks, threads);
        int reduceBlocks = REDUCE_BLOCKS_PER_UNIT * runner.concurrentBlocks();
        int tokenBlocks = Math.min(config.maxTokensPerRank(), reduceBlocks);
        int hiddenBlocks = Math.max(1, Math.min((reduceBlocks + tokenBlocks - 1) / tokenBlocks,
                (config.hidden() / MoeKernels.REDUCE_QUAD + threads - 1) / threads));
        this.combineRecvGrid = Grid.of(tokenBlocks, hiddenBlocks, threads);
        // A grid of one wave is latency-bound: each thread's registers, not the blocks a
        // multiprocessor holds, bound its reads in flight (docs/benchmarks.md, "Combine recv's register budget").
        this.combineRecvKernel = (long) tokenBlocks * hiddenBlocks
                <= runner.residentBlocks(COMBINE_RECV_RESIDENT, threads, combineRecvArgs(dummy, numTokens, dummy))
                ? COMBINE_RECV_RESIDENT : COMBINE_RECV;
        if ((long) tokenBlocks * hiddenBlocks > AllToAllKernels.DONE_PER_ROUND) {
            // each block's share of a round's combine-done must be at least 1 (AllToAllKernels.doneShare)
            throw new IllegalStateException("combine recv grid " + combineRecvGrid + " exceeds "
                    + AllToAllKernels.DONE_PER_ROUND + " blocks");
        }
        // load (and specialise) the kernels now: a CUDA graph capture cannot load modules
        runner.prepare(DISPATCH_SEND, threads, dispatchSendArgs(dummy, dummy, dummy, numTokens, -1));
        runner.prepare(DISPATCH_RECV, threads, dispatchRecvArgs(dummy, dummy, dummy));
        if (dispatchGrid != null) {
            runner.prepare(DISPATCH, threads, dispatchArgs(dummy, dummy, dummy, numTokens, -1, dummy, dummy, dummy));
        }
        runner.prepare(COMBINE_SEND, threads, combineSendArgs(dummy, dummy));
        runner.prepare(combineRecvKernel, threads, combineRecvArgs(dummy, numTokens, dummy));

        LOG.info("rank {} created handle: {}; symmetric {} bytes per rank, local {} bytes; {} of {} peers by puts;"
                + " dispatch recv slots {}; dispatch in {}; combine recv {}", rank, config, layout.symmetricBytes(),
                layout.localBytes(), puts, ws, orderedSlots != 0 ? "in source order" : "counted",
                dispatchGrid != null ? "one launch" : "two launches", combineRecvKernel.name());
        if (LOG.isDebugEnabled()) {
            // the kernels' resident blocks as loaded (on a GPU: with the device functions linked in)
            LOG.debug("rank {} grids (resident blocks): dispatch send {} ({}), dispatch recv {} ({}), combine send {} ({}),"
                    + " combine recv {} ({})", rank,
                    dispatchSendGrid, runner.residentBlocks(DISPATCH_SEND, threads, dispatchSendArgs(dummy, dummy, dummy, numTokens, -1)),
                    dispatchRecvGrid, runner.residentBlocks(DISPATCH_RECV, threads, dispatchRecvArgs(dummy, dummy, dummy)),
                    combineSendGrid, runner.residentBlocks(COMBINE_SEND, threads, combineSendArgs(dummy, dummy)),
                    combineRecvGrid, runner.residentBlocks(combineRecvKernel, threads, combineRecvArgs(dummy, numTokens, dummy)));
        }
    }

    /**
     * {@code peerOffsets} ({@link BufferLayout#peerOffsetsBytes}): each peer's copy of the buffers the
     * kernels store into, as an offset the kernels add to their own address instead of calling
     * {@code nvshmem_ptr} (one load, no call); an entry of a peer the kernels reach by puts is never read.
     */
    private long[] peerOffsetTable() {
        SymmetricBuffer[] rows = new SymmetricBuffer[AllToAllKernels.OFFSETS_ROWS];
        rows[AllToAllKernels.OFFSETS_DISPATCH_RECV] = dispatchRecv;
        rows[AllToAllKernels.OFFSETS_COMBINE_RECV] = combineRecv;
        rows[AllToAllKernels.OFFSETS_SIGNALS] = signals;
        int w = config.worldSize();
        long[] table = new long[rows.length * w];
        for (int row = 0; row < rows.length; row++) {
            for (int peer = 0; peer < w; peer++) {
                table[row * w + peer] = transport.peerOffset(rows[row], peer);
            }
        }
        return table;
    }

    private Buf zeroed(long bytes) {
        Buf b = memory.allocate(bytes);
        memory.fill(b, (byte) 0);
        return b;
    }

    public BufferLayout layout() {
        return layout;
    }

    /**
     * For tests of the signal words' wrap-around: sets the round state and this rank's signal
     * words as they stand after {@code rounds} rounds that moved no rows, then passes the
     * transport's barrier (every rank calls it, before its first round). A handle runs for ever:
     * the words count up modulo 2^64 and the waits compare modulo 2^64 ({@code KernelContext.waitAtLeast}),
     * so round {@code 2^32}, where {@code round << 32} wraps, is like any other.
     */
    void resumeAfter(long rounds) {
        expect(Phase.IDLE);
        int ws = config.worldSize();
        int ng = config.numGroups();
        long[] state = new long[(int) (layout.roundStateBytes() / 8)]; // stateWords is even
        state[AllToAllKernels.STATE_ROUND / 2] = rounds;
        for (int g = 0; g < ng; g++) {
            for (int part = 0; part < AllToAllKernels.MAX_RECEIVE_PARTS; part++) {
                state[AllToAllKernels.receiveRoundIndex(ws, g, part)] = rounds;
            }
        }
        memory.copyFromHost(roundState, 0, MemorySegment.ofArray(state));
        long[] notes = new long[Math.toIntExact(layout.pairNoteWords())];
        if (notes.length > 0) {
            Arrays.fill(notes, BufferLayout.signalValue(rounds, 0)); // the last round's, no pair
            memory.copyFromHost(dispatchRecv.local(), layout.dispatchRowBytes(), MemorySegment.ofArray(notes));
        }
        long[] words = new long[layout.signalCount()];
        for (int g = 0; g < ng; g++) {
            words[layout.dispatchSignal(g)] = BufferLayout.signalValue(rounds, 0);
        }
        for (int d = 0; d < ws; d++) {
            words[layout.combineSignal(d)] = rounds * AllToAllKernels.COMBINE_PER_ROUND;
            words[layout.combineDoneSignal(d)] = rounds * AllToAllKernels.DONE_PER_ROUND;
        }
        memory.copyFromHost(signals.local(), 0, MemorySegment.ofArray(words));
        transport.barrier();
        round = rounds;
    }

    /**
     * For tests of the pair notes: this rank's notes ({@link BufferLayout#pairNoteWords}; none
     * above decode sizes), copied to the host between two passes of the transport's barrier, so
     * that every peer has finished its round and none has begun the next (every rank calls it
     * between the same two rounds).
     */
    long[] pairNotesBetweenRounds() {
        transport.barrier();
        long[] notes = new long[Math.toIntExact(layout.pairNoteWords())];
        if (notes.length > 0) {
            memory.copyToHost(dispatchRecv.local(), layout.dispatchRowBytes(), MemorySegment.ofArray(notes));
        }
        transport.barrier();
        return notes;
    }

    /**
     * Throws what the device has reported so far (a bad expert id or count found by dispatch
     * send's check; the handle has failed then), without waiting for the device: what a caller
     * replaying captured calls does between rounds ({@code RoundGraph.replay} does it).
     */
    public void checkDeviceReports() {
        raiseDeviceInputError();
    }

    /**
     * Whether this handle's calls read device memory on the host (the input checks run there):
     * such calls cannot be captured into a CUDA graph.
     */
    public boolean checksInputsOnHost() {
        return validator.checksOnHost();
    }

    /**
     * Whether this handle's dispatch recv takes its slots in source order, counted in shared
     * memory (decode sizes), rather than by global atomics: then each local expert's rows in
     * {@code expertX} come group by group, in increasing source group.
     */
    public boolean slotsInSourceOrder() {
        return orderedSlots != 0;
    }

    /** Blocks per source group of dispatch recv (with slots in source order: its parts, {@link #receiveParts}). */
    int receiveBlocksPerSourceGroup() {
        return dispatchRecvGrid.blocksY();
    }

    /**
     * Whether this handle's {@link #dispatch} is one launch ({@code AllToAllKernels.dispatch}: decode
     * sizes, the joined grid resident at once) rather than dispatch send's and dispatch recv's.
     */
    public boolean dispatchesInOneLaunch() {
        return dispatchGrid != null;
    }

    /**
     * The kernel this handle's {@link #combineRecv} launches: {@code combineRecvResident} where its
     * whole grid is resident with that kernel's larger register budget (decode sizes), else
     * {@code combineRecv}.
     */
    public Kernel combineRecvKernel() {
        return combineRecvKernel;
    }

    /** The phase this handle is in (which call it accepts next). */
    public Phase phase() {
        return phase;
    }

    /**
     * dispatchSend calls made on this handle, captured ones included (for logs: the round the
     * kernels work on lives in device memory and also advances on graph replays).
     */
    public long round() {
        return round;
    }

    @Override
    public MoeConfig config() {
        return config;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public DeviceMemory memory() {
        return memory;
    }

    @Override
    public long symmetricBytesPerRank() {
        return layout.symmetricBytes();
    }

    // ---- step 1: dispatch send ----

    @Override
    public void dispatchSend(DispatchInput in) {
        Objects.requireNonNull(in, "in");
        expect(Phase.IDLE);
        long t0 = System.nanoTime();
        SendRound send = sendRound(in);
        work(Phase.DISPATCH_SENT, () -> {
            startRound(send);
            // one launch: pack, rows to every destination, the dispatch signals; the kernel writes a
            // host-known m into numTokens and checks ids and count where the host does not
            runner.launch(DISPATCH_SEND, dispatchSendGrid, dispatchSendArgs(send.x(), send.xScale(), send.indices(),
                    countBuf, send.fixedTokens()));
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} dispatchSend: m={} issued in {}us", rank, round, m,
                        micros(System.nanoTime() - t0));
            }
        });
    }

    /**
     * A checked dispatch input, as the send kernels take it ({@code fixedTokens}: m, or -1 when m
     * is in {@code counts}).
     */
    private record SendRound(Buf x, Buf xScale, Buf indices, int rows, Buf counts, int fixedTokens) {
    }

    /** Checks {@code in} (before any work starts) and reads its buffers and count. */
    private SendRound sendRound(DispatchInput in) {
        int rows = validator.dispatchInput(in);
        Buf counts = switch (in.count()) {
            case TokenCount.Fixed f -> numTokens;
            case TokenCount.InBuffer b -> b.buf().slice(b.index() * 4, 4);
        };
        int fixedTokens = in.count() instanceof TokenCount.Fixed f ? f.value() : -1;
        return new SendRound(in.x().buf(), in.xScale() != null ? in.xScale().buf() : dummy, in.indices().buf(), rows,
                counts, fixedTokens);
    }

    private void startRound(SendRound send) {
        round++;
        m = send.rows();
        countBuf = send.counts();
    }

    private Object[] dispatchSendArgs(Buf x, Buf xScale, Buf indices, Buf counts, int fixedTokens) {
        return new Object[] {x, xScale, indices, counts, dispatchSend.local(), dispatchRecv.local(), signals.local(),
                pairLocation, inputReport != null ? inputReport : dummy, roundState, peerModes, peerOffsets,
                layout.xBytes(), config.scalesPerToken(), config.topK(), config.expertsPerRank(), config.groupSize(),
                rank, layout.rowBytes(), config.maxTokensPerRank(), layout.pairsPerRegion(), fixedTokens,
                inputReport != null ? 1 : 0, config.quantizes() ? config.inType().kernelCode() : -1, orderedSlots};
    }

    // ---- step 2: dispatch recv ----

    @Override
    public void dispatchRecv(DispatchOutput out) {
        Objects.requireNonNull(out, "out");
        expect(Phase.DISPATCH_SENT);
        long t0 = System.nanoTime();
        validator.dispatchOutput(out);
        work(Phase.DISPATCHED, () -> {
            Buf counts = expertCounts(out);
            runner.launch(DISPATCH_RECV, dispatchRecvGrid, dispatchRecvArgs(counts, out.expertX().buf(),
                    expertScales(out)));
            expertNumTokens = counts;
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} dispatchRecv: issued in {}us", rank, round, micros(System.nanoTime() - t0));
            }
        });
    }

    private Buf expertCounts(DispatchOutput out) {
        return out.expertNumTokens().buf().slice(0, 4L * config.expertsPerRank());
    }

    private Buf expertScales(DispatchOutput out) {
        return out.expertXScale() != null ? out.expertXScale().buf() : dummy;
    }

    private Object[] dispatchRecvArgs(Buf counts, Buf expertX, Buf expertXScale) {
        return new Object[] {dispatchRecv.local(), signals.local(), peerModes, slotCounts, counts, expertX, expertXScale,
                expertOrigin, pairsFromGroup, roundState, waitErrors, config.waitTimeout().toNanos(),
                waitTag, rank, config.groupSize(), config.expertsPerRank(), layout.xBytes(), config.scalesPerToken(),
                config.topK(), layout.rowBytes(), config.maxTokensPerRank(), config.numGroups(),
                layout.pairsPerRegion(), orderedSlots};
    }

    /**
     * Whether dispatch recv can take its slots in source order (decode sizes, and the groups, local
     * experts and one group's pairs within the kernel's shared-memory tables): after the waits one
     * round trip before the copy instead of six. {@code -Dmoecomm.orderedSlots=false} keeps the
     * counted slots, for measurements.
     */
    private boolean orderedSlots() {
        return config.maxTokensPerRank() <= ONE_BLOCK_TOKENS && config.maxTokensPerRank() <= MoeKernels.ORDERED_ROWS
                && config.numGroups() <= MoeKernels.ORDERED_GROUPS
                && config.expertsPerRank() <= MoeKernels.ORDERED_EXPERTS
                && layout.pairsPerRegion() <= MoeKernels.ORDERED_PAIRS
                && Boolean.parseBoolean(System.getProperty("moecomm.orderedSlots", "true"));
    }

    // ---- steps 1 and 2 in one launch ----

    /**
     * Dispatch send and dispatch recv; in one launch of {@link AllToAllKernels#dispatch} where
     * {@link #oneLaunchDispatch} allows it (decode sizes), else the two calls' launches. Either
     * way the handle then expects combineSend.
     */
    @Override
    public void dispatch(DispatchInput in, DispatchOutput out) {
        if (dispatchGrid == null) {
            MoeAllToAll.super.dispatch(in, out);
            return;
        }
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(out, "out");
        expect(Phase.IDLE);
        long t0 = System.nanoTime();
        SendRound send = sendRound(in);
        validator.dispatchOutput(out);
        work(Phase.DISPATCHED, () -> {
            startRound(send);
            Buf counts = expertCounts(out);
            runner.launch(DISPATCH, dispatchGrid, dispatchArgs(send.x(), send.xScale(), send.indices(), countBuf,
                    send.fixedTokens(), counts, out.expertX().buf(), expertScales(out)));
            expertNumTokens = counts;
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} dispatch (one launch): m={} issued in {}us", rank, round, m,
                        micros(System.nanoTime() - t0));
            }
        });
    }

    /** {@code AllToAllKernels.dispatch}'s arguments: dispatch send's, then the receive's. */
    private Object[] dispatchArgs(Buf x, Buf xScale, Buf indices, Buf counts, int fixedTokens, Buf expertCounts,
                                  Buf expertX, Buf expertXScale) {
        Object[] send = dispatchSendArgs(x, xScale, indices, counts, fixedTokens);
        Object[] receive = {expertCounts, expertX, expertXScale, expertOrigin, pairsFromGroup, waitErrors,
                config.waitTimeout().toNanos(), waitTag, config.numGroups(),
                Integer.numberOfTrailingZeros(dispatchRecvGrid.blocksY())};
        Object[] args = Arrays.copyOf(send, send.length + receive.length);
        System.arraycopy(receive, 0, args, send.length, receive.length);
        return args;
    }

    /**
     * Whether {@link #dispatch} can be one launch of {@code grid}: dispatch send has one block per
     * destination and dispatch recv takes its slots in source order (decode sizes), and the runner
     * lets blocks of the joined grid wait for one another (on a GPU: all resident at once), since
     * its receive blocks wait for its send blocks (the send blocks, first in the grid, wait for
     * nothing). {@code -Dmoecomm.oneLaunchDispatch=false} keeps two launches, for measurements.
     */
    private boolean oneLaunchDispatch(Grid grid) {
        return orderedSlots != 0 && dispatchSendGrid.blocksY() == 1
                && Boolean.parseBoolean(System.getProperty("moecomm.oneLaunchDispatch", "true"))
                && runner.blocksMayWaitForEachOther(DISPATCH, grid,
                        dispatchArgs(dummy, dummy, dummy, numTokens, -1, dummy, dummy, dummy));
    }

    /**
     * Blocks per destination (dispatch send) or source group (the counted dispatch recv): enough
     * for about two blocks per unit of device parallelism in all, since those kernels' bytes are
     * the bulk of dispatch, but no more than M allows (dispatch send runs one block per destination
     * up to {@link #ONE_BLOCK_TOKENS}: every block counts towards the signal, so idle blocks only
     * add latency).
     */
    private int blocksPer(int units, boolean send) {
        int wanted = (2 * runner.concurrentBlocks() + units - 1) / units;
        int m = config.maxTokensPerRank();
        boolean oneBlock = m <= ONE_BLOCK_TOKENS && send;
        int useful = oneBlock ? 1 : (m + MIN_ROWS_PER_BLOCK - 1) / MIN_ROWS_PER_BLOCK; // 1 up to 4 tokens anyway
        return Math.max(1, Math.min(Math.min(wanted, useful), MAX_BLOCKS_PER_UNIT));
    }

    /**
     * Blocks per source group of the source-order receive: the power of two, at most
     * {@code AllToAllKernels.MAX_RECEIVE_PARTS}, that gives each about
     * {@link #PAIRS_PER_RECEIVE_BLOCK} of the group's pairs on average (each part copies the rows
     * of its share of the local experts; {@code AllToAllKernels.receiveInSourceOrder}).
     */
    private int receiveParts() {
        long pairs = (long) config.maxTokensPerRank() * config.topK() / config.worldSize();
        int parts = 1;
        while (parts < AllToAllKernels.MAX_RECEIVE_PARTS && (long) parts * PAIRS_PER_RECEIVE_BLOCK < pairs) {
            parts *= 2;
        }
        return parts;
    }

    // ---- step 3: combine send ----

    @Override
    public void combineSend(Tensor expertY) {
        expect(Phase.DISPATCHED);
        long t0 = System.nanoTime();
        validator.expertY(expertY);
        work(Phase.COMBINE_SENT, () -> {
            runner.launch(COMBINE_SEND, combineSendGrid, combineSendArgs(expertY.buf(), expertNumTokens));
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} combineSend: issued in {}us", rank, round, micros(System.nanoTime() - t0));
            }
        });
    }

    private Object[] combineSendArgs(Buf expertY, Buf counts) {
        return new Object[] {expertY, counts, expertOrigin, combineSend.local(), combineRecv.local(), signals.local(),
                roundState, peerModes, peerOffsets, waitErrors, config.waitTimeout().toNanos(), waitTag,
                rank, config.worldSize(), config.groupSize(), layout.yBytes(), config.expertCapacity(),
                layout.pairsPerRegion(), anyPut};
    }

    // ---- step 4: combine recv ----

    @Override
    public void combineRecv(Tensor weights, Tensor out) {
        expect(Phase.COMBINE_SENT);
        long t0 = System.nanoTime();
        validator.combineOutput(weights, out, m);
        work(Phase.IDLE, () -> {
            runner.launch(combineRecvKernel, combineRecvGrid, combineRecvArgs(weights.buf(), countBuf, out.buf()));
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} combineRecv: m={} issued in {}us", rank, round, m,
                        micros(System.nanoTime() - t0));
            }
        });
    }

    private Object[] combineRecvArgs(Buf weights, Buf counts, Buf out) {
        return new Object[] {combineRecv.local(), pairLocation, weights, counts, out, signals.local(), roundState,
                peerModes, peerOffsets, waitErrors, config.waitTimeout().toNanos(), waitTag, rank, config.worldSize(),
                config.numGroups(), config.hidden(), config.maxTokensPerRank(), config.topK(),
                config.expertOutType().kernelCode(),
                config.outType().kernelCode()};
    }

    /** Frees the handle's buffers; idempotent and never waits for peers. */
    @Override
    public void close() {
        if (phase == Phase.CLOSED) {
            return;
        }
        phase = Phase.CLOSED;
        RuntimeException failure = null;
        try {
            transport.close();
        } catch (RuntimeException e) {
            failure = e;
        }
        if (resources != null) {
            try {
                resources.close();
            } catch (Exception e) {
                RuntimeException r = e instanceof RuntimeException re ? re
                        : new IllegalStateException("closing the handle's resources failed", e);
                if (failure == null) {
                    failure = r;
                } else {
                    failure.addSuppressed(r);
                }
            }
        }
        LOG.debug("rank {} closed handle after {} rounds", rank, round);
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public void abort(String reason) {
        if (phase == Phase.CLOSED || phase == Phase.FAILED) {
            return;
        }
        LOG.warn("rank {}: aborting the handle in round {}: {}", rank, round, reason);
        fail(new MoeCommException("rank " + rank + ": aborted by its caller: " + reason), AbortReason.CALLER);
    }

    @Override
    public boolean isFailed() {
        if (phase != Phase.CLOSED && phase != Phase.FAILED && transport.abortWord() != 0) {
            fail(peerAbort("isFailed"), null);
        }
        return phase == Phase.FAILED;
    }

    /** A peer's abort this rank heard of between waits, seen in {@code where}. */
    private PeerAbortedException peerAbort(String where) {
        long word = transport.abortWord();
        return new PeerAbortedException(rank, AbortReason.rankOf(word), AbortReason.of(word), where);
    }

    // ---- helpers ----

    private void expect(Phase required) {
        raiseDeviceInputError();
        if (phase != Phase.CLOSED && phase != Phase.FAILED && transport.abortWord() != 0) {
            PeerAbortedException e = peerAbort(required.expectedCall());
            fail(e, null);
            throw e;
        }
        if (phase != required) {
            String call = required.expectedCall();
            if (phase == Phase.FAILED) {
                throw new IllegalStateException("rank " + rank + ": " + call + " on a handle that has failed ("
                        + failure.getMessage() + "); close it", failure);
            }
            String msg = phase == Phase.CLOSED ? "rank " + rank + ": " + call + " on a closed handle"
                    : "rank " + rank + ": " + call + " called out of order: the handle expects " + phase.expectedCall()
                            + " next (order: dispatchSend, dispatchRecv, combineSend, combineRecv)";
            throw new IllegalStateException(msg);
        }
    }

    /**
     * The handle has failed with {@code cause}: later calls throw, and unless {@code reason} is
     * null (the cause is a peer's abort, already known to every rank) the peers hear of it
     * through the abort word at once instead of waiting out their timeouts.
     */
    private void fail(RuntimeException cause, AbortReason reason) {
        phase = Phase.FAILED;
        failure = cause;
        if (reason != null) {
            try {
                transport.raiseAbort(reason.word(rank));
            } catch (RuntimeException e) {
                cause.addSuppressed(e);
            }
        }
    }

    /** Why a failure of a call whose work had started is passed on to the peers, or null when it need not be. */
    private static AbortReason abortReason(Throwable failure) {
        return switch (failure) {
            case PeerAbortedException e -> null;
            case WaitTimeoutException e -> AbortReason.WAIT_TIMEOUT;
            default -> AbortReason.CALL_FAILED;
        };
    }

    /**
     * Throws what pack's input check reported on the device (a cheap read of host-visible
     * memory), once the work that found it has finished; the handle is failed from then on.
     */
    private void raiseDeviceInputError() {
        if (inputReport == null || phase == Phase.CLOSED || phase == Phase.FAILED
                || inputReport.getInt(MoeKernels.REPORT_FLAG) == 0) {
            return;
        }
        phase = Phase.FAILED;
        runner.synchronize(); // the report's other slots are current after this
        String when = " (found on the device, in the dispatch of round " + round + " or before; the handle has failed)";
        int value = inputReport.getInt(MoeKernels.REPORT_VALUE);
        int token = inputReport.getInt(MoeKernels.REPORT_TOKEN);
        int slot = inputReport.getInt(MoeKernels.REPORT_SLOT);
        RuntimeException bad = switch (inputReport.getInt(MoeKernels.REPORT_KIND)) {
            case MoeKernels.REPORT_BAD_COUNT -> validator.badCount(value, when);
            case MoeKernels.REPORT_REPEATED_ID -> validator.repeatedExpertId(value, token, slot, when);
            default -> validator.badExpertId(value, token, slot, when);
        };
        fail(bad, AbortReason.INPUT_ERROR);
        throw bad;
    }

    /**
     * Runs a step's work; success moves the handle to phase {@code success}, any failure leaves the
     * handle FAILED and raises the abort word on the peers (unless the failure is a peer's abort).
     */
    private void work(Phase success, Runnable step) {
        try {
            step.run();
        } catch (RuntimeException e) {
            fail(e, abortReason(e));
            throw e;
        } catch (Error e) {
            fail(new MoeCommException("rank " + rank + ": " + e, e), AbortReason.CALL_FAILED);
            throw e;
        }
        phase = success;
    }

    private static long micros(long nanos) {
        return nanos / 1000;
    }
}
