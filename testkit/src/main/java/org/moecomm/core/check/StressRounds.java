package org.moecomm.core.check;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.cpu.CpuCluster;
import org.moecomm.core.reference.Reference;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * Many checked rounds on one handle, each with new inputs: a random m per rank group (0 and M
 * among them), random -1 ids, routing that is uniform or skewed towards a rank that changes from
 * round to round, m given as a Java int and in device memory in turn, tokens from the
 * quantisation's edge cases when dispatch quantises, and each rank arriving at each round, and
 * in half of the rounds at each half, after its own random delay (the other rounds call dispatch
 * and combine whole: one launch of dispatch at decode sizes). Every round is checked in full
 * against the reference ({@link CheckedRound}): the expert counts, every expert row as a multiset, the rows beyond the
 * counts untouched, and every element of the combine output.
 *
 * <p>Collective: every rank runs {@link #run} with the same config and options. A round's inputs
 * depend on the seed and the round only ({@link #workload}), so every rank builds the same
 * workload without talking to the others.
 */
public final class StressRounds {
    /** At most this many problem lines are kept per rank (the count of failed rounds is exact). */
    static final int MAX_PROBLEMS = 20;

    /**
     * @param rounds        rounds to run
     * @param seed          the first round's seed (round r uses {@code seed + r})
     * @param maxDrop       the largest fraction of (token, slot) entries set to -1 in a round
     * @param maxSkewMicros the longest delay of a rank before each half of a round
     */
    public record Options(int rounds, long seed, double maxDrop, int maxSkewMicros) {
        public Options {
            if (rounds < 1) {
                throw new IllegalArgumentException("rounds must be positive, got " + rounds);
            }
            if (maxDrop < 0 || maxDrop > 1) {
                throw new IllegalArgumentException("maxDrop must be in [0, 1], got " + maxDrop);
            }
            if (maxSkewMicros < 0) {
                throw new IllegalArgumentException("maxSkewMicros must be >= 0, got " + maxSkewMicros);
            }
        }
    }

    /**
     * What one rank saw.
     *
     * @param rowsChecked dispatch rows (expert rows received) plus combine rows (tokens) compared
     * @param failedRounds rounds with at least one problem
     * @param problems the first {@link #MAX_PROBLEMS} problems, each naming its round
     */
    public record Result(int rank, int rounds, long rowsChecked, int failedRounds, List<String> problems,
                         long nanos) {
        public Result {
            problems = List.copyOf(problems);
        }

        public boolean ok() {
            return failedRounds == 0;
        }
    }

    private StressRounds() {
    }

    /** Round {@code round}'s inputs for every rank (the same on every rank). */
    public static Workload workload(MoeConfig config, Options options, int round) {
        SplittableRandom rnd = new SplittableRandom(options.seed() + round);
        int[] m = new int[config.numGroups()];
        int max = config.maxTokensPerRank();
        for (int g = 0; g < m.length; g++) {
            int kind = rnd.nextInt(8);
            m[g] = kind == 0 ? 0 : kind == 1 ? max : rnd.nextInt(max + 1);
        }
        Workload.Options o = Workload.Options.defaults().tokensPerGroup(m).drop(rnd.nextDouble() * options.maxDrop())
                .edgeValues(config.quantizes());
        if (rnd.nextInt(3) != 0) {
            o = o.skewedTo(rnd.nextInt(config.worldSize()));
        }
        return Workload.generate(config, options.seed() + round, o);
    }

    /**
     * Runs the rounds on {@code buffers}' handle. A round that finds problems is recorded and the
     * run goes on; an exception (a peer that timed out, a failed handle) ends it.
     */
    public static Result run(RankBuffers buffers, Options options) {
        return run(buffers, options, done -> { });
    }

    /** Like {@link #run(RankBuffers, Options)}, telling {@code roundsDone} the rounds done after each. */
    public static Result run(RankBuffers buffers, Options options, IntConsumer roundsDone) {
        Objects.requireNonNull(buffers, "buffers");
        Objects.requireNonNull(roundsDone, "roundsDone");
        Objects.requireNonNull(options, "options");
        MoeConfig config = buffers.handle().config();
        int rank = buffers.handle().rank();
        List<String> problems = new ArrayList<>();
        long rows = 0;
        int failed = 0;
        long start = System.nanoTime();
        for (int round = 0; round < options.rounds(); round++) {
            Workload w = workload(config, options, round);
            // the reference before the round's collective calls: a rank computing it mid-round
            // would hold up the others at their bounded waits
            w.reference();
            SplittableRandom skew = new SplittableRandom((options.seed() + round) * 31 + rank);
            Runnable delay = () -> pause(skew, options.maxSkewMicros());
            delay.run();
            // rounds 2 and 3 of every four call the operations whole: dispatch in one launch at decode sizes
            ResultCheck.Report report = round % 4 >= 2 ? CheckedRound.runWhole(buffers, w, round % 2 == 1)
                    : CheckedRound.run(buffers, w, round % 2 == 1, delay);
            rows += rowsChecked(w.reference(), rank);
            if (!report.ok()) {
                failed++;
                if (problems.size() < MAX_PROBLEMS) {
                    problems.add("round " + round + " (" + w.options() + "): " + report);
                }
            }
            roundsDone.accept(round + 1);
        }
        return new Result(rank, options.rounds(), rows, failed, problems, System.nanoTime() - start);
    }

    /**
     * The run on the CPU backend: every rank of {@code config} as a thread of this JVM
     * ({@link CpuCluster}), each with its own handle; rank 0 reports its rounds done to
     * {@code rank0Done}. Returns the ranks' results in rank order.
     */
    public static List<Result> runOnCpu(MoeConfig config, Options options, IntConsumer rank0Done) {
        return runOnCpu(config, options, CpuKernelRunner.defaultBlockThreads(), rank0Done);
    }

    /**
     * {@link #runOnCpu(MoeConfig, Options, IntConsumer)} with the kernels run at most
     * {@code maxBlockThreads} threads per block ({@link CpuCluster#create(int, int)}: the GPU's
     * block size runs the kernels' many-thread paths on the JVM).
     */
    public static List<Result> runOnCpu(MoeConfig config, Options options, int maxBlockThreads,
                                        IntConsumer rank0Done) {
        Objects.requireNonNull(rank0Done, "rank0Done");
        try (CpuCluster cluster = CpuCluster.create(config.worldSize(), maxBlockThreads)) {
            return cluster.runOnAllRanks(rank -> {
                try (MoeAllToAll h = cluster.createHandle(rank, config)) {
                    return run(RankBuffers.allocate(h), options, rank == 0 ? rank0Done : done -> { });
                }
            });
        }
    }

    /** The expert rows this rank receives plus its tokens: the rows {@link CheckedRound} compares. */
    static long rowsChecked(Reference ref, int rank) {
        long rows = ref.inputs(rank).m();
        for (int n : ref.expertCounts(rank)) {
            rows += n;
        }
        return rows;
    }

    private static void pause(SplittableRandom rnd, int maxMicros) {
        if (maxMicros > 0) {
            LockSupport.parkNanos(1000L * rnd.nextInt(maxMicros + 1));
        }
    }
}
