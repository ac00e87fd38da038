package org.moecomm.kernels.cpu;

import java.lang.classfile.CodeElement;
import java.lang.classfile.Instruction;
import java.lang.classfile.Label;
import java.lang.classfile.MethodModel;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.ConstantInstruction;
import java.lang.classfile.instruction.FieldInstruction;
import java.lang.classfile.instruction.IncrementInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.LabelTarget;
import java.lang.classfile.instruction.LoadInstruction;
import java.lang.classfile.instruction.LookupSwitchInstruction;
import java.lang.classfile.instruction.StoreInstruction;
import java.lang.classfile.instruction.SwitchCase;
import java.lang.classfile.instruction.TableSwitchInstruction;
import java.lang.classfile.instruction.TypeCheckInstruction;
import java.lang.constant.ClassDesc;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The static helpers that a loop form calls a CPU version of ({@link CollectiveHelpers}) instead:
 * team-collective helpers of the library's kernels whose per-thread shares cost the JVM far more
 * than the work itself (16 bytes per lane and step, a token's pairs reloaded for every quad).
 * The kernels stay as they are: the GPU compiler never sees a substitution.
 *
 * <p>Each entry names the helper (class, name, descriptor) and a fingerprint of the bytecode it
 * was checked against ({@link #fingerprint}): a helper whose code has changed since is not
 * substituted (logged once at WARN), since its CPU version may no longer do what it does;
 * {@code SubstitutionsTest} fails until the entry is checked again and its fingerprint updated.
 */
final class Substitutions {
    private static final Logger LOG = LogManager.getLogger(CpuKernelRunner.class);
    static final ClassDesc CD_HELPERS = ClassDesc.of(CollectiveHelpers.class.getName());

    /** A helper and the {@link CollectiveHelpers} method of the same descriptor that replaces it. */
    record Entry(String owner, String name, String descriptor, String fingerprint) {
        String key() {
            return owner + "." + name + descriptor;
        }
    }

    private static final String MOE = "org/moecomm/kernels/moe/MoeKernels";
    private static final String BUF = "Lorg/moecomm/kernels/api/Buf;";

    static final List<Entry> ENTRIES = List.of(
            new Entry(MOE, "copyPieces", "(" + BUF + "J" + BUF + "JIII)V", "04ffc82d"),
            new Entry(MOE, "copyPiecesDeep", "(" + BUF + "J" + BUF + "JIII)V", "cf4d794b"),
            new Entry(MOE, "reduceSlice", "(III" + BUF + BUF + BUF + BUF + "IIII)V", "9f82de7f"));

    private static final Map<String, Entry> BY_KEY = new HashMap<>();
    private static final Map<String, Boolean> CHECKED = new ConcurrentHashMap<>();

    static {
        for (Entry e : ENTRIES) {
            BY_KEY.put(e.key(), e);
        }
    }

    private Substitutions() {
    }

    /**
     * The substitution for a call of {@code owner.name descriptor} whose bytecode is {@code m}, if
     * there is one and {@code m} is still the code it was checked against.
     */
    static Optional<Entry> of(String owner, String name, String descriptor, MethodModel m) {
        Entry e = BY_KEY.get(owner + "." + name + descriptor);
        if (e == null) {
            return Optional.empty();
        }
        boolean same = CHECKED.computeIfAbsent(e.key(), k -> {
            String now = fingerprint(m);
            if (!now.equals(e.fingerprint())) {
                LOG.warn("{}.{} has changed (bytecode fingerprint {}, checked: {}): loop forms call it, not its CPU"
                        + " version", owner.replace('/', '.'), name, now, e.fingerprint());
                return false;
            }
            return true;
        });
        return same ? Optional.of(e) : Optional.empty();
    }

    /**
     * A fingerprint of a method's code that does not depend on constant pool order: a CRC-32 of
     * its instructions written out symbolically (branches by target instruction number).
     */
    static String fingerprint(MethodModel m) {
        List<CodeElement> code = m.code().orElseThrow().elementList();
        Map<Label, Integer> at = new HashMap<>();
        int n = 0;
        for (CodeElement e : code) {
            if (e instanceof LabelTarget t) {
                at.put(t.label(), n);
            } else if (e instanceof Instruction) {
                n++;
            }
        }
        StringBuilder s = new StringBuilder();
        for (CodeElement e : code) {
            if (!(e instanceof Instruction i)) {
                continue;
            }
            s.append(i.opcode()).append(' ');
            switch (i) {
                case LoadInstruction l -> s.append(l.slot());
                case StoreInstruction l -> s.append(l.slot());
                case IncrementInstruction l -> s.append(l.slot()).append(',').append(l.constant());
                case BranchInstruction b -> s.append(at.get(b.target()));
                case ConstantInstruction c -> s.append(c.constantValue());
                case InvokeInstruction v -> s.append(v.owner().asInternalName()).append('.').append(v.name())
                        .append(v.type());
                case FieldInstruction f -> s.append(f.owner().asInternalName()).append('.').append(f.name());
                case TypeCheckInstruction c -> s.append(c.type().asInternalName());
                case TableSwitchInstruction w -> appendCases(s, at, at.get(w.defaultTarget()), w.cases());
                case LookupSwitchInstruction w -> appendCases(s, at, at.get(w.defaultTarget()), w.cases());
                default -> {
                }
            }
            s.append('\n');
        }
        CRC32 crc = new CRC32();
        crc.update(s.toString().getBytes(StandardCharsets.UTF_8));
        return String.format("%08x", crc.getValue());
    }

    private static void appendCases(StringBuilder s, Map<Label, Integer> at, int dflt, List<SwitchCase> cases) {
        s.append(dflt);
        for (SwitchCase c : cases) {
            s.append(',').append(c.caseValue()).append(':').append(at.get(c.target()));
        }
    }
}
