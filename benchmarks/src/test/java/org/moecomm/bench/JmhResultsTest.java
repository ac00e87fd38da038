package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JmhResultsTest {
    @Test
    void theCommandIsRecordedAndPathsKeptOut(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("r.json");
        Files.writeString(file, "[{\"benchmark\":\"x.round\",\"jvm\":\"/usr/lib/jvm/jdk-25/bin/java\",\"vmVersion\":\"25\","
                + "\"jvmArgs\":[\"-Dcache=/home/u/.cache\"],\"primaryMetric\":{\"score\":2.5}}]");
        JmhResults.annotate(file, Map.of("command", "scripts/bench-jmh.sh -p tokens=1"));
        JsonNode e = new ObjectMapper().readTree(file.toFile()).get(0);
        assertEquals("scripts/bench-jmh.sh -p tokens=1", e.get("command").asText());
        assertEquals("java 25", e.get("jvm").asText());
        assertEquals("-Dcache=<path>", e.get("jvmArgs").get(0).asText());
        assertEquals(2.5, e.get("primaryMetric").get("score").asDouble());
    }

    @Test
    void aSecondRunOfTheDayGetsANewFile(@TempDir Path dir) throws Exception {
        LocalDate day = LocalDate.of(2026, 12, 3);
        Path first = JmhCommand.resultsFile(dir, day, "jmh-cpu-backend");
        assertTrue(first.getFileName().toString().startsWith("2026-12-03-"), first.toString());
        assertTrue(first.getFileName().toString().endsWith("cpu-jmh-cpu-backend.json"), first.toString());
        Files.writeString(first, "[]");
        assertNotEquals(first, JmhCommand.resultsFile(dir, day, "jmh-cpu-backend"));
    }
}
