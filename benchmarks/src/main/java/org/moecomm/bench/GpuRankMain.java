package org.moecomm.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.moecomm.bench.gpu.CopyBandwidth;
import org.moecomm.bridge.cuda.CudaContext;
import org.moecomm.bridge.cuda.CudaEvent;
import org.moecomm.bridge.cuda.CudaStream;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.core.gpu.GpuEndpoint;
import org.moecomm.core.gpu.HalfGraphs;
import org.moecomm.core.gpu.SymmetricMemory;

/**
 * One rank process of a GPU demo or benchmark run, started by {@link GpuRunner} through
 * {@link org.moecomm.core.launch.LocalLauncher}. Arguments: {@code RESULT_DIR PLAN SPEC...}
 * ({@link RoundPlan#encode()}, {@link RunSpec#encode()}).
 *
 * <p>Starts the GPU backend once with room for a handle of the largest configuration (the
 * handles are made one after the other), measures the copy baseline with every rank
 * ({@link CopyBaseline}), then per spec: a handle, the rank's inputs uploaded once, and
 * {@link RoundPlan#total()} rounds. Each round: a barrier of all ranks (which also drains the
 * stream; with {@link RoundStart#DEVICE} it is only enqueued, with {@link RoundStart#ALIGNED} the
 * hosts then meet at a {@link HostSpinBarrier}), CUDA events on the handle's stream around
 * dispatch send and dispatch recv, the experts on the host (untimed), another barrier, events
 * around combine send and combine recv; the checked rounds poison the outputs first and compare
 * with the reference after.
 *
 * <p>With {@link LaunchMode#GRAPH} the inputs are uploaded with the count in a device buffer,
 * the dispatch calls are captured once into one {@link org.moecomm.core.gpu.RoundGraph} and the combine calls into
 * another ({@link GpuBackend#capture}), and each round replays them in place of the calls: the
 * same barriers, experts, poisoning and checks, events around each replay only (the whole
 * dispatch and the whole combine; the send/recv phases have no samples). With
 * {@link LaunchMode#WHOLE} each round calls {@code dispatch} and {@code combine} (the calls a
 * graph captures), launched from the host, with events around each call only.
 *
 * <p>The first configuration of each launch mode also warms the process
 * ({@link RoundPlan#warmingTheProcess()}, {@link #warmsTheProcess}): its untimed rounds run until
 * that mode's host call path is compiled, since a launch's host time is part of what is timed.
 *
 * <p>Writes {@link RankSamples} into {@code RESULT_DIR}; a failed check is recorded there (the
 * run goes on), an exception ends the process with a non-zero status.
 */
public final class GpuRankMain {
    /** Bytes each rank copies for the copy baseline: far beyond the L2 cache, a few hundred us per copy. */
    static final long COPY_BYTES = 256L << 20;
    /** The memset before each copy (the kernel benchmark's L2 flush, smaller: the copy itself is 256 MiB). */
    static final long COPY_FLUSH_BYTES = 64L << 20;
    static final int COPY_WARMUPS = 5;
    static final int COPY_REPS = 30;

    private GpuRankMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: GpuRankMain RESULT_DIR PLAN SPEC...");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        RoundPlan plan = RoundPlan.decode(args[1]);
        List<RunSpec> specs = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            specs.add(RunSpec.decode(args[i]));
        }
        MoeConfig[] configs = specs.stream().map(RunSpec::config).toArray(MoeConfig[]::new);
        try (GpuBackend gpu = GpuBackend.start(heapFor(configs));
             HostSpinBarrier aligned = plan.start() == RoundStart.ALIGNED ? HostSpinBarrier.open(hostStartFile(dir),
                     gpu.rank(), gpu.worldSize(), longestWait(configs)) : null) {
            int rank = gpu.rank();
            Path file = RankSamples.file(dir, rank);
            Files.deleteIfExists(file);
            RankSamples.append(file, List.of(RankSamples.deviceLine(gpu.context().deviceName()), copyLine(gpu)));
            for (int i = 0; i < specs.size(); i++) {
                RunSpec spec = specs.get(i);
                long t0 = System.nanoTime();
                List<String> problems = new ArrayList<>();
                long[][] samples = run(gpu, spec, configs[i], warmsTheProcess(specs, i) ? plan.warmingTheProcess()
                        : plan, aligned, problems);
                RankSamples.append(file, RankSamples.lines(i, spec, problems, samples));
                if (rank == 0) {
                    System.out.printf("%s: %d rounds in %.1f s%s%n", spec, plan.total(), (System.nanoTime() - t0) / 1e9,
                            problems.isEmpty() ? "" : ", CHECK FAILED");
                }
            }
        }
    }

    /**
     * Whether configuration {@code i} is the first of its launch mode: each mode calls the handle
     * its own way (the four calls, the two whole calls, the replays), so each has its own host path
     * to compile.
     */
    static boolean warmsTheProcess(List<RunSpec> specs, int i) {
        LaunchMode mode = specs.get(i).launch();
        return specs.subList(0, i).stream().noneMatch(s -> s.launch() == mode);
    }

    /** The file of the ranks' {@link HostSpinBarrier} for {@link RoundStart#ALIGNED} (made by {@link GpuRunner}). */
    static Path hostStartFile(Path resultDir) {
        return resultDir.resolve("host-start.bin");
    }

    /** The bound of the host spin barrier: the longest wait of the configurations' handles. */
    private static Duration longestWait(MoeConfig... configs) {
        return Arrays.stream(configs).map(MoeConfig::waitTimeout).max(Comparator.naturalOrder()).orElseThrow();
    }

    /**
     * Room in the symmetric heap for the largest of {@code configs}: the handles are made one after
     * the other, each closed (its symmetric buffers freed) before the next, so the heap need not
     * hold them all (deepseek-v3 at W = 8 with every M up to 4096 would need 14.3 GiB per rank, the
     * largest alone 7.45 GiB).
     */
    static GpuBackend.Options heapFor(MoeConfig... configs) {
        MoeConfig largest = Arrays.stream(configs).max(Comparator.comparingLong(c -> SymmetricMemory.of(c).total()))
                .orElseThrow(() -> new IllegalArgumentException("no configuration"));
        return GpuBackend.Options.forConfigs(largest);
    }

    /**
     * The copy baseline ({@link CopyBaseline}) of this rank: {@link #COPY_BYTES} copied
     * {@link #COPY_REPS} times, every rank at once (a barrier of an endpoint of its own before
     * each copy, closed again before the sweep).
     */
    private static String copyLine(GpuBackend gpu) {
        try (GpuEndpoint endpoint = gpu.openEndpoint(Duration.ofMinutes(1))) {
            double[] ms = CopyBandwidth.onGpu(gpu.context(), COPY_BYTES, COPY_FLUSH_BYTES, COPY_WARMUPS, COPY_REPS,
                    endpoint.transport()::barrier);
            return RankSamples.copyLine(CopyBandwidth.GPU_COPY, COPY_BYTES, ms);
        }
    }

    private static long[][] run(GpuBackend gpu, RunSpec spec, MoeConfig config, RoundPlan plan,
                                HostSpinBarrier aligned, List<String> problems) {
        Workload workload = spec.workload();
        // computed here, before the collective handle creation, so that no rank computes it while
        // the others wait for it at a bounded barrier
        workload.reference();
        CudaEvent[] ev = new CudaEvent[6];
        try (MoeAllToAll h = gpu.createHandle(config)) {
            // A failure of this rank's own work (its tensors' allocation running out of device
            // memory, a capture) aborts the handle: the peers, already in the round, fail at once
            // naming this rank, instead of timing out while this rank's close waits for them.
            return h.callOrAbort(() -> runOnHandle(gpu, h, spec, workload, plan, aligned, ev, problems));
        } finally {
            for (CudaEvent e : ev) {
                if (e != null) {
                    e.close();
                }
            }
        }
    }

    /** One spec's rounds on its handle {@code h}: its buffers, the graphs in graph mode, the rounds, the closing barrier. */
    private static long[][] runOnHandle(GpuBackend gpu, MoeAllToAll h, RunSpec spec, Workload workload,
                                        RoundPlan plan, HostSpinBarrier aligned, CudaEvent[] ev,
                                        List<String> problems) {
        CudaContext ctx = gpu.context();
        boolean graph = spec.launch() == LaunchMode.GRAPH;
        GpuBackend.DeviceTiming timing = gpu.deviceTiming(h);
        CudaStream stream = timing.stream();
        Runnable start = startOfHalf(plan.start(), timing, aligned);
        for (int e = 0; e < ev.length; e++) {
            ev[e] = ctx.createEvent(true);
        }
        RankBuffers buffers = RankBuffers.allocate(h);
        // a graph keeps the launch arguments of its capture: with it, m is read from device memory
        DispatchInput in = buffers.upload(workload.rank(h.rank()), graph);
        long[][] samples;
        if (graph) {
            try (HalfGraphs graphs = HalfGraphs.capture(gpu, buffers.handle(), in, buffers.dispatchOutput(),
                    buffers.combineInput(), buffers.out())) {
                samples = rounds(spec, plan, workload, buffers, start, stream, ev, graphs.dispatch()::replay,
                        graphs.combine()::replay, problems);
            }
        } else if (spec.launch() == LaunchMode.WHOLE) {
            samples = rounds(spec, plan, workload, buffers, start, stream, ev,
                    () -> h.dispatch(in, buffers.dispatchOutput()), () -> h.combine(buffers.combineInput(), buffers.out()),
                    problems);
        } else {
            samples = rounds(spec, plan, workload, buffers, start, stream, ev, () -> {
                h.dispatchSend(in);
                ev[1].record(stream);
                h.dispatchRecv(buffers.dispatchOutput());
            }, () -> {
                h.combineSend(buffers.expertY());
                ev[4].record(stream);
                h.combineRecv(buffers.weights(), buffers.out());
            }, problems);
        }
        // every rank done with its checks before the collective close (this also raises a
        // timeout that the last rounds recorded)
        timing.barrier().run();
        return samples;
    }

    /** What brings the ranks together before each timed half ({@link RoundStart}). */
    private static Runnable startOfHalf(RoundStart how, GpuBackend.DeviceTiming timing, HostSpinBarrier aligned) {
        return switch (how) {
            case HOST -> timing.barrier();
            case ALIGNED -> {
                Runnable barrier = timing.barrier();
                yield () -> {
                    barrier.run();
                    aligned.await();
                };
            }
            case DEVICE -> timing.barrierOnStream();
        };
    }

    /**
     * The rounds of one spec on its handle: {@code start} before each half ({@link #startOfHalf}),
     * then {@code dispatch} and {@code combine} enqueue a half
     * (plain: the two calls with event 1, resp. 4, recorded between them; whole: one call; graph:
     * one replay).
     * Events 0 and 2 bracket the dispatch, 3 and 5 the combine. Returns the samples
     * {@code [phase][timed round]}; in whole and graph mode the send/recv phases have none.
     */
    private static long[][] rounds(RunSpec spec, RoundPlan plan, Workload workload, RankBuffers buffers,
                                   Runnable start, CudaStream stream, CudaEvent[] ev, Runnable dispatch,
                                   Runnable combine, List<String> problems) {
        boolean split = spec.launch().timesSendAndRecv();
        long[][] samples = new long[Phases.COUNT][];
        for (int p = 0; p < Phases.COUNT; p++) {
            samples[p] = new long[split || !Phases.isSendOrRecv(p) ? plan.rounds() : 0];
        }
        MoeAllToAll h = buffers.handle();
        int rank = h.rank();
        long[] t = new long[6];
        // rank 0's output reaches the launcher's standard error, prefixed [rank 0]
        Progress progress = rank == 0 ? new Progress(System.out, spec.toString(), plan.total(), Progress.INTERVAL)
                : Progress.none();
        for (int round = 0; round < plan.total(); round++) {
            progress.roundsDone(round);
            boolean checked = plan.checked(round);
            if (checked) {
                buffers.poisonOutputs();
            }
            start.run();
            ev[0].record(stream);
            dispatch.run();
            ev[2].record(stream);
            if (plan.runExperts(round)) {
                buffers.runExperts();
            }
            start.run();
            ev[3].record(stream);
            combine.run();
            ev[5].record(stream);
            ev[5].synchronize();
            if (plan.timed(round)) {
                int i = round - plan.warmup();
                if (split) {
                    t[0] = 0;
                    for (int e = 1; e < 6; e++) {
                        t[e] = nanosBetween(ev[0], ev[e]);
                    }
                    long[] d = Phases.fromInstants(t);
                    for (int p = 0; p < Phases.COUNT; p++) {
                        samples[p][i] = d[p];
                    }
                } else {
                    samples[Phases.DISPATCH][i] = nanosBetween(ev[0], ev[2]);
                    samples[Phases.COMBINE][i] = nanosBetween(ev[3], ev[5]);
                }
            }
            if (checked) {
                ResultCheck.Report report = CheckedRound.outputs(buffers, workload);
                if (!report.ok()) {
                    problems.add(spec + " round " + round + ": " + report);
                }
            }
        }
        return samples;
    }

    /** Nanoseconds from {@code start} to {@code end} (both recorded and completed). */
    private static long nanosBetween(CudaEvent start, CudaEvent end) {
        return Math.round(end.elapsedMillisSince(start) * 1e6);
    }
}
