package org.moecomm.kernels.ptx;

import static java.lang.constant.ConstantDescs.CD_float;
import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_long;
import static java.lang.constant.ConstantDescs.CD_void;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.lang.classfile.ClassFile;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.attribute.ConstantValueAttribute;
import java.lang.constant.ClassDesc;
import java.lang.constant.MethodTypeDesc;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.kernels.api.Kernel;

/**
 * Bytecode that javac seldom or never emits but the JVM allows: {@code getstatic} of a
 * {@code static final} constant of another class, comparison results used as values,
 * {@code dup_x1}/{@code dup2_x1}/{@code swap}/{@code pop2}. The classes are built with the
 * class-file API and loaded by a loader that also serves their bytes as resources (the compiler
 * reads class files as resources).
 */
class GeneratedBytecodeTest {
    private static final ClassDesc BUF = ClassDesc.of("org.moecomm.kernels.api.Buf");
    private static final ClassDesc CTX = ClassDesc.of("org.moecomm.kernels.api.KernelContext");
    private static final ClassDesc CONSTS = ClassDesc.of("gen.Consts");
    private static final ClassDesc KERNELS = ClassDesc.of("gen.Kernels");

    @TempDir
    Path tmp;

    /** Defines classes from bytes and serves those bytes as {@code .class} resources. */
    static final class BytesLoader extends ClassLoader {
        private final Map<String, byte[]> classes;

        BytesLoader(Map<String, byte[]> classes) {
            super(GeneratedBytecodeTest.class.getClassLoader());
            this.classes = classes;
        }

        @Override
        protected Class<?> findClass(String name) throws ClassNotFoundException {
            byte[] b = classes.get(name);
            if (b == null) {
                throw new ClassNotFoundException(name);
            }
            return defineClass(name, b, 0, b.length);
        }

        @Override
        public InputStream getResourceAsStream(String name) {
            for (Map.Entry<String, byte[]> e : classes.entrySet()) {
                if (name.equals(e.getKey().replace('.', '/') + ".class")) {
                    return new ByteArrayInputStream(e.getValue());
                }
            }
            return super.getResourceAsStream(name);
        }
    }

    private static void setInt(CodeBuilder c, long index, Consumer<CodeBuilder> value) {
        c.aload(1).loadConstant(index);
        value.accept(c);
        c.invokevirtual(BUF, "setInt", MethodTypeDesc.of(CD_void, CD_long, CD_int));
    }

    private Class<?> kernels() throws Exception {
        byte[] consts = ClassFile.of().build(CONSTS, cb -> cb
                .withField("K", CD_int, fb -> fb.withFlags(ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC | ClassFile.ACC_FINAL)
                        .with(ConstantValueAttribute.of(12345)))
                .withField("L", CD_long, fb -> fb.withFlags(ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC | ClassFile.ACC_FINAL)
                        .with(ConstantValueAttribute.of(-77L)))
                .withField("F", CD_float, fb -> fb.withFlags(ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC | ClassFile.ACC_FINAL)
                        .with(ConstantValueAttribute.of(0.25f))));
        // static void compares(KernelContext ctx, Buf out, float a, float b, long x, long y)
        MethodTypeDesc comparesType = MethodTypeDesc.of(CD_void, CTX, BUF, CD_float, CD_float, CD_long, CD_long);
        byte[] kernels = ClassFile.of().build(KERNELS, cb -> cb
                .withMethodBody("compares", comparesType, ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC, c -> {
                    setInt(c, 0, v -> v.fload(2).fload(3).fcmpl());
                    setInt(c, 1, v -> v.fload(2).fload(3).fcmpg());
                    setInt(c, 2, v -> v.lload(4).lload(6).lcmp());
                    setInt(c, 3, v -> v.fload(2).f2d().fload(3).f2d().dcmpl());
                    setInt(c, 4, v -> v.getstatic(CONSTS, "K", CD_int));
                    c.aload(1).loadConstant(5L).getstatic(CONSTS, "L", CD_long)
                            .invokevirtual(BUF, "setLong", MethodTypeDesc.of(CD_void, CD_long, CD_long));
                    c.aload(1).loadConstant(6L).getstatic(CONSTS, "F", CD_float)
                            .invokevirtual(BUF, "setFloat", MethodTypeDesc.of(CD_void, CD_long, CD_float));
                    // stack shuffles: (1, 2) swap -> (2, 1); dup_x1 -> (1, 2, 1); pop2 of a long
                    setInt(c, 7, v -> v.iconst_1().iconst_2().swap().dup_x1().pop().isub().iconst_3().pop());
                    setInt(c, 8, v -> v.lload(4).lload(6).pop2().l2i());
                    // dup2_x1 on a long under an int: (i, l) -> (l, i, l)
                    setInt(c, 9, v -> v.iconst_5().lload(4).dup2_x1().pop2().pop().l2i());
                    c.return_();
                }));
        BytesLoader loader = new BytesLoader(Map.of("gen.Consts", consts, "gen.Kernels", kernels));
        return loader.loadClass("gen.Kernels");
    }

    @Test
    void comparisonValuesConstantsAndShuffles() throws Exception {
        PtxKernel k = PtxCompiler.hopper().compile(new Kernel(kernels(), "compares"));
        String p = k.ptx();
        // fcmpl: equal -> 0 else -1, greater -> 1; fcmpg: equal -> 0 else 1, less -> -1
        assertTrue(p.contains(", 0, -1, %tp"), p);
        assertTrue(p.contains(", 0, 1, %tp"), p);
        assertTrue(p.contains(", -1, %tr"), p);
        assertTrue(p.contains("setp.gt.s64"), p);
        assertTrue(p.contains("setp.lt.s64"), p);
        assertTrue(p.contains("setp.gt.f64"), p);
        assertTrue(p.contains("mov.b32 %iS2, 12345;"), p);
        assertTrue(p.contains("mov.b64 %lS2, -77;"), p);
        assertTrue(p.contains("mov.f32 %fS2, 0f3E800000;"), p);
        Ptxas.Result r = Ptxas.assemble(p, "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), () -> r.output() + "\n" + TestKernelSuiteTest.numbered(p));
    }
}
