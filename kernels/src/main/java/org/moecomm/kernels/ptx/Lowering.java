package org.moecomm.kernels.ptx;

import java.lang.classfile.Instruction;
import java.lang.classfile.Opcode;
import java.lang.classfile.TypeKind;
import java.lang.classfile.instruction.ArrayLoadInstruction;
import java.lang.classfile.instruction.ArrayStoreInstruction;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.ConstantInstruction;
import java.lang.classfile.instruction.ConvertInstruction;
import java.lang.classfile.instruction.FieldInstruction;
import java.lang.classfile.instruction.IncrementInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.LoadInstruction;
import java.lang.classfile.instruction.LookupSwitchInstruction;
import java.lang.classfile.instruction.NopInstruction;
import java.lang.classfile.instruction.OperatorInstruction;
import java.lang.classfile.instruction.ReturnInstruction;
import java.lang.classfile.instruction.StackInstruction;
import java.lang.classfile.instruction.StoreInstruction;
import java.lang.classfile.instruction.SwitchCase;
import java.lang.classfile.instruction.TableSwitchInstruction;
import java.lang.constant.ConstantDesc;
import java.lang.constant.MethodTypeDesc;
import java.util.List;

/**
 * Lowers one analysed (inlined copy of a) method to PTX, instruction by instruction, in bytecode
 * order so that fall-through stays fall-through. Every local slot and stack entry has a register
 * per kind ({@link PtxFunction#reg}); a JVM instruction becomes moves and arithmetic on those.
 * Static calls are inlined by lowering the callee in place with its own registers and a return
 * label.
 */
final class Lowering {
    private final PtxFunction f;
    private final ClassFiles classes;
    private final Scope scope;
    private final MethodCode code;
    private final Analysis an;
    private final int frame;
    /** Register receiving the return value in the caller; {@code null} for void or the kernel itself. */
    private final String resultRegister;
    /** Label after the inlined body; {@code null} for the kernel itself. */
    private final String returnLabel;
    private int lastReachable = -1;
    /** The first reachable instruction after each instruction ({@code code.size()} if none). */
    private int[] nextReachable;

    Lowering(PtxFunction f, ClassFiles classes, Analysis an, int frame, String resultRegister, String returnLabel) {
        this.f = f;
        this.classes = classes;
        this.scope = an.scope;
        this.code = an.code;
        this.an = an;
        this.frame = frame;
        this.resultRegister = resultRegister;
        this.returnLabel = returnLabel;
    }

    void lower() {
        nextReachable = new int[code.size()];
        int next = code.size();
        for (int i = code.size() - 1; i >= 0; i--) {
            nextReachable[i] = next;
            if (an.before[i] != null) {
                next = i;
                if (lastReachable < 0) {
                    lastReachable = i;
                }
            }
        }
        for (int i = 0; i < code.size(); i++) {
            Frame in = an.before[i];
            if (in == null) {
                continue;
            }
            if (code.leader[i]) {
                f.label(label(i));
            }
            if (code.note(i) != null) {
                f.comment(code.note(i));
            }
            f.loc(code.sourceFile, code.line(i));
            i = lower(i, in);
        }
    }

    // ---- registers and literals ----

    private String label(int insnIndex) {
        return "$L" + frame + "_" + insnIndex;
    }

    private String local(Kind k, int slot) {
        return f.reg(k, 'L', slot, frame);
    }

    private String stack(Kind k, int depth) {
        return f.reg(k, 'S', depth, frame);
    }

    /** Register of the entry {@code fromTop} below the top of {@code in}. */
    private String top(Frame in, int fromTop) {
        return stack(in.peek(fromTop).kind(), in.depth() - 1 - fromTop);
    }

    private static String literal(ConstantDesc c) {
        return switch (c) {
            case Integer x -> Integer.toString(x);
            case Long x -> Long.toString(x);
            case Float x -> String.format("0f%08X", Float.floatToRawIntBits(x));
            case Double x -> String.format("0d%016X", Double.doubleToRawLongBits(x));
            default -> throw new IllegalArgumentException(String.valueOf(c));
        };
    }

    private void mov(Kind k, String dst, String src) {
        f.op("mov." + k.ptxType + " " + dst + ", " + src);
    }

    // ---- instructions ----

    /** Lowers instruction {@code i}; returns the last instruction index consumed. */
    private int lower(int i, Frame in) {
        Instruction insn = code.insn(i);
        Frame out = an.step(i, in);
        if (insn instanceof LoadInstruction || (insn instanceof OperatorInstruction && insn.opcode() != Opcode.LCMP)
                || insn instanceof ConvertInstruction) {
            // An int or long the analysis knows (a constant, a specialised parameter, arithmetic
            // on those, an induction variable in a copy of an unrolled loop) is written as a literal.
            Value v = out.peek(0);
            if (v.isConstant()) {
                mov(v.kind(), top(out, 0), Long.toString(v.kind() == Kind.INT ? v.intConstant() : v.constant()));
                return i;
            }
        }
        switch (insn) {
            case LoadInstruction l -> {
                Value v = in.locals[l.slot()];
                if (v.kind().hasRegister()) {
                    mov(v.kind(), stack(v.kind(), in.depth()), local(v.kind(), l.slot()));
                }
            }
            case StoreInstruction s -> {
                Value v = in.peek(0);
                if (v.kind().hasRegister()) {
                    mov(v.kind(), local(v.kind(), s.slot()), top(in, 0));
                }
            }
            case IncrementInstruction inc -> {
                String r = local(Kind.INT, inc.slot());
                Value v = out.locals[inc.slot()];
                if (v.isConstant()) {
                    mov(Kind.INT, r, Integer.toString(v.intConstant()));
                } else {
                    f.op("add.s32 " + r + ", " + r + ", " + inc.constant());
                }
            }
            case ConstantInstruction c -> {
                Kind k = out.peek(0).kind();
                mov(k, stack(k, in.depth()), literal(c.constantValue()));
            }
            case OperatorInstruction o -> {
                return operator(i, o, in, out);
            }
            case ConvertInstruction c -> convert(i, c, top(in, 0), top(out, 0));
            case StackInstruction s -> shuffle(StackShuffle.of(s.opcode(), in), in);
            case BranchInstruction b -> branch(i, b, in);
            case TableSwitchInstruction t -> switchTo(i, in, t.cases());
            case LookupSwitchInstruction l -> switchTo(i, in, l.cases());
            case ReturnInstruction r -> ret(i, r, in);
            case ArrayLoadInstruction a -> {
                Kind arr = in.peek(1).kind();
                String addr = Intrinsics.sharedAddress(f, top(in, 1), top(in, 0), arr.elementBytes());
                f.op("ld.shared." + sharedType(arr) + " " + top(out, 0) + ", [" + addr + "]");
            }
            case ArrayStoreInstruction a -> {
                Kind arr = in.peek(2).kind();
                String addr = Intrinsics.sharedAddress(f, top(in, 2), top(in, 1), arr.elementBytes());
                f.op("st.shared." + sharedType(arr) + " [" + addr + "], " + top(in, 0));
            }
            case InvokeInstruction inv -> invoke(i, inv, in, out);
            case FieldInstruction fi -> {
                Kind k = out.peek(0).kind();
                mov(k, top(out, 0), literal(an.staticConstants.get(i)));
            }
            case NopInstruction n -> {
            }
            default -> throw scope.error(i, "instruction " + insn.opcode().name().toLowerCase() + " is not supported");
        }
        return i;
    }

    private static String sharedType(Kind arrayKind) {
        return switch (arrayKind) {
            case INT_ARRAY -> "u32";
            case FLOAT_ARRAY -> "f32";
            default -> "u64";
        };
    }

    private int operator(int i, OperatorInstruction o, Frame in, Frame out) {
        Opcode op = o.opcode();
        switch (op) {
            case LCMP, FCMPL, FCMPG, DCMPL, DCMPG -> {
                return compare(i, op, in, out);
            }
            case ARRAYLENGTH -> {
                mov(Kind.INT, top(out, 0), Integer.toString(out.peek(0).intConstant()));
                return i;
            }
            case INEG, LNEG -> {
                f.op("neg." + (op == Opcode.INEG ? "s32 " : "s64 ") + top(out, 0) + ", " + top(in, 0));
                return i;
            }
            case FNEG, DNEG -> {
                // flip the sign bit, as the JVM does (NaN included)
                boolean d = op == Opcode.DNEG;
                String t = f.tmp(d ? "b64" : "b32");
                f.op("mov." + (d ? "b64 " : "b32 ") + t + ", " + top(in, 0));
                f.op("xor." + (d ? "b64 " : "b32 ") + t + ", " + t + ", " + (d ? "-9223372036854775808" : "-2147483648"));
                f.op("mov." + (d ? "b64 " : "b32 ") + top(out, 0) + ", " + t);
                return i;
            }
            case ISHL, ISHR, IUSHR, LSHL, LSHR, LUSHR -> {
                boolean wide = op == Opcode.LSHL || op == Opcode.LSHR || op == Opcode.LUSHR;
                int mask = wide ? 63 : 31;
                Value count = in.peek(0);
                String amount;
                if (count.isConstant()) {
                    amount = Integer.toString(count.intConstant() & mask);
                } else {
                    amount = f.tmp("b32");
                    f.op("and.b32 " + amount + ", " + top(in, 0) + ", " + mask);
                }
                String ins = switch (op) {
                    case ISHL -> "shl.b32";
                    case ISHR -> "shr.s32";
                    case IUSHR -> "shr.u32";
                    case LSHL -> "shl.b64";
                    case LSHR -> "shr.s64";
                    default -> "shr.u64";
                };
                f.op(ins + " " + top(out, 0) + ", " + top(in, 1) + ", " + amount);
                return i;
            }
            case IDIV, LDIV, IREM, LREM -> {
                divide(op, in, out);
                return i;
            }
            default -> {
            }
        }
        String ins = switch (op) {
            case IADD -> "add.s32";
            case LADD -> "add.s64";
            case FADD -> "add.rn.f32";
            case DADD -> "add.rn.f64";
            case ISUB -> "sub.s32";
            case LSUB -> "sub.s64";
            case FSUB -> "sub.rn.f32";
            case DSUB -> "sub.rn.f64";
            case IMUL -> "mul.lo.s32";
            case LMUL -> "mul.lo.s64";
            case FMUL -> "mul.rn.f32";
            case DMUL -> "mul.rn.f64";
            case FDIV -> "div.rn.f32";
            case DDIV -> "div.rn.f64";
            case IAND -> "and.b32";
            case LAND -> "and.b64";
            case IOR -> "or.b32";
            case LOR -> "or.b64";
            case IXOR -> "xor.b32";
            case LXOR -> "xor.b64";
            default -> throw scope.error(i, "instruction " + op.name().toLowerCase() + " is not supported");
        };
        f.op(ins + " " + top(out, 0) + ", " + top(in, 1) + ", " + top(in, 0));
        return i;
    }

    /**
     * Integer division and remainder. A divisor of -1 is handled apart so that
     * {@code MIN_VALUE / -1 == MIN_VALUE} and {@code MIN_VALUE % -1 == 0}, as on the JVM (PTX
     * leaves the overflow undefined). Division by zero gives an unspecified value (no exception).
     * A divisor the analysis knows is divided by without {@code div} ({@link ConstantDivision}).
     */
    private void divide(Opcode op, Frame in, Frame out) {
        boolean wide = op == Opcode.LDIV || op == Opcode.LREM;
        boolean rem = op == Opcode.IREM || op == Opcode.LREM;
        String t = wide ? "s64" : "s32";
        String b = wide ? "b64" : "b32";
        String a = top(in, 1);
        Value divisor = in.peek(0);
        ConstantDivision plan = divisor.isConstant()
                ? ConstantDivision.of(wide ? divisor.constant() : divisor.intConstant(), wide) : null;
        if (plan != null) {
            plan.emit(f, a, top(out, 0), rem);
            return;
        }
        String d = top(in, 0);
        String p = f.pred();
        String q = f.tmp(b);
        String alt = f.tmp(b);
        f.op("setp.eq." + t + " " + p + ", " + d + ", -1");
        f.op((rem ? "rem." : "div.") + t + " " + q + ", " + a + ", " + d);
        if (rem) {
            f.op("mov." + b + " " + alt + ", 0");
        } else {
            f.op("neg." + t + " " + alt + ", " + a);
        }
        f.op("selp." + b + " " + top(out, 0) + ", " + alt + ", " + q + ", " + p);
    }

    private static String compareType(Opcode op) {
        return switch (op) {
            case LCMP -> "s64";
            case FCMPL, FCMPG -> "f32";
            default -> "f64";
        };
    }

    /**
     * {@code lcmp}, {@code fcmpl/g}, {@code dcmpl/g}. Followed by an {@code if<cond>} in the same
     * block (what javac emits for a comparison in a condition) they become one {@code setp} with
     * the ordered or unordered PTX comparison that gives the JVM's answer for NaN: {@code fcmpl}
     * makes NaN compare as less, {@code fcmpg} as greater.
     */
    private int compare(int i, Opcode op, Frame in, Frame out) {
        String type = compareType(op);
        String a = top(in, 1);
        String b = top(in, 0);
        if (i + 1 < code.size() && !code.leader[i + 1] && code.insn(i + 1) instanceof BranchInstruction br) {
            Boolean taken = Analysis.constantCondition(br.opcode(), out);
            if (taken != null) {
                // lcmp of two constants: the branch is resolved, as in branch()
                if (taken) {
                    jump(i + 1);
                }
                return i + 1;
            }
            String cond = switch (br.opcode()) {
                case IFEQ -> "eq";
                case IFNE -> op == Opcode.LCMP ? "ne" : "neu";
                case IFLT -> op == Opcode.LCMP || op == Opcode.FCMPG || op == Opcode.DCMPG ? "lt" : "ltu";
                case IFGE -> op == Opcode.LCMP || op == Opcode.FCMPL || op == Opcode.DCMPL ? "ge" : "geu";
                case IFGT -> op == Opcode.LCMP || op == Opcode.FCMPL || op == Opcode.DCMPL ? "gt" : "gtu";
                case IFLE -> op == Opcode.LCMP || op == Opcode.FCMPG || op == Opcode.DCMPG ? "le" : "leu";
                default -> null;
            };
            if (cond != null) {
                String p = f.pred();
                f.op("setp." + cond + "." + type + " " + p + ", " + a + ", " + b);
                f.op("@" + p + " bra " + label(code.jumpTarget(i + 1)));
                return i + 1;
            }
        }
        String r = top(out, 0);
        String p = f.pred();
        String q = f.pred();
        String t = f.tmp("b32");
        if (op == Opcode.LCMP) {
            String t2 = f.tmp("b32");
            f.op("setp.gt.s64 " + p + ", " + a + ", " + b);
            f.op("selp.b32 " + t + ", 1, 0, " + p);
            f.op("setp.lt.s64 " + q + ", " + a + ", " + b);
            f.op("selp.b32 " + t2 + ", 1, 0, " + q);
            f.op("sub.s32 " + r + ", " + t + ", " + t2);
        } else if (op == Opcode.FCMPL || op == Opcode.DCMPL) {
            // equal -> 0, greater -> 1, less or NaN -> -1
            f.op("setp.eq." + type + " " + p + ", " + a + ", " + b);
            f.op("selp.b32 " + t + ", 0, -1, " + p);
            f.op("setp.gt." + type + " " + q + ", " + a + ", " + b);
            f.op("selp.b32 " + r + ", 1, " + t + ", " + q);
        } else {
            // equal -> 0, less -> -1, greater or NaN -> 1
            f.op("setp.eq." + type + " " + p + ", " + a + ", " + b);
            f.op("selp.b32 " + t + ", 0, 1, " + p);
            f.op("setp.lt." + type + " " + q + ", " + a + ", " + b);
            f.op("selp.b32 " + r + ", -1, " + t + ", " + q);
        }
        return i;
    }

    /**
     * Java's primitive conversions; float-to-integer saturates and maps NaN to 0, as the JVM does.
     * A narrowing whose uses read only the narrow type's bits ({@link LowBits}) is a plain move:
     * its sign or zero extension would be dead.
     */
    private void convert(int i, ConvertInstruction c, String src, String dst) {
        TypeKind from = c.fromType();
        TypeKind to = c.toType();
        switch (from) {
            case INT -> {
                switch (to) {
                    case LONG -> f.op("cvt.s64.s32 " + dst + ", " + src);
                    case FLOAT -> f.op("cvt.rn.f32.s32 " + dst + ", " + src);
                    case DOUBLE -> f.op("cvt.rn.f64.s32 " + dst + ", " + src);
                    case BYTE, SHORT, CHAR -> {
                        if (LowBits.onlyLowBitsRead(classes, code, i, to == TypeKind.BYTE ? 8 : 16)) {
                            if (!dst.equals(src)) {
                                mov(Kind.INT, dst, src);
                            }
                        } else if (to == TypeKind.CHAR) {
                            f.op("and.b32 " + dst + ", " + src + ", 65535");
                        } else {
                            f.op("bfe.s32 " + dst + ", " + src + ", 0, " + (to == TypeKind.BYTE ? 8 : 16));
                        }
                    }
                    default -> throw new IllegalStateException(c.toString());
                }
            }
            case LONG -> {
                switch (to) {
                    case INT -> f.op("cvt.u32.u64 " + dst + ", " + src);
                    case FLOAT -> f.op("cvt.rn.f32.s64 " + dst + ", " + src);
                    case DOUBLE -> f.op("cvt.rn.f64.s64 " + dst + ", " + src);
                    default -> throw new IllegalStateException(c.toString());
                }
            }
            case FLOAT, DOUBLE -> {
                String ft = from == TypeKind.FLOAT ? "f32" : "f64";
                switch (to) {
                    case INT, LONG -> {
                        // cvt.rzi saturates; NaN gives 0 only for f32 -> s32 in PTX, so select 0 explicitly
                        String it = to == TypeKind.INT ? "s32" : "s64";
                        String t = f.tmp(to == TypeKind.INT ? "b32" : "b64");
                        String p = f.pred();
                        f.op("cvt.rzi." + it + "." + ft + " " + t + ", " + src);
                        f.op("setp.nan." + ft + " " + p + ", " + src + ", " + src);
                        f.op("selp.b" + it.substring(1) + " " + dst + ", 0, " + t + ", " + p);
                    }
                    case FLOAT -> f.op("cvt.rn.f32.f64 " + dst + ", " + src);
                    case DOUBLE -> f.op("cvt.f64.f32 " + dst + ", " + src);
                    default -> throw new IllegalStateException(c.toString());
                }
            }
            default -> throw new IllegalStateException(c.toString());
        }
    }

    /** A stack permutation as a parallel move through temporaries. */
    private void shuffle(StackShuffle sh, Frame in) {
        int base = in.depth() - sh.consumed();
        int[] p = sh.produced();
        String[] tmp = new String[p.length];
        for (int k = 0; k < p.length; k++) {
            if (p[k] != k) {
                Kind kind = in.stack[base + p[k]].kind();
                if (kind.hasRegister()) {
                    tmp[k] = f.tmp(kind);
                    mov(kind, tmp[k], stack(kind, base + p[k]));
                }
            }
        }
        for (int k = 0; k < p.length; k++) {
            if (tmp[k] != null) {
                Kind kind = in.stack[base + p[k]].kind();
                mov(kind, stack(kind, base + k), tmp[k]);
            }
        }
    }

    private static String intCondition(Opcode op) {
        return switch (op) {
            case IFEQ, IF_ICMPEQ -> "eq";
            case IFNE, IF_ICMPNE -> "ne";
            case IFLT, IF_ICMPLT -> "lt";
            case IFGE, IF_ICMPGE -> "ge";
            case IFGT, IF_ICMPGT -> "gt";
            case IFLE, IF_ICMPLE -> "le";
            default -> throw new IllegalArgumentException(op.toString());
        };
    }

    /**
     * An unconditional jump from instruction {@code i} to its target; nothing where the target
     * is the next instruction emitted (as between the copies of an unrolled loop).
     */
    private void jump(int i) {
        int t = code.jumpTarget(i);
        if (t != nextReachable[i]) {
            f.op("bra " + label(t));
        }
    }

    private void branch(int i, BranchInstruction b, Frame in) {
        String target = label(code.jumpTarget(i));
        Opcode op = b.opcode();
        switch (op) {
            case GOTO, GOTO_W -> jump(i);
            case IFEQ, IFNE, IFLT, IFGE, IFGT, IFLE -> {
                Boolean taken = Analysis.constantCondition(op, in);
                if (taken != null) {
                    if (taken) {
                        jump(i);
                    }
                    return;
                }
                String p = f.pred();
                f.op("setp." + intCondition(op) + ".s32 " + p + ", " + top(in, 0) + ", 0");
                f.op("@" + p + " bra " + target);
            }
            default -> {
                Boolean taken = Analysis.constantCondition(op, in);
                if (taken != null) {
                    if (taken) {
                        jump(i);
                    }
                    return;
                }
                String p = f.pred();
                f.op("setp." + intCondition(op) + ".s32 " + p + ", " + top(in, 1) + ", " + top(in, 0));
                f.op("@" + p + " bra " + target);
            }
        }
    }

    /** A switch as a chain of compares; {@code code.targets(i)} holds the default target, then the cases'. */
    private void switchTo(int i, Frame in, List<SwitchCase> cases) {
        Integer constant = Analysis.constantSwitchTarget(code, i, in);
        if (constant != null) {
            if (constant != nextReachable[i]) {
                f.op("bra " + label(constant));
            }
            return;
        }
        String key = top(in, 0);
        int[] targets = code.targets(i);
        for (int c = 0; c < cases.size(); c++) {
            String p = f.pred();
            f.op("setp.eq.s32 " + p + ", " + key + ", " + cases.get(c).caseValue());
            f.op("@" + p + " bra " + label(targets[c + 1]));
        }
        f.op("bra " + label(targets[0]));
    }

    private void ret(int i, ReturnInstruction r, Frame in) {
        if (returnLabel == null) {
            f.op("ret");
            return;
        }
        if (r.typeKind() != TypeKind.VOID && resultRegister != null) {
            mov(in.peek(0).kind(), resultRegister, top(in, 0));
        }
        if (i != lastReachable) {
            f.op("bra " + returnLabel);
        }
    }

    private void invoke(int i, InvokeInstruction inv, Frame in, Frame out) {
        String owner = inv.owner().asInternalName();
        String name = inv.name().stringValue();
        String desc = inv.type().stringValue();
        MethodTypeDesc mt = inv.typeSymbol();
        int nargs = mt.parameterCount() + (inv.opcode() == Opcode.INVOKESTATIC ? 0 : 1);
        boolean returns = !mt.returnType().descriptorString().equals("V");
        String result = returns ? top(out, 0) : null;
        Intrinsics.Intrinsic intrinsic = Intrinsics.find(owner, name, desc);
        if (intrinsic != null) {
            if (f.target.smVersion() < intrinsic.minSm()) {
                throw scope.error(i, intrinsic.javaName() + " needs sm_" + intrinsic.minSm()
                        + " or newer; the target is " + f.target.sm());
            }
            if (returns && out.peek(0).isConstant()) {
                // the analysis knows the value: the block size the kernel is compiled for
                // (Kernel.forBlockThreads), or a pure intrinsic of constants (Math.min, ...)
                mov(out.peek(0).kind(), result, Long.toString(out.peek(0).constant()));
                return;
            }
            String[] args = new String[nargs];
            for (int k = 0; k < nargs; k++) {
                args[k] = top(in, nargs - 1 - k);
            }
            String ret = mt.returnType().descriptorString();
            int narrow = ret.equals("B") ? 8 : ret.equals("S") || ret.equals("C") ? 16 : 0;
            boolean lowBitsOnly = narrow > 0 && LowBits.onlyLowBitsRead(classes, code, i, narrow);
            intrinsic.lowering().lower(new Intrinsics.Call(f, args, result, an.allocations.get(i), lowBitsOnly));
            return;
        }
        inline(i, owner, name, desc, nargs, in, result);
    }

    /** Inlines a static call: the callee's locals get the arguments, its returns jump to a label after it. */
    private void inline(int i, String owner, String name, String desc, int nargs, Frame in, String result) {
        String what = owner.replace('/', '.') + "." + name;
        MethodCode callee = classes.method(owner, name, desc);
        if (callee == null) {
            throw scope.error(i, "call of " + what + desc + ", whose class file cannot be found");
        }
        if (!callee.isStatic) {
            throw scope.error(i, "call of instance method " + what);
        }
        if (callee.isNative || !callee.hasCode) {
            throw scope.error(i, "call of " + what + ", which has no bytecode to inline (native or abstract)");
        }
        if (scope.onStack(callee)) {
            throw scope.error(i, "recursive call of " + what + " (kernels inline every call; recursion is not supported)");
        }
        Scope calleeScope = new Scope(scope.kernel, callee, scope, i);
        if (scope.depth() > 64) {
            throw scope.error(i, "calls nested more than 64 deep");
        }
        Analysis calleeAnalysis = LoopUnrolling.analyse(calleeScope, classes, in.calleeEntry(nargs, callee.maxLocals));
        int calleeFrame = f.newFrame();
        f.comment("inlined " + what + desc);
        int slot = 0;
        for (int k = 0; k < nargs; k++) {
            Value v = in.peek(nargs - 1 - k);
            if (v.kind().hasRegister()) {
                mov(v.kind(), f.reg(v.kind(), 'L', slot, calleeFrame), top(in, nargs - 1 - k));
            }
            slot += v.kind().slots;
        }
        String retLabel = "$R" + calleeFrame;
        new Lowering(f, classes, calleeAnalysis, calleeFrame, result, retLabel).lower();
        f.label(retLabel);
        f.comment("end of " + what);
        f.loc(code.sourceFile, code.line(i));
    }
}
