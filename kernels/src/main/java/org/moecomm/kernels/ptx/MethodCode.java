package org.moecomm.kernels.ptx;

import java.lang.classfile.Attributes;
import java.lang.classfile.ClassModel;
import java.lang.classfile.CodeElement;
import java.lang.classfile.Instruction;
import java.lang.classfile.Label;
import java.lang.classfile.MethodModel;
import java.lang.classfile.Opcode;
import java.lang.classfile.attribute.CodeAttribute;
import java.lang.classfile.attribute.SourceFileAttribute;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.LabelTarget;
import java.lang.classfile.instruction.LineNumber;
import java.lang.classfile.instruction.LookupSwitchInstruction;
import java.lang.classfile.instruction.ReturnInstruction;
import java.lang.classfile.instruction.SwitchCase;
import java.lang.classfile.instruction.TableSwitchInstruction;
import java.lang.classfile.instruction.ThrowInstruction;
import java.lang.reflect.AccessFlag;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One method's bytecode as the compiler sees it: its real instructions in order (pseudo
 * instructions removed), the source line of each, and the control-flow structure (the jump
 * targets of each instruction as instruction indices, and the block leaders).
 *
 * <p>Jump targets are kept as indices rather than read from the instructions' labels so that
 * {@link LoopUnrolling} can make a copy of a method in which copied instructions jump elsewhere
 * than the originals.
 */
final class MethodCode {
    final String owner;
    final String name;
    final String descriptor;
    final String sourceFile;
    final boolean isStatic;
    final boolean hasCode;
    final boolean isNative;
    final boolean hasHandlers;
    /** Instruction where the first exception handler's range starts, {@code -1} if none. */
    final int firstHandlerStart;
    final int maxLocals;
    final List<Instruction> insns = new ArrayList<>();
    /** Source line of each instruction, {@code -1} where unknown. */
    final int[] lines;
    /** First line of the method, for messages about the method as a whole. */
    final int firstLine;
    /** Instructions that start a basic block. */
    final boolean[] leader;
    /** Jump targets of each instruction: see {@link #targets(int)}. */
    private final int[][] targets;
    /** A comment for the PTX before each instruction ({@code null}: none), such as where an unrolled loop's copy starts. */
    private final String[] notes;
    private final Map<Label, Integer> labels = new HashMap<>();

    MethodCode(ClassModel cls, MethodModel method) {
        this.owner = cls.thisClass().asInternalName();
        this.name = method.methodName().stringValue();
        this.descriptor = method.methodType().stringValue();
        this.sourceFile = cls.findAttribute(Attributes.sourceFile())
                .map(SourceFileAttribute::sourceFile).map(u -> u.stringValue()).orElse(null);
        this.isStatic = method.flags().has(AccessFlag.STATIC);
        this.isNative = method.flags().has(AccessFlag.NATIVE);
        CodeAttribute code = method.findAttribute(Attributes.code()).orElse(null);
        this.hasCode = code != null;
        this.hasHandlers = code != null && !code.exceptionHandlers().isEmpty();
        this.maxLocals = code != null ? code.maxLocals() : 0;
        List<Integer> lineList = new ArrayList<>();
        List<Label> pending = new ArrayList<>();
        int line = -1;
        if (code != null) {
            for (CodeElement e : code) {
                switch (e) {
                    case LabelTarget t -> pending.add(t.label());
                    case LineNumber ln -> line = ln.line();
                    case Instruction insn -> {
                        for (Label l : pending) {
                            labels.put(l, insns.size());
                        }
                        pending.clear();
                        insns.add(insn);
                        lineList.add(line);
                    }
                    default -> {
                    }
                }
            }
        }
        for (Label l : pending) {
            labels.put(l, insns.size());
        }
        this.firstHandlerStart = hasHandlers ? target(code.exceptionHandlers().getFirst().tryStart()) : -1;
        this.lines = lineList.stream().mapToInt(Integer::intValue).toArray();
        int first = -1;
        for (int l : lines) {
            if (l >= 0) {
                first = l;
                break;
            }
        }
        this.firstLine = first;
        this.targets = new int[insns.size()][];
        for (int i = 0; i < insns.size(); i++) {
            targets[i] = resolveTargets(insns.get(i));
        }
        this.leader = leaders(insns, targets);
        this.notes = new String[insns.size()];
    }

    /**
     * A variant of {@code base}'s method with other instructions ({@link LoopUnrolling}'s
     * copy): {@code targets} gives each instruction's jump targets as for {@link #targets(int)};
     * a branch instruction's own label is then ignored.
     */
    MethodCode(MethodCode base, List<Instruction> insns, int[] lines, int[][] targets, String[] notes) {
        this.owner = base.owner;
        this.name = base.name;
        this.descriptor = base.descriptor;
        this.sourceFile = base.sourceFile;
        this.isStatic = base.isStatic;
        this.hasCode = base.hasCode;
        this.isNative = base.isNative;
        this.hasHandlers = base.hasHandlers;
        this.firstHandlerStart = base.firstHandlerStart;
        this.maxLocals = base.maxLocals;
        this.firstLine = base.firstLine;
        this.insns.addAll(insns);
        this.lines = lines.clone();
        this.targets = targets.clone();
        this.leader = leaders(this.insns, this.targets);
        this.notes = notes.clone();
    }

    private static boolean[] leaders(List<Instruction> insns, int[][] targets) {
        boolean[] leader = new boolean[insns.size() + 1];
        if (!insns.isEmpty()) {
            leader[0] = true;
        }
        for (int i = 0; i < insns.size(); i++) {
            if (endsBlock(insns.get(i))) {
                leader[i + 1] = true;
            }
            for (int t : targets[i]) {
                leader[t] = true;
            }
        }
        return leader;
    }

    int size() {
        return insns.size();
    }

    Instruction insn(int i) {
        return insns.get(i);
    }

    /** The PTX comment to write before instruction {@code i}, or {@code null}. */
    String note(int i) {
        return notes[i];
    }

    int line(int i) {
        return i >= 0 && i < lines.length ? lines[i] : firstLine;
    }

    private int target(Label label) {
        Integer i = labels.get(label);
        if (i == null) {
            throw new IllegalStateException("label without position in " + name);
        }
        return i;
    }

    String binaryOwner() {
        return owner.replace('/', '.');
    }

    /** {@code Owner.name(Source.java:line)}, as in a stack trace. */
    String where(int insnIndex) {
        int l = line(insnIndex);
        String src = sourceFile != null ? sourceFile : "unknown source";
        return binaryOwner() + "." + name + "(" + src + (l >= 0 ? ":" + l : "") + ")";
    }

    /** Whether control never falls through from {@code insn} to the next instruction. */
    static boolean isTerminal(Instruction insn) {
        return insn instanceof ReturnInstruction || insn instanceof ThrowInstruction
                || insn instanceof TableSwitchInstruction || insn instanceof LookupSwitchInstruction
                || insn.opcode() == Opcode.GOTO || insn.opcode() == Opcode.GOTO_W;
    }

    static boolean endsBlock(Instruction insn) {
        return isTerminal(insn) || insn instanceof BranchInstruction;
    }

    /**
     * Explicit jump targets of instruction {@code i} (not its fall-through), as instruction
     * indices: a branch's target; a switch's default target, then its cases' targets in the order
     * of its {@code cases()}; none for other instructions. The array is shared: do not modify it.
     */
    int[] targets(int i) {
        return targets[i];
    }

    /** The target of branch instruction {@code i}. */
    int jumpTarget(int i) {
        return targets[i][0];
    }

    private int[] resolveTargets(Instruction insn) {
        List<Label> out = new ArrayList<>();
        switch (insn) {
            case BranchInstruction b -> out.add(b.target());
            case TableSwitchInstruction t -> {
                out.add(t.defaultTarget());
                for (SwitchCase c : t.cases()) {
                    out.add(c.target());
                }
            }
            case LookupSwitchInstruction l -> {
                out.add(l.defaultTarget());
                for (SwitchCase c : l.cases()) {
                    out.add(c.target());
                }
            }
            default -> {
            }
        }
        return out.stream().mapToInt(this::target).toArray();
    }

    @Override
    public String toString() {
        return binaryOwner() + "." + name + descriptor;
    }
}
