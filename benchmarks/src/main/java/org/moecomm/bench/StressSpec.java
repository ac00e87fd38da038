package org.moecomm.bench;

import java.util.Locale;
import java.util.Objects;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.check.StressRounds;

/**
 * A stress run: a preset at M = {@code tokens} on {@code world} ranks in groups of {@code group},
 * and the rounds' options ({@link StressRounds.Options}). Checked when made, as {@link RunSpec} is.
 */
record StressSpec(String preset, int tokens, int world, int group, StressRounds.Options options) {
    StressSpec {
        RunSpec.checkShape(preset, tokens, world, group);
        Objects.requireNonNull(options, "options");
    }

    MoeConfig config() {
        return Preset.byLabel(preset).config(world, group, tokens).build();
    }

    /** One word for a rank's command line: {@code preset:tokens:world:group:rounds:seed:maxDrop:maxSkewMicros}. */
    String encode() {
        return String.join(":", preset, Integer.toString(tokens), Integer.toString(world), Integer.toString(group),
                Integer.toString(options.rounds()), Long.toString(options.seed()), Double.toString(options.maxDrop()),
                Integer.toString(options.maxSkewMicros()));
    }

    static StressSpec decode(String s) {
        String[] f = s.split(":");
        if (f.length != 8) {
            throw new IllegalArgumentException(
                    "not a stress spec (preset:tokens:world:group:rounds:seed:maxDrop:maxSkewMicros): " + s);
        }
        return new StressSpec(f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]), Integer.parseInt(f[3]),
                new StressRounds.Options(Integer.parseInt(f[4]), Long.parseLong(f[5]), Double.parseDouble(f[6]),
                        Integer.parseInt(f[7])));
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s M=%d W=%d G=%d: %d rounds, seed %d, up to %.0f%% -1 ids, up to %d us skew",
                preset, tokens, world, group, options.rounds(), options.seed(), 100 * options.maxDrop(),
                options.maxSkewMicros());
    }
}
