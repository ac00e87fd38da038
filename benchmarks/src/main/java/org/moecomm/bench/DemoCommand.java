package org.moecomm.bench;

import java.util.List;
import java.util.Locale;
import org.moecomm.core.Preset;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The main job: a multi-rank dispatch + combine on the best backend present (the GPU backend,
 * W rank processes placed by {@code --gpus}: one GPU each where the node has W, else sharing, when
 * CUDA and the NVSHMEM bridge are usable; else the CPU backend),
 * checked against the reference on the first and last round, with per-phase times and the
 * bytes moved.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Run dispatch + combine across W ranks, check against the reference, print per-phase times.")
final class DemoCommand extends RunCommand {
    @Option(names = "--preset", defaultValue = "deepseek-v3", converter = PresetOption.Converter.class,
            completionCandidates = PresetOption.Names.class,
            description = "Workload: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    Preset preset;

    @Option(names = "--tokens", defaultValue = "128", description = "Tokens per rank, M (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--rounds", defaultValue = "20", description = "Timed rounds (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--warmup", description = "Untimed rounds first (default: " + GPU_WARMUP + " on the GPU backend, where"
            + " a round takes microseconds and the host's code must be JIT-compiled before the times show the GPU; "
            + CPU_WARMUP + " on the CPU backend).")
    Integer warmup;

    /** Warm-up rounds on the GPU backend: as many as the benchmark's (docs/benchmarks.md), so the demo's times match it. */
    static final int GPU_WARMUP = 200;
    static final int CPU_WARMUP = 5;

    @Override
    String name() {
        return "demo";
    }

    @Override
    List<RunSpec> specs(BackendChoice.Backend backend) {
        return List.of(new RunSpec(preset.label(), tokens, world, group, skewed, seed, LaunchMode.PLAIN));
    }

    @Override
    RoundPlan plan(BackendChoice.Backend backend) {
        return new RoundPlan(warmup != null ? warmup : backend == BackendChoice.Backend.GPU ? GPU_WARMUP : CPU_WARMUP, rounds,
                true, true);
    }

    @Override
    void started(BackendChoice.Choice choice, List<RunSpec> specs) {
        DemoReport.header(out, label(choice), choice.reason(), specs.getFirst());
        out.flush();
    }

    @Override
    int report(BackendChoice.Choice choice, List<Measurement> results) {
        Measurement m = results.getFirst();
        boolean ok = DemoReport.print(out, m);
        if (ok && choice.backend() == BackendChoice.Backend.GPU && m.plan().warmup() < GPU_WARMUP) {
            out.printf(Locale.ROOT, "(cold: %d warm-up rounds leave the host's code partly interpreted; the times are higher than"
                    + " `moecomm bench` measures after %d)%n", m.plan().warmup(), GPU_WARMUP);
        }
        return ok ? 0 : 1;
    }
}
