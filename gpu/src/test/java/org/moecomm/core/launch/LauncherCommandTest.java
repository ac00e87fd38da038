package org.moecomm.core.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class LauncherCommandTest {
    private final StringWriter err = new StringWriter();

    private int run(LauncherCommand command, String... args) {
        CommandLine cl = LauncherCommand.commandLine(command);
        cl.setErr(new PrintWriter(err, true));
        return cl.execute(args);
    }

    @Test
    void optionsEndAtTheMainClass() {
        LauncherCommand c = new LauncherCommand();
        LauncherCommand.commandLine(c).parseArgs("-n", "4", "--gpus", "per-rank", "--devices", "0,1", "--jvm", "-Xmx1g",
                "--env", "A=b=c", "--timeout", "30", "org.x.Main", "--world", "4", "-n", "x");
        assertEquals(4, c.ranks);
        assertEquals(LocalLauncher.GpuPolicy.PER_RANK, c.gpus);
        assertEquals(List.of("0", "1"), c.devices);
        assertEquals(List.of("-Xmx1g"), c.jvmOptions);
        assertEquals(Map.of("A", "b=c"), c.env);
        assertEquals("org.x.Main", c.mainClass);
        assertEquals(List.of("--world", "4", "-n", "x"), c.args);
        List<String> cmd = c.builder().classPath("cp").build().command();
        assertTrue(cmd.containsAll(List.of("-Xmx1g", "org.x.Main", "--world")), cmd.toString());
    }

    @Test
    void aRankWrapperGoesBeforeJava() {
        LauncherCommand c = new LauncherCommand();
        LauncherCommand.commandLine(c).parseArgs("--rank-wrapper", " compute-sanitizer  --tool memcheck ", "org.x.Main");
        List<String> cmd = c.builder().classPath("cp").build().command();
        assertEquals(List.of("compute-sanitizer", "--tool", "memcheck"), cmd.subList(0, 3), cmd.toString());
        assertTrue(cmd.get(3).endsWith("java"), cmd.toString());
        LauncherCommand none = new LauncherCommand();
        LauncherCommand.commandLine(none).parseArgs("--rank-wrapper", " ", "org.x.Main");
        assertTrue(none.builder().classPath("cp").build().command().getFirst().endsWith("java"));
    }

    @Test
    void theWrapperWordsAreSplitAtWhiteSpace() {
        assertEquals(List.of(), LocalLauncher.wrapperWords(null));
        assertEquals(List.of(), LocalLauncher.wrapperWords("  "));
        assertEquals(List.of("compute-sanitizer", "--tool", "racecheck"),
                LocalLauncher.wrapperWords(" compute-sanitizer\t--tool  racecheck\n"));
    }

    @Test
    void badOptionsAreOneLineAndStatus2() {
        assertEquals(2, run(new LauncherCommand(), "-n", "x", "org.x.Main"));
        assertEquals("LocalLauncher: Invalid value for option '--ranks': 'x' is not an int (--help lists the options)",
                err.toString().strip());
        err.getBuffer().setLength(0);
        assertEquals(2, run(new LauncherCommand(), "--gpus", "all", "org.x.Main"));
        assertTrue(err.toString().contains("'all' is not one of shared, per-rank, none"), err.toString());
        err.getBuffer().setLength(0);
        assertEquals(2, run(new LauncherCommand()));
        assertTrue(err.toString().contains("MAIN_CLASS"), err.toString());
        err.getBuffer().setLength(0);
        assertEquals(2, run(new LauncherCommand(), "-n", "0", "org.x.Main"));
        assertEquals("LocalLauncher: worldSize must be positive, got 0", err.toString().strip());
    }
}
