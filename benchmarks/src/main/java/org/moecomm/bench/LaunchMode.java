package org.moecomm.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * How a benchmark round enqueues the handle's calls on the GPU:
 * <ul>
 *   <li>{@link #PLAIN}: the four calls ({@code dispatchSend}, {@code dispatchRecv},
 *       {@code combineSend}, {@code combineRecv}) launched from the host as they are made, an event
 *       between a half's send and recv, so the four phases are timed apart (the only mode of the CPU
 *       backend);</li>
 *   <li>{@link #WHOLE}: each half one call ({@code dispatch}, {@code combine}) launched from the
 *       host: the calls a graph captures, so a decode dispatch is one launch, as pplx-kernels
 *       launches a half; only whole halves are timed;</li>
 *   <li>{@link #GRAPH}: the dispatch call captured once into one CUDA graph and the combine call
 *       into another ({@code GpuBackend.capture}), each replayed with one driver call per round;
 *       only whole halves are timed.</li>
 * </ul>
 */
enum LaunchMode implements Labelled {
    PLAIN("plain"),
    WHOLE("whole"),
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

    /** Whether only the GPU backend runs this mode (the CPU backend times the four calls apart). */
    boolean gpuOnly() {
        return this != PLAIN;
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
                throw new IllegalArgumentException("empty launch mode in --launch (plain, whole, graph)");
            }
            LaunchMode m = byLabel(n);
            if (!out.contains(m)) {
                out.add(m);
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no launch mode: give --launch plain, whole, graph or a list of them");
        }
        return out;
    }

    @Override
    public String toString() {
        return label;
    }
}
