package org.moecomm.kernels.ptx;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs NVIDIA's {@code ptxas} (found on {@code PATH} or in {@code $CUDA_HOME/bin}) on PTX text,
 * for tests. Tests that need it are skipped, with the reason, where it is not installed.
 */
public final class Ptxas {
    private static final Optional<Path> PTXAS = locate();

    private Ptxas() {
    }

    private static Optional<Path> locate() {
        String exe = System.getProperty("os.name", "").toLowerCase().contains("win") ? "ptxas.exe" : "ptxas";
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                if (dir.isEmpty()) {
                    continue;
                }
                Path p = Path.of(dir, exe);
                if (Files.isExecutable(p)) {
                    return Optional.of(p);
                }
            }
        }
        String cuda = System.getenv("CUDA_HOME");
        if (cuda != null) {
            Path p = Path.of(cuda, "bin", exe);
            if (Files.isExecutable(p)) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    static boolean available() {
        return PTXAS.isPresent();
    }

    /** Skips the calling test, with the reason, when ptxas is not installed. */
    static void assumeAvailable() {
        Assumptions.assumeTrue(available(), "ptxas not found: neither on PATH nor in $CUDA_HOME/bin");
    }

    /** What ptxas said about one module. */
    public record Result(int exitCode, String output) {
        public boolean ok() {
            return exitCode == 0;
        }
    }

    /**
     * Assembles {@code ptx} for {@code sm} in a scratch directory under {@code tempDir}; as
     * relocatable code when it calls external device functions.
     */
    public static Result assemble(String ptx, String sm, Path tempDir, String name) throws IOException, InterruptedException {
        return assemble(ptx, sm, tempDir, name, List.of());
    }

    /** {@link #assemble(String, String, Path, String)} with more ptxas options (e.g. {@code -v}). */
    public static Result assemble(String ptx, String sm, Path tempDir, String name, List<String> options)
            throws IOException, InterruptedException {
        assumeAvailable();
        Path dir = Files.createTempDirectory(tempDir, "ptxas-");
        Path in = dir.resolve(name + ".ptx");
        Path out = dir.resolve(name + ".cubin");
        Files.writeString(in, ptx, StandardCharsets.UTF_8);
        List<String> command = new java.util.ArrayList<>(List.of(PTXAS.get().toString(), "-arch=" + sm, "-o",
                out.toString()));
        command.addAll(options);
        if (ptx.contains(".extern .func")) {
            command.add("-c"); // relocatable: external device functions are resolved at link time
        }
        command.add(in.toString());
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return new Result(-1, "ptxas timed out\n" + output);
        }
        return new Result(p.exitValue(), output);
    }
}
