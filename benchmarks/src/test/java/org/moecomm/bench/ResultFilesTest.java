package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ResultFilesTest {
    @Test
    void machinesAreNamedAsUnameNamesThem() {
        assertEquals("x86_64-2cpu", ResultFiles.machine("amd64", 2));
        assertEquals("aarch64-64cpu", ResultFiles.machine("arm64", 64));
        assertEquals("ppc64le-8cpu", ResultFiles.machine("ppc64le", 8));
        // and the file name keeps it so: results of one machine stay one series
        assertEquals("2026-12-03-x86_64-2cpu-jmh-cpu-backend.json",
                ResultFiles.name(LocalDate.of(2026, 12, 3), ResultFiles.machine("amd64", 2), "jmh-cpu-backend"));
    }

    @Test
    void namesNeverTakeAFileThatExists(@TempDir Path dir) throws IOException {
        String name = ResultFiles.name(LocalDate.of(2026, 12, 3), "NVIDIA H200", "gpu-phases");
        assertEquals("2026-12-03-h200-gpu-phases.json", name);
        Files.createFile(ResultFiles.fresh(dir, name));
        Path second = ResultFiles.fresh(dir, name);
        assertEquals("2026-12-03-h200-gpu-phases-2.json", second.getFileName().toString());
        Files.createFile(second);
        assertEquals("2026-12-03-h200-gpu-phases-3.json", ResultFiles.fresh(dir, name).getFileName().toString());
    }

    /** A later run of the same day ({@code -2}) is newer than the first, though it sorts before it by name. */
    @Test
    void theNumberedFileOfADayIsTheNewer() {
        List<Path> files = List.of(Path.of("2026-12-03-h200-w4-gpu-phases-2.json"),
                Path.of("2026-12-02-h200-w4-gpu-phases.json"), Path.of("2026-12-03-h200-w4-gpu-phases-10.json"),
                Path.of("2026-12-03-h200-w4-gpu-phases.json"));
        List<String> ordered = files.stream().sorted(ResultFiles.OLDEST_FIRST).map(p -> p.getFileName().toString())
                .toList();
        assertEquals(List.of("2026-12-02-h200-w4-gpu-phases.json", "2026-12-03-h200-w4-gpu-phases.json",
                "2026-12-03-h200-w4-gpu-phases-2.json", "2026-12-03-h200-w4-gpu-phases-10.json"), ordered);
        assertTrue(ResultFiles.isOfKind(Path.of("2026-12-03-h200-w4-gpu-phases-2.json"), "gpu-phases.json"));
        assertTrue(ResultFiles.isOfKind(Path.of("2026-12-03-h200-w4-gpu-phases.json"), "gpu-phases.json"));
        assertFalse(ResultFiles.isOfKind(Path.of("2026-12-03-h200-gpu-kernels-2.json"), "gpu-phases.json"));
    }
}
