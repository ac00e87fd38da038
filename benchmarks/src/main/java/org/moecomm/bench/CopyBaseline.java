package org.moecomm.bench;

import java.util.List;
import java.util.Locale;

/**
 * The copy bandwidth the phases' device bytes ({@link DeviceBytes}) are compared with, measured
 * in the same run on the same device (BENCHMARKS.md): every rank copies {@code bytesPerRank} from
 * one buffer into another ({@code copy}: {@code cuMemcpyDtoDAsync} on the GPU,
 * {@code MemorySegment.copy} on the CPU backend), all ranks at once, aligned by a barrier before
 * each copy; per copy the slowest rank, as for the phases; GB/s = ranks x 2 x bytesPerRank /
 * median (read + write counted). So the ranks share the device as they do in the phases (under
 * MPS each with its share of the SMs), and the figure is the whole device's.
 */
record CopyBaseline(String copy, long bytesPerRank, int ranks, double medianMicros) {
    CopyBaseline {
        if (bytesPerRank <= 0 || ranks <= 0) {
            throw new IllegalArgumentException("a copy of " + bytesPerRank + " bytes on " + ranks + " ranks");
        }
    }

    /**
     * The baseline from every rank's copy times, {@code perRank[rank][copy]} nanoseconds (each rank
     * timed the same number of copies).
     */
    static CopyBaseline of(String copy, long bytesPerRank, List<long[]> perRank) {
        PhaseTimes slowest = PhaseTimes.slowest("copy", perRank, perRank.getFirst().length);
        return new CopyBaseline(copy, bytesPerRank, perRank.size(), slowest.medianMicros());
    }

    /** Nanoseconds of copy times in milliseconds, as rank files carry them. */
    static long[] nanos(double[] millis) {
        long[] ns = new long[millis.length];
        for (int i = 0; i < ns.length; i++) {
            ns[i] = Math.round(millis[i] * 1e6);
        }
        return ns;
    }

    /** The device's copy bandwidth in GB/s (all ranks' bytes, read + write). */
    double gbps() {
        return ranks * 2.0 * bytesPerRank / (medianMicros * 1e3);
    }

    /** How it was measured, as the JSON lines record it. */
    String method() {
        return String.format(Locale.ROOT, "%s of copyBytes (%d MiB) on each of the %d ranks at once, a barrier before"
                + " each copy; per copy the slowest rank; copyGBps = %d x 2 x copyBytes / median (read + write)", copy,
                bytesPerRank >> 20, ranks, ranks);
    }
}
