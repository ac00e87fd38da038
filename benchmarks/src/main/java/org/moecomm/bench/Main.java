package org.moecomm.bench;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** Entry point of the runnable jar: {@code demo}, {@code bench}, {@code jmh}, {@code report}. */
@Command(name = "moecomm", mixinStandardHelpOptions = true,
        subcommands = {DemoCommand.class, BenchCommand.class, JmhCommand.class, ReportCommand.class},
        description = "Mixture-of-Experts dispatch/combine: demo and benchmarks.")
public final class Main implements Runnable {
    public static void main(String[] args) {
        System.exit(new CommandLine(new Main()).execute(args));
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }
}
