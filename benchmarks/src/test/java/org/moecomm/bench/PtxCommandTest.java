package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code moecomm ptx}: a handle's kernel compiled here as the GPU runner compiles it. */
class PtxCommandTest {
    /** Dispatch send's @Specialize values for a DeepSeek-V3 decode handle (W = 4, M = 1, no quantisation). */
    private static final String DISPATCH_SEND = "7168,56,8,64,1,7440,1,8,1,-1,1";

    @TempDir
    Path dir;

    private record Run(int status, String out, String err) {
    }

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Main.commandLine(new PtxCommand());
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int status = cl.execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    @Test
    void writesTheSpecialisedKernelAndCountsAnInlinedMethod() throws Exception {
        Path file = dir.resolve("send.ptx");
        Run r = run("--kernel", "AllToAllKernels.dispatchSend", "--values", DISPATCH_SEND, "--out", file.toString(),
                "--inlined", "routeToken");
        assertEquals(0, r.status(), r.err());
        String ptx = Files.readString(file);
        assertTrue(ptx.contains(".entry AllToAllKernels_dispatchSend"), "the kernel's entry");
        assertTrue(r.out().startsWith("AllToAllKernels_dispatchSend: "), r.out());
        var stats = PtxCommand.InlinedStats.of(ptx, "routeToken");
        assertTrue(stats.lines() > 100 && stats.sharedLoads() >= 8, stats.toString());
        assertTrue(r.out().contains("routeToken (first inlined copy): " + stats.lines() + " lines, " + stats.branches()
                + " branches, " + stats.sharedLoads() + " shared loads"), r.out());
    }

    @Test
    void namesTheFileAfterTheValuesAndTheBlockSizeByDefault() {
        Run r = run("--kernel", "org.moecomm.kernels.moe.AllToAllKernels.dispatchSend", "--values", DISPATCH_SEND,
                "--threads", "128", "--dir", dir.toString());
        assertEquals(0, r.status(), r.err());
        assertTrue(Files.isRegularFile(dir.resolve("AllToAllKernels_dispatchSend-7168_56_8_64_1_7440_1_8_1_m1_1-b128.ptx")),
                r.out());
    }

    @Test
    void refusesAWrongCountOfValuesNamingTheParameters() {
        Run r = run("--kernel", "AllToAllKernels.dispatchSend", "--values", "1,2", "--out", dir.resolve("x").toString());
        assertEquals(2, r.status());
        assertTrue(r.err().contains("11 @Specialize parameters (arguments 13, 14,")
                && r.err().contains("given 2 values"), r.err());
        assertTrue(Files.notExists(dir.resolve("x")), "nothing written");
    }

    @Test
    void refusesAnUnknownKernel() {
        Run noClass = run("--kernel", "NoSuchKernels.dispatch");
        assertEquals(2, noClass.status());
        assertTrue(noClass.err().contains("no kernel class org.moecomm.kernels.moe.NoSuchKernels"), noClass.err());
        Run noMethod = run("--kernel", "AllToAllKernels.noSuchMethod");
        assertEquals(2, noMethod.status());
        assertTrue(noMethod.err().contains("noSuchMethod"), noMethod.err());
        Run noDot = run("--kernel", "dispatch");
        assertEquals(2, noDot.status());
        assertTrue(noDot.err().contains("Class.method"), noDot.err());
    }

    @Test
    void saysWhenTheMethodIsNotInlined() {
        Run r = run("--kernel", "AllToAllKernels.dispatchSend", "--values", DISPATCH_SEND, "--out",
                dir.resolve("y.ptx").toString(), "--inlined", "noSuchHelper");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("no inlined copy of noSuchHelper"), r.err());
        assertNull(PtxCommand.InlinedStats.of("// inlined a.b.C.f(I)I\n  bra $L;\n", "f"), "an unclosed copy");
    }
}
