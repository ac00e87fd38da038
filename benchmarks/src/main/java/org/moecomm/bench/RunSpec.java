package org.moecomm.bench;

import java.util.Locale;
import java.util.Objects;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.check.Workload;

/**
 * One configuration to measure: a preset at {@code tokens} tokens per rank (also the handle's
 * maximum M), on {@code world} ranks in groups of {@code group}, with the seeded routing (uniform,
 * or half of all picks to rank 0's experts), its calls enqueued as {@code launch} says. Every
 * rank rebuilds the same workload from it; the launch mode does not change the handle's
 * configuration nor the workload. A spec is checked when made: a configuration the handle would
 * refuse (W not dividing the experts, too many tokens) is an {@link IllegalArgumentException}
 * before anything runs.
 */
record RunSpec(String preset, int tokens, int world, int group, boolean skewed, long seed, LaunchMode launch) {
    RunSpec {
        Objects.requireNonNull(launch, "launch");
        checkShape(preset, tokens, world, group);
    }

    /**
     * A known preset at {@code tokens} per rank on {@code world} ranks in groups of {@code group}
     * that the handle accepts, else an {@link IllegalArgumentException} saying why (also for
     * {@link StressSpec}).
     */
    static void checkShape(String preset, int tokens, int world, int group) {
        Preset.byLabel(preset);
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens per rank must be positive, got " + tokens);
        }
        if (world < 1) {
            throw new IllegalArgumentException("world size must be positive, got " + world);
        }
        if (group < 1 || world % group != 0) {
            throw new IllegalArgumentException("group size " + group + " must divide the world size " + world);
        }
        try {
            Preset.byLabel(preset).config(world, group, tokens).build();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(preset + " at " + tokens + " tokens per rank on W=" + world + " G=" + group
                    + ": " + e.getMessage(), e);
        }
    }

    /** With plain launches. */
    RunSpec(String preset, int tokens, int world, int group, boolean skewed, long seed) {
        this(preset, tokens, world, group, skewed, seed, LaunchMode.PLAIN);
    }

    MoeConfig config() {
        return Preset.byLabel(preset).config(world, group, tokens).build();
    }

    Workload workload() {
        Workload.Options options = Workload.Options.defaults().tokens(tokens);
        if (skewed) {
            options = options.skewedTo(0);
        }
        return Workload.generate(config(), seed, options);
    }

    /**
     * One word, for a rank's command line:
     * {@code preset:tokens:world:group:uniform|skewed:seed:plain|graph}.
     */
    String encode() {
        return String.join(":", preset, Integer.toString(tokens), Integer.toString(world), Integer.toString(group),
                skewed ? "skewed" : "uniform", Long.toString(seed), launch.label());
    }

    /** The inverse of {@link #encode()}; a word without the launch mode (six fields) is plain. */
    static RunSpec decode(String s) {
        String[] f = s.split(":");
        if ((f.length != 6 && f.length != 7) || !(f[4].equals("skewed") || f[4].equals("uniform"))) {
            throw new IllegalArgumentException(
                    "not a run spec (preset:tokens:world:group:uniform|skewed:seed[:plain|graph]): " + s);
        }
        return new RunSpec(f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]), Integer.parseInt(f[3]),
                f[4].equals("skewed"), Long.parseLong(f[5]), f.length == 7 ? LaunchMode.byLabel(f[6]) : LaunchMode.PLAIN);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s m=%d W=%d G=%d%s%s", preset, tokens, world, group, skewed ? " skewed" : "",
                launch == LaunchMode.PLAIN ? "" : " launch=" + launch.label());
    }
}
