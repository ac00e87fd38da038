package org.moecomm.kernels.cpu;

import java.lang.classfile.CodeElement;
import java.lang.classfile.CodeModel;
import java.lang.classfile.Instruction;
import java.lang.classfile.Label;
import java.lang.classfile.Opcode;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.IncrementInstruction;
import java.lang.classfile.instruction.LabelTarget;
import java.lang.classfile.instruction.LoadInstruction;
import java.lang.classfile.instruction.LookupSwitchInstruction;
import java.lang.classfile.instruction.ReturnInstruction;
import java.lang.classfile.instruction.StoreInstruction;
import java.lang.classfile.instruction.SwitchCase;
import java.lang.classfile.instruction.TableSwitchInstruction;
import java.lang.classfile.instruction.ThrowInstruction;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Which local slots of a method hold a value that is read later: a backward dataflow over its
 * instructions. The loop form saves only those at a split point, which keeps its code small enough
 * for the JIT. A wide value counts by its first slot.
 */
final class Liveness {
    private final List<Instruction> insns = new ArrayList<>();
    private final Map<Label, Integer> labels = new HashMap<>();
    private final BitSet[] liveIn;

    Liveness(CodeModel code) {
        for (CodeElement e : code) {
            if (e instanceof LabelTarget t) {
                labels.put(t.label(), insns.size());
            } else if (e instanceof Instruction i) {
                insns.add(i);
            }
        }
        liveIn = new BitSet[insns.size() + 1];
        for (int i = 0; i < liveIn.length; i++) {
            liveIn[i] = new BitSet();
        }
        solve();
    }

    /** Slots live where {@code label} is bound. */
    BitSet liveAt(Label label) {
        return liveIn[labels.get(label)];
    }

    private void solve() {
        boolean changed = true;
        while (changed) {
            changed = false;
            for (int i = insns.size() - 1; i >= 0; i--) {
                BitSet live = new BitSet();
                for (int s : successors(i)) {
                    live.or(liveIn[s]);
                }
                Instruction insn = insns.get(i);
                switch (insn) {
                    case StoreInstruction st -> live.clear(st.slot());
                    case LoadInstruction ld -> live.set(ld.slot());
                    case IncrementInstruction inc -> live.set(inc.slot());
                    default -> {
                    }
                }
                if (!live.equals(liveIn[i])) {
                    liveIn[i] = live;
                    changed = true;
                }
            }
        }
    }

    private List<Integer> successors(int i) {
        Instruction insn = insns.get(i);
        List<Integer> out = new ArrayList<>();
        switch (insn) {
            case BranchInstruction b -> {
                out.add(labels.get(b.target()));
                if (b.opcode() != Opcode.GOTO && b.opcode() != Opcode.GOTO_W) {
                    out.add(i + 1);
                }
            }
            case TableSwitchInstruction t -> {
                out.add(labels.get(t.defaultTarget()));
                t.cases().stream().map(SwitchCase::target).forEach(l -> out.add(labels.get(l)));
            }
            case LookupSwitchInstruction t -> {
                out.add(labels.get(t.defaultTarget()));
                t.cases().stream().map(SwitchCase::target).forEach(l -> out.add(labels.get(l)));
            }
            case ReturnInstruction r -> {
            }
            case ThrowInstruction t -> {
            }
            default -> out.add(i + 1);
        }
        return out;
    }
}
