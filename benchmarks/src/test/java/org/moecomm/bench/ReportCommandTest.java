package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportCommandTest {
    @TempDir
    Path tmp;

    /** Every phase value lands under its own header (they once came in another order than the headers). */
    @Test
    void phaseColumnsMatchTheirHeaders() throws Exception {
        StringBuilder line = new StringBuilder("{\"preset\":\"p\",\"world\":4,\"mode\":\"m\",\"tokens\":8,\"verified\":true");
        for (int i = 0; i < Phases.KEYS.size(); i++) {
            line.append(",\"").append(Phases.KEYS.get(i)).append("MedianUs\":").append(i + 1);
        }
        Path file = tmp.resolve("phases.json");
        Files.writeString(file, line.append("}\n").toString());
        List<String> rows = new ReportCommand().phaseTable(file).lines().filter(l -> l.startsWith("|")).toList();
        List<String> header = cells(rows.get(0));
        List<String> values = cells(rows.get(2));
        for (int i = 0; i < Phases.NAMES.size(); i++) {
            int column = header.indexOf(Phases.NAMES.get(i));
            assertEquals(String.format(java.util.Locale.ROOT, "%.1f", (double) (i + 1)), values.get(column),
                    Phases.NAMES.get(i));
        }
    }

    private static List<String> cells(String row) {
        return Arrays.stream(row.split("\\|")).map(String::trim).skip(1).toList();
    }
}
