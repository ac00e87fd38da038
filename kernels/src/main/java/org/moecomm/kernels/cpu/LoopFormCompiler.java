package org.moecomm.kernels.cpu;

import static java.lang.constant.ConstantDescs.CD_Object;
import static java.lang.constant.ConstantDescs.CD_boolean;
import static java.lang.constant.ConstantDescs.CD_double;
import static java.lang.constant.ConstantDescs.CD_float;
import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_long;
import static java.lang.constant.ConstantDescs.CD_void;

import java.io.IOException;
import java.io.InputStream;
import java.lang.classfile.Attributes;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassHierarchyResolver;
import java.lang.classfile.ClassModel;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.CodeElement;
import java.lang.classfile.CodeModel;
import java.lang.classfile.Instruction;
import java.lang.classfile.Label;
import java.lang.classfile.MethodModel;
import java.lang.classfile.Opcode;
import java.lang.classfile.TypeKind;
import java.lang.classfile.attribute.CodeAttribute;
import java.lang.classfile.attribute.StackMapFrameInfo;
import java.lang.classfile.attribute.StackMapFrameInfo.ObjectVerificationTypeInfo;
import java.lang.classfile.attribute.StackMapFrameInfo.SimpleVerificationTypeInfo;
import java.lang.classfile.attribute.StackMapFrameInfo.VerificationTypeInfo;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.ConstantInstruction;
import java.lang.classfile.instruction.DiscontinuedInstruction;
import java.lang.classfile.instruction.FieldInstruction;
import java.lang.classfile.instruction.IncrementInstruction;
import java.lang.classfile.instruction.InvokeDynamicInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.LabelTarget;
import java.lang.classfile.instruction.LineNumber;
import java.lang.classfile.instruction.LoadInstruction;
import java.lang.classfile.instruction.LookupSwitchInstruction;
import java.lang.classfile.instruction.ReturnInstruction;
import java.lang.classfile.instruction.StoreInstruction;
import java.lang.classfile.instruction.SwitchCase;
import java.lang.classfile.instruction.TableSwitchInstruction;
import java.lang.constant.ClassDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;

/**
 * Makes the loop form of a kernel ({@link LoopForm}): a copy of its bytecode, with the static
 * methods that reach a barrier inlined, in which every split point (a {@code localBarrier()}, the
 * two barriers of a block-collective put, a signal wait) saves the thread's locals and returns its
 * number, and a switch at the start restores them and jumps back there. The runner then executes a
 * block as loops: every thread up to the next barrier, one after another.
 *
 * <p>The types of the locals at a split point come from the JDK's own verifier inference: a first
 * build of the method marks each split point with a branch target, and the stack map frame the
 * class-file library computes there lists every local and its type. Of those, only the locals read
 * later ({@link Liveness}) are saved, by slot.
 *
 * <p>What cannot be transformed throws {@link Unsupported} with the reason; the runner then runs
 * the kernel with a virtual thread per kernel thread.
 */
final class LoopFormCompiler {
    /** The kernel cannot be put in loop form; the message says why. */
    static final class Unsupported extends Exception {
        private static final long serialVersionUID = 1L;

        Unsupported(String message) {
            super(message, null, false, false);
        }
    }

    private static final String CTX = "org/moecomm/kernels/api/KernelContext";
    private static final ClassDesc CD_CTX = ClassDesc.of(KernelContext.class.getName());
    private static final ClassDesc CD_BUF = ClassDesc.of(Buf.class.getName());
    private static final ClassDesc CD_RUNTIME = ClassDesc.of(LoopFormRuntime.class.getName());
    private static final ClassDesc CD_FLOAT = ClassDesc.of("java.lang.Float");
    private static final ClassDesc CD_DOUBLE = ClassDesc.of("java.lang.Double");
    /** Slots of the generated method before the kernel's own: refs, prims, resume. */
    private static final int REFS = 0;
    private static final int PRIMS = 1;
    private static final int RESUME = 2;
    private static final int FIRST_KERNEL_SLOT = 3;
    /** Slots for the arguments of an expanded context call (the widest is putSignal's 9). */
    private static final int TEMP_SLOTS = 10;
    /** HotSpot does not JIT-compile methods of more bytecode than this (DontCompileHugeMethods). */
    static final int HUGE_METHOD_BYTES = 8000;

    private final Class<?> host;
    private final ClassLoader loader;
    private final Map<String, Optional<ClassModel>> classes = new HashMap<>();
    private final Map<String, Boolean> reaches = new HashMap<>();
    /** Helpers the loop form calls its own copies of (they reach a {@link Substitutions} entry): by key, in order. */
    private final Map<String, HelperCopy> copies = new LinkedHashMap<>();
    private final Map<String, Boolean> copyable = new HashMap<>();

    /** A helper's copy in the loop form's class, which calls CPU versions where the helper calls substituted ones. */
    private record HelperCopy(String name, MethodModel helper) {
    }

    private LoopFormCompiler(Class<?> host) {
        this.host = host;
        this.loader = host.getClassLoader() != null ? host.getClassLoader() : ClassLoader.getSystemClassLoader();
    }

    /** The loop form of {@code kernel}, loaded as a hidden class next to the kernel's class. */
    static LoopForm compile(Kernel kernel) throws Unsupported {
        return new LoopFormCompiler(kernel.owner()).build(kernel.method());
    }

    private LoopForm build(Method kernel) throws Unsupported {
        try {
            return generate(kernel);
        } catch (UnsupportedInBuild e) {
            throw (Unsupported) e.getCause();
        } catch (IllegalArgumentException | IllegalStateException e) {
            // the class-file library refused the code (its stack maps could not be computed)
            throw new Unsupported("its bytecode cannot be transformed: " + e.getMessage());
        }
    }

    private LoopForm generate(Method kernel) throws Unsupported {
        String owner = host.getName().replace('.', '/');
        MethodModel method = findMethod(owner, kernel.getName(), MethodTypeDesc.ofDescriptor(
                MethodType.methodType(kernel.getReturnType(), kernel.getParameterTypes()).toMethodDescriptorString()))
                .orElseThrow(() -> new Unsupported("the class file of " + host.getName() + " cannot be read"));
        MethodTypeDesc kernelType = method.methodTypeSymbol();
        MethodTypeDesc runType = kernelType.changeReturnType(CD_int)
                .insertParameterTypes(0, CD_Object.arrayType(), CD_long.arrayType(), CD_int);
        ClassDesc name = ClassDesc.of(host.getName() + "$LoopForm$" + kernel.getName());
        ClassFile cf = ClassFile.of(ClassFile.ClassHierarchyResolverOption.of(
                ClassHierarchyResolver.ofResourceParsing(loader).orElse(ClassHierarchyResolver.ofClassLoading(loader))));

        // Pass 1: the split points as plain branch targets, to learn the local types there.
        Emission first = new Emission(method, null, name);
        byte[] probe = cf.build(name, c -> c.withMethodBody("run", runType,
                ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC, first::emitBody));
        int parameterSlots = FIRST_KERNEL_SLOT + kernelType.parameterList().stream()
                .mapToInt(d -> TypeKind.from(d).slotSize()).sum();
        List<List<Saved>> frames = framesAtSites(cf.parse(probe), first.sites.size(), parameterSlots);

        // Pass 2: the same code, with saves, returns, and the restoring switch at the start; each
        // split point's saves in a method of their own (saveMethodType), after "run".
        Emission second = new Emission(method, frames, name);
        byte[] bytes = cf.build(name, c -> {
            c.withMethodBody("run", runType, ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC, second::emitResumable);
            for (int k = 1; k <= frames.size(); k++) {
                List<List<Saved>> parts = saveParts(frames.get(k - 1));
                for (int j = 0; j < parts.size(); j++) {
                    List<Saved> part = parts.get(j);
                    c.withMethodBody(saveMethodName(k, j), saveMethodType(part),
                            ClassFile.ACC_PRIVATE | ClassFile.ACC_STATIC, b -> emitSaveMethod(b, part));
                }
            }
            c.withMethodBody(SweepMethod.NAME, SweepMethod.type(), ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC,
                    b -> SweepMethod.emit(b, name, runType));
            // every copy was registered, with the copies it calls, when the first pass met its call
            for (HelperCopy h : copies.values()) {
                c.withMethodBody(h.name(), h.helper().methodTypeSymbol(), ClassFile.ACC_PRIVATE | ClassFile.ACC_STATIC,
                        b -> emitCopy(b, h.helper(), name));
            }
        });
        int length = codeLength(cf.parse(bytes));
        if (length > HUGE_METHOD_BYTES) {
            throw new Unsupported("its loop form has " + length + " bytes of bytecode, more than the JIT compiles ("
                    + HUGE_METHOD_BYTES + ")");
        }
        try {
            MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(host, MethodHandles.lookup())
                    .defineHiddenClass(bytes, true, MethodHandles.Lookup.ClassOption.NESTMATE);
            MethodHandle sweep = lookup.findStatic(lookup.lookupClass(), SweepMethod.NAME, SweepMethod.TYPE);
            boolean[] waits = new boolean[first.sites.size() + 1];
            for (int k = 0; k < first.sites.size(); k++) {
                waits[k + 1] = first.sites.get(k);
            }
            return new LoopForm(sweep, waits, second.nextSlot);
        } catch (ReflectiveOperationException | IllegalArgumentException | LinkageError e) {
            throw new Unsupported("its loop form cannot be loaded: " + e);
        }
    }

    /** A local that a split point saves: its slot and type. */
    private record Saved(int slot, VerificationTypeInfo type) {
    }

    /**
     * The locals to save at each split point of the probe (list k - 1 is split point k): those of
     * the kernel's slots that hold a value there (the stack map frame) that is read later (liveness),
     * except the kernel's parameters that its code never assigns: every call of {@code run} passes
     * them again (slots below {@code parameterSlots}), so they need no save and no restore.
     */
    private static List<List<Saved>> framesAtSites(ClassModel probe, int sites, int parameterSlots)
            throws Unsupported {
        CodeAttribute code = probe.methods().getFirst().findAttribute(Attributes.code()).orElseThrow();
        BitSet assigned = assignedSlots(code);
        Map<Integer, StackMapFrameInfo> byBci = new HashMap<>();
        code.findAttribute(Attributes.stackMapTable()).ifPresent(t -> t.entries()
                .forEach(f -> byBci.put(code.labelToBci(f.target()), f)));
        Liveness liveness = new Liveness(code);
        List<List<Saved>> frames = new ArrayList<>();
        for (int k = 0; k < sites; k++) {
            frames.add(null);
        }
        Label last = null;
        int pendingSite = -1;
        for (CodeElement e : code) {
            if (e instanceof LabelTarget t) {
                last = t.label();
            } else if (e instanceof ConstantInstruction c && c.constantValue() instanceof Integer k) {
                pendingSite = k;
            } else if (e instanceof InvokeInstruction i && i.owner().asSymbol().equals(CD_RUNTIME)
                    && i.name().equalsString("site")) {
                StackMapFrameInfo f = byBci.get(code.labelToBci(last));
                if (!f.stack().isEmpty()) {
                    throw new Unsupported("values on the operand stack at a barrier or wait (split point "
                            + pendingSite + "): it is called inside an expression");
                }
                BitSet live = liveness.liveAt(last);
                List<Saved> saved = new ArrayList<>();
                int slot = 0;
                for (VerificationTypeInfo t : f.locals()) {
                    boolean passedAgain = slot < parameterSlots && !assigned.get(slot);
                    if (slot >= FIRST_KERNEL_SLOT && live.get(slot) && t != SimpleVerificationTypeInfo.TOP
                            && !passedAgain) {
                        saved.add(new Saved(slot, t));
                    }
                    slot += width(t);
                }
                frames.set(pendingSite - 1, saved);
            } else if (e instanceof Instruction) {
                pendingSite = -1;
            }
        }
        return frames;
    }

    /** The local slots that {@code code} stores into. */
    private static BitSet assignedSlots(CodeModel code) {
        BitSet assigned = new BitSet();
        for (CodeElement e : code) {
            if (e instanceof StoreInstruction st) {
                assigned.set(st.slot());
            } else if (e instanceof IncrementInstruction inc) {
                assigned.set(inc.slot());
            }
        }
        return assigned;
    }

    /** A load of a local of the loop form (its slot there) of type {@code kind}. */
    private record Load(int slot, TypeKind kind) {
    }

    /** Where a method's locals are in the loop form: from {@code base}, but for the parameters in {@code aliases}. */
    private record Slots(int base, Map<Integer, Integer> aliases) {
        int of(int slot) {
            Integer alias = aliases.get(slot);
            return alias != null ? alias : base + slot;
        }
    }

    private static int codeLength(ClassModel cls) {
        return cls.methods().getFirst().findAttribute(Attributes.code()).orElseThrow().codeLength();
    }

    /** One build of the generated method. */
    private final class Emission {
        private final MethodModel kernel;
        /** Local types at each split point; {@code null} in the first pass. */
        private final List<List<Saved>> frames;
        /** The class being generated (its save methods are called from "run"). */
        private final ClassDesc loopForm;
        /** Split points so far: true for a wait, false for a barrier. */
        final List<Boolean> sites = new ArrayList<>();
        private final List<Label> resumeAt = new ArrayList<>();
        private final int temps;
        int nextSlot;
        private CodeBuilder cb;

        Emission(MethodModel kernel, List<List<Saved>> frames, ClassDesc loopForm) {
            this.kernel = kernel;
            this.frames = frames;
            this.loopForm = loopForm;
            int kernelSlots = kernel.findAttribute(Attributes.code()).orElseThrow().maxLocals();
            this.temps = FIRST_KERNEL_SLOT + kernelSlots;
            this.nextSlot = temps + TEMP_SLOTS;
        }

        /** Pass 1: the kernel's code with its split points marked. */
        void emitBody(CodeBuilder b) {
            cb = b;
            inlineTop();
        }

        /** Pass 2: the switch that resumes a thread, then the kernel's code. */
        void emitResumable(CodeBuilder b) {
            cb = b;
            int n = frames.size();
            Label start = cb.newLabel();
            List<Label> restore = new ArrayList<>();
            List<SwitchCase> cases = new ArrayList<>();
            cases.add(SwitchCase.of(0, start));
            for (int k = 1; k <= n; k++) {
                Label l = cb.newLabel();
                restore.add(l);
                resumeAt.add(cb.newLabel());
                cases.add(SwitchCase.of(k, l));
            }
            cb.iload(RESUME);
            cb.tableswitch(0, n, start, cases);
            for (int k = 1; k <= n; k++) {
                cb.labelBinding(restore.get(k - 1));
                restoreLocals(frames.get(k - 1));
                cb.goto_(resumeAt.get(k - 1));
            }
            cb.labelBinding(start);
            inlineTop();
        }

        private void inlineTop() {
            try {
                emitMethod(kernel, new Slots(FIRST_KERNEL_SLOT, Map.of()), null, new ArrayDeque<>());
            } catch (Unsupported e) {
                throw new UnsupportedInBuild(e);
            }
        }

        /** Emits {@code m}'s code with its locals where {@code slots} says; {@code exit == null}: the kernel itself. */
        private void emitMethod(MethodModel m, Slots slots, Label exit, Deque<String> chain) throws Unsupported {
            CodeModel code = m.code().orElseThrow(() -> new Unsupported(describe(m) + " has no bytecode"));
            if (!code.exceptionHandlers().isEmpty()) {
                throw new Unsupported(describe(m) + " has exception handlers (try/catch/finally or synchronized)");
            }
            Map<Label, Label> labels = new HashMap<>();
            // the loads just before the current instruction: the arguments of a call that are plain locals
            List<Load> loads = new ArrayList<>();
            for (CodeElement e : code) {
                switch (e) {
                    case LabelTarget t -> cb.labelBinding(relabel(labels, t.label()));
                    case LineNumber ln -> cb.lineNumber(ln.line());
                    case LoadInstruction i -> cb.loadLocal(i.typeKind(), slots.of(i.slot()));
                    case StoreInstruction i -> cb.storeLocal(i.typeKind(), slots.of(i.slot()));
                    case IncrementInstruction i -> cb.iinc(slots.of(i.slot()), i.constant());
                    case BranchInstruction i -> cb.branch(i.opcode(), relabel(labels, i.target()));
                    case TableSwitchInstruction i -> cb.tableswitch(i.lowValue(), i.highValue(),
                            relabel(labels, i.defaultTarget()), relabel(labels, i.cases()));
                    case LookupSwitchInstruction i -> cb.lookupswitch(relabel(labels, i.defaultTarget()),
                            relabel(labels, i.cases()));
                    case ReturnInstruction i -> {
                        if (exit == null) {
                            cb.iconst_0();
                            cb.ireturn();
                        } else {
                            cb.goto_(exit);
                        }
                    }
                    case DiscontinuedInstruction i -> throw new Unsupported(describe(m) + " uses jsr/ret");
                    case InvokeInstruction i -> invoke(m, i, chain, loads);
                    case InvokeDynamicInstruction i -> {
                        if (i.typeSymbol().descriptorString().contains(CD_CTX.descriptorString())) {
                            throw new Unsupported(describe(m) + " captures the KernelContext in a lambda");
                        }
                        cb.with(i);
                    }
                    case FieldInstruction i -> {
                        checkField(m, i);
                        cb.with(i);
                    }
                    case Instruction i -> cb.with(i);
                    default -> {
                        // local variable tables and other debug information: not needed
                    }
                }
                if (e instanceof LoadInstruction i) {
                    loads.add(new Load(slots.of(i.slot()), i.typeKind()));
                } else if (e instanceof Instruction || e instanceof LabelTarget) {
                    loads.clear(); // a label may be reached with other values on the stack
                }
            }
        }

        private Label relabel(Map<Label, Label> labels, Label l) {
            return labels.computeIfAbsent(l, x -> cb.newLabel());
        }

        private List<SwitchCase> relabel(Map<Label, Label> labels, List<SwitchCase> cases) {
            return cases.stream().map(c -> SwitchCase.of(c.caseValue(), relabel(labels, c.target()))).toList();
        }

        private void invoke(MethodModel caller, InvokeInstruction i, Deque<String> chain, List<Load> loads)
                throws Unsupported {
            String owner = i.owner().asInternalName();
            String name = i.name().stringValue();
            MethodTypeDesc type = i.typeSymbol();
            if (owner.equals(CTX)) {
                switch (name) {
                    case "localBarrier" -> {
                        cb.pop();
                        barrier();
                    }
                    case "waitAtLeast" -> expandWait();
                    case "putBlockNbi" -> expandPutBlock();
                    case "putSignalBlock" -> expandPutSignal("putSignal");
                    case "putSignalAddBlock" -> expandPutSignal("putSignalAdd");
                    default -> cb.with(i);
                }
                return;
            }
            boolean takesCtx = type.parameterList().contains(CD_CTX);
            if (i.opcode() != Opcode.INVOKESTATIC) {
                if (takesCtx) {
                    throw new Unsupported(describe(caller) + " passes the KernelContext to " + owner.replace('/', '.')
                            + "." + name + ", which is not a static method");
                }
                cb.with(i);
                return;
            }
            Optional<MethodModel> callee = findMethod(owner, name, type);
            if (callee.isEmpty()) {
                if (takesCtx) {
                    throw new Unsupported("the bytecode of " + owner.replace('/', '.') + "." + name + " cannot be read");
                }
                cb.with(i);
                return;
            }
            MethodModel m = callee.get();
            if (Substitutions.of(owner, name, type.descriptorString(), m).isPresent()) {
                cb.invokestatic(Substitutions.CD_HELPERS, name, type);
                return;
            }
            if (!reachesSplitPoint(m) && accessible(m)) {
                if (copyable(m)) {
                    cb.invokestatic(loopForm, copyOf(m), type);
                } else {
                    cb.with(i);
                }
                return;
            }
            String key = describe(m) + m.methodType().stringValue();
            if (chain.contains(key)) {
                throw new Unsupported(describe(m) + " is recursive");
            }
            inline(m, type, chain, key, loads);
        }

        /**
         * Inlines {@code m}: its locals get slots of their own, except a parameter that {@code m}
         * never assigns and whose argument is a plain local of the caller ({@code loads}, the last
         * arguments): it reads the caller's local instead. A split point inside {@code m} then
         * saves that value once, or not at all where it is a kernel parameter, instead of once
         * per copy.
         */
        private void inline(MethodModel m, MethodTypeDesc type, Deque<String> chain, String key, List<Load> loads)
                throws Unsupported {
            CodeAttribute code = m.findAttribute(Attributes.code()).orElseThrow();
            int base = nextSlot;
            nextSlot += code.maxLocals();
            int n = type.parameterCount();
            int[] slots = new int[n];
            int s = 0;
            for (int p = 0; p < n; p++) {
                slots[p] = s;
                s += TypeKind.from(type.parameterType(p)).slotSize();
            }
            BitSet assigned = assignedSlots(code);
            Map<Integer, Integer> aliases = new HashMap<>();
            for (int p = n - 1; p >= 0; p--) {
                TypeKind kind = TypeKind.from(type.parameterType(p));
                int fromEnd = n - 1 - p;
                Load arg = fromEnd < loads.size() ? loads.get(loads.size() - 1 - fromEnd) : null;
                if (arg != null && arg.kind() == kind.asLoadable() && !assigned.get(slots[p])) {
                    aliases.put(slots[p], arg.slot());
                    if (kind.slotSize() == 2) {
                        cb.pop2();
                    } else {
                        cb.pop();
                    }
                } else {
                    cb.storeLocal(kind, base + slots[p]);
                }
            }
            Label exit = cb.newLabel();
            chain.push(key);
            emitMethod(m, new Slots(base, aliases), exit, chain);
            chain.pop();
            cb.labelBinding(exit);
        }

        // ---- split points ----

        private void barrier() {
            int k = newSite(false);
            if (frames == null) {
                markSite(k);
            } else {
                saveAndReturn(k);
                cb.labelBinding(resumeAt.get(k - 1));
            }
        }

        /** Stack: ctx, signal, value (J), timeout (J), errors, rank, peer, tag. Leaves the result (true). */
        private void expandWait() {
            TypeKind[] args = {TypeKind.REFERENCE, TypeKind.REFERENCE, TypeKind.LONG, TypeKind.LONG,
                    TypeKind.REFERENCE, TypeKind.INT, TypeKind.INT, TypeKind.INT};
            int[] at = storeTemps(args);
            int k = newSite(true);
            MethodTypeDesc poll = MethodTypeDesc.of(CD_boolean, CD_CTX, CD_BUF, CD_long, CD_long, CD_BUF, CD_int,
                    CD_int, CD_int);
            if (frames == null) {
                markSite(k);
                loadTemps(args, at);
                cb.invokestatic(CD_RUNTIME, "pollWait", poll);
                cb.pop();
            } else {
                Label passed = cb.newLabel();
                cb.labelBinding(resumeAt.get(k - 1));
                loadTemps(args, at);
                cb.invokestatic(CD_RUNTIME, "pollWait", poll);
                cb.ifne(passed);
                saveAndReturn(k);
                cb.labelBinding(passed);
            }
            // the wait's result: the value its passing look saw
            cb.loadLocal(TypeKind.REFERENCE, at[0]);
            cb.invokestatic(CD_RUNTIME, "passedWith", MethodTypeDesc.of(CD_long, CD_CTX));
        }

        /** Stack: ctx, dst, src, bytes (J), pe. */
        private void expandPutBlock() {
            TypeKind[] args = {TypeKind.REFERENCE, TypeKind.REFERENCE, TypeKind.REFERENCE, TypeKind.LONG,
                    TypeKind.INT};
            int[] at = storeTemps(args);
            barrier();
            loadTemps(args, at);
            cb.invokestatic(CD_RUNTIME, "putBlock", MethodTypeDesc.of(CD_void, CD_CTX, CD_BUF, CD_BUF, CD_long,
                    CD_int));
            barrier();
        }

        /** Stack: ctx, dst, src, bytes (J), signal, value (J), pe. */
        private void expandPutSignal(String part) {
            TypeKind[] args = {TypeKind.REFERENCE, TypeKind.REFERENCE, TypeKind.REFERENCE, TypeKind.LONG,
                    TypeKind.REFERENCE, TypeKind.LONG, TypeKind.INT};
            int[] at = storeTemps(args);
            barrier();
            loadTemps(args, at);
            cb.invokestatic(CD_RUNTIME, part, MethodTypeDesc.of(CD_void, CD_CTX, CD_BUF, CD_BUF, CD_long, CD_BUF,
                    CD_long, CD_int));
            barrier();
        }

        /** Pops the arguments of a context call into the temp slots; returns each one's slot. */
        private int[] storeTemps(TypeKind[] args) {
            int[] at = new int[args.length];
            int s = temps;
            for (int a = 0; a < args.length; a++) {
                at[a] = s;
                s += args[a].slotSize();
            }
            for (int a = args.length - 1; a >= 0; a--) {
                cb.storeLocal(args[a], at[a]);
            }
            return at;
        }

        private void loadTemps(TypeKind[] args, int[] at) {
            for (int a = 0; a < args.length; a++) {
                cb.loadLocal(args[a], at[a]);
            }
        }

        private int newSite(boolean wait) {
            sites.add(wait);
            return sites.size();
        }

        /** Pass 1: a branch target (so the frame there is recorded), then the site's number. */
        private void markSite(int k) {
            Label here = cb.newLabel();
            cb.goto_(here);
            cb.labelBinding(here);
            cb.loadConstant(k);
            cb.invokestatic(CD_RUNTIME, "site", MethodTypeDesc.of(CD_void, CD_int));
        }

        private void saveAndReturn(int k) {
            List<List<Saved>> parts = saveParts(frames.get(k - 1));
            for (int j = 0; j < parts.size(); j++) {
                cb.aload(REFS);
                cb.aload(PRIMS);
                for (Saved l : parts.get(j)) {
                    cb.loadLocal(kind(l.type()), l.slot());
                }
                cb.invokestatic(loopForm, saveMethodName(k, j), saveMethodType(parts.get(j)));
            }
            cb.loadConstant(k);
            cb.ireturn();
        }

        private void restoreLocals(List<Saved> locals) {
            for (Saved l : locals) {
                restoreLocal(l.slot(), l.type());
            }
        }

        private void restoreLocal(int slot, VerificationTypeInfo t) {
            switch (t) {
                case SimpleVerificationTypeInfo s when s == SimpleVerificationTypeInfo.TOP -> {
                }
                case SimpleVerificationTypeInfo s when s == SimpleVerificationTypeInfo.NULL -> {
                    cb.aconst_null();
                    cb.astore(slot);
                }
                case SimpleVerificationTypeInfo s when s == SimpleVerificationTypeInfo.INTEGER -> {
                    primsAt(cb, slot);
                    cb.laload();
                    cb.l2i();
                    cb.istore(slot);
                }
                case SimpleVerificationTypeInfo s when s == SimpleVerificationTypeInfo.LONG -> {
                    primsAt(cb, slot);
                    cb.laload();
                    cb.lstore(slot);
                }
                case SimpleVerificationTypeInfo s when s == SimpleVerificationTypeInfo.FLOAT -> {
                    primsAt(cb, slot);
                    cb.laload();
                    cb.l2i();
                    cb.invokestatic(CD_FLOAT, "intBitsToFloat", MethodTypeDesc.of(CD_float, CD_int));
                    cb.fstore(slot);
                }
                case SimpleVerificationTypeInfo s when s == SimpleVerificationTypeInfo.DOUBLE -> {
                    primsAt(cb, slot);
                    cb.laload();
                    cb.invokestatic(CD_DOUBLE, "longBitsToDouble", MethodTypeDesc.of(CD_double, CD_long));
                    cb.dstore(slot);
                }
                case ObjectVerificationTypeInfo o -> {
                    cb.aload(REFS);
                    cb.loadConstant(slot);
                    cb.aaload();
                    cb.checkcast(o.classSymbol());
                    cb.astore(slot);
                }
                default -> throw new UnsupportedInBuild(new Unsupported("a local of type " + t + " at a barrier"));
            }
        }

    }

    /**
     * Stores local {@code from} (of type {@code t}, one that {@link #passed}) into element
     * {@code index} of the thread's saved locals ({@code refs} in slot {@link #REFS}, {@code prims}
     * in {@link #PRIMS}): ints and floats widened to a long (floats and doubles by their bits),
     * objects into refs.
     */
    private static void saveLocal(CodeBuilder b, int index, int from, VerificationTypeInfo t) {
        TypeKind k = kind(t);
        if (k == TypeKind.REFERENCE) {
            b.aload(REFS);
            b.loadConstant(index);
            b.aload(from);
            b.aastore();
            return;
        }
        primsAt(b, index);
        b.loadLocal(k, from);
        switch (k) {
            case INT -> b.i2l();
            case FLOAT -> {
                b.invokestatic(CD_FLOAT, "floatToRawIntBits", MethodTypeDesc.of(CD_int, CD_float));
                b.i2l();
            }
            case DOUBLE -> b.invokestatic(CD_DOUBLE, "doubleToRawLongBits", MethodTypeDesc.of(CD_long, CD_double));
            default -> {
            }
        }
        b.lastore();
    }

    private static void primsAt(CodeBuilder b, int index) {
        b.aload(PRIMS);
        b.loadConstant(index);
    }

    /**
     * Most locals one save method takes. HotSpot's C2 cannot compile a call whose arguments reach
     * past the stack slots its register masks cover, and gives the caller up ("unsupported calling
     * sequence"): dispatchSend's {@code run}, itself of 25 parameters, calling save methods of up to
     * 56 locals, stayed in C1 code for good. 16 keeps every call far inside that bound.
     */
    static final int SAVED_PER_METHOD = 16;

    /**
     * The locals of a split point that carry a value ({@link #passed}), in parts of at most
     * {@link #SAVED_PER_METHOD}, each saved by a method of its own; none for a split point with
     * nothing to save.
     */
    private static List<List<Saved>> saveParts(List<Saved> saved) {
        List<Saved> values = saved.stream().filter(l -> passed(l.type())).toList();
        List<List<Saved>> parts = new ArrayList<>();
        for (int from = 0; from < values.size(); from += SAVED_PER_METHOD) {
            parts.add(values.subList(from, Math.min(values.size(), from + SAVED_PER_METHOD)));
        }
        return parts;
    }

    /**
     * The type of a save method, {@code (Object[] refs, long[] prims, locals...)V}, for
     * {@code part} of a split point's locals ({@link #saveParts}): passing the saved locals as
     * arguments takes a load each at the split point where storing them inline takes five
     * instructions each, which keeps kernels with many barriers and live locals under
     * {@link #HUGE_METHOD_BYTES}.
     */
    private static MethodTypeDesc saveMethodType(List<Saved> part) {
        List<ClassDesc> params = new ArrayList<>(List.of(CD_Object.arrayType(), CD_long.arrayType()));
        for (Saved l : part) {
            params.add(kind(l.type()) == TypeKind.REFERENCE ? CD_Object : kind(l.type()).upperBound());
        }
        return MethodTypeDesc.of(CD_void, params);
    }

    /** The name of part {@code part} of split point {@code site}'s save methods. */
    private static String saveMethodName(int site, int part) {
        return "save$" + site + "$" + part;
    }

    /** The body of a save method ({@link #saveMethodType}): each argument into its local's element. */
    private static void emitSaveMethod(CodeBuilder b, List<Saved> part) {
        int arg = 2;
        for (Saved l : part) {
            saveLocal(b, l.slot(), arg, l.type());
            arg += width(l.type());
        }
        b.return_();
    }

    /** Whether a saved local carries a value (TOP and a known null are restored without one). */
    private static boolean passed(VerificationTypeInfo t) {
        return t != SimpleVerificationTypeInfo.TOP && t != SimpleVerificationTypeInfo.NULL;
    }

    /** The type kind of a local of verification type {@code t} (one that {@link #passed}). */
    private static TypeKind kind(VerificationTypeInfo t) {
        if (t == SimpleVerificationTypeInfo.INTEGER) {
            return TypeKind.INT;
        } else if (t == SimpleVerificationTypeInfo.LONG) {
            return TypeKind.LONG;
        } else if (t == SimpleVerificationTypeInfo.FLOAT) {
            return TypeKind.FLOAT;
        } else if (t == SimpleVerificationTypeInfo.DOUBLE) {
            return TypeKind.DOUBLE;
        } else if (t instanceof ObjectVerificationTypeInfo) {
            return TypeKind.REFERENCE;
        }
        throw new UnsupportedInBuild(new Unsupported("a local of type " + t
                + " (an object under construction) at a barrier"));
    }

    /** Carries an {@link Unsupported} out of the class-file library's builder callbacks. */
    static final class UnsupportedInBuild extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UnsupportedInBuild(Unsupported cause) {
            super(cause.getMessage(), cause, false, false);
        }
    }

    private static int width(VerificationTypeInfo t) {
        return t == SimpleVerificationTypeInfo.LONG || t == SimpleVerificationTypeInfo.DOUBLE ? 2 : 1;
    }

    // ---- helpers that reach a substitution: copies in the loop form's class ----

    /**
     * Whether the loop form calls a copy of helper {@code m} (which reaches no split point): it
     * calls a substituted helper, itself or through helpers it calls, and the loop form's class may
     * make every call and field access its code makes (it is not in the helper's class).
     */
    private boolean copyable(MethodModel m) {
        String key = describe(m) + m.methodType().stringValue();
        Boolean known = copyable.get(key);
        if (known != null) {
            return known;
        }
        copyable.put(key, false); // recursion: decided by the other calls
        boolean substitutes = false;
        boolean can = m.code().isPresent() && m.code().get().exceptionHandlers().isEmpty()
                && (m.flags().flagsMask() & ClassFile.ACC_STATIC) != 0;
        for (CodeElement e : can ? m.code().get().elementList() : List.<CodeElement>of()) {
            if (e instanceof InvokeInstruction i) {
                String owner = i.owner().asInternalName();
                Optional<MethodModel> callee = findMethod(owner, i.name().stringValue(), i.typeSymbol());
                if (i.opcode() == Opcode.INVOKESTATIC && callee.isPresent() && Substitutions.of(owner,
                        i.name().stringValue(), i.typeSymbol().descriptorString(), callee.get()).isPresent()) {
                    substitutes = true;
                } else if (i.opcode() == Opcode.INVOKESTATIC && callee.isPresent() && copyable(callee.get())) {
                    substitutes = true;
                } else if (callee.isPresent() ? !accessible(callee.get()) : !publicMember(owner)) {
                    can = false;
                }
            } else if (e instanceof FieldInstruction f) {
                try {
                    checkField(m, f);
                } catch (Unsupported u) {
                    can = false;
                }
            } else if (e instanceof InvokeDynamicInstruction || e instanceof DiscontinuedInstruction) {
                can = false;
            }
        }
        boolean result = can && substitutes;
        copyable.put(key, result);
        return result;
    }

    /** A class whose bytecode cannot be read (the JDK's): the kernels call only its public members. */
    private boolean publicMember(String owner) {
        try {
            return Modifier.isPublic(Class.forName(owner.replace('/', '.'), false, loader).getModifiers());
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** The name of {@code m}'s copy (a {@link #copyable} helper), registered on first use. */
    private String copyOf(MethodModel m) {
        String key = describe(m) + m.methodType().stringValue();
        HelperCopy h = copies.get(key);
        if (h == null) {
            h = new HelperCopy("cpu$" + m.methodName().stringValue() + "$" + copies.size(), m);
            copies.put(key, h);
            // the copies it calls, so that all are known before the class is built
            for (CodeElement e : m.code().orElseThrow().elementList()) {
                if (e instanceof InvokeInstruction i && i.opcode() == Opcode.INVOKESTATIC) {
                    findMethod(i.owner().asInternalName(), i.name().stringValue(), i.typeSymbol())
                            .filter(c -> !isSubstituted(i, c) && copyable(c)).ifPresent(this::copyOf);
                }
            }
        }
        return h.name();
    }

    private static boolean isSubstituted(InvokeInstruction i, MethodModel callee) {
        return Substitutions.of(i.owner().asInternalName(), i.name().stringValue(),
                i.typeSymbol().descriptorString(), callee).isPresent();
    }

    /**
     * The body of {@code m}'s copy: its code as it is (same locals), but for its calls of
     * substituted helpers, which go to {@link CollectiveHelpers}, and of other copyable helpers,
     * which go to their copies.
     */
    private void emitCopy(CodeBuilder b, MethodModel m, ClassDesc loopForm) {
        Map<Label, Label> labels = new HashMap<>();
        java.util.function.Function<Label, Label> re = l -> labels.computeIfAbsent(l, x -> b.newLabel());
        for (CodeElement e : m.code().orElseThrow()) {
            switch (e) {
                case LabelTarget t -> b.labelBinding(re.apply(t.label()));
                case LineNumber ln -> b.lineNumber(ln.line());
                case LoadInstruction i -> b.loadLocal(i.typeKind(), i.slot());
                case StoreInstruction i -> b.storeLocal(i.typeKind(), i.slot());
                case IncrementInstruction i -> b.iinc(i.slot(), i.constant());
                case BranchInstruction i -> b.branch(i.opcode(), re.apply(i.target()));
                case TableSwitchInstruction i -> b.tableswitch(i.lowValue(), i.highValue(), re.apply(i.defaultTarget()),
                        i.cases().stream().map(c -> SwitchCase.of(c.caseValue(), re.apply(c.target()))).toList());
                case LookupSwitchInstruction i -> b.lookupswitch(re.apply(i.defaultTarget()),
                        i.cases().stream().map(c -> SwitchCase.of(c.caseValue(), re.apply(c.target()))).toList());
                case InvokeInstruction i when i.opcode() == Opcode.INVOKESTATIC -> {
                    Optional<MethodModel> callee = findMethod(i.owner().asInternalName(), i.name().stringValue(),
                            i.typeSymbol());
                    if (callee.isPresent() && isSubstituted(i, callee.get())) {
                        b.invokestatic(Substitutions.CD_HELPERS, i.name().stringValue(), i.typeSymbol());
                    } else if (callee.isPresent() && copyable(callee.get())) {
                        b.invokestatic(loopForm, copyOf(callee.get()), i.typeSymbol());
                    } else {
                        b.with(i);
                    }
                }
                case Instruction i -> b.with(i);
                default -> {
                    // local variable tables and other debug information: not needed
                }
            }
        }
    }

    // ---- class files and what the loop form may call ----

    private Optional<ClassModel> classModel(String internalName) {
        return classes.computeIfAbsent(internalName, n -> {
            try (InputStream in = loader.getResourceAsStream(n + ".class")) {
                return in == null ? Optional.empty() : Optional.of(ClassFile.of().parse(in.readAllBytes()));
            } catch (IOException e) {
                return Optional.empty();
            }
        });
    }

    /** The static method {@code name type} of {@code owner} or its nearest superclass declaring it. */
    private Optional<MethodModel> findMethod(String owner, String name, MethodTypeDesc type) {
        for (String c = owner; c != null; ) {
            Optional<ClassModel> cm = classModel(c);
            if (cm.isEmpty()) {
                return Optional.empty();
            }
            for (MethodModel m : cm.get().methods()) {
                if (m.methodName().equalsString(name) && m.methodTypeSymbol().equals(type)) {
                    return Optional.of(m);
                }
            }
            c = cm.get().superclass().map(e -> e.asInternalName()).orElse(null);
        }
        return Optional.empty();
    }

    /** Whether {@code m}, or a static method it calls, contains a split point. */
    private boolean reachesSplitPoint(MethodModel m) {
        String key = describe(m) + m.methodType().stringValue();
        Boolean known = reaches.get(key);
        if (known != null) {
            return known;
        }
        reaches.put(key, false); // a recursive call does not add split points
        boolean found = false;
        for (CodeElement e : m.code().map(c -> c.elementList()).orElse(List.of())) {
            if (e instanceof InvokeInstruction i) {
                String owner = i.owner().asInternalName();
                if (owner.equals(CTX) && switch (i.name().stringValue()) {
                    case "localBarrier", "waitAtLeast", "putBlockNbi", "putSignalBlock", "putSignalAddBlock" -> true;
                    default -> false;
                }) {
                    found = true;
                } else if (i.opcode() == Opcode.INVOKESTATIC) {
                    found = findMethod(owner, i.name().stringValue(), i.typeSymbol())
                            .map(this::reachesSplitPoint).orElse(false);
                }
                if (found) {
                    break;
                }
            }
        }
        reaches.put(key, found);
        return found;
    }

    /** Whether the loop form (a nestmate of the kernel's class, in its package) may call {@code m}. */
    private boolean accessible(MethodModel m) {
        return accessible(m.parent().orElseThrow().thisClass().asInternalName(), m.flags().flagsMask());
    }

    private boolean accessible(String owner, int flags) {
        Class<?> c;
        try {
            c = Class.forName(owner.replace('/', '.'), false, loader);
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
        boolean samePackage = c.getPackageName().equals(host.getPackageName()) && c.getClassLoader() == host.getClassLoader();
        if ((flags & ClassFile.ACC_PRIVATE) != 0) {
            return c.getNestHost() == host.getNestHost();
        }
        boolean classVisible = Modifier.isPublic(c.getModifiers()) || samePackage;
        return classVisible && ((flags & ClassFile.ACC_PUBLIC) != 0 || samePackage);
    }

    private void checkField(MethodModel m, FieldInstruction i) throws Unsupported {
        if (i.typeSymbol().equals(CD_CTX) && (i.opcode() == Opcode.PUTSTATIC || i.opcode() == Opcode.PUTFIELD)) {
            throw new Unsupported(describe(m) + " stores the KernelContext in a field");
        }
        String owner = i.owner().asInternalName();
        Optional<ClassModel> cm = classModel(owner);
        int flags = cm.flatMap(c -> c.fields().stream().filter(f -> f.fieldName().equals(i.name())).findFirst())
                .map(f -> f.flags().flagsMask()).orElse(ClassFile.ACC_PUBLIC);
        if (!accessible(owner, flags)) {
            throw new Unsupported(describe(m) + " reads or writes " + owner.replace('/', '.') + "." + i.name()
                    + ", which the loop form cannot access");
        }
    }

    private static String describe(MethodModel m) {
        return m.parent().map(c -> c.thisClass().asInternalName().replace('/', '.')).orElse("?") + "."
                + m.methodName().stringValue();
    }
}
