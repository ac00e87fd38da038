package org.moecomm.kernels.ptx;

import org.moecomm.kernels.api.Kernel;

/**
 * Where code being compiled comes from: the kernel, the method, and the chain of call sites it
 * was inlined through. Makes the {@link KernelCompileException}s.
 */
final class Scope {
    final Kernel kernel;
    final MethodCode code;
    /** The scope of the caller, {@code null} for the kernel method itself. */
    final Scope caller;
    /** Instruction index of the call in the caller. */
    final int callIndex;

    Scope(Kernel kernel, MethodCode code, Scope caller, int callIndex) {
        this.kernel = kernel;
        this.code = code;
        this.caller = caller;
        this.callIndex = callIndex;
    }

    /** Whether {@code m} is this method or one of its callers (a recursive call). */
    boolean onStack(MethodCode m) {
        for (Scope s = this; s != null; s = s.caller) {
            if (s.code.owner.equals(m.owner) && s.code.name.equals(m.name) && s.code.descriptor.equals(m.descriptor)) {
                return true;
            }
        }
        return false;
    }

    int depth() {
        int d = 0;
        for (Scope s = caller; s != null; s = s.caller) {
            d++;
        }
        return d;
    }

    /** An exception for an unsupported {@code construct} at instruction {@code insnIndex}. */
    KernelCompileException error(int insnIndex, String construct) {
        StringBuilder sb = new StringBuilder();
        sb.append("cannot compile kernel ").append(kernel).append(": ").append(construct)
                .append(", at ").append(code.where(insnIndex));
        for (Scope s = this; s.caller != null; s = s.caller) {
            sb.append(", inlined at ").append(s.caller.code.where(s.callIndex));
        }
        return new KernelCompileException(sb.toString(), code.binaryOwner(), code.name, code.line(insnIndex), construct);
    }
}
