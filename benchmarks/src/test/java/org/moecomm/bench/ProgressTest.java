package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ProgressTest {
    @Test
    void linesNameTheRoundsDoneAndTheRate() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(bytes, true, StandardCharsets.UTF_8), "deepseek-v3 m=8 W=4", 25,
                Duration.ZERO);
        p.roundsDone(3);
        p.roundsDone(4);
        List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        assertEquals(2, lines.size(), lines.toString());
        assertTrue(lines.getFirst().matches("deepseek-v3 m=8 W=4: 3/25 rounds, [0-9.]+ rounds/s"), lines.getFirst());
        assertTrue(lines.get(1).matches("deepseek-v3 m=8 W=4: 4/25 rounds, [0-9.]+ rounds/s"), lines.get(1));
    }

    @Test
    void shortRunsAreSilent() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(bytes, true, StandardCharsets.UTF_8), "x", 5, Duration.ofHours(1));
        p.roundsDone(5);
        Progress.none().roundsDone(1);
        assertEquals("", bytes.toString(StandardCharsets.UTF_8));
    }
}
