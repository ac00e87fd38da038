package org.moecomm.bench;

import java.util.List;
import java.util.Locale;
import org.moecomm.core.Preset;
import org.moecomm.core.protocol.BufferLayout;

/**
 * The README's table of memory per rank: the symmetric bytes one handle holds on each rank
 * ({@link BufferLayout#symmetricBytes()}), per preset, world size and M, computed from the
 * layout the handle allocates (not measured), for one rank per group.
 */
final class MemoryTable {
    static final List<Preset> PRESETS = List.of(Preset.DEEPSEEK_V3, Preset.DEEPSEEK_V2_LITE);
    static final List<Integer> WORLDS = List.of(4, 8);
    static final List<Integer> TOKENS = List.of(128, 512, 2048, 4096);

    private MemoryTable() {
    }

    static String markdown() {
        StringBuilder s = new StringBuilder("\nSymmetric memory per rank of one handle (`BufferLayout`, G = 1; local memory is"
                + " at most " + size(maxLocalBytes()) + "):\n\n| preset | W |");
        for (int m : TOKENS) {
            s.append(" M = ").append(m).append(" |");
        }
        s.append("\n|---|---|").append("---|".repeat(TOKENS.size())).append('\n');
        for (Preset p : PRESETS) {
            for (int w : WORLDS) {
                s.append("| ").append(p.label()).append(" | ").append(w).append(" |");
                for (int m : TOKENS) {
                    s.append(' ').append(size(layout(p, w, m).symmetricBytes())).append(" |");
                }
                s.append('\n');
            }
        }
        return s.toString();
    }

    static BufferLayout layout(Preset preset, int world, int tokens) {
        return new BufferLayout(preset.config(world, 1, tokens).build());
    }

    private static long maxLocalBytes() {
        long most = 0;
        for (Preset p : PRESETS) {
            for (int w : WORLDS) {
                for (int m : TOKENS) {
                    most = Math.max(most, layout(p, w, m).localBytes());
                }
            }
        }
        return most;
    }

    /** Bytes as MiB below one GiB, else GiB. */
    static String size(long bytes) {
        double mib = bytes / (1024.0 * 1024.0);
        return mib < 1024 ? String.format(Locale.ROOT, "%.0f MiB", mib) : String.format(Locale.ROOT, "%.2f GiB", mib / 1024);
    }
}
