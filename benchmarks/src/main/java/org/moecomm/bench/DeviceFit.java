package org.moecomm.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.gpu.SymmetricMemory;

/**
 * Whether the configurations of a GPU run fit the one device its rank processes share, checked
 * before any process starts: a configuration whose buffers do not fit fails in ways that do not
 * name the memory (on an 80 GB H100, deepseek-v3 at W = 4 and 4096 tokens per rank ended in wait
 * timeouts: benchmarks/results/2026-12-06-row-copy-experiment/). Per rank: the caller's buffers
 * ({@link RankBuffers#deviceBytes}, the expert buffers sized for the contract's capacity), the
 * symmetric heap of the launch's largest configuration, and {@link #PROCESS_BYTES}.
 */
final class DeviceFit {
    /**
     * Device memory a rank process takes besides its buffers and heap (CUDA context, NVSHMEM's own
     * state, the copy baseline's buffers): an allowance, not a measurement.
     */
    static final long PROCESS_BYTES = 1L << 30;

    private DeviceFit() {
    }

    /**
     * Why {@code launches} (each a list of configurations run by one launch of {@code ranksPerGpu}
     * processes on a device of {@code deviceBytes}) cannot run, naming every configuration that does
     * not fit; empty when all fit.
     */
    static Optional<String> refusal(List<List<RunSpec>> launches, long deviceBytes, int ranksPerGpu) {
        List<String> misfits = new ArrayList<>();
        for (List<RunSpec> launch : launches) {
            long heap = SymmetricMemory.heapSizeFor(launch.stream()
                    .mapToLong(s -> SymmetricMemory.of(s.config()).total()).max().orElse(0));
            for (RunSpec s : launch) {
                long buffers = RankBuffers.deviceBytes(s.config());
                long perRank = buffers + heap + PROCESS_BYTES;
                if (perRank * ranksPerGpu > deviceBytes) {
                    misfits.add(String.format(Locale.ROOT, "%s: %s per rank (buffers %s, symmetric heap %s, process %s)",
                            s, gib(perRank), gib(buffers), gib(heap), gib(PROCESS_BYTES)));
                }
            }
        }
        if (misfits.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(String.format(Locale.ROOT, "%d configuration(s) do not fit %d ranks on one GPU of %s:%n  %s%n"
                + "Leave them out (--tokens, --presets) or run fewer ranks (--world).", misfits.size(), ranksPerGpu,
                gib(deviceBytes), String.join(System.lineSeparator() + "  ", misfits)));
    }

    static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
    }
}
