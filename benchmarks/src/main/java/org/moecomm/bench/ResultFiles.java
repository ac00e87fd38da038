package org.moecomm.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Locale;

/**
 * Names of the files in {@code benchmarks/results/}: {@code <date>-<device>-<kind>.json}, the
 * device named in lower case without "NVIDIA", and never a name already taken (a later run of the
 * same day gets {@code -2}, {@code -3}, ...): a result is never overwritten silently.
 */
public final class ResultFiles {
    private ResultFiles() {
    }

    /** {@code <date>-<device>-<kind>.json}; {@code kind} such as {@code gpu-kernels}. */
    public static String name(LocalDate date, String deviceName, String kind) {
        String slug = deviceName.toLowerCase(Locale.ROOT).replace("nvidia", "").replaceAll("[^a-z0-9]+", "-")
                .replaceAll("^-+|-+$", "");
        return date + "-" + (slug.isEmpty() ? "device" : slug) + "-" + kind + ".json";
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
