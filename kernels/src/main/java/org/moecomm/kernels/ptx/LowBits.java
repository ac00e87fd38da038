package org.moecomm.kernels.ptx;

import java.lang.classfile.Instruction;
import java.lang.classfile.Opcode;
import java.lang.classfile.TypeKind;
import java.lang.classfile.instruction.ArrayLoadInstruction;
import java.lang.classfile.instruction.ArrayStoreInstruction;
import java.lang.classfile.instruction.ConstantInstruction;
import java.lang.classfile.instruction.ConvertInstruction;
import java.lang.classfile.instruction.FieldInstruction;
import java.lang.classfile.instruction.IncrementInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.LoadInstruction;
import java.lang.classfile.instruction.NopInstruction;
import java.lang.classfile.instruction.OperatorInstruction;
import java.lang.classfile.instruction.StoreInstruction;
import java.lang.constant.MethodTypeDesc;

/**
 * Whether anything reads the upper bits of a narrow int: a {@code byte}, {@code short} or
 * {@code char} that {@code i2b}, {@code i2s}, {@code i2c} or an intrinsic pushes. When every use
 * reads only its low 8 or 16 bits, the sign (or zero) extension that makes it the JVM's int is
 * dead and {@link Lowering} leaves it out; {@code ptxas} keeps it ({@code (short) x} then
 * {@code << 16}, bf16's widening, costs an {@code SGXT} per element). The result is the same bits.
 *
 * <p>A use is the instruction that pops the value in its basic block. Uses that read only the low
 * {@code bits} bits: a left shift by a constant of at least {@code 32 - bits} ({@code 64 - bits}
 * for a long); an {@code and} with a constant mask within those bits; a narrowing to at most as
 * many bits; a widening to long whose own uses are such; an intrinsic that reads only that many
 * bits of its last argument ({@link Intrinsics#lastArgumentBits}); a store to a local slot whose
 * int loads are all such uses; and a static call (inlined) whose parameter's loads are. Anything
 * else (a comparison, a right shift, arithmetic, a return, a value that reaches a branch target
 * on the stack) keeps the extension.
 */
final class LowBits {
    /** Most stores, calls and widenings followed from one value. */
    private static final int MAX_DEPTH = 8;

    private LowBits() {
    }

    /** Whether the uses of the int that instruction {@code i} of {@code code} pushes read only its low {@code bits} bits. */
    static boolean onlyLowBitsRead(ClassFiles classes, MethodCode code, int i, int bits) {
        return usesReadLowBits(classes, code, i, bits, 0);
    }

    private static boolean usesReadLowBits(ClassFiles classes, MethodCode code, int i, int bits, int depth) {
        if (depth > MAX_DEPTH) {
            return false;
        }
        int above = 0; // stack entries pushed on top of the value since
        for (int j = i + 1; j < code.size() && !code.leader[j]; j++) {
            int[] popsPushes = stackEffect(code.insn(j));
            if (popsPushes == null) {
                return false;
            }
            int pops = popsPushes[0];
            if (pops > above) {
                return readsLowBits(classes, code, j, pops - 1 - above, bits, depth);
            }
            above += popsPushes[1] - pops;
        }
        return false;
    }

    /** Whether instruction {@code j}, popping the value as its operand {@code operand} (0: the deepest), reads only its low bits. */
    private static boolean readsLowBits(ClassFiles classes, MethodCode code, int j, int operand, int bits, int depth) {
        switch (code.insn(j)) {
            case StoreInstruction s -> {
                return s.typeKind() == TypeKind.INT && loadsReadLowBits(classes, code, s.slot(), bits, depth + 1);
            }
            case ConvertInstruction c -> {
                return switch (c.opcode()) {
                    case I2B -> bits >= 8;
                    case I2S, I2C -> bits >= 16;
                    case I2L -> usesReadLowBits(classes, code, j, bits, depth + 1);
                    default -> false;
                };
            }
            case OperatorInstruction o -> {
                // the other operand a constant pushed just before: x << c, x & m
                if (operand != 0 || !(code.insn(j - 1) instanceof ConstantInstruction k)
                        || !(k.constantValue() instanceof Number n)) {
                    return false;
                }
                long c = n.longValue();
                return switch (o.opcode()) {
                    case ISHL -> 32 - (c & 31) <= bits;
                    case LSHL -> 64 - (c & 63) <= bits;
                    case IAND -> ((int) c >>> bits) == 0;
                    case LAND -> (c >>> bits) == 0;
                    default -> false;
                };
            }
            case InvokeInstruction inv -> {
                String owner = inv.owner().asInternalName();
                String name = inv.name().stringValue();
                String desc = inv.type().stringValue();
                MethodTypeDesc mt = inv.typeSymbol();
                if (Intrinsics.find(owner, name, desc) != null) {
                    int args = mt.parameterCount() + (inv.opcode() == Opcode.INVOKESTATIC ? 0 : 1);
                    return operand == args - 1 && Intrinsics.lastArgumentBits(owner, name, desc) <= bits;
                }
                MethodCode callee = inv.opcode() == Opcode.INVOKESTATIC ? classes.method(owner, name, desc) : null;
                if (callee == null || !callee.hasCode) {
                    return false;
                }
                int slot = 0;
                for (int p = 0; p < operand; p++) {
                    slot += TypeKind.from(mt.parameterType(p)).slotSize();
                }
                return loadsReadLowBits(classes, callee, slot, bits, depth + 1);
            }
            default -> {
                return false;
            }
        }
    }

    /** Whether every int load of local {@code slot} in {@code code} reads only the low bits (and no {@code iinc} changes it). */
    private static boolean loadsReadLowBits(ClassFiles classes, MethodCode code, int slot, int bits, int depth) {
        for (int j = 0; j < code.size(); j++) {
            Instruction insn = code.insn(j);
            if (insn instanceof IncrementInstruction inc && inc.slot() == slot) {
                return false;
            }
            if (insn instanceof LoadInstruction l && l.slot() == slot && l.typeKind() == TypeKind.INT
                    && !usesReadLowBits(classes, code, j, bits, depth)) {
                return false;
            }
        }
        return true;
    }

    /** Operand stack entries an instruction pops and pushes; {@code null} for those not followed (stack shuffles, branches). */
    private static int[] stackEffect(Instruction insn) {
        return switch (insn) {
            case LoadInstruction l -> new int[] {0, 1};
            case ConstantInstruction c -> new int[] {0, 1};
            case StoreInstruction s -> new int[] {1, 0};
            case IncrementInstruction inc -> new int[] {0, 0};
            case NopInstruction n -> new int[] {0, 0};
            case ConvertInstruction c -> new int[] {1, 1};
            case OperatorInstruction o -> switch (o.opcode()) {
                case ARRAYLENGTH, INEG, LNEG, FNEG, DNEG -> new int[] {1, 1};
                default -> new int[] {2, 1};
            };
            case FieldInstruction f when f.opcode() == Opcode.GETSTATIC -> new int[] {0, 1};
            case ArrayLoadInstruction a -> new int[] {2, 1};
            case ArrayStoreInstruction a -> new int[] {3, 0};
            case InvokeInstruction inv -> {
                MethodTypeDesc mt = inv.typeSymbol();
                int args = mt.parameterCount() + (inv.opcode() == Opcode.INVOKESTATIC ? 0 : 1);
                yield new int[] {args, mt.returnType().descriptorString().equals("V") ? 0 : 1};
            }
            default -> null;
        };
    }
}
