package org.moecomm.core.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.moecomm.core.launch.LocalLauncher.GpuPlacement;
import org.moecomm.core.launch.LocalLauncher.GpuPolicy;

/** Where each policy puts the ranks (no GPU needed: the devices are given). */
class GpuPlacementTest {
    @Test
    void perRankGoesRoundTheDevices() {
        GpuPlacement p = LocalLauncher.placement(GpuPolicy.PER_RANK, 5, List.of("0", "1"));
        assertEquals(List.of("0", "1", "0", "1", "0"), p.rankDevices());
        assertEquals(2, p.gpus());
        assertEquals(3, p.ranksOn("0"));
        assertEquals(2, p.ranksOn("1"));
        assertEquals(3, p.ranksPerGpu());
    }

    @Test
    void perRankOnAsManyDevicesAsRanksGivesEachItsOwn() {
        GpuPlacement p = LocalLauncher.placement(GpuPolicy.PER_RANK, 4, List.of("3", "2", "1", "0", "7"));
        assertEquals(List.of("3", "2", "1", "0"), p.rankDevices());
        assertEquals(4, p.gpus());
        assertEquals(1, p.ranksPerGpu());
    }

    @Test
    void perRankOnOneDeviceIsShared() {
        assertEquals(LocalLauncher.placement(GpuPolicy.SHARED, 4, List.of("5")),
                LocalLauncher.placement(GpuPolicy.PER_RANK, 4, List.of("5")));
    }

    @Test
    void sharedPutsEveryRankOnTheFirstDevice() {
        GpuPlacement p = LocalLauncher.placement(GpuPolicy.SHARED, 3, List.of("4", "5"));
        assertEquals(List.of("4", "4", "4"), p.rankDevices());
        assertEquals(1, p.gpus());
        assertEquals(3, p.ranksPerGpu());
    }

    @Test
    void noneLeavesTheDevicesAlone() {
        GpuPlacement p = LocalLauncher.placement(GpuPolicy.NONE, 3, List.of("0", "1"));
        assertTrue(p.rankDevices().isEmpty());
        assertEquals(0, p.gpus());
        assertEquals(1, p.ranksPerGpu());
    }

    @Test
    void policiesHaveTheirCommandLineNames() {
        for (GpuPolicy p : GpuPolicy.values()) {
            assertEquals(p, GpuPolicy.byLabel(" " + p.label().toUpperCase(java.util.Locale.ROOT) + " "));
        }
        assertEquals("per-rank", GpuPolicy.PER_RANK.label());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GpuPolicy.byLabel("each"));
        assertEquals("'each' is not one of shared, per-rank, none", e.getMessage());
    }
}
