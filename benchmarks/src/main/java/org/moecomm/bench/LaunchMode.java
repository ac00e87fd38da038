package org.moecomm.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * How a benchmark round enqueues the handle's calls on the GPU: {@link #PLAIN}, each call
 * launched from the host as it is made (the only mode of the CPU backend), or {@link #GRAPH},
 * the two dispatch calls captured once into one CUDA graph and the two combine calls into
 * another ({@code GpuBackend.capture}), each replayed with one driver call per round. In graph
 * mode only whole halves (dispatch, combine) are timed: no event lies between a half's send and
 * its recv.
 */
enum LaunchMode implements Labelled {
    PLAIN("plain"),
    GRAPH("graph");

    private final String label;

    LaunchMode(String label) {
        this.label = label;
    }

    /** The word of the command line, the JSON field {@code launch} and the tables. */
    @Override
    public String label() {
        return label;
    }

    /** Whether the send and recv of each half are timed apart (else only the whole halves). */
    boolean timesSendAndRecv() {
        return this == PLAIN;
    }

    /** The mode named {@code s} (case-insensitive); a missing or blank one is {@link #PLAIN} (older results). */
    static LaunchMode byLabel(String s) {
        return s == null || s.isBlank() ? PLAIN : Labelled.byLabel(LaunchMode.class, s, "launch mode");
    }

    /** The named modes, each once, in the given order. */
    static List<LaunchMode> parse(List<String> names) {
        List<LaunchMode> out = new ArrayList<>();
        for (String n : names) {
            if (n == null || n.isBlank()) {
                throw new IllegalArgumentException("empty launch mode in --launch (plain, graph)");
            }
            LaunchMode m = byLabel(n);
            if (!out.contains(m)) {
                out.add(m);
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no launch mode: give --launch plain, graph or plain,graph");
        }
        return out;
    }

    @Override
    public String toString() {
        return label;
    }
}
