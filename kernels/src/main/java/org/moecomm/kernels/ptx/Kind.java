package org.moecomm.kernels.ptx;

import java.lang.classfile.TypeKind;

/**
 * The kinds of value the compiler tracks in local slots and on the operand stack, each with the
 * PTX register type that holds it. {@code boolean}, {@code byte}, {@code short} and {@code char}
 * are {@link #INT}s, as on the JVM operand stack.
 */
enum Kind {
    INT("i", "b32", 1),
    LONG("l", "b64", 2),
    FLOAT("f", "f32", 1),
    DOUBLE("d", "f64", 2),
    /** A {@code Buf}: a 64-bit global address. */
    BUF("a", "b64", 1),
    /** The {@code KernelContext}: it has no run-time value, only its methods matter. */
    CTX(null, null, 1),
    /** Block-shared arrays: a 32-bit address in the shared window. */
    INT_ARRAY("s", "b32", 1),
    FLOAT_ARRAY("s", "b32", 1),
    LONG_ARRAY("s", "b32", 1);

    static final String BUF_DESCRIPTOR = "Lorg/moecomm/kernels/api/Buf;";
    static final String CTX_DESCRIPTOR = "Lorg/moecomm/kernels/api/KernelContext;";

    /** Letter that starts the names of registers of this kind. */
    final String letter;
    /** PTX register type, without the dot. */
    final String ptxType;
    /** JVM local slots / stack words it takes. */
    final int slots;

    Kind(String letter, String ptxType, int slots) {
        this.letter = letter;
        this.ptxType = ptxType;
        this.slots = slots;
    }

    boolean hasRegister() {
        return ptxType != null;
    }

    boolean isArray() {
        return this == INT_ARRAY || this == FLOAT_ARRAY || this == LONG_ARRAY;
    }

    boolean isWide() {
        return slots == 2;
    }

    /** Element kind of an array kind. */
    Kind element() {
        return switch (this) {
            case INT_ARRAY -> INT;
            case FLOAT_ARRAY -> FLOAT;
            case LONG_ARRAY -> LONG;
            default -> throw new IllegalStateException(this + " is not an array");
        };
    }

    /** Bytes of an element of an array kind. */
    int elementBytes() {
        return element() == LONG ? 8 : 4;
    }

    /** The kind for a field descriptor, or {@code null} for types kernels cannot hold. */
    static Kind ofDescriptor(String descriptor) {
        return switch (descriptor) {
            case "I", "Z", "B", "S", "C" -> INT;
            case "J" -> LONG;
            case "F" -> FLOAT;
            case "D" -> DOUBLE;
            case BUF_DESCRIPTOR -> BUF;
            case CTX_DESCRIPTOR -> CTX;
            case "[I" -> INT_ARRAY;
            case "[F" -> FLOAT_ARRAY;
            case "[J" -> LONG_ARRAY;
            default -> null;
        };
    }

    /** The class-file type kind of a primitive kind. */
    TypeKind toTypeKind() {
        return switch (this) {
            case INT -> TypeKind.INT;
            case LONG -> TypeKind.LONG;
            case FLOAT -> TypeKind.FLOAT;
            case DOUBLE -> TypeKind.DOUBLE;
            default -> TypeKind.REFERENCE;
        };
    }
}
