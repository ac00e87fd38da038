package org.moecomm.bench;

import java.util.List;
import org.moecomm.core.Preset;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The main job: a multi-rank dispatch + combine on the best backend present (the GPU backend,
 * W processes on one GPU, when CUDA and the NVSHMEM bridge are usable; else the CPU backend),
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

    @Option(names = "--warmup", defaultValue = "5", description = "Untimed rounds first (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Override
    String name() {
        return "demo";
    }

    @Override
    List<RunSpec> specs(BackendChoice.Backend backend) {
        return List.of(new RunSpec(preset.label(), tokens, world, group, skewed, seed, LaunchMode.PLAIN));
    }

    @Override
    RoundPlan plan() {
        return new RoundPlan(warmup, rounds, true, true);
    }

    @Override
    void started(BackendChoice.Choice choice, List<RunSpec> specs) {
        DemoReport.header(out, label(choice), choice.reason(), specs.getFirst());
        out.flush();
    }

    @Override
    int report(BackendChoice.Choice choice, List<Measurement> results) {
        return DemoReport.print(out, results.getFirst()) ? 0 : 1;
    }
}
