package org.moecomm.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.gpu.SymmetricMemory;

/**
 * Whether the configurations of a GPU run fit the devices its rank processes run on, checked
 * before any process starts: a configuration whose buffers do not fit fails in ways that do not
 * name the memory (on an 80 GB H100, deepseek-v3 at W = 4 and 4096 tokens per rank ended in wait
 * timeouts: benchmarks/results/2026-12-06-row-copy-experiment/). Per rank: the caller's buffers
 * ({@link RankBuffers#deviceBytes}, the expert buffers sized for the contract's capacity), the
 * symmetric heap of its launch's largest configuration (a rank process sizes its heap once, for
 * that one), and {@link #PROCESS_BYTES}.
 *
 * @param deviceBytes the GPU's memory (the smallest of the GPUs used)
 * @param ranksPerGpu the most rank processes that share one GPU
 */
record DeviceFit(long deviceBytes, int ranksPerGpu) {
    /**
     * Device memory a rank process takes besides its buffers and heap (CUDA context, NVSHMEM's own
     * state, the copy baseline's buffers): an allowance, not a measurement.
     */
    static final long PROCESS_BYTES = 1L << 30;

    /** A configuration that does not fit, with its bytes per rank: its buffers and its launch's heap. */
    record Misfit(RunSpec spec, long bufferBytes, long heapBytes) {
        long perRank() {
            return bufferBytes + heapBytes + PROCESS_BYTES;
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%s: %s per rank (buffers %s, symmetric heap %s, process %s)", spec,
                    gib(perRank()), gib(bufferBytes), gib(heapBytes), gib(PROCESS_BYTES));
        }
    }

    /** The configurations of {@code launches} (each run by one launch of the ranks) that do not fit. */
    List<Misfit> misfits(List<List<RunSpec>> launches) {
        List<Misfit> misfits = new ArrayList<>();
        for (List<RunSpec> launch : launches) {
            if (launch.isEmpty()) {
                continue; // a launch left without configurations starts no process
            }
            long heap = heapBytes(launch);
            for (RunSpec s : launch) {
                Misfit m = new Misfit(s, RankBuffers.deviceBytes(s.config()), heap);
                if (m.perRank() * ranksPerGpu > deviceBytes) {
                    misfits.add(m);
                }
            }
        }
        return misfits;
    }

    /**
     * The configurations of {@code specs} to run. When some do not fit: with {@code leaveOut}, the
     * rest (the one with the largest buffers goes first, then the others are checked again: a launch's
     * heap shrinks with its largest configuration), each one left out named on {@code warnings};
     * without it, or when none would be left, an IllegalArgumentException that names them.
     */
    List<RunSpec> runnable(List<RunSpec> specs, boolean leaveOut, PrintStream warnings) {
        List<List<RunSpec>> launches = GpuRunner.launches(specs);
        List<Misfit> misfits = misfits(launches);
        if (misfits.isEmpty()) {
            return specs;
        }
        List<RunSpec> kept = new ArrayList<>();
        List<Misfit> leftOut = new ArrayList<>();
        for (List<RunSpec> launch : launches) {
            List<RunSpec> k = new ArrayList<>(launch);
            for (List<Misfit> m = misfits(List.of(k)); !m.isEmpty(); m = misfits(List.of(k))) {
                Misfit largest = m.stream().max(Comparator.comparingLong(Misfit::bufferBytes)).orElseThrow();
                leftOut.add(largest);
                k.remove(largest.spec());
            }
            kept.addAll(k);
        }
        if (!leaveOut || kept.isEmpty()) {
            throw new IllegalArgumentException("refused " + describe(misfits) + System.lineSeparator()
                    + "Leave them out (--tokens, --presets) or run fewer ranks (--world).");
        }
        warnings.println("leaving out " + describe(leftOut));
        return specs.stream().filter(kept::contains).toList();
    }

    /** What {@code misfits} means, for an error or a warning. */
    String describe(List<Misfit> misfits) {
        List<String> lines = misfits.stream().map(Misfit::toString).toList();
        String ranks = ranksPerGpu == 1 ? "one rank on a GPU" : ranksPerGpu + " ranks on one GPU";
        return String.format(Locale.ROOT, "%d configuration(s) that do not fit %s of %s:%n  %s",
                misfits.size(), ranks, gib(deviceBytes), String.join(System.lineSeparator() + "  ", lines));
    }

    /** The heap a rank process of {@code launch} starts with: its own choice ({@link GpuRankMain#heapFor}), sized as the backend sizes it. */
    private static long heapBytes(List<RunSpec> launch) {
        return SymmetricMemory.heapSizeFor(GpuRankMain.heapFor(launch.stream().map(RunSpec::config)
                .toArray(MoeConfig[]::new)).symmetricBytes());
    }

    static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
    }
}
