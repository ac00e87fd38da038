package org.moecomm.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Comparator;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Names of the files in {@code benchmarks/results/}: {@code <date>-<device>-<kind>.json}, the
 * device named in lower case without "NVIDIA", and never a name already taken (a later run of the
 * same day gets {@code -2}, {@code -3}, ...): a result is never overwritten silently.
 */
public final class ResultFiles {
    private ResultFiles() {
    }

    /**
     * This machine as result names give it: the architecture as {@code uname -m} names it (the JDK
     * says amd64 for x86_64) and the processor count, e.g. {@code x86_64-2cpu}.
     */
    public static String machine() {
        return machine(System.getProperty("os.arch"), Runtime.getRuntime().availableProcessors());
    }

    static String machine(String javaArch, int processors) {
        String arch = switch (javaArch) {
            case "amd64" -> "x86_64";
            case "arm64" -> "aarch64";
            default -> javaArch;
        };
        return arch + "-" + processors + "cpu";
    }

    /** {@code <date>-<device>-<kind>.json}; {@code kind} such as {@code gpu-kernels}. */
    public static String name(LocalDate date, String deviceName, String kind) {
        String slug = deviceName.toLowerCase(Locale.ROOT).replace("nvidia", "").replaceAll("[^a-z0-9_]+", "-")
                .replaceAll("^-+|-+$", "");
        return date + "-" + (slug.isEmpty() ? "device" : slug) + "-" + kind + ".json";
    }

    /**
     * Oldest first: by the date the name starts with, then by the number {@link #fresh} appended
     * (none counts as 1), then by name; so the last of a kind is the newest even when a later run
     * of the same day is {@code ...-2.json}, which sorts before {@code ....json} by name alone.
     */
    public static final Comparator<Path> OLDEST_FIRST = Comparator
            .comparing((Path p) -> p.getFileName().toString().substring(0, Math.min(10, p.getFileName().toString().length())))
            .thenComparingInt(ResultFiles::sequence)
            .thenComparing(p -> p.getFileName().toString());

    private static final Pattern NUMBERED = Pattern.compile("(.*)-(\\d+)\\.json");

    /** Whether {@code file} is a results file whose name, without a {@link #fresh} number, ends in {@code suffix}. */
    public static boolean isOfKind(Path file, String suffix) {
        String name = file.getFileName().toString();
        Matcher m = NUMBERED.matcher(name);
        return name.endsWith(suffix) || (m.matches() && (m.group(1) + ".json").endsWith(suffix));
    }

    private static int sequence(Path file) {
        Matcher m = NUMBERED.matcher(file.getFileName().toString());
        return m.matches() && m.group(2).length() < 6 ? Integer.parseInt(m.group(2)) : 1;
    }

    /** {@code dir.resolve(name)}, or with {@code -2}, {@code -3}, ... before ".json" while that file exists. */
    public static Path fresh(Path dir, String name) {
        String stem = name.endsWith(".json") ? name.substring(0, name.length() - 5) : name;
        Path file = dir.resolve(stem + ".json");
        for (int i = 2; Files.exists(file); i++) {
            file = dir.resolve(stem + "-" + i + ".json");
        }
        return file;
    }
}
