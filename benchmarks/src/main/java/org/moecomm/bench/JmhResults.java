package org.moecomm.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * JMH's JSON results as they are committed: every entry gets the fields given (the command that
 * ran it, the device, the commit), and the machine's paths are kept out (the java binary becomes
 * {@code java <version>}, a JVM option's absolute path value becomes {@code <path>}).
 */
public final class JmhResults {
    private JmhResults() {
    }

    /** Rewrites {@code file} (JMH's JSON array) in place with {@code fields} added to every entry. */
    public static void annotate(Path file, Map<String, String> fields) throws IOException {
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        JsonNode root = json.readTree(file.toFile());
        for (JsonNode entry : root) {
            if (entry instanceof ObjectNode o) {
                fields.forEach(o::put);
                if (o.has("jvm")) {
                    o.put("jvm", "java " + o.path("vmVersion").asText("?"));
                }
                if (o.get("jvmArgs") instanceof ArrayNode args) {
                    for (int i = 0; i < args.size(); i++) {
                        args.set(i, TextNode.valueOf(args.get(i).asText().replaceFirst("=/.*$", "=<path>")));
                    }
                }
            }
        }
        json.writeValue(file.toFile(), root);
    }
}
