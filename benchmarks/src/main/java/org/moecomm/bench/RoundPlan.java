package org.moecomm.bench;

import java.util.Objects;

/**
 * The rounds of one configuration: {@code warmup} untimed, then {@code rounds} timed. Round 0 is
 * always checked against the reference (outputs poisoned first), the last one too with
 * {@code checkLast}. The experts (host work, never timed) run every round with
 * {@code expertsEveryRound}, else only before checked rounds: later rounds then combine the
 * expert outputs left from the last checked round, which moves the same bytes. {@code start}
 * says how the ranks are brought together before each timed half on the GPU ({@link RoundStart}).
 */
record RoundPlan(int warmup, int rounds, boolean checkLast, boolean expertsEveryRound, RoundStart start) {
    RoundPlan(int warmup, int rounds, boolean checkLast, boolean expertsEveryRound) {
        this(warmup, rounds, checkLast, expertsEveryRound, RoundStart.HOST);
    }

    RoundPlan {
        Objects.requireNonNull(start, "start");
        if (warmup < 0) {
            throw new IllegalArgumentException("warm-up rounds (--warmup) must be >= 0, got " + warmup);
        }
        if (rounds < 1) {
            throw new IllegalArgumentException("timed rounds (--rounds) must be >= 1, got " + rounds);
        }
    }

    /**
     * Untimed rounds the first configuration of each launch mode of a GPU run adds to
     * {@link #warmup}: the JIT compiles the host's call path (validation, argument packing, the
     * launch) with C1 after some thousand calls and with C2 after some five thousand, and until
     * then a launch from the host costs more. Measured (H100, W = 4, deepseek-v3, 1 token): plain
     * dispatch 56.1 us as the run's first configuration after 200 warm-up rounds, 36.6 us when the
     * same configuration ran again after 600 rounds of another; the whole dispatch call 34.7 us after
     * 1000 warm-up rounds and 33.0 after 6000 (2-4.5 us less at W = 2 and 4, 8 tokens too).
     */
    static final int PROCESS_WARMUP = 6000;

    /** This plan with {@link #PROCESS_WARMUP} more untimed rounds: for a launch mode's first configuration. */
    RoundPlan warmingTheProcess() {
        return new RoundPlan(warmup + PROCESS_WARMUP, rounds, checkLast, expertsEveryRound, start);
    }

    int total() {
        return warmup + rounds;
    }

    boolean checked(int round) {
        return round == 0 || (checkLast && round == total() - 1);
    }

    boolean timed(int round) {
        return round >= warmup;
    }

    boolean runExperts(int round) {
        return expertsEveryRound || checked(round);
    }

    /** How the checks are described in output and JSON. */
    String checkedDescription() {
        return checkLast && total() > 1 ? "first and last round" : "first round";
    }

    /** Words of a rank's command line. */
    String encode() {
        return warmup + ":" + rounds + ":" + checkLast + ":" + expertsEveryRound + ":" + start.label();
    }

    static RoundPlan decode(String s) {
        String[] f = s.split(":");
        if (f.length != 5) {
            throw new IllegalArgumentException("not a round plan (warmup:rounds:checkLast:expertsEveryRound:start): "
                    + s);
        }
        return new RoundPlan(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Boolean.parseBoolean(f[2]),
                Boolean.parseBoolean(f[3]), RoundStart.byLabel(f[4]));
    }
}
