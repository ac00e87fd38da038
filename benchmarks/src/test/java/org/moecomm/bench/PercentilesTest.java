package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.moecomm.kernels.testing.Refusals.assertRefused;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PercentilesTest {
    @Test
    void interpolatesBetweenTheNearestRanks() {
        double[] s = {4, 1, 3, 2};
        assertEquals(2.5, Percentiles.of(s, 0.5));
        assertEquals(3.7, Percentiles.of(s, 0.9), 1e-12);
        assertEquals(1, Percentiles.of(s, 0));
        assertEquals(4, Percentiles.of(s, 1));
        assertEquals(7, Percentiles.of(new double[] {7}, 0.9));
        assertEquals(4, s[0], "the samples are not reordered");
        assertTrue(Double.isNaN(Percentiles.of(new double[0], 0.5)));
        assertRefused(IllegalArgumentException.class, () -> Percentiles.of(s, 1.5),
                "percentile must be in [0, 1], got 1.5");
    }
}
