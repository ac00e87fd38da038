package org.moecomm.core.launch;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@link LocalLauncher}'s command line, parsed by picocli: the options become a
 * {@link LocalLauncher.Builder}; everything after the main class goes to the ranks unchanged.
 * A bad option is one line on standard error and exit status 2.
 */
@Command(name = "LocalLauncher", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Start the W rank processes of a job on this node (same java and class path as this JVM).")
final class LauncherCommand implements Callable<Integer> {
    @Option(names = {"-n", "--ranks"}, defaultValue = "1", paramLabel = "W",
            description = "Rank processes (default: ${DEFAULT-VALUE}).")
    int ranks;

    @Option(names = "--gpus", defaultValue = "shared", converter = PolicyConverter.class,
            completionCandidates = PolicyNames.class, paramLabel = "POLICY",
            description = "Where the ranks run: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    LocalLauncher.GpuPolicy gpus;

    @Option(names = "--devices", split = ",", paramLabel = "GPU",
            description = "GPUs (CUDA_VISIBLE_DEVICES entries) to use (default: this process's, else all).")
    List<String> devices;

    @Option(names = "--timeout", defaultValue = "600", paramLabel = "SECONDS",
            description = "Bound of the whole run (default: ${DEFAULT-VALUE}).")
    long timeoutSeconds;

    @Option(names = "--jvm", paramLabel = "OPTION", description = "A JVM option of every rank (repeatable).")
    List<String> jvmOptions = new ArrayList<>();

    @Option(names = "--env", paramLabel = "NAME=VALUE", description = "An environment variable of every rank (repeatable).")
    Map<String, String> env = Map.of();

    @Option(names = "--rank-wrapper", paramLabel = "WORDS",
            description = "Run every rank's java under this command, e.g. \"compute-sanitizer --tool memcheck\" "
                    + "(words separated by spaces; default: $" + LaunchEnv.RANK_WRAPPER + ").")
    String rankWrapper;

    @Parameters(index = "0", paramLabel = "MAIN_CLASS", description = "The ranks' main class.")
    String mainClass;

    @Parameters(index = "1..*", paramLabel = "ARGS", description = "The ranks' arguments.")
    List<String> args = new ArrayList<>();

    @Spec
    CommandSpec spec;

    /** Parses {@code argv}, runs the job, returns the exit status. */
    static int execute(String... argv) {
        return commandLine(new LauncherCommand()).execute(argv);
    }

    /** The parser: options end at the main class (the ranks' own options follow it). */
    static CommandLine commandLine(LauncherCommand command) {
        CommandLine cl = new CommandLine(command).setStopAtPositional(true);
        cl.setParameterExceptionHandler((e, args) -> {
            e.getCommandLine().getErr().println("LocalLauncher: " + e.getMessage() + " (--help lists the options)");
            return 2;
        });
        return cl;
    }

    /** The launcher these options describe. */
    LocalLauncher.Builder builder() {
        LocalLauncher.Builder b = LocalLauncher.builder().worldSize(ranks).gpuPolicy(gpus).mainClass(mainClass).args(args)
                .timeout(Duration.ofSeconds(timeoutSeconds));
        if (devices != null) {
            b.devices(devices);
        }
        jvmOptions.forEach(b::jvmOption);
        env.forEach(b::env);
        if (rankWrapper != null) {
            b.rankWrapper(LocalLauncher.wrapperWords(rankWrapper));
        }
        return b;
    }

    @Override
    public Integer call() {
        LocalLauncher launcher;
        try {
            launcher = builder().build();
        } catch (IllegalArgumentException e) {
            spec.commandLine().getErr().println("LocalLauncher: " + e.getMessage());
            return 2;
        }
        try {
            LocalLauncher.Result r = launcher.run();
            spec.commandLine().getOut().println("[launcher] all " + r.exitCodes().length + " ranks succeeded in "
                    + r.elapsed().toMillis() + " ms");
            return 0;
        } catch (LaunchException e) {
            spec.commandLine().getErr().println("[launcher] " + e.getMessage());
            return e.exitCode() != 0 ? e.exitCode() : 1;
        }
    }

    static final class PolicyNames implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return java.util.Arrays.stream(LocalLauncher.GpuPolicy.values()).map(LocalLauncher.GpuPolicy::label).iterator();
        }
    }

    static final class PolicyConverter implements CommandLine.ITypeConverter<LocalLauncher.GpuPolicy> {
        @Override
        public LocalLauncher.GpuPolicy convert(String value) {
            try {
                return LocalLauncher.GpuPolicy.byLabel(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }
}
