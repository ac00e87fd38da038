package org.moecomm.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.Locale;

/**
 * Progress of a long run, for standard error (results stay alone on standard output): every
 * {@code interval} a line with the rounds done of the total and the rate so far. Silent for
 * runs shorter than one interval.
 */
final class Progress {
    /** How often a line is printed unless told otherwise. */
    static final Duration INTERVAL = Duration.ofSeconds(2);

    private final PrintStream out;
    private final String what;
    private final int total;
    private final long intervalNanos;
    private final long start;
    private long lastLine;

    Progress(PrintStream out, String what, int total, Duration interval) {
        this.out = out;
        this.what = what;
        this.total = total;
        this.intervalNanos = interval.toNanos();
        this.start = System.nanoTime();
        this.lastLine = start;
    }

    /** Progress that prints nothing. */
    static Progress none() {
        return new Progress(null, "", 0, Duration.ZERO);
    }

    /** Records that {@code done} of the rounds are done; prints when an interval has passed since the last line. */
    void roundsDone(int done) {
        if (out == null) {
            return;
        }
        long now = System.nanoTime();
        if (now - lastLine < intervalNanos) {
            return;
        }
        lastLine = now;
        double seconds = (now - start) / 1e9;
        out.printf(Locale.ROOT, "%s: %d/%d rounds, %.1f rounds/s%n", what, done, total, done / seconds);
        out.flush();
    }
}
