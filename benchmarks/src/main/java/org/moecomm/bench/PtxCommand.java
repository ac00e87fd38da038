package org.moecomm.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.ptx.PtxCompiler;
import org.moecomm.kernels.ptx.PtxKernel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Compiles one kernel to PTX here, as the GPU runner compiles it for a handle: specialised for the
 * values of its {@code @Specialize} parameters and for a block size. For reading a handle's kernel
 * without a GPU (then {@code ptxas -c -v -arch=sm_90a FILE} for its registers), and for counting
 * what a change did to one inlined method ({@code --inlined}).
 */
@Command(name = "ptx", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Compile a kernel to PTX as a handle's GPU runner would, without a GPU.")
final class PtxCommand implements Callable<Integer> {
    /** Where a kernel named by its class's simple name is looked for: the library's kernels. */
    static final String PACKAGE = "org.moecomm.kernels.moe";

    @Option(names = "--kernel", required = true, description = "Class.method, e.g. AllToAllKernels.dispatch"
            + " (a class of " + PACKAGE + ", or a fully qualified class name).")
    String kernel;

    @Option(names = "--values", split = ",", description = "The values of the kernel's @Specialize parameters, in"
            + " order (all of them, or none for the generic kernel).")
    int[] values = new int[0];

    @Option(names = "--threads", defaultValue = "256", description = "Block size compiled in with --values, as a"
            + " handle's launches are. Default: 256.")
    int threads;

    @Option(names = "--out", description = "PTX file to write (default: <entry>-<values>-b<threads>.ptx in --dir).")
    Path out;

    @Option(names = "--dir", defaultValue = ".", description = "Folder of the default file. Default: the working one.")
    Path dir;

    @Option(names = "--inlined", description = "Count the PTX lines, branches and shared loads of the first inlined"
            + " copy of this method (a simple name, e.g. routeToken).")
    String inlined;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        PrintWriter err = spec.commandLine().getErr();
        Kernel k;
        try {
            k = specialised(resolve(kernel), values, threads);
        } catch (IllegalArgumentException e) {
            err.println("moecomm ptx: " + e.getMessage());
            return 2;
        }
        PtxKernel compiled = PtxCompiler.hopper().compile(k);
        Path file = out != null ? out : dir.resolve(PtxCompiler.dumpName(k));
        Files.writeString(file, compiled.ptx());
        PrintWriter o = spec.commandLine().getOut();
        o.printf("%s: %d lines of PTX in %s%n", compiled.entryName(), compiled.ptx().lines().count(), file);
        if (inlined != null) {
            InlinedStats s = InlinedStats.of(compiled.ptx(), inlined);
            if (s == null) {
                err.println("moecomm ptx: no inlined copy of " + inlined + " in " + compiled.entryName());
                return 2;
            }
            o.printf("%s (first inlined copy): %d lines, %d branches, %d shared loads%n", inlined, s.lines(),
                    s.branches(), s.sharedLoads());
        }
        o.flush();
        return 0;
    }

    /** The kernel {@code Class.method}: a simple class name is looked up in {@link #PACKAGE}. */
    static Kernel resolve(String name) {
        int dot = name.lastIndexOf('.');
        if (dot <= 0 || dot == name.length() - 1) {
            throw new IllegalArgumentException("--kernel must be Class.method, not " + name);
        }
        String owner = name.substring(0, dot);
        String method = name.substring(dot + 1);
        String className = owner.contains(".") ? owner : PACKAGE + "." + owner;
        Class<?> type;
        try {
            type = Class.forName(className);
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("no kernel class " + className);
        }
        Kernel k = new Kernel(type, method);
        k.method(); // a method of that name with a kernel's shape, else IllegalArgumentException
        return k;
    }

    /**
     * {@code kernel} as the GPU runner compiles it for a launch whose {@code @Specialize} arguments
     * are {@code values} (all of them, or none for the generic kernel) in blocks of {@code threads}.
     */
    static Kernel specialised(Kernel kernel, int[] values, int threads) {
        if (values.length == 0) {
            return kernel;
        }
        return kernel.specializedFor(kernel.specializedPositions(), kernel.argumentsFor(values), threads);
    }

    /** What one inlined copy of a method compiled to: between the compiler's begin and end comments. */
    record InlinedStats(int lines, int branches, int sharedLoads) {
        /** The first inlined copy of {@code method} (simple name) in {@code ptx}, or null. */
        static InlinedStats of(String ptx, String method) {
            String begin = "." + method + "(";
            String end = "// end of ";
            List<String> lines = ptx.lines().toList();
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i).strip();
                if (line.startsWith("// inlined ") && line.contains(begin)) {
                    String close = end + line.substring("// inlined ".length(), line.indexOf('('));
                    int branches = 0;
                    int shared = 0;
                    for (int j = i + 1; j < lines.size(); j++) {
                        String l = lines.get(j).strip();
                        if (l.equals(close)) {
                            return new InlinedStats(j - i - 1, branches, shared);
                        }
                        branches += l.startsWith("bra") || l.contains(" bra ") ? 1 : 0;
                        shared += l.contains("ld.shared") ? 1 : 0;
                    }
                    return null;
                }
            }
            return null;
        }
    }
}
