package org.moecomm.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.core.launch.LaunchException;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * What {@code demo} and {@code bench} share: the world and routing options, the backend choice
 * ({@link BackendChoice}), the runner of the chosen backend, and error reporting. Subclasses
 * give the configurations and the round plan and print or record the measurements.
 */
abstract class RunCommand implements Callable<Integer> {
    @Option(names = "--world", defaultValue = "4", description = "Ranks, W (default: ${DEFAULT-VALUE}).")
    int world;

    @Option(names = "--group", defaultValue = "1", description = "Ranks per token group, G (default: ${DEFAULT-VALUE}).")
    int group;

    @Option(names = "--skewed", description = "Send half of all picks to the experts of rank 0.")
    boolean skewed;

    @Option(names = "--seed", defaultValue = "1", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--backend", defaultValue = "auto",
            description = "auto (the GPU backend when a CUDA GPU and the NVSHMEM bridge are usable, else cpu), cpu,"
                    + " gpu (W rank processes, placed by --gpus; fails when unavailable) (default: ${DEFAULT-VALUE}).")
    String backend;

    @Mixin
    GpusOption gpus = new GpusOption();

    @Option(names = "--launch-timeout", defaultValue = "600",
            description = "GPU backend: bound in seconds of each launch of the rank processes (default: ${DEFAULT-VALUE}).")
    long launchTimeoutSeconds;

    /** Where results go (tests replace it). */
    PrintStream out = System.out;
    /** Where errors and the rank processes' output go (tests replace it). */
    PrintStream err = System.err;
    /** Whether the GPU backend can run here (tests replace it). */
    Supplier<GpuBackend.Availability> gpuProbe = GpuBackend::availability;

    /** The name errors are reported under. */
    abstract String name();

    /**
     * The configurations to run on {@code backend} (may throw {@link IllegalArgumentException}
     * for bad options, or for options the backend cannot run).
     */
    abstract List<RunSpec> specs(BackendChoice.Backend backend);

    /** The rounds of each configuration on {@code backend}. */
    abstract RoundPlan plan(BackendChoice.Backend backend);

    /**
     * On the GPU, whether configurations whose buffers do not fit the GPU are left out (named on
     * standard error) rather than refused: only where the command chose them itself, never where
     * the user named them.
     */
    boolean leavesOutWhatDoesNotFit() {
        return false;
    }

    /** Prints or records the measurements; returns the exit status. */
    abstract int report(BackendChoice.Choice choice, List<Measurement> results) throws Exception;

    /** Called once the backend is chosen, before anything runs. */
    void started(BackendChoice.Choice choice, List<RunSpec> specs) {
    }

    @Override
    public final Integer call() throws Exception {
        BackendChoice.Choice choice;
        List<RunSpec> specs;
        RoundPlan plan;
        try {
            choice = BackendChoice.choose(backend, gpuProbe);
            plan = plan(choice.backend());
            specs = specs(choice.backend());
            if (choice.backend() == BackendChoice.Backend.GPU) {
                specs = GpuRunner.runnable(specs, gpus.policy, leavesOutWhatDoesNotFit(), err);
            }
        } catch (IllegalArgumentException e) {
            err.println("moecomm " + name() + ": " + e.getMessage());
            return 2;
        }
        started(choice, specs);
        List<Measurement> results;
        try {
            results = runner(choice).run(specs, plan);
        } catch (LaunchException e) {
            err.println("moecomm " + name() + ": the GPU run failed: " + e.getMessage());
            return 1;
        }
        return report(choice, results);
    }

    Runner runner(BackendChoice.Choice choice) {
        return switch (choice.backend()) {
            case CPU -> new CpuRunner(err);
            case GPU -> new GpuRunner(Duration.ofSeconds(launchTimeoutSeconds), err, gpus.policy);
        };
    }

    static String label(BackendChoice.Choice choice) {
        return choice.backend() == BackendChoice.Backend.GPU ? "gpu" : "cpu";
    }
}
