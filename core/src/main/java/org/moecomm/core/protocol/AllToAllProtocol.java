package org.moecomm.core.protocol;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.moecomm.core.DeviceMemory;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Tensor;
import org.moecomm.core.TokenCount;
import org.moecomm.core.backend.SymmetricBuffer;
import org.moecomm.core.backend.Transport;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelRunner;
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

    static final Kernel PACK = new Kernel(MoeKernels.class, "pack");
    static final Kernel SCATTER = new Kernel(MoeKernels.class, "scatter");
    static final Kernel GATHER = new Kernel(MoeKernels.class, "gather");
    static final Kernel REDUCE = new Kernel(MoeKernels.class, "reduce");

    /** Threads per block of every MoE kernel. */
    static final int THREADS = MoeKernels.THREADS;
    /** Cap on the y extent of the pack and scatter grids (each of pack's blocks repeats the numbering). */
    static final int MAX_BLOCKS_PER_UNIT = 64;
    /** Rows of one local expert that one gather block copies at most (the launch's y extent is capacity / this). */
    static final int GATHER_ROWS_PER_BLOCK = 32;

    private final MoeConfig config;
    private final BufferLayout layout;
    private final Validator validator;
    private final Transport transport;
    private final KernelRunner runner;
    private final DeviceMemory memory;
    private final AutoCloseable resources;
    private final int rank;
    private final int group;
    private final int member;

    // symmetric
    private final SymmetricBuffer dispatchRecv;
    private final SymmetricBuffer dispatchSend;
    private final SymmetricBuffer combineRecv;
    private final SymmetricBuffer combineSend;
    private final SymmetricBuffer signals;
    // local
    private final Buf sendRows;
    private final Buf pairLocation;
    private final Buf pairsFromGroup;
    private final Buf expertOrigin;
    private final Buf numTokens;
    private final Buf dummy;
    /** Where the device reports a bad expert id, when the ids are checked there ({@code null} otherwise). */
    private final Buf inputReport;
    // the transport operations of each step, described once
    private final Transport.PutBatch dispatchPuts;
    private final Transport.WaitBatch dispatchWaits;
    private final Transport.WaitBatch combineDoneWaits;
    private final Transport.PutBatch combinePuts;
    private final Transport.WaitBatch combineWaits;
    private final Transport.SignalBatch combineDoneSignals;

    private Phase phase = Phase.IDLE;
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
        this.group = config.groupOf(rank);
        this.member = rank % config.groupSize();

        this.dispatchRecv = transport.allocateSymmetric(layout.dispatchRecvBytes());
        this.dispatchSend = transport.allocateSymmetric(layout.dispatchSendBytes());
        this.combineRecv = transport.allocateSymmetric(layout.combineRecvBytes());
        this.combineSend = transport.allocateSymmetric(layout.combineSendBytes());
        this.signals = transport.allocateSymmetric(layout.signalBytes());

        this.sendRows = memory.allocate(layout.sendRowsBytes());
        this.pairLocation = memory.allocate(layout.pairLocationBytes());
        this.pairsFromGroup = memory.allocate(layout.pairsFromGroupBytes());
        this.expertOrigin = memory.allocate(layout.expertOriginBytes());
        this.numTokens = memory.allocate(layout.numTokensBytes());
        this.dummy = memory.allocate(BufferLayout.DUMMY_BYTES);
        this.inputReport = validator.checksOnHost() ? null : memory.allocateHostVisible(4L * MoeKernels.REPORT_INTS);

        List<Transport.Put> dp = new ArrayList<>();
        List<Transport.Wait> dw = new ArrayList<>();
        for (int j = 0; j < config.numGroups(); j++) {
            int peer = j * config.groupSize() + member;
            dp.add(new Transport.Put(layout.dispatchRegionOffset(j), layout.dispatchRegionOffset(group), j,
                    layout.dispatchSignal(group), peer));
            dw.add(new Transport.Wait(layout.dispatchSignal(j), peer, "dispatch[" + j + "]"));
        }
        this.dispatchPuts = new Transport.PutBatch(dispatchSend.local(), dispatchRecv, sendRows, layout.rowBytes(),
                signals, dp);
        this.dispatchWaits = new Transport.WaitBatch(signals, dw);
        List<Transport.Put> cp = new ArrayList<>();
        for (int g = 0; g < config.numGroups(); g++) {
            for (int i = 0; i < config.groupSize(); i++) {
                cp.add(new Transport.Put(layout.combineRegionOffset(g), layout.combineRegionOffset(rank), g,
                        layout.combineSignal(rank), g * config.groupSize() + i));
            }
        }
        this.combinePuts = new Transport.PutBatch(combineSend.local(), combineRecv, pairsFromGroup, layout.yBytes(),
                signals, cp);
        List<Transport.Wait> doneWaits = new ArrayList<>();
        List<Transport.Wait> cw = new ArrayList<>();
        List<Integer> everyone = new ArrayList<>();
        for (int d = 0; d < config.worldSize(); d++) {
            doneWaits.add(new Transport.Wait(layout.combineDoneSignal(d), d, "combineDone[" + d + "]"));
            cw.add(new Transport.Wait(layout.combineSignal(d), d, "combine[" + d + "]"));
            everyone.add(d);
        }
        this.combineDoneWaits = new Transport.WaitBatch(signals, doneWaits);
        this.combineWaits = new Transport.WaitBatch(signals, cw);
        this.combineDoneSignals = new Transport.SignalBatch(signals, layout.combineDoneSignal(rank),
                Transport.SignalOp.SET, everyone);

        LOG.info("rank {} created handle: {}; symmetric {} bytes per rank, local {} bytes", rank, config,
                layout.symmetricBytes(), layout.localBytes());
    }

    public BufferLayout layout() {
        return layout;
    }

    /** The phase this handle is in (which call it accepts next). */
    public Phase phase() {
        return phase;
    }

    /** Rounds started so far (a round starts with dispatchSend). */
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
        int rows = validator.dispatchInput(in);
        Buf counts = switch (in.count()) {
            case TokenCount.Fixed f -> numTokens;
            case TokenCount.InBuffer b -> b.buf().slice(b.index() * 4, 4);
        };
        long t1 = System.nanoTime();
        work(() -> {
            round++;
            m = rows;
            countBuf = counts;
            int s = config.scalesPerToken();
            // pack writes a host-known m into numTokens itself and checks ids and count where the
            // host does not: one launch, no copy from the host
            int fixedTokens = in.count() instanceof TokenCount.Fixed f ? f.value() : -1;
            runner.launch(PACK, Grid.of(config.worldSize(), blocksPer(config.worldSize()), THREADS), in.x().buf(),
                    in.xScale() != null ? in.xScale().buf() : dummy, in.indices().buf(), countBuf,
                    dispatchSend.local(), sendRows, pairLocation, inputReport != null ? inputReport : dummy, layout.xBytes(),
                    s, config.topK(), config.expertsPerRank(), config.groupSize(), member, layout.rowBytes(),
                    config.maxTokensPerRank(), layout.pairsPerRegion(), fixedTokens, inputReport != null ? 1 : 0);
            long t2 = System.nanoTime();
            transport.putWithSignal(dispatchPuts, BufferLayout.signalValue(round, 0));
            long t3 = System.nanoTime();
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} dispatchSend: m={} rowsSent={} validate={}us pack={}us put={}us", rank,
                        round, m, sumInts(sendRows, config.numGroups()), micros(t1 - t0), micros(t2 - t1),
                        micros(t3 - t2));
            }
        });
    }

    // ---- step 2: dispatch recv ----

    @Override
    public void dispatchRecv(DispatchOutput out) {
        Objects.requireNonNull(out, "out");
        expect(Phase.DISPATCH_SENT);
        long t0 = System.nanoTime();
        validator.dispatchOutput(out);
        work(() -> {
            Buf counts = out.expertNumTokens().buf().slice(0, 4L * config.expertsPerRank());
            memory.fill(counts, (byte) 0);
            transport.waitAtLeast(dispatchWaits, BufferLayout.signalValue(round, 0));
            long t1 = System.nanoTime();
            runner.launch(SCATTER, Grid.of(config.numGroups(), blocksPer(config.numGroups()), THREADS), dispatchRecv.local(),
                    signals.local().slice(0, 8L * config.numGroups()), counts, out.expertX().buf(),
                    out.expertXScale() != null ? out.expertXScale().buf() : dummy, expertOrigin, pairsFromGroup,
                    layout.xBytes(), config.scalesPerToken(), config.topK(), layout.rowBytes(),
                    config.maxTokensPerRank(), config.numGroups(), layout.pairsPerRegion());
            expertNumTokens = counts;
            long t2 = System.nanoTime();
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} dispatchRecv: pairsReceived={} wait={}us scatter={}us", rank, round,
                        sumInts(counts, config.expertsPerRank()), micros(t1 - t0), micros(t2 - t1));
            }
        });
    }

    /**
     * Blocks per destination (pack) or source group (scatter): enough for about two blocks per
     * unit of device parallelism in all, since those kernels' bytes are the bulk of dispatch.
     */
    private int blocksPer(int units) {
        int wanted = (2 * runner.concurrentBlocks() + units - 1) / units;
        return Math.max(1, Math.min(wanted, MAX_BLOCKS_PER_UNIT));
    }

    // ---- step 3: combine send ----

    @Override
    public void combineSend(Tensor expertY) {
        expect(Phase.DISPATCHED);
        long t0 = System.nanoTime();
        validator.expertY(expertY);
        work(() -> {
            int capacity = config.expertCapacity();
            int chunks = Math.max(1, Math.min((capacity + GATHER_ROWS_PER_BLOCK - 1) / GATHER_ROWS_PER_BLOCK, 65535));
            runner.launch(GATHER, Grid.of(config.expertsPerRank(), chunks, THREADS), expertY.buf(), expertNumTokens,
                    expertOrigin, combineSend.local(), layout.yBytes(), capacity);
            long t1 = System.nanoTime();
            if (round > 1) {
                transport.waitAtLeast(combineDoneWaits, round - 1);
            }
            long t2 = System.nanoTime();
            transport.putWithSignal(combinePuts, BufferLayout.signalValue(round, 0));
            long t3 = System.nanoTime();
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} combineSend: pairsSent={} gather={}us waitDone={}us put={}us", rank, round,
                        sumInts(pairsFromGroup, config.numGroups()), micros(t1 - t0), micros(t2 - t1),
                        micros(t3 - t2));
            }
        });
    }

    // ---- step 4: combine recv ----

    @Override
    public void combineRecv(Tensor weights, Tensor out) {
        expect(Phase.COMBINE_SENT);
        long t0 = System.nanoTime();
        validator.combineOutput(weights, out, m);
        work(() -> {
            transport.waitAtLeast(combineWaits, BufferLayout.signalValue(round, 0));
            long t1 = System.nanoTime();
            runner.launch(REDUCE, Grid.of(config.maxTokensPerRank(), THREADS), combineRecv.local(), pairLocation,
                    weights.buf(), countBuf, out.buf(), config.hidden(), config.topK(),
                    config.expertOutType().kernelCode(), config.outType().kernelCode());
            long t2 = System.nanoTime();
            transport.signal(combineDoneSignals, round);
            if (LOG.isDebugEnabled()) {
                LOG.debug("rank {} round {} combineRecv: m={} wait={}us reduce={}us", rank, round, m, micros(t1 - t0),
                        micros(t2 - t1));
            }
        });
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

    // ---- helpers ----

    private void expect(Phase required) {
        raiseDeviceInputError();
        if (phase != required) {
            String call = required.expectedCall();
            String msg = switch (phase) {
                case CLOSED -> "rank " + rank + ": " + call + " on a closed handle";
                case FAILED -> "rank " + rank + ": " + call + " on a handle whose earlier call failed; close it";
                default -> "rank " + rank + ": " + call + " called out of order: the handle expects "
                        + phase.expectedCall() + " next (order: dispatchSend, dispatchRecv, combineSend, combineRecv)";
            };
            throw new IllegalStateException(msg);
        }
    }

    /**
     * Throws what pack's input check reported on the device (a cheap read of host-visible
     * memory), once the work that found it has finished; the handle is failed from then on.
     */
    private void raiseDeviceInputError() {
        if (inputReport == null || inputReport.getInt(MoeKernels.REPORT_FLAG) == 0 || phase == Phase.CLOSED) {
            return;
        }
        phase = Phase.FAILED;
        runner.synchronize(); // the report's other slots are current after this
        String when = " (found on the device, in the dispatch of round " + round + " or before; the handle has failed)";
        int value = inputReport.getInt(MoeKernels.REPORT_VALUE);
        throw inputReport.getInt(MoeKernels.REPORT_KIND) == MoeKernels.REPORT_BAD_COUNT
                ? validator.badCount(value, when)
                : validator.badExpertId(value, inputReport.getInt(MoeKernels.REPORT_TOKEN),
                        inputReport.getInt(MoeKernels.REPORT_SLOT), when);
    }

    /** Runs a step's work; success advances the phase, any failure leaves the handle FAILED. */
    private void work(Runnable step) {
        Phase from = phase;
        try {
            step.run();
        } catch (RuntimeException | Error e) {
            phase = Phase.FAILED;
            throw e;
        }
        phase = from.next();
    }

    /** Debug only: sums {@code n} int32 of a device buffer (a synchronising copy on a GPU). */
    private long sumInts(Buf buf, int n) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(4L * n, 4);
            memory.copyToHost(buf, 0, host);
            long sum = 0;
            for (int i = 0; i < n; i++) {
                sum += host.getAtIndex(ValueLayout.JAVA_INT, i);
            }
            return sum;
        }
    }

    private static long micros(long nanos) {
        return nanos / 1000;
    }
}
