package org.moecomm.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

/** Runs the JMH suites packaged in this jar; arguments are JMH's own (for example {@code -rf json}). */
@Command(name = "jmh", description = "Run the JMH benchmarks (arguments are passed to JMH; -h lists them).")
final class JmhCommand implements Callable<Integer> {
    @Unmatched
    List<String> args = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        org.openjdk.jmh.Main.main(args.toArray(String[]::new));
        return 0;
    }
}
