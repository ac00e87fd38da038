package org.moecomm.bench;

import java.io.PrintStream;
import java.util.Locale;

/** The demo's output, the same for every backend: the check's verdict, the phase table, the bytes moved. */
final class DemoReport {
    private DemoReport() {
    }

    static void header(PrintStream out, String backend, String why, RunSpec spec) {
        out.printf(Locale.ROOT, "moecomm demo: backend=%s (%s) preset=%s %s%n", backend, why, spec.preset(),
                spec.config());
    }

    /** Prints the result; returns whether it was verified. */
    static boolean print(PrintStream out, Measurement m) {
        if (!m.verified()) {
            out.println("RESULT: MISMATCH against the reference (" + m.plan().checkedDescription() + " checked)");
            m.problems().forEach(p -> out.println("  " + p));
            return false;
        }
        out.printf(Locale.ROOT, "RESULT: verified against the reference on every rank (%s; %d (token, expert) pairs,"
                + " %d dispatch rows)%n", m.plan().checkedDescription(), m.traffic().pairs(), m.traffic().dispatchRows());
        printTimes(out, m);
        return true;
    }

    static void printTimes(PrintStream out, Measurement m) {
        out.printf(Locale.ROOT, "%-15s %12s %12s%n", "phase", "median us", "p90 us");
        for (PhaseTimes t : m.phases()) {
            String name = t.name().equals("dispatch") || t.name().equals("combine") ? t.name() + " (all)" : t.name();
            out.printf(Locale.ROOT, "%-15s %12.1f %12.1f%n", name, t.medianMicros(), t.p90Micros());
        }
        TrafficModel traffic = m.traffic();
        out.printf(Locale.ROOT, "dispatch: %.1f us, %s logical (%s on the wire), %.2f GB/s logical%n",
                m.phase(Phases.DISPATCH).medianMicros(), mib(traffic.logicalDispatchBytes()),
                mib(traffic.wireDispatchBytes()), m.dispatchGBps());
        out.printf(Locale.ROOT, "combine:  %.1f us, %s logical (%s on the wire), %.2f GB/s logical%n",
                m.phase(Phases.COMBINE).medianMicros(), mib(traffic.logicalCombineBytes()),
                mib(traffic.wireCombineBytes()), m.combineGBps());
        out.printf(Locale.ROOT, "(times: median over %d rounds after %d warm-up of the slowest rank's phase; %s; %s)%n",
                m.plan().rounds(), m.plan().warmup(), m.mode(), m.device());
        if (m.roundsWall() != null) {
            out.printf(Locale.ROOT, "rounds: %d (%d warm-up + %d timed) in %.2f s of wall time, each from its start on the"
                    + " first rank to its end on the last (the experts included; the poisoning and the checks between"
                    + " rounds left out)%n", m.plan().total(), m.plan().warmup(), m.plan().rounds(),
                    m.roundsWall().toNanos() / 1e9);
        }
    }

    static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.2f MiB", bytes / (1024.0 * 1024.0));
    }
}
