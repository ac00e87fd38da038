package org.moecomm.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What one rank process hands back to the launching JVM, as a small text file
 * ({@code rank-<r>.tsv} in the run's folder), tab-separated lines:
 * <pre>
 * device  NAME
 * copy    COPY  BYTES  N1,N2,...         (nanoseconds of each timed copy of the copy baseline,
 *                                         {@link CopyBaseline}; at most one, before the specs)
 * spec    I  preset:tokens:world:group:uniform|skewed:seed:plain|graph
 * problem I  TEXT                        (one per line of a failed check)
 * phase   I  P  N1,N2,...                (nanoseconds per timed round, phase P of {@link Phases};
 *                                         nothing after the tab for a phase not measured)
 * done    I
 * </pre>
 * {@code I} numbers the configurations of the launch.
 */
final class RankSamples {
    private String device = "unknown";
    private String copy;
    private long copyBytes;
    private long[] copyNanos;
    private final Map<Integer, RunSpec> specs = new LinkedHashMap<>();
    private final Map<Integer, List<String>> problems = new LinkedHashMap<>();
    private final Map<Integer, long[][]> phases = new LinkedHashMap<>();
    private final List<Integer> done = new ArrayList<>();

    static Path file(Path dir, int rank) {
        return dir.resolve("rank-" + rank + ".tsv");
    }

    // ---- writing (in a rank) ----

    static String deviceLine(String name) {
        return "device\t" + oneLine(name);
    }

    /** The copy baseline's line: {@code copy} (its name) of {@code bytes}, each timed copy in milliseconds. */
    static String copyLine(String copy, long bytes, double[] millis) {
        return "copy\t" + oneLine(copy) + "\t" + bytes + "\t" + joined(CopyBaseline.nanos(millis));
    }

    /** The lines of configuration {@code index}: spec, problems, samples {@code [phase][round]}, done. */
    static List<String> lines(int index, RunSpec spec, List<String> problems, long[][] samples) {
        List<String> out = new ArrayList<>();
        out.add("spec\t" + index + "\t" + spec.encode());
        for (String p : problems) {
            for (String line : p.split("\n")) {
                out.add("problem\t" + index + "\t" + oneLine(line));
            }
        }
        for (int p = 0; p < samples.length; p++) {
            out.add("phase\t" + index + "\t" + p + "\t" + joined(samples[p]));
        }
        out.add("done\t" + index);
        return out;
    }

    static void append(Path file, List<String> lines) throws IOException {
        Files.write(file, lines, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.APPEND);
    }

    private static String joined(long[] values) {
        return Arrays.stream(values).mapToObj(Long::toString).collect(Collectors.joining(","));
    }

    private static long[] parsed(String values) {
        return values.isEmpty() ? new long[0] : Arrays.stream(values.split(",")).mapToLong(Long::parseLong).toArray();
    }

    private static String oneLine(String s) {
        return s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }

    // ---- reading (in the launcher) ----

    static RankSamples read(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IOException("no samples from a rank: " + file.getFileName() + " is missing");
        }
        RankSamples r = new RankSamples();
        int n = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            n++;
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split("\t", -1);
            try {
                switch (f[0]) {
                    case "device" -> r.device = f[1];
                    case "copy" -> {
                        r.copy = f[1];
                        r.copyBytes = Long.parseLong(f[2]);
                        r.copyNanos = parsed(f[3]);
                    }
                    case "spec" -> r.specs.put(Integer.parseInt(f[1]), RunSpec.decode(f[2]));
                    case "problem" -> r.problems.computeIfAbsent(Integer.parseInt(f[1]), k -> new ArrayList<>()).add(f[2]);
                    case "phase" -> {
                        int i = Integer.parseInt(f[1]);
                        int p = Integer.parseInt(f[2]);
                        r.phases.computeIfAbsent(i, k -> new long[Phases.COUNT][])[p] = parsed(f[3]);
                    }
                    case "done" -> r.done.add(Integer.parseInt(f[1]));
                    default -> throw new IllegalArgumentException("unknown record '" + f[0] + "'");
                }
            } catch (RuntimeException e) {
                throw new IOException(file.getFileName() + " line " + n + ": " + e.getMessage(), e);
            }
        }
        return r;
    }

    String device() {
        return device;
    }

    /** The name of the rank's baseline copy; null when the rank measured none. */
    String copy() {
        return copy;
    }

    long copyBytes() {
        return copyBytes;
    }

    /** Nanoseconds of each timed copy; null when the rank measured none. */
    long[] copyNanos() {
        return copyNanos;
    }

    RunSpec spec(int index) {
        return specs.get(index);
    }

    boolean done(int index) {
        return done.contains(index);
    }

    List<String> problems(int index) {
        return problems.getOrDefault(index, List.of());
    }

    /** Samples {@code [phase][round]} of configuration {@code index}; throws when incomplete. */
    long[][] samples(int index) {
        long[][] s = phases.get(index);
        if (s == null || !done(index)) {
            throw new IllegalStateException("configuration " + index + " has no complete samples");
        }
        for (int p = 0; p < Phases.COUNT; p++) {
            if (s[p] == null) {
                throw new IllegalStateException("configuration " + index + " lacks phase " + Phases.NAMES.get(p));
            }
        }
        return s;
    }
}
