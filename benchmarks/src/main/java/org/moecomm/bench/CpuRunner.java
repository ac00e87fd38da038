package org.moecomm.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.moecomm.bench.gpu.CopyBandwidth;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.cpu.CpuCluster;
import org.moecomm.core.protocol.BufferLayout;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * The CPU backend: W ranks as threads of this JVM ({@link CpuCluster}), host clock
 * ({@code System.nanoTime}) around each phase, ranks aligned by a barrier before dispatch and
 * before combine. Plain launches only ({@link LaunchMode#PLAIN}). Rank 0 reports the rounds done
 * ({@link Progress}). Before the configurations, the copy baseline of host memory
 * ({@link #hostCopy}).
 */
final class CpuRunner implements Runner {
    /** Bytes each rank thread copies for the copy baseline: beyond the last-level cache, milliseconds per copy. */
    static final long COPY_BYTES = 16L << 20;
    static final int COPY_WARMUPS = 2;
    static final int COPY_REPS = 10;

    private final PrintStream progress;

    /** With progress lines ({@link Progress}) on {@code progress}, none when null. */
    CpuRunner(PrintStream progress) {
        this.progress = progress;
    }

    @Override
    public List<Measurement> run(List<RunSpec> specs, RoundPlan plan) throws Exception {
        List<Measurement> out = new ArrayList<>();
        CopyBaseline copy = hostCopy(specs.getFirst().world());
        for (RunSpec spec : specs) {
            out.add(runOne(spec, plan, copy, progress == null ? Progress.none()
                    : new Progress(progress, spec.toString(), plan.total(), Progress.INTERVAL)));
        }
        return out;
    }

    /**
     * The copy baseline of the CPU backend ({@link CopyBaseline}): {@link #COPY_BYTES} of host
     * memory copied by {@code MemorySegment.copy} on each of {@code world} rank threads at once,
     * a barrier before each copy.
     */
    static CopyBaseline hostCopy(int world) {
        CyclicBarrier align = new CyclicBarrier(world);
        long[][] nanos = new long[world][];
        try (RankWorkers workers = new RankWorkers(world)) {
            workers.run(rank -> {
                try {
                    nanos[rank] = CopyBaseline.nanos(CopyBandwidth.onHost(COPY_BYTES, 0, COPY_WARMUPS, COPY_REPS,
                            () -> await(align)));
                } catch (RuntimeException | Error e) {
                    align.reset(); // the other ranks stop waiting for this one
                    throw e;
                }
            });
        }
        return CopyBaseline.of(CopyBandwidth.HOST_COPY, COPY_BYTES, Arrays.asList(nanos));
    }

    static String mode(int world) {
        int threads = CpuKernelRunner.defaultBlockThreads();
        return String.format(Locale.ROOT, "%d ranks as threads of 1 JVM (CPU backend, host clock, %s%s, %s)", world,
                threads == 1 ? "one thread per block" : "at most " + threads + " threads per block",
                CpuKernelRunner.vectorSums() ? ", vector sums" : "",
                CpuKernelRunner.loopFormsInC1Only() ? "loop forms in C1" : "loop forms in C1 and C2");
    }

    private static Measurement runOne(RunSpec spec, RoundPlan plan, CopyBaseline copy, Progress progress)
            throws Exception {
        if (spec.launch() != LaunchMode.PLAIN) {
            throw new IllegalArgumentException(spec + ": the CPU backend has only plain launches");
        }
        MoeConfig config = spec.config();
        Workload workload = spec.workload();
        int world = spec.world();
        TrafficModel traffic = TrafficModel.of(workload, new BufferLayout(config));
        long[][][] samples = new long[world][Phases.COUNT][plan.rounds()];
        long[][] roundStarts = new long[world][plan.total()];
        long[][] roundEnds = new long[world][plan.total()];
        List<String> problems = new ArrayList<>();
        CyclicBarrier align = new CyclicBarrier(world);
        try (CpuCluster cluster = CpuCluster.create(world)) {
            List<List<String>> perRank = cluster.runOnAllRanks(rank -> {
                List<String> found = new ArrayList<>();
                try (MoeAllToAll a2a = cluster.createHandle(rank, config)) {
                    RankBuffers buffers = RankBuffers.allocate(a2a);
                    DispatchInput in = buffers.upload(workload.rank(rank), false);
                    long[] t = new long[6];
                    for (int round = 0; round < plan.total(); round++) {
                        boolean checked = plan.checked(round);
                        if (checked) {
                            buffers.poisonOutputs();
                        }
                        await(align);
                        t[0] = System.nanoTime();
                        a2a.dispatchSend(in);
                        t[1] = System.nanoTime();
                        a2a.dispatchRecv(buffers.dispatchOutput());
                        t[2] = System.nanoTime();
                        if (plan.runExperts(round)) {
                            buffers.runExperts();
                        }
                        await(align);
                        t[3] = System.nanoTime();
                        a2a.combineSend(buffers.expertY());
                        t[4] = System.nanoTime();
                        a2a.combineRecv(buffers.weights(), buffers.out());
                        t[5] = System.nanoTime();
                        roundStarts[rank][round] = t[0];
                        roundEnds[rank][round] = t[5];
                        if (plan.timed(round)) {
                            long[] d = Phases.fromInstants(t);
                            for (int p = 0; p < Phases.COUNT; p++) {
                                samples[rank][p][round - plan.warmup()] = d[p];
                            }
                        }
                        if (rank == 0) {
                            progress.roundsDone(round + 1);
                        }
                        if (checked) {
                            ResultCheck.Report report = ResultCheck.dispatch(workload.reference(), rank, a2a.memory(),
                                    buffers.dispatchOutput())
                                    .and(ResultCheck.combine(workload.reference(), rank, workload.expertFunction(),
                                            a2a.memory(), buffers.out()));
                            if (!report.ok()) {
                                found.add(spec + " round " + round + ": " + report);
                            }
                        }
                    }
                    await(align);
                } catch (RuntimeException | Error e) {
                    align.reset(); // the other ranks stop waiting for this one
                    throw e;
                }
                return found;
            });
            perRank.forEach(problems::addAll);
        }
        return Measurement.of(spec, plan, traffic, Arrays.asList(samples), problems, "cpu", mode(world), copy)
                .withRoundsWall(Measurement.roundsWall(roundStarts, roundEnds));
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await(5, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted at a round barrier", e);
        } catch (BrokenBarrierException | TimeoutException e) {
            throw new IllegalStateException("another rank failed or stalled at a round barrier", e);
        }
    }
}
