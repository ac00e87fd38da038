package org.moecomm.kernels.ptx;

import java.util.Arrays;

/**
 * The abstract state before one instruction: a value (or {@code null}: unusable) per local slot,
 * and the operand stack, one entry per value (a {@code long} or {@code double} is one entry).
 * Immutable; the transfer functions make new frames.
 */
final class Frame {
    final Value[] locals;
    final Value[] stack;

    Frame(Value[] locals, Value[] stack) {
        this.locals = locals;
        this.stack = stack;
    }

    int depth() {
        return stack.length;
    }

    /**
     * The state at the entry of a static callee of {@code maxLocals} local slots whose {@code nargs}
     * arguments are the top of this stack: the arguments in its first slots, an empty stack.
     */
    Frame calleeEntry(int nargs, int maxLocals) {
        Value[] calleeLocals = new Value[Math.max(maxLocals, 1)];
        int slot = 0;
        for (int k = 0; k < nargs; k++) {
            Value v = peek(nargs - 1 - k);
            calleeLocals[slot] = v;
            slot += v.kind().slots;
        }
        return new Frame(calleeLocals, new Value[0]);
    }

    /** The entry {@code fromTop} below the top (0 = top). */
    Value peek(int fromTop) {
        return stack[stack.length - 1 - fromTop];
    }

    Frame pop(int n) {
        return new Frame(locals, Arrays.copyOf(stack, stack.length - n));
    }

    Frame push(Value v) {
        Value[] s = Arrays.copyOf(stack, stack.length + 1);
        s[stack.length] = v;
        return new Frame(locals, s);
    }

    Frame popPush(int n, Value v) {
        Value[] s = Arrays.copyOf(stack, stack.length - n + (v == null ? 0 : 1));
        if (v != null) {
            s[s.length - 1] = v;
        }
        return new Frame(locals, s);
    }

    Frame withStack(Value[] newStack) {
        return new Frame(locals, newStack);
    }

    Frame store(int slot, Value v) {
        Value[] l = locals.clone();
        l[slot] = v;
        if (v.kind().isWide()) {
            l[slot + 1] = null;
        }
        if (slot > 0 && l[slot - 1] != null && l[slot - 1].kind().isWide()) {
            l[slot - 1] = null;
        }
        return new Frame(l, stack);
    }

    /** The join with another frame at a merge point, or {@code null} when the stacks disagree. */
    Frame merge(Frame other) {
        if (other.stack.length != stack.length) {
            return null;
        }
        Value[] s = new Value[stack.length];
        for (int i = 0; i < s.length; i++) {
            s[i] = Value.merge(stack[i], other.stack[i]);
            if (s[i] == null) {
                return null;
            }
        }
        Value[] l = new Value[locals.length];
        for (int i = 0; i < l.length; i++) {
            l[i] = Value.merge(locals[i], other.locals[i]);
        }
        return new Frame(l, s);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Frame f && Arrays.equals(locals, f.locals) && Arrays.equals(stack, f.stack);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(locals) + Arrays.hashCode(stack);
    }

    @Override
    public String toString() {
        return "locals=" + Arrays.toString(locals) + " stack=" + Arrays.toString(stack);
    }
}
