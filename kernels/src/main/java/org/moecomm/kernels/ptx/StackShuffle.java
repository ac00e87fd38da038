package org.moecomm.kernels.ptx;

import java.lang.classfile.Opcode;
import java.util.Arrays;

/**
 * The stack-manipulation instructions ({@code pop, dup, dup_x1, dup2_x2, swap, ...}) as
 * permutations of whole stack entries: the top {@code consumed} entries are replaced by
 * {@code produced[k]}, each the index (0 = deepest) of a consumed entry. The JVM defines them on
 * 32-bit words; the forms depend on which entries are {@code long}/{@code double}.
 */
record StackShuffle(int consumed, int[] produced) {
    private static StackShuffle s(int consumed, int... produced) {
        return new StackShuffle(consumed, produced);
    }

    static StackShuffle of(Opcode op, Frame in) {
        boolean w0 = in.depth() > 0 && in.peek(0).kind().isWide();
        boolean w1 = in.depth() > 1 && in.peek(1).kind().isWide();
        boolean w2 = in.depth() > 2 && in.peek(2).kind().isWide();
        return switch (op) {
            case POP -> s(1);
            case POP2 -> w0 ? s(1) : s(2);
            case DUP -> s(1, 0, 0);
            case DUP_X1 -> s(2, 1, 0, 1);
            case DUP_X2 -> w1 ? s(2, 1, 0, 1) : s(3, 2, 0, 1, 2);
            case DUP2 -> w0 ? s(1, 0, 0) : s(2, 0, 1, 0, 1);
            case DUP2_X1 -> w0 ? s(2, 1, 0, 1) : s(3, 1, 2, 0, 1, 2);
            case DUP2_X2 -> w0
                    ? (w1 ? s(2, 1, 0, 1) : s(3, 2, 0, 1, 2))
                    : (w2 ? s(3, 1, 2, 0, 1, 2) : s(4, 2, 3, 0, 1, 2, 3));
            case SWAP -> s(2, 1, 0);
            default -> throw new IllegalArgumentException(op.toString());
        };
    }

    static Value[] apply(StackShuffle sh, Value[] stack) {
        int base = stack.length - sh.consumed;
        Value[] out = Arrays.copyOf(stack, base + sh.produced.length);
        for (int k = 0; k < sh.produced.length; k++) {
            out[base + k] = stack[base + sh.produced[k]];
        }
        return out;
    }
}
