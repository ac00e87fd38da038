package org.moecomm.kernels.ptx;

import java.lang.classfile.Instruction;
import java.lang.classfile.Opcode;
import java.lang.classfile.TypeKind;
import java.lang.classfile.instruction.ArrayLoadInstruction;
import java.lang.classfile.instruction.ArrayStoreInstruction;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.ConstantInstruction;
import java.lang.classfile.instruction.ConvertInstruction;
import java.lang.classfile.instruction.DiscontinuedInstruction;
import java.lang.classfile.instruction.FieldInstruction;
import java.lang.classfile.instruction.IncrementInstruction;
import java.lang.classfile.instruction.InvokeDynamicInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.LoadInstruction;
import java.lang.classfile.instruction.LookupSwitchInstruction;
import java.lang.classfile.instruction.MonitorInstruction;
import java.lang.classfile.instruction.NewMultiArrayInstruction;
import java.lang.classfile.instruction.NewObjectInstruction;
import java.lang.classfile.instruction.NewPrimitiveArrayInstruction;
import java.lang.classfile.instruction.NewReferenceArrayInstruction;
import java.lang.classfile.instruction.NopInstruction;
import java.lang.classfile.instruction.OperatorInstruction;
import java.lang.classfile.instruction.ReturnInstruction;
import java.lang.classfile.instruction.StackInstruction;
import java.lang.classfile.instruction.StoreInstruction;
import java.lang.classfile.instruction.SwitchCase;
import java.lang.classfile.instruction.TableSwitchInstruction;
import java.lang.classfile.instruction.ThrowInstruction;
import java.lang.classfile.instruction.TypeCheckInstruction;
import java.lang.constant.ConstantDesc;
import java.lang.constant.MethodTypeDesc;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Type inference for one (inlined copy of a) method: a forward dataflow over its basic blocks
 * that finds, before every reachable instruction, the kind of every local slot and stack entry
 * (so each gets a typed register), the compile-time constants among them (int and long
 * arithmetic on constants is folded; for shared-array sizes, for dropping branches and switches on
 * constants, such as {@code assert}'s, and for {@link LoopUnrolling}'s trip counts), and which
 * shared array each array reference is. It also rejects every construct outside the supported
 * subset, naming it.
 *
 * <p>Own dataflow rather than the StackMapTable: it is needed anyway for constants and arrays, and
 * it sees inlined callees with their actual arguments.
 */
final class Analysis {
    final Scope scope;
    final MethodCode code;
    private final ClassFiles classes;
    /** State before each instruction; {@code null} for unreachable code. */
    final Frame[] before;
    /** Shared array made by each allocation instruction. */
    final Map<Integer, SharedArray> allocations = new HashMap<>();
    /** Value of each {@code getstatic} of a constant field. */
    final Map<Integer, ConstantDesc> staticConstants = new HashMap<>();

    Analysis(Scope scope, ClassFiles classes, Frame entry) {
        this.scope = scope;
        this.code = scope.code;
        this.classes = classes;
        this.before = new Frame[code.size()];
        rejectHandlers();
        run(entry);
    }

    /** Exception handlers (try/catch/finally, and the ones javac makes for synchronized blocks). */
    private void rejectHandlers() {
        if (!code.hasHandlers) {
            return;
        }
        for (int i = 0; i < code.size(); i++) {
            if (code.insn(i) instanceof MonitorInstruction) {
                throw scope.error(i, "synchronized block (monitors are not supported in kernels)");
            }
        }
        throw scope.error(code.firstHandlerStart, "try/catch/finally (exceptions are not supported in kernels)");
    }

    private void run(Frame entry) {
        Frame[] blockIn = new Frame[code.size() + 1];
        Deque<Integer> work = new ArrayDeque<>();
        blockIn[0] = entry;
        work.add(0);
        while (!work.isEmpty()) {
            int b = work.poll();
            Frame f = blockIn[b];
            for (int i = b; ; i++) {
                if (i >= code.size()) {
                    throw scope.error(i - 1, "control falls off the end of the method");
                }
                before[i] = f;
                Instruction insn = code.insn(i);
                Frame out = step(i, f);
                if (MethodCode.endsBlock(insn) || code.leader[i + 1]) {
                    for (int s : successors(i, f)) {
                        Frame old = blockIn[s];
                        Frame merged = old == null ? out : old.merge(out);
                        if (merged == null) {
                            throw scope.error(s, "operand stacks of different shapes meet at a branch target");
                        }
                        if (!merged.equals(old)) {
                            blockIn[s] = merged;
                            if (!work.contains(s)) {
                                work.add(s);
                            }
                        }
                    }
                    break;
                }
                f = out;
            }
        }
    }

    /**
     * Where control goes after instruction {@code i} given the state before it: the fall-through
     * and the targets, minus the branches that a constant condition never takes.
     */
    List<Integer> successors(int i, Frame in) {
        Instruction insn = code.insn(i);
        List<Integer> out = new ArrayList<>();
        if (insn instanceof BranchInstruction) {
            Boolean taken = constantCondition(insn.opcode(), in);
            if (taken == null || taken) {
                out.add(code.jumpTarget(i));
            }
            if (!MethodCode.isTerminal(insn) && (taken == null || !taken)) {
                out.add(i + 1);
            }
            return out;
        }
        Integer constantTarget = constantSwitchTarget(code, i, in);
        if (constantTarget != null) {
            out.add(constantTarget);
            return out;
        }
        for (int t : code.targets(i)) {
            out.add(t);
        }
        if (!MethodCode.isTerminal(insn)) {
            out.add(i + 1);
        }
        return out;
    }

    /** For a switch on a constant: the one target it jumps to; else {@code null}. */
    static Integer constantSwitchTarget(MethodCode code, int i, Frame in) {
        Instruction insn = code.insn(i);
        if (!(insn instanceof TableSwitchInstruction || insn instanceof LookupSwitchInstruction) || !in.peek(0).isConstant()) {
            return null;
        }
        int key = in.peek(0).intConstant();
        List<SwitchCase> cases = insn instanceof TableSwitchInstruction t ? t.cases() : ((LookupSwitchInstruction) insn).cases();
        int[] targets = code.targets(i);
        for (int c = 0; c < cases.size(); c++) {
            if (cases.get(c).caseValue() == key) {
                return targets[c + 1];
            }
        }
        return targets[0];
    }

    /**
     * For an {@code if<cond>} on a constant, or an {@code if_icmp<cond>} on two constants (such as
     * a specialised dtype compared with a dtype code): whether it branches; else {@code null}.
     */
    static Boolean constantCondition(Opcode op, Frame in) {
        int c;
        switch (op) {
            case IFEQ, IFNE, IFLT, IFGE, IFGT, IFLE -> {
                Value v = in.peek(0);
                if (!v.isConstant()) {
                    return null;
                }
                c = v.intConstant();
            }
            case IF_ICMPEQ, IF_ICMPNE, IF_ICMPLT, IF_ICMPGE, IF_ICMPGT, IF_ICMPLE -> {
                Value a = in.peek(1);
                Value b = in.peek(0);
                if (!a.isConstant() || !b.isConstant()) {
                    return null;
                }
                c = Integer.compare(a.intConstant(), b.intConstant());
            }
            default -> {
                return null;
            }
        }
        return switch (op) {
            case IFEQ, IF_ICMPEQ -> c == 0;
            case IFNE, IF_ICMPNE -> c != 0;
            case IFLT, IF_ICMPLT -> c < 0;
            case IFGE, IF_ICMPGE -> c >= 0;
            case IFGT, IF_ICMPGT -> c > 0;
            default -> c <= 0;
        };
    }

    private static Kind kindOf(TypeKind t) {
        return switch (t) {
            case INT, BOOLEAN, BYTE, CHAR, SHORT -> Kind.INT;
            case LONG -> Kind.LONG;
            case FLOAT -> Kind.FLOAT;
            case DOUBLE -> Kind.DOUBLE;
            default -> null;
        };
    }

    private static String javaType(String descriptor) {
        return switch (descriptor.charAt(0)) {
            case 'L' -> descriptor.substring(1, descriptor.length() - 1).replace('/', '.');
            case '[' -> javaType(descriptor.substring(1)) + "[]";
            case 'I' -> "int";
            case 'J' -> "long";
            case 'F' -> "float";
            case 'D' -> "double";
            case 'Z' -> "boolean";
            case 'B' -> "byte";
            case 'S' -> "short";
            case 'C' -> "char";
            case 'V' -> "void";
            default -> descriptor;
        };
    }

    /** The state after instruction {@code i}, given the state before it. */
    Frame step(int i, Frame in) {
        Instruction insn = code.insn(i);
        switch (insn) {
            case LoadInstruction l -> {
                Value v = in.locals[l.slot()];
                if (v == null) {
                    throw scope.error(i, "read of local slot " + l.slot() + " whose type is not known here");
                }
                return in.push(v);
            }
            case StoreInstruction s -> {
                return in.pop(1).store(s.slot(), in.peek(0));
            }
            case IncrementInstruction inc -> {
                Value v = in.locals[inc.slot()];
                Value nv = v.isConstant() ? Value.constant(Kind.INT, (int) (v.intConstant() + inc.constant())) : Value.of(Kind.INT);
                return in.store(inc.slot(), nv);
            }
            case ConstantInstruction c -> {
                ConstantDesc v = c.constantValue();
                return switch (v) {
                    case Integer x -> in.push(Value.constant(Kind.INT, x));
                    case Long x -> in.push(Value.constant(Kind.LONG, x));
                    case Float x -> in.push(Value.of(Kind.FLOAT));
                    case Double x -> in.push(Value.of(Kind.DOUBLE));
                    case String s -> throw scope.error(i, "string constant \"" + s + "\" (strings are not supported in kernels)");
                    default -> throw scope.error(i, c.opcode() == Opcode.ACONST_NULL
                            ? "null reference (kernels have no nullable references)"
                            : "constant " + v + " of a reference type");
                };
            }
            case OperatorInstruction o -> {
                return operator(i, o, in);
            }
            case ConvertInstruction c -> {
                return in.popPush(1, convert(c, in.peek(0)));
            }
            case StackInstruction s -> {
                return in.withStack(StackShuffle.apply(StackShuffle.of(s.opcode(), in), in.stack));
            }
            case BranchInstruction b -> {
                return switch (b.opcode()) {
                    case GOTO, GOTO_W -> in;
                    case IFEQ, IFNE, IFLT, IFGE, IFGT, IFLE -> in.pop(1);
                    case IF_ICMPEQ, IF_ICMPNE, IF_ICMPLT, IF_ICMPGE, IF_ICMPGT, IF_ICMPLE -> in.pop(2);
                    default -> throw scope.error(i, "reference comparison (" + b.opcode().name().toLowerCase()
                            + "): null checks and reference equality are not supported in kernels");
                };
            }
            case TableSwitchInstruction t -> {
                return in.pop(1);
            }
            case LookupSwitchInstruction l -> {
                return in.pop(1);
            }
            case ReturnInstruction r -> {
                return r.typeKind() == TypeKind.VOID ? in : in.pop(1);
            }
            case ArrayLoadInstruction a -> {
                Value arr = in.peek(1);
                Kind elem = kindOf(a.typeKind());
                if (!arr.kind().isArray() || arr.kind().element() != elem || a.typeKind() != elem.toTypeKind()) {
                    throw scope.error(i, "element read of a " + a.typeKind().name().toLowerCase()
                            + " array (only int[], float[] and long[] arrays from allocate*LocalArray are supported)");
                }
                return in.popPush(2, Value.of(elem));
            }
            case ArrayStoreInstruction a -> {
                Value arr = in.peek(2);
                Kind elem = kindOf(a.typeKind());
                if (!arr.kind().isArray() || elem == null || arr.kind().element() != elem || a.typeKind() != elem.toTypeKind()) {
                    throw scope.error(i, "element write of a " + a.typeKind().name().toLowerCase()
                            + " array (only int[], float[] and long[] arrays from allocate*LocalArray are supported)");
                }
                return in.pop(3);
            }
            case InvokeInstruction inv -> {
                return invoke(i, inv, in);
            }
            case FieldInstruction f -> {
                return field(i, f, in);
            }
            case NopInstruction n -> {
                return in;
            }
            case NewObjectInstruction n -> throw scope.error(i, "object allocation (new "
                    + n.className().asInternalName().replace('/', '.') + ") is not supported in kernels");
            case NewPrimitiveArrayInstruction n -> throw scope.error(i, "array allocation (new "
                    + n.typeKind().name().toLowerCase() + "[]): use ctx.allocate*LocalArray for block-shared arrays");
            case NewReferenceArrayInstruction n -> throw scope.error(i, "array allocation (new "
                    + n.componentType().asInternalName().replace('/', '.') + "[]) is not supported in kernels");
            case NewMultiArrayInstruction n -> throw scope.error(i, "multi-dimensional array allocation is not supported in kernels");
            case ThrowInstruction t -> throw scope.error(i, "throw (exceptions are not supported in kernels)");
            case MonitorInstruction m -> throw scope.error(i, "synchronized block (monitors are not supported in kernels)");
            case TypeCheckInstruction t -> throw scope.error(i, t.opcode().name().toLowerCase() + " "
                    + t.type().asInternalName().replace('/', '.') + " (type checks and casts of references are not supported in kernels)");
            case InvokeDynamicInstruction d -> throw scope.error(i, "invokedynamic " + d.name().stringValue()
                    + " (lambdas, string concatenation and other invokedynamic call sites are not supported in kernels)");
            case DiscontinuedInstruction d -> throw scope.error(i, "jsr/ret subroutines are not supported");
            default -> throw scope.error(i, "instruction " + insn.opcode().name().toLowerCase() + " is not supported");
        }
    }

    private Frame operator(int i, OperatorInstruction o, Frame in) {
        Opcode op = o.opcode();
        switch (op) {
            case FREM, DREM -> throw scope.error(i, "floating-point remainder (" + op.name().toLowerCase()
                    + ") is not supported in kernels");
            case INEG, LNEG -> {
                Value v = in.peek(0);
                Kind k = kindOf(o.typeKind());
                return in.popPush(1, v.isConstant() ? Value.constant(k, narrow(k, -v.constant())) : Value.of(k));
            }
            case FNEG, DNEG -> {
                return in.popPush(1, Value.of(kindOf(o.typeKind())));
            }
            case LCMP -> {
                Value a = in.peek(1);
                Value b = in.peek(0);
                return in.popPush(2, a.isConstant() && b.isConstant()
                        ? Value.constant(Kind.INT, Long.compare(a.constant(), b.constant())) : Value.of(Kind.INT));
            }
            case FCMPL, FCMPG, DCMPL, DCMPG -> {
                return in.popPush(2, Value.of(Kind.INT));
            }
            case ARRAYLENGTH -> {
                Value arr = in.peek(0);
                if (arr.array() == null) {
                    throw scope.error(i, "length of an array whose allocation is not known at compile time here");
                }
                return in.popPush(1, Value.constant(Kind.INT, arr.array().length));
            }
            default -> {
                Kind k = kindOf(o.typeKind());
                Value a = in.peek(1);
                Value b = in.peek(0);
                Long folded = a.isConstant() && b.isConstant() ? fold(op, a.constant(), b.constant()) : null;
                return in.popPush(2, folded != null ? Value.constant(k, folded) : Value.of(k));
            }
        }
    }

    /**
     * The value of an int or long binary operation on constants, as Java computes it; {@code null}
     * for other operations and for a division by zero (which throws on the JVM). Folding lets
     * branches on expressions of constants be resolved, such as {@code k + 4 <= topK} in each
     * copy of an unrolled loop ({@link LoopUnrolling}).
     */
    private static Long fold(Opcode op, long a, long b) {
        int x = (int) a;
        int y = (int) b;
        return switch (op) {
            case IADD -> (long) (x + y);
            case ISUB -> (long) (x - y);
            case IMUL -> (long) (x * y);
            case IDIV -> y == 0 ? null : (long) (x / y);
            case IREM -> y == 0 ? null : (long) (x % y);
            case ISHL -> (long) (x << y);
            case ISHR -> (long) (x >> y);
            case IUSHR -> (long) (x >>> y);
            case IAND -> (long) (x & y);
            case IOR -> (long) (x | y);
            case IXOR -> (long) (x ^ y);
            case LADD -> a + b;
            case LSUB -> a - b;
            case LMUL -> a * b;
            case LDIV -> b == 0 ? null : a / b;
            case LREM -> b == 0 ? null : a % b;
            case LSHL -> a << y;
            case LSHR -> a >> y;
            case LUSHR -> a >>> y;
            case LAND -> a & b;
            case LOR -> a | b;
            case LXOR -> a ^ b;
            default -> null;
        };
    }

    /** {@code v} as a value of kind {@code k}: an int wraps to 32 bits. */
    private static long narrow(Kind k, long v) {
        return k == Kind.INT ? (int) v : v;
    }

    /** The result of a primitive conversion; constant where the operand is and the result is an int or long. */
    private static Value convert(ConvertInstruction c, Value v) {
        Kind to = kindOf(c.toType());
        if (!v.isConstant() || (to != Kind.INT && to != Kind.LONG)) {
            return Value.of(to);
        }
        long x = v.constant();
        return Value.constant(to, switch (c.toType()) {
            case BYTE -> (byte) x;
            case SHORT -> (short) x;
            case CHAR -> (char) x;
            case INT -> (int) x;
            default -> x;
        });
    }

    private Frame field(int i, FieldInstruction f, Frame in) {
        String owner = f.owner().asInternalName();
        String name = f.name().stringValue();
        String desc = f.type().stringValue();
        String what = owner.replace('/', '.') + "." + name;
        if (f.opcode() != Opcode.GETSTATIC) {
            throw scope.error(i, switch (f.opcode()) {
                case PUTSTATIC -> "write of static field " + what;
                case GETFIELD -> "read of instance field " + what;
                default -> "write of instance field " + what;
            } + " (kernels can only read static final fields with constant values)");
        }
        if (name.equals("$assertionsDisabled")) {
            staticConstants.put(i, 1);
            return in.push(Value.constant(Kind.INT, 1));
        }
        Optional<ConstantDesc> c = classes.constantField(owner, name, desc);
        if (c.isEmpty()) {
            throw scope.error(i, "read of static field " + what
                    + " (only static final fields with compile-time constant values are supported)");
        }
        staticConstants.put(i, c.get());
        return switch (c.get()) {
            case Integer x -> in.push(Value.constant(Kind.INT, x));
            case Long x -> in.push(Value.constant(Kind.LONG, x));
            case Float x -> in.push(Value.of(Kind.FLOAT));
            case Double x -> in.push(Value.of(Kind.DOUBLE));
            default -> throw scope.error(i, "read of static field " + what + " of type " + javaType(desc));
        };
    }

    private Frame invoke(int i, InvokeInstruction inv, Frame in) {
        String owner = inv.owner().asInternalName();
        String name = inv.name().stringValue();
        String desc = inv.type().stringValue();
        MethodTypeDesc mt = inv.typeSymbol();
        boolean isStatic = inv.opcode() == Opcode.INVOKESTATIC;
        int nargs = mt.parameterCount() + (isStatic ? 0 : 1);
        String what = owner.replace('/', '.') + "." + name;
        Intrinsics.Intrinsic intrinsic = Intrinsics.find(owner, name, desc);
        String ret = mt.returnType().descriptorString();
        if (intrinsic == null) {
            if (!isStatic) {
                throw scope.error(i, (inv.opcode() == Opcode.INVOKESPECIAL ? "call of constructor or private method "
                        : "call of instance method ") + what + desc
                        + " (kernels can call static methods and the KernelContext, Buf, Numerics and Math intrinsics)");
            }
            for (var p : mt.parameterList()) {
                if (Kind.ofDescriptor(p.descriptorString()) == null) {
                    throw scope.error(i, "call of " + what + " with a parameter of type "
                            + javaType(p.descriptorString()) + " (not a kernel type)");
                }
            }
            if (!ret.equals("V") && Kind.ofDescriptor(ret) == null) {
                throw scope.error(i, "call of " + what + " returning " + javaType(ret) + " (not a kernel type)");
            }
        }
        if (ret.equals("V")) {
            return in.pop(nargs);
        }
        if (intrinsic != null && intrinsic.allocates() != null) {
            Value len = in.peek(0);
            if (!len.isConstant()) {
                throw scope.error(i, "shared array size that is not a compile-time constant (" + intrinsic.javaName()
                        + " needs a constant length: shared memory is static)");
            }
            if (len.intConstant() < 0) {
                throw scope.error(i, "negative shared array size " + len.intConstant());
            }
            SharedArray a = allocations.computeIfAbsent(i, k -> new SharedArray(intrinsic.allocates(),
                    len.intConstant(), intrinsic.javaName() + "(" + len.intConstant() + ") at " + code.where(k)));
            return in.popPush(nargs, Value.array(a));
        }
        Long folded = intrinsic != null
                ? Intrinsics.constantValue(scope.kernel, owner, name, desc, constantArguments(in, nargs))
                : returnedConstant(i, owner, name, desc, in, nargs);
        if (folded != null) {
            return in.popPush(nargs, Value.constant(Kind.ofDescriptor(ret), folded));
        }
        return in.popPush(nargs, Value.of(Kind.ofDescriptor(ret)));
    }

    /** Bytecode instructions of the largest callee whose returned constant {@link #returnedConstant} looks for. */
    static final int MAX_FOLDED_CALLEE = 96;

    /**
     * The constant a small static int or long method called at instruction {@code i} returns for
     * these arguments (some of them constants), found by analysing its inlined copy; null when it
     * returns anything else. A
     * helper such as {@code copyShift(threads)} or {@code pairsPerRow(...)} then folds where it
     * is called, and what the caller divides by it divides by a constant. The call itself is still
     * inlined (its effects are kept).
     */
    private Long returnedConstant(int i, String owner, String name, String desc, Frame in, int nargs) {
        boolean anyConstant = nargs == 0;
        for (int k = 0; k < nargs; k++) {
            anyConstant |= in.peek(k).isConstant();
        }
        String ret = desc.substring(desc.indexOf(')') + 1);
        if (!anyConstant || !(ret.equals("I") || ret.equals("J"))) {
            return null;
        }
        MethodCode callee = classes.method(owner, name, desc);
        if (callee == null || !callee.isStatic || !callee.hasCode || callee.size() > MAX_FOLDED_CALLEE
                || scope.onStack(callee)) {
            return null; // the lowering names what is wrong with it
        }
        Analysis an = new Analysis(new Scope(scope.kernel, callee, scope, i), classes,
                in.calleeEntry(nargs, callee.maxLocals));
        Long constant = null;
        for (int r = 0; r < callee.size(); r++) {
            if (an.before[r] != null && callee.insn(r) instanceof ReturnInstruction) {
                Value v = an.before[r].peek(0);
                if (!v.isConstant() || (constant != null && !constant.equals(v.constant()))) {
                    return null;
                }
                constant = v.constant();
            }
        }
        return constant;
    }

    /** The top {@code nargs} stack values in argument order, ints as their long values; null unless all are constants. */
    private static long[] constantArguments(Frame in, int nargs) {
        long[] a = new long[nargs];
        for (int k = 0; k < nargs; k++) {
            Value v = in.peek(nargs - 1 - k);
            if (!v.isConstant()) {
                return null;
            }
            a[k] = v.kind() == Kind.INT ? v.intConstant() : v.constant();
        }
        return a;
    }
}
