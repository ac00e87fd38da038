package org.moecomm.bench;

import java.util.Arrays;

/**
 * The one percentile of the benchmarks: linear interpolation between the two nearest ranks of the
 * sorted samples (the q-th percentile lies at position {@code q * (n - 1)}), so the median of an
 * even count is the mean of the middle two.
 */
public final class Percentiles {
    private Percentiles() {
    }

    /** The {@code q}-th percentile ({@code 0 <= q <= 1}) of {@code samples}; NaN when there are none. */
    public static double of(double[] samples, double q) {
        if (q < 0 || q > 1) {
            throw new IllegalArgumentException("percentile must be in [0, 1], got " + q);
        }
        if (samples.length == 0) {
            return Double.NaN;
        }
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        double position = q * (sorted.length - 1);
        int below = (int) Math.floor(position);
        int above = Math.min(sorted.length - 1, below + 1);
        return sorted[below] + (position - below) * (sorted[above] - sorted[below]);
    }
}
