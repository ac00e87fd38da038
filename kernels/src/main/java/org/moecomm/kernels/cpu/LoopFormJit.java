package org.moecomm.kernels.cpu;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import javax.management.JMException;
import javax.management.ObjectName;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Which of HotSpot's compilers compiles the loop forms (the hidden classes {@link LoopFormCompiler}
 * makes, named {@code <kernel class>$LoopForm$<kernel>}): by default C1 only, through a compiler
 * directive added once per JVM (the {@code compilerDirectivesAdd} diagnostic command, what
 * {@code jcmd Compiler.directives_add} runs); with {@code -Dmoecomm.cpu.loopFormsInC2=true} C2
 * too. The helpers that do a round's element work (bulk copies, {@link RowReduction}) are not
 * loop forms and stay with C2.
 *
 * <p>Why: a loop form is a kernel's whole code in a few big methods, and C2 took 0.1-0.4 s of CPU
 * for each, with its one thread busy for most of the default demo's rounds on two cores; code
 * waited in C1's profiling tier meanwhile. Kept in C1, the demo's 25 rounds took 1.9 s instead of
 * 2.6 (medians), while JMH's rounds at 128 tokens are 15-19% slower (docs/kernels-in-java.md,
 * "Which JIT compiles the loop forms"). The CPU backend mostly runs short jobs (tests, the demo, a first run
 * of a kernel); long-running JVMs set the property.
 */
final class LoopFormJit {
    static final String C1_ONLY = "C1 only";
    static final String PROPERTY = "moecomm.cpu.loopFormsInC2";
    /** Every method of every loop form, C2 excluded (C1 then compiles them in its optimising tier). */
    static final String DIRECTIVE = "[{ match: \"*$LoopForm$*.*\", c2: { Exclude: true } }]";
    private static final Logger LOG = LogManager.getLogger(CpuKernelRunner.class);
    private static String outcome;

    private LoopFormJit() {
    }

    /** Whether C2 may compile the loop forms: the property {@value #PROPERTY}, {@code true} or {@code false} (the default). */
    static boolean inC2() {
        String value = System.getProperty(PROPERTY);
        if (value == null || value.isBlank()) {
            return false;
        }
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("system property " + PROPERTY
                    + " must be true or false, got '" + value + "'");
        };
    }

    /**
     * Adds the directive, once per JVM, unless {@link #inC2()}: called before the first loop form
     * is defined. Where the JVM cannot take it (not HotSpot, no diagnostic command), the loop
     * forms are compiled as any code is, and the reason is logged once.
     *
     * @return what was done, as {@link #outcome()} gives it
     */
    static synchronized String applyOnce() {
        if (outcome == null) {
            outcome = apply();
        }
        return outcome;
    }

    /** What {@link #applyOnce()} did, or null before its first call. */
    static synchronized String outcome() {
        return outcome;
    }

    private static String apply() {
        if (inC2()) {
            return "C1 and C2 (" + PROPERTY + "=true)";
        }
        try {
            Path file = Files.createTempFile("moecomm-loop-forms", ".json");
            try {
                Files.writeString(file, DIRECTIVE);
                Object reply = ManagementFactory.getPlatformMBeanServer().invoke(
                        new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerDirectivesAdd",
                        new Object[] {new String[] {file.toString()}}, new String[] {String[].class.getName()});
                String text = String.valueOf(reply).trim();
                if (!text.startsWith("1 compiler directive")) {
                    LOG.info("loop forms: the JIT refused the directive that keeps them in C1 ({}); C2 compiles them",
                            text);
                    return "C1 and C2 (directive refused: " + text + ")";
                }
            } finally {
                Files.deleteIfExists(file);
            }
        } catch (IOException | JMException | RuntimeException | LinkageError e) {
            // (a LinkageError: a runtime linked without java.management)
            LOG.info("loop forms: no compiler directive in this JVM ({}); C2 compiles them", e.toString());
            return "C1 and C2 (no directive: " + e + ")";
        }
        LOG.debug("loop forms: compiled by C1 only (-D{}=true lets C2 compile them)", PROPERTY);
        return C1_ONLY;
    }
}
