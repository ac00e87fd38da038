package org.moecomm.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** A constant of an option's enum with the word the command line, the tables and the JSON use for it. */
interface Labelled {
    String label();

    /**
     * The constant of {@code type} labelled {@code s} (case and surrounding blanks ignored); else
     * an {@link IllegalArgumentException} naming {@code what} was asked and the labels there are.
     */
    static <E extends Enum<E> & Labelled> E byLabel(Class<E> type, String s, String what) {
        String v = s == null ? "" : s.strip().toLowerCase(Locale.ROOT);
        for (E e : type.getEnumConstants()) {
            if (e.label().equals(v)) {
                return e;
            }
        }
        throw new IllegalArgumentException("unknown " + what + " '" + s + "' (" + Arrays.stream(type.getEnumConstants())
                .map(Labelled::label).collect(Collectors.joining(", ")) + ")");
    }
}
