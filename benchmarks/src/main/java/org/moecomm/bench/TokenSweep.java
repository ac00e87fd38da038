package org.moecomm.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * The tokens per rank {@code moecomm bench} sweeps when {@code --tokens} is not given
 * (BENCHMARKS.md): the decode sizes, the prefill sizes, or both. The GPU backend sweeps both by
 * default; the CPU backend only the decode sizes, because it runs the kernels on the JVM: a
 * round grows with the tokens from about 170 ms for deepseek-v3 at 128 tokens (JMH, 2 cores), so
 * the default 120 rounds of the prefill sizes of the two default presets would take about half
 * an hour there.
 */
enum TokenSweep implements Labelled {
    DECODE("decode", List.of(1, 8, 32, 128)),
    PREFILL("prefill", List.of(512, 1024, 2048, 4096)),
    ALL("all", null);

    private final String label;
    private final List<Integer> tokens;

    TokenSweep(String label, List<Integer> tokens) {
        this.label = label;
        this.tokens = tokens;
    }

    /** The word of the command line. */
    @Override
    public String label() {
        return label;
    }

    /** Tokens per rank, ascending. */
    List<Integer> tokens() {
        if (tokens != null) {
            return tokens;
        }
        List<Integer> all = new ArrayList<>(DECODE.tokens);
        all.addAll(PREFILL.tokens);
        return List.copyOf(all);
    }

    /** The sweep of {@code backend} when none is asked for: all on the GPU, decode on the CPU. */
    static TokenSweep defaultFor(BackendChoice.Backend backend) {
        return backend == BackendChoice.Backend.GPU ? ALL : DECODE;
    }

    /** The sweep named {@code s} (case-insensitive). */
    static TokenSweep byLabel(String s) {
        return Labelled.byLabel(TokenSweep.class, s, "sweep");
    }

    @Override
    public String toString() {
        return label;
    }
}
