package org.moecomm.bench;

import java.util.List;

/**
 * Nanosecond samples of one phase (one per round, the slowest rank's), summarised as median and
 * p90 ({@link Percentiles}); a phase with no samples (not measured, e.g. the send/recv split of a graph replay) has NaN
 * for both.
 */
final class PhaseTimes {
    private final String name;
    private final long[] samples;
    private int count;

    PhaseTimes(String name, int capacity) {
        this.name = name;
        this.samples = new long[capacity];
    }

    /**
     * Per round, the slowest rank's sample: {@code perRank.get(rank)[round]} nanoseconds, every rank
     * with {@code rounds} of them.
     */
    static PhaseTimes slowest(String name, List<long[]> perRank, int rounds) {
        PhaseTimes t = new PhaseTimes(name, rounds);
        for (long[] rank : perRank) {
            if (rank.length != rounds) {
                throw new IllegalArgumentException(name + ": " + rank.length + " samples from a rank, expected " + rounds);
            }
        }
        for (int i = 0; i < rounds; i++) {
            long max = 0;
            for (long[] rank : perRank) {
                max = Math.max(max, rank[i]);
            }
            t.add(max);
        }
        return t;
    }

    String name() {
        return name;
    }

    void add(long nanos) {
        samples[count++] = nanos;
    }

    /** Whether the phase has samples (else median and p90 are NaN). */
    boolean measured() {
        return count > 0;
    }

    double medianMicros() {
        return percentileMicros(0.5);
    }

    double p90Micros() {
        return percentileMicros(0.9);
    }

    private double percentileMicros(double q) {
        if (count == 0) {
            return Double.NaN;
        }
        double[] nanos = new double[count];
        for (int i = 0; i < count; i++) {
            nanos[i] = samples[i];
        }
        return Percentiles.of(nanos, q) / 1e3;
    }
}
