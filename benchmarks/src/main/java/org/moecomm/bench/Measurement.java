package org.moecomm.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What one configuration gave: per phase ({@link Phases} order) the per-round samples of the
 * slowest rank, and rank 0's own samples (what pplx-kernels' benchmark reports), the problems the reference checks found (empty: verified), the bytes moved, and
 * where it ran ({@code device}: the GPU's name, or "cpu"; {@code mode}: how the ranks ran), and
 * the copy bandwidth measured in the same run on that device ({@code copy}; null when not measured),
 * and the wall time of all the rounds, warm-up included ({@code roundsWall}: the sum over the rounds
 * of the span from the round's start on the first rank to its end on the last, so the work
 * between rounds, the poisoning and the checks against the reference, is left out; null when not
 * measured, as on the GPU backend, whose ranks are processes).
 */
record Measurement(RunSpec spec, RoundPlan plan, TrafficModel traffic, List<PhaseTimes> phases,
                   List<PhaseTimes> rankZero, List<String> problems, String device, String mode, CopyBaseline copy,
                   Duration roundsWall) {
    Measurement {
        if (phases.size() != Phases.COUNT || rankZero.size() != Phases.COUNT) {
            throw new IllegalArgumentException(Phases.COUNT + " phases needed, got " + phases.size() + " and "
                    + rankZero.size());
        }
        phases = List.copyOf(phases);
        rankZero = List.copyOf(rankZero);
        problems = List.copyOf(problems);
    }

    boolean verified() {
        return problems.isEmpty();
    }

    PhaseTimes phase(int index) {
        return phases.get(index);
    }

    /** How the handle's calls were launched (the spec's). */
    LaunchMode launch() {
        return spec.launch();
    }

    /** A measurement whose phases come from {@code perRank[rank][phase][round]} nanoseconds: the slowest rank's and rank 0's. */
    static Measurement of(RunSpec spec, RoundPlan plan, TrafficModel traffic, List<long[][]> perRank,
                          List<String> problems, String device, String mode, CopyBaseline copy) {
        return new Measurement(spec, plan, traffic, slowest(perRank, plan.rounds()),
                slowest(perRank.subList(0, 1), plan.rounds()), problems, device, mode, copy, null);
    }

    /** This measurement with {@link #roundsWall()} set. */
    Measurement withRoundsWall(Duration wall) {
        return new Measurement(spec, plan, traffic, phases, rankZero, problems, device, mode, copy, wall);
    }

    /**
     * {@link #roundsWall()} of rounds whose start and end instants ({@code System.nanoTime}) each
     * rank recorded: {@code starts[rank][round]}, {@code ends[rank][round]}.
     */
    static Duration roundsWall(long[][] starts, long[][] ends) {
        long total = 0;
        for (int round = 0; round < starts[0].length; round++) {
            long first = Long.MAX_VALUE;
            long last = Long.MIN_VALUE;
            for (int rank = 0; rank < starts.length; rank++) {
                first = Math.min(first, starts[rank][round]);
                last = Math.max(last, ends[rank][round]);
            }
            total += last - first;
        }
        return Duration.ofNanos(total);
    }

    /**
     * Per round and phase, the slowest rank's time: {@code perRank[rank][phase][round]} nanoseconds
     * to {@link PhaseTimes} in {@link Phases} order. A phase that no rank measured (no samples on
     * every rank: the send/recv split of a graph replay) gives a {@link PhaseTimes} without
     * samples; otherwise every rank needs {@code rounds} samples.
     */
    static List<PhaseTimes> slowest(List<long[][]> perRank, int rounds) {
        if (perRank.isEmpty()) {
            throw new IllegalArgumentException("no rank's samples");
        }
        List<PhaseTimes> out = new ArrayList<>();
        for (int p = 0; p < Phases.COUNT; p++) {
            final int phase = p;
            List<long[]> samples = perRank.stream().map(rank -> rank[phase]).toList();
            boolean measured = samples.stream().anyMatch(s -> s.length > 0);
            out.add(measured ? PhaseTimes.slowest(Phases.NAMES.get(p), samples, rounds)
                    : new PhaseTimes(Phases.NAMES.get(p), rounds));
        }
        return out;
    }

    /** Logical GB/s (BENCHMARKS.md) of {@code bytes} in the median of {@code phase}. */
    double gbps(long bytes, int phase) {
        double us = phase(phase).medianMicros();
        return us > 0 ? bytes / (us * 1e3) : Double.NaN;
    }

    double dispatchGBps() {
        return gbps(traffic.logicalDispatchBytes(), Phases.DISPATCH);
    }

    double combineGBps() {
        return gbps(traffic.logicalCombineBytes(), Phases.COMBINE);
    }

    /** {@link #dispatchGBps()} per rank: the world's logical bytes shared by its W ranks. */
    double dispatchGBpsPerRank() {
        return dispatchGBps() / spec.world();
    }

    double combineGBpsPerRank() {
        return combineGBps() / spec.world();
    }

    /** GB/s of {@code phase}'s device bytes ({@link DeviceBytes}) in its median; NaN when not measured. */
    double deviceGBps(int phase) {
        return gbps(traffic.device().of(phase), phase);
    }

    /** {@link #deviceGBps} as a fraction of the copy bandwidth of the same run; NaN without either. */
    double copyShare(int phase) {
        return copy == null ? Double.NaN : deviceGBps(phase) / copy.gbps();
    }
}
