package org.moecomm.bench;

import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** Entry point of the runnable jar: {@code demo}, {@code bench}, {@code stress}, {@code jmh}, {@code report}, {@code ptx}. */
@Command(name = "moecomm", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        subcommands = {DemoCommand.class, BenchCommand.class, StressCommand.class, JmhCommand.class, ReportCommand.class,
                PtxCommand.class},
        description = "Mixture-of-Experts dispatch/combine: demo and benchmarks.")
public final class Main implements Runnable {
    public static void main(String[] args) {
        System.exit(commandLine(new Main()).execute(args));
    }

    /** The parser of {@code command}: a bad option is one line on standard error and exit status 2. */
    static CommandLine commandLine(Object command) {
        return new CommandLine(command).setParameterExceptionHandler(Main::badOption);
    }

    private static int badOption(CommandLine.ParameterException e, String[] args) {
        CommandLine cl = e.getCommandLine();
        cl.getErr().println(cl.getCommandSpec().qualifiedName() + ": " + e.getMessage() + " (--help lists the options)");
        return cl.getCommandSpec().exitCodeOnInvalidInput();
    }

    /**
     * The command line a subcommand was started with, as results record it: {@code moecomm
     * <name> <its arguments>} (started through Main, the original arguments begin with the name).
     */
    static String invocation(CommandLine.Model.CommandSpec spec, String name) {
        List<String> args = spec != null && spec.commandLine().getParseResult() != null
                ? spec.commandLine().getParseResult().originalArgs() : List.of();
        if (!args.isEmpty() && args.getFirst().equals(name)) {
            args = args.subList(1, args.size());
        }
        return ("moecomm " + name + " " + String.join(" ", args)).strip();
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }
}
