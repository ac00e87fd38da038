package org.moecomm.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.moecomm.core.check.StressRounds;

/** A rank's {@link StressRounds.Result} as one JSON object, and the run's summary line. */
final class StressResults {
    private static final ObjectMapper JSON = new ObjectMapper();

    private StressResults() {
    }

    static String toJson(StressRounds.Result r) {
        ObjectNode o = JSON.createObjectNode();
        o.put("rank", r.rank());
        o.put("rounds", r.rounds());
        o.put("rowsChecked", r.rowsChecked());
        o.put("failedRounds", r.failedRounds());
        o.put("seconds", r.nanos() / 1e9);
        r.problems().forEach(o.putArray("problems")::add);
        return o.toString();
    }

    static StressRounds.Result fromJson(String line) throws IOException {
        JsonNode o = JSON.readTree(line);
        List<String> problems = new ArrayList<>();
        o.path("problems").forEach(p -> problems.add(p.asText()));
        return new StressRounds.Result(o.get("rank").asInt(), o.get("rounds").asInt(), o.get("rowsChecked").asLong(),
                o.get("failedRounds").asInt(), problems, Math.round(o.get("seconds").asDouble() * 1e9));
    }

    /** The run as one JSON line: what ran, where, and every rank's result. */
    static String summary(StressSpec spec, String backend, String device, String commit, String command,
                          List<StressRounds.Result> ranks) throws IOException {
        ObjectNode o = JSON.createObjectNode();
        o.put("kind", "stress");
        o.put("preset", spec.preset());
        o.put("tokens", spec.tokens());
        o.put("world", spec.world());
        o.put("group", spec.group());
        o.put("rounds", spec.options().rounds());
        o.put("seed", spec.options().seed());
        o.put("maxDrop", spec.options().maxDrop());
        o.put("maxSkewMicros", spec.options().maxSkewMicros());
        o.put("backend", backend);
        o.put("device", device);
        o.put("commit", commit);
        o.put("command", command);
        o.put("checked", "every round: expert counts, every expert row, rows beyond the counts, every output element");
        long rows = 0;
        int failed = 0;
        double seconds = 0;
        for (StressRounds.Result r : ranks) {
            rows += r.rowsChecked();
            failed += r.failedRounds();
            seconds = Math.max(seconds, r.nanos() / 1e9);
        }
        o.put("rowsChecked", rows);
        o.put("failedRounds", failed);
        o.put("seconds", seconds);
        for (StressRounds.Result r : ranks) {
            o.withArray("ranks").add(JSON.readTree(toJson(r)));
        }
        return o.toString();
    }

    static Path write(Path file, String line) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        return Files.writeString(file, line + "\n");
    }
}
