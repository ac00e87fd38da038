package org.moecomm.bench;

import java.util.Arrays;
import java.util.Iterator;
import org.moecomm.core.Preset;
import picocli.CommandLine;

/**
 * A preset on the command line: one of the known labels ({@link Preset#label()}), listed in
 * the help and offered as completion candidates; anything else is a usage error naming them.
 */
final class PresetOption {
    private PresetOption() {
    }

    /** The labels, for {@code completionCandidates} and {@code ${COMPLETION-CANDIDATES}}. */
    static final class Names implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return Arrays.stream(Preset.values()).map(Preset::label).iterator();
        }
    }

    static final class Converter implements CommandLine.ITypeConverter<Preset> {
        @Override
        public Preset convert(String value) {
            try {
                return Preset.byLabel(value.strip());
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a preset (" + String.join(", ",
                        new Names()) + ")");
            }
        }
    }
}
