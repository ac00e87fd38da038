package org.moecomm.kernels.cpu;

import static java.lang.constant.ConstantDescs.CD_Float;
import static java.lang.constant.ConstantDescs.CD_Integer;
import static java.lang.constant.ConstantDescs.CD_Long;
import static java.lang.constant.ConstantDescs.CD_Object;
import static java.lang.constant.ConstantDescs.CD_float;
import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_long;

import java.lang.classfile.CodeBuilder;
import java.lang.classfile.Label;
import java.lang.classfile.TypeKind;
import java.lang.constant.ClassDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.invoke.MethodType;

import org.moecomm.kernels.api.KernelContext;

/**
 * The loop form's second method, {@code void sweep(Object[][] refs, long[][] prims, int[] resume,
 * byte[] status, int[] current, KernelContext[] ctx, Object[] args)}: one pass of a block's
 * work-item loop. It unboxes the launch's arguments once, then calls {@code run} for every thread
 * {@code t} whose {@code status[t]} is 0 (runnable), from {@code resume[t]}, and stores the split
 * point it returns in {@code resume[t]}. {@code current[0]} is the thread that runs (the one that
 * failed, when {@code sweep} throws).
 *
 * <p>Why generated: {@code run} is then a direct static call with the arguments in locals, which
 * HotSpot can inline into the loop, where a method handle per thread (bound to the launch's
 * arguments) costs an indirect call that is never inlined and an argument shuffle per thread and
 * region.
 */
final class SweepMethod {
    static final String NAME = "sweep";
    /** The type of {@code sweep} as a method handle sees it. */
    static final MethodType TYPE = MethodType.methodType(void.class, Object[][].class, long[][].class, int[].class,
            byte[].class, int[].class, KernelContext[].class, Object[].class);

    private static final int REFS = 0;
    private static final int PRIMS = 1;
    private static final int RESUME = 2;
    private static final int STATUS = 3;
    private static final int CURRENT = 4;
    private static final int CTX = 5;
    private static final int ARGS = 6;
    private static final int FIRST_ARG = 7;

    private SweepMethod() {
    }

    static MethodTypeDesc type() {
        return MethodTypeDesc.ofDescriptor(TYPE.toMethodDescriptorString());
    }

    /**
     * Emits the body of {@code sweep} for a loop form whose {@code run} has type {@code runType}
     * ({@code (Object[], long[], int, KernelContext, kernel arguments...)int}).
     */
    static void emit(CodeBuilder b, ClassDesc loopForm, MethodTypeDesc runType) {
        int params = runType.parameterCount();
        // the kernel's arguments, unboxed from args[] into locals once per pass
        int[] argSlots = new int[params];
        int slot = FIRST_ARG;
        for (int p = 4; p < params; p++) {
            ClassDesc type = runType.parameterType(p);
            b.aload(ARGS);
            b.loadConstant(p - 4);
            b.aaload();
            unbox(b, type);
            argSlots[p] = slot;
            b.storeLocal(TypeKind.from(type), slot);
            slot += TypeKind.from(type).slotSize();
        }
        int t = slot;
        Label loop = b.newLabel();
        Label next = b.newLabel();
        Label end = b.newLabel();
        b.iconst_0();
        b.istore(t);
        b.labelBinding(loop);
        b.iload(t);
        b.aload(RESUME);
        b.arraylength();
        b.if_icmpge(end);
        b.aload(STATUS);
        b.iload(t);
        b.baload();
        b.ifne(next);
        b.aload(CURRENT);
        b.iconst_0();
        b.iload(t);
        b.iastore();
        // resume[t] = run(refs[t], prims[t], resume[t], ctx[t], args...)
        b.aload(RESUME);
        b.iload(t);
        element(b, REFS, t);
        element(b, PRIMS, t);
        b.aload(RESUME);
        b.iload(t);
        b.iaload();
        element(b, CTX, t);
        for (int p = 4; p < params; p++) {
            b.loadLocal(TypeKind.from(runType.parameterType(p)), argSlots[p]);
        }
        b.invokestatic(loopForm, "run", runType);
        b.iastore();
        b.labelBinding(next);
        b.iinc(t, 1);
        b.goto_(loop);
        b.labelBinding(end);
        b.return_();
    }

    private static void element(CodeBuilder b, int array, int index) {
        b.aload(array);
        b.iload(index);
        b.aaload();
    }

    /** The launch argument on the stack (an Object) as a parameter of {@code type}. */
    private static void unbox(CodeBuilder b, ClassDesc type) {
        if (type.equals(CD_int)) {
            b.checkcast(CD_Integer);
            b.invokevirtual(CD_Integer, "intValue", MethodTypeDesc.of(CD_int));
        } else if (type.equals(CD_long)) {
            b.checkcast(CD_Long);
            b.invokevirtual(CD_Long, "longValue", MethodTypeDesc.of(CD_long));
        } else if (type.equals(CD_float)) {
            b.checkcast(CD_Float);
            b.invokevirtual(CD_Float, "floatValue", MethodTypeDesc.of(CD_float));
        } else if (!type.equals(CD_Object)) {
            b.checkcast(type);
        }
    }
}
