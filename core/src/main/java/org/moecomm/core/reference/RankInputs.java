package org.moecomm.core.reference;

import java.util.Arrays;
import java.util.Objects;

/**
 * One rank's inputs to a round as plain Java arrays (a host copy of what the rank passes to
 * dispatch and combine): {@code m} tokens of {@code x [m][H]} in the dispatch dtype (raw bytes,
 * little-endian), {@code xScale [m][S]} float32 block scales (empty without scales),
 * {@code indices [m][K]} expert ids (-1 skips), {@code weights [m][K]} float32.
 */
public record RankInputs(int m, byte[] x, float[] xScale, int[] indices, float[] weights) {
    public RankInputs {
        Objects.requireNonNull(x, "x");
        Objects.requireNonNull(xScale, "xScale");
        Objects.requireNonNull(indices, "indices");
        Objects.requireNonNull(weights, "weights");
        if (m < 0) {
            throw new IllegalArgumentException("m must be >= 0, got " + m);
        }
    }

    /** Same content (the arrays compared by value). */
    public boolean sameAs(RankInputs o) {
        return m == o.m && Arrays.equals(x, o.x) && Arrays.equals(xScale, o.xScale)
                && Arrays.equals(indices, o.indices) && Arrays.equals(weights, o.weights);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RankInputs r && sameAs(r);
    }

    @Override
    public int hashCode() {
        return Objects.hash(m, Arrays.hashCode(x), Arrays.hashCode(indices));
    }

    @Override
    public String toString() {
        return "RankInputs[m=" + m + ", x " + x.length + " bytes, " + xScale.length + " scales, " + indices.length
                + " ids]";
    }
}
