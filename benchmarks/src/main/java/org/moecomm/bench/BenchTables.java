package org.moecomm.bench;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/**
 * The console tables of {@code moecomm bench}: the times per phase with the logical rates, then
 * the device memory each phase moves ({@link DeviceBytes}) against the copy bandwidth measured in
 * the same run ({@link CopyBaseline}). A phase without samples (graph replays' send/recv) shows
 * "-", and so does a share without a copy baseline.
 */
final class BenchTables {
    private static final int[] COLUMNS = {Phases.DISPATCH_SEND, Phases.DISPATCH_RECV, Phases.DISPATCH,
        Phases.COMBINE_SEND, Phases.COMBINE_RECV, Phases.COMBINE};

    private BenchTables() {
    }

    static void print(PrintStream out, List<Measurement> results) {
        out.printf(Locale.ROOT, "%-17s %5s %6s | %21s %21s %21s | %21s %21s %21s | %9s %9s %9s %9s%n", "preset", "m",
                "launch", "dispatch send", "dispatch recv", "dispatch", "combine send", "combine recv", "combine",
                "disp GB/s", "comb GB/s", "disp GB/s", "comb GB/s");
        out.printf(Locale.ROOT, "%-17s %5s %6s | %21s %21s %21s | %21s %21s %21s | %9s %9s %9s %9s%n", "", "", "",
                "median / p90 us", "median / p90 us", "median / p90 us", "median / p90 us", "median / p90 us",
                "median / p90 us", "logical", "logical", "per rank", "per rank");
        results.forEach(m -> out.println(timeRow(m)));
        if (results.isEmpty()) {
            return;
        }
        Measurement first = results.getFirst();
        out.printf(Locale.ROOT, "(slowest rank per round; %s; %s; logical GB/s: BENCHMARKS.md's bytes over the whole"
                + " operation's median, all ranks and per rank)%n", first.mode(), first.device());
        if (results.stream().anyMatch(r -> r.launch() == LaunchMode.WHOLE)) {
            out.println("(whole: each half one call, dispatch or combine, launched from the host; events around the"
                    + " call only, so send and recv are not timed apart: -)");
        }
        if (results.stream().anyMatch(r -> r.launch() == LaunchMode.GRAPH)) {
            out.println("(graph: each half captured once into a CUDA graph and replayed per round; events around"
                    + " the replay only, so send and recv are not timed apart: -)");
        }
        out.println();
        out.println("Device memory per phase: MiB read + written by the phase's kernels (all ranks), GB/s in the"
                + " phase's median, share: that rate as % of the copy bandwidth measured in this run");
        StringBuilder header = new StringBuilder(String.format(Locale.ROOT, "%-17s %5s %6s |", "preset", "m", "launch"));
        StringBuilder units = new StringBuilder(String.format(Locale.ROOT, "%-17s %5s %6s |", "", "", ""));
        for (int p : COLUMNS) {
            header.append(String.format(Locale.ROOT, " %24s", Phases.NAMES.get(p)));
            units.append(String.format(Locale.ROOT, " %9s %7s %6s", "MiB", "GB/s", "share"));
            if (p == Phases.DISPATCH) {
                header.append(" |");
                units.append(" |");
            }
        }
        out.println(header.append(" | ").append(String.format(Locale.ROOT, "%9s", "copy GB/s")));
        out.println(units.append(" |"));
        results.forEach(m -> out.println(deviceRow(m)));
        results.stream().filter(m -> m.copy() != null).findFirst()
                .ifPresent(m -> out.println("(copy: " + m.copy().method() + ")"));
        out.println("(device bytes per rank, summed over the ranks; signals and counters left out:");
        for (int p = 0; p < DeviceBytes.FORMULAS.size(); p++) {
            out.printf(Locale.ROOT, "  %-13s = %s%n", Phases.NAMES.get(p), DeviceBytes.FORMULAS.get(p));
        }
        out.println("  dispatch and combine = their send + recv)");
    }

    /** One row of the times table. */
    static String timeRow(Measurement m) {
        StringBuilder row = prefix(m);
        for (int p : COLUMNS) {
            PhaseTimes t = m.phase(p);
            row.append(t.measured() ? String.format(Locale.ROOT, " %10.1f / %8.1f", t.medianMicros(), t.p90Micros())
                    : String.format(Locale.ROOT, " %10s / %8s", "-", "-"));
            if (p == Phases.DISPATCH) {
                row.append(" |");
            }
        }
        row.append(String.format(Locale.ROOT, " | %9.2f %9.2f %9.2f %9.2f%s", m.dispatchGBps(), m.combineGBps(),
                m.dispatchGBpsPerRank(), m.combineGBpsPerRank(), m.verified() ? "" : "  MISMATCH"));
        return row.toString();
    }

    /** One row of the device memory table: per phase MiB, GB/s and share of the copy bandwidth; the copy's GB/s. */
    static String deviceRow(Measurement m) {
        StringBuilder row = prefix(m);
        for (int p : COLUMNS) {
            double gbps = m.deviceGBps(p);
            double share = m.copyShare(p);
            row.append(String.format(Locale.ROOT, " %9.2f %7s %6s", m.traffic().device().of(p) / (1024.0 * 1024.0),
                    figure(gbps), Double.isFinite(share) ? figure(100 * share) + "%" : "-"));
            if (p == Phases.DISPATCH) {
                row.append(" |");
            }
        }
        return row.append(String.format(Locale.ROOT, " | %9s", m.copy() == null ? "-" : figure(m.copy().gbps())))
                .toString();
    }

    /** A rate or a percentage with about three significant digits (decode rates are small); "-" for none. */
    static String figure(double v) {
        if (!Double.isFinite(v)) {
            return "-";
        }
        return String.format(Locale.ROOT, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
    }

    private static StringBuilder prefix(Measurement m) {
        return new StringBuilder(String.format(Locale.ROOT, "%-17s %5d %6s |", m.spec().preset(), m.spec().tokens(),
                m.launch().label()));
    }
}
