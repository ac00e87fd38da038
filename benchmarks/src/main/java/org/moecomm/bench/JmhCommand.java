package org.moecomm.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Unmatched;

/**
 * Runs the JMH suites packaged in this jar; other arguments are JMH's own (for example
 * {@code -p tokens=1}). With {@code --results-dir} the JSON results go to a new file there,
 * {@code <date>-<arch>-<cpus>cpu-<kind>.json} (never over an existing one), with the command
 * recorded in every entry ({@link JmhResults}).
 */
@Command(name = "jmh", description = "Run the JMH benchmarks (other arguments are passed to JMH; -h lists them).")
final class JmhCommand implements Callable<Integer> {
    @Option(names = "--results-dir", description = "Write JMH's JSON into a new file in this folder.")
    Path resultsDir;

    @Option(names = "--results-kind", defaultValue = "jmh-cpu-backend",
            description = "Last part of the results file's name (default: ${DEFAULT-VALUE}).")
    String kind;

    @Option(names = "--command", description = "Command recorded in the results (default: moecomm jmh and the JMH arguments).")
    String command;

    @Unmatched
    List<String> args = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        CommandLineOptions jmh = new CommandLineOptions(args.toArray(String[]::new));
        if (resultsDir == null) {
            new Runner(jmh).run();
            return 0;
        }
        Files.createDirectories(resultsDir);
        Path file = resultsFile(resultsDir, LocalDate.now(ZoneOffset.UTC), kind);
        Options options = new OptionsBuilder().parent(jmh).resultFormat(ResultFormatType.JSON).result(file.toString())
                .build();
        if (new Runner(options).run().isEmpty()) {
            System.err.println("moecomm jmh: no benchmark ran");
            return 1;
        }
        JmhResults.annotate(file, Map.of("command", command != null ? command : "moecomm jmh " + String.join(" ", args)));
        System.out.println("results: " + file);
        return 0;
    }

    /** A new file in {@code dir} named by the date, this machine's architecture and processor count, and {@code kind}. */
    static Path resultsFile(Path dir, LocalDate date, String kind) {
        return ResultFiles.fresh(dir, ResultFiles.name(date, ResultFiles.machine(), kind));
    }
}
