package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.classfile.ClassFile;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.Instruction;
import java.lang.classfile.Label;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.LookupSwitchInstruction;
import java.lang.classfile.instruction.SwitchCase;
import java.lang.classfile.instruction.TableSwitchInstruction;
import java.lang.constant.ClassDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.Specialize;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * Full unrolling of loops with a compile-time trip count ({@link LoopUnrolling}): which loops are
 * unrolled (PTX without a jump back, one copy of the body per trip) and which are not, that
 * {@code ptxas} accepts the result, and that the unrolled code computes what the original does.
 * For the last point the unrolled instruction list is written back to a class file and run on
 * the CPU runner next to the original kernel.
 */
class LoopUnrollingTest {
    @TempDir
    Path tmp;

    /** The kernels. Public, with public helpers: the unrolled copies run from another class. */
    public static final class K {
        private K() {
        }

        public static void constantTrips(KernelContext ctx, Buf in, Buf out) {
            int acc = 0;
            for (int k = 0; k < 8; k++) {
                acc += in.getInt(k) * (k + 1);
            }
            out.setInt(0, acc);
        }

        /** The shape of MoeKernels.reduce: four per step, then the rest, bounded by a specialised parameter. */
        public static void byFours(KernelContext ctx, Buf in, Buf out, @Specialize int n) {
            int acc = 0;
            int k = 0;
            for (; k + 4 <= n; k += 4) {
                int a = in.getInt(k);
                int b = in.getInt(k + 1);
                int c = in.getInt(k + 2);
                int d = in.getInt(k + 3);
                acc = acc * 3 + a;
                acc = acc * 3 + b;
                acc = acc * 3 + c;
                acc = acc * 3 + d;
            }
            for (; k < n; k++) {
                acc = acc * 5 + (int) in.getFloat(k);
            }
            out.setInt(0, acc);
        }

        public static void runtimeBound(KernelContext ctx, Buf in, Buf out, int n) {
            int acc = 0;
            for (int k = 0; k < n; k++) {
                acc += in.getInt(k);
            }
            out.setInt(0, acc);
        }

        public static void emptyLoop(KernelContext ctx, Buf in, Buf out) {
            int acc = 1;
            for (int k = 8; k < 8; k++) {
                acc += in.getInt(k);
            }
            out.setInt(0, acc);
        }

        public static void barriers(KernelContext ctx, Buf data) {
            int[] s = ctx.allocateIntLocalArray(64);
            int tid = ctx.localIdx();
            int v = data.getInt(tid);
            for (int r = 0; r < 4; r++) {
                s[tid] = v;
                ctx.localBarrier();
                v = v * 2 + s[63 - tid];
                ctx.localBarrier();
            }
            data.setInt(tid, v);
        }

        public static void allocatesInLoop(KernelContext ctx, Buf data) {
            int tid = ctx.localIdx();
            for (int r = 0; r < 2; r++) {
                int[] s = ctx.allocateIntLocalArray(64);
                s[tid] = r;
                ctx.localBarrier();
                data.setInt(tid, data.getInt(tid) + s[63 - tid]);
                ctx.localBarrier();
            }
        }

        public static void nested(KernelContext ctx, Buf in, Buf out) {
            int acc = 0;
            for (int i = 0; i < 3; i++) {
                for (int j = 0; j < 4; j++) {
                    acc = acc * 7 + in.getInt(i * 4 + j);
                }
            }
            // an inner bound that is the outer variable: known once the outer loop is unrolled
            for (int i = 0; i < 4; i++) {
                for (int j = 0; j < i; j++) {
                    acc = acc * 11 + in.getInt(16 + i * 4 + j);
                }
            }
            out.setInt(0, acc);
        }

        public static void dataDependentStep(KernelContext ctx, Buf in, Buf out) {
            int acc = 0;
            for (int k = 0; k < 8; k++) {
                int v = in.getInt(k);
                acc += v;
                if (v < 0) {
                    k++;
                }
            }
            out.setInt(0, acc);
        }

        public static void loadedStep(KernelContext ctx, Buf in, Buf out) {
            int acc = 0;
            for (int k = 0; k < 8; k += in.getInt(k)) {
                acc += k;
            }
            out.setInt(0, acc);
        }

        public static void tooManyTrips(KernelContext ctx, Buf in, Buf out) {
            int acc = 0;
            for (int k = 0; k < LoopUnrolling.MAX_TRIPS + 1; k++) {
                acc += in.getInt(k);
            }
            out.setInt(0, acc);
        }

        public static void maxTrips(KernelContext ctx, Buf in, Buf out) {
            int acc = 0;
            for (int k = 0; k < LoopUnrolling.MAX_TRIPS; k++) {
                acc += in.getInt(k);
            }
            out.setInt(0, acc);
        }

        public static void tooLarge(KernelContext ctx, Buf in, Buf out) {
            float acc = 0;
            for (int k = 0; k < 16; k++) {
                acc = big(acc, in, k);
            }
            out.setFloat(0, acc);
        }

        /** About 370 bytecode instructions: 16 copies are over the size limit, 3 are not. */
        public static float big(float a, Buf in, int k) {
            for (int r = 0; r < 3; r++) {
                a = a * in.getFloat(k + 1) + in.getFloat(k + 2) - in.getFloat(k + 3) * in.getFloat(k + 4);
                a = a * in.getFloat(k + 5) + in.getFloat(k + 6) - in.getFloat(k + 7) * in.getFloat(k + 8);
                a = a * in.getFloat(k + 9) + in.getFloat(k + 10) - in.getFloat(k + 11) * in.getFloat(k + 12);
                a = a * in.getFloat(k + 13) + in.getFloat(k + 14) - in.getFloat(k + 15) * in.getFloat(k + 16);
                a = a * in.getFloat(k + 17) + in.getFloat(k + 18) - in.getFloat(k + 19) * in.getFloat(k + 20);
                a = a * in.getFloat(k + 21) + in.getFloat(k + 22) - in.getFloat(k + 23) * in.getFloat(k + 24);
                a = a * in.getFloat(k + 25) + in.getFloat(k + 26) - in.getFloat(k + 27) * in.getFloat(k + 28);
                a = a * in.getFloat(k + 29) + in.getFloat(k + 30) - in.getFloat(k + 31) * in.getFloat(k + 32);
                a = a * in.getFloat(k + 33) + in.getFloat(k + 34) - in.getFloat(k + 35) * in.getFloat(k + 36);
                a = a * in.getFloat(k + 37) + in.getFloat(k + 38) - in.getFloat(k + 39) * in.getFloat(k + 40);
                a = a * in.getFloat(k + 41) + in.getFloat(k + 42) - in.getFloat(k + 43) * in.getFloat(k + 44);
                a = a * in.getFloat(k + 45) + in.getFloat(k + 46) - in.getFloat(k + 47) * in.getFloat(k + 48);
            }
            return a;
        }

        public static void doWhile(KernelContext ctx, Buf in, Buf out) {
            int acc = 0;
            int k = 0;
            do {
                acc = acc * 3 + in.getInt(k);
                k += 2;
            } while (k < 8);
            out.setInt(0, acc);
        }

        public static void breakAndContinue(KernelContext ctx, Buf in, Buf out) {
            int acc = 0;
            for (int k = 0; k < 6; k++) {
                int v = in.getInt(k);
                if (v == 0) {
                    continue;
                }
                if (v < 0) {
                    break;
                }
                acc = acc * 3 + v;
            }
            out.setInt(0, acc);
        }

        public static void inHelper(KernelContext ctx, Buf in, Buf out, int n) {
            out.setInt(0, sumFirst(in, 4));
            out.setInt(1, sumFirst(in, n));
        }

        public static int sumFirst(Buf in, int n) {
            int s = 0;
            for (int i = 0; i < n; i++) {
                s = s * 3 + in.getInt(i);
            }
            return s;
        }

        public static void longCounterAndSwitch(KernelContext ctx, Buf in, Buf out) {
            long acc = 0;
            for (long i = 0; i < 4; i++) {
                acc = acc * 3 + in.getLong(i);
            }
            int r = 0;
            for (int k = 0; k < 4; k++) {
                switch (k) {
                    case 0 -> r += in.getInt(20);
                    case 2 -> r -= in.getInt(21);
                    default -> r *= 3;
                }
            }
            out.setLong(0, acc + r);
        }
    }

    // ---- helpers ----

    private PtxKernel compile(String name) throws Exception {
        return compile(new Kernel(K.class, name));
    }

    private final PendingAssembly assembly = new PendingAssembly();

    /** Compiles {@code kernel}; ptxas assembles it after the test's checks. */
    private PtxKernel compile(Kernel kernel) throws Exception {
        PtxKernel k = PtxCompiler.hopper().compile(kernel);
        assembly.add(kernel.toString(), k);
        return k;
    }

    @AfterEach
    void everyKernelAssembles() throws Exception {
        assembly.assembleAll(tmp);
    }

    private static final Pattern LABEL = Pattern.compile("^(\\$\\w+):$", Pattern.MULTILINE);
    private static final Pattern BRA = Pattern.compile("\\bbra (\\$\\w+);");

    /** Jumps to a label written above them: loops. */
    static int backEdges(String ptx) {
        Map<String, Integer> labels = new HashMap<>();
        Matcher m = LABEL.matcher(ptx);
        while (m.find()) {
            labels.put(m.group(1), m.start());
        }
        int n = 0;
        Matcher b = BRA.matcher(ptx);
        while (b.find()) {
            Integer at = labels.get(b.group(1));
            if (at != null && at < b.start()) {
                n++;
            }
        }
        return n;
    }

    static int count(String ptx, String fragment) {
        return ptx.split(Pattern.quote(fragment), -1).length - 1;
    }

    private static void unrolled(PtxKernel k, int loops) {
        assertEquals(0, backEdges(k.ptx()), () -> "a loop is left:\n" + TestKernelSuiteTest.numbered(k.ptx()));
        assertTrue(count(k.ptx(), "// unrolled loop ") >= loops, () -> TestKernelSuiteTest.numbered(k.ptx()));
    }

    private static void notUnrolled(PtxKernel k) {
        assertTrue(backEdges(k.ptx()) > 0, () -> "the loop is gone:\n" + TestKernelSuiteTest.numbered(k.ptx()));
        assertFalse(k.ptx().contains("// unrolled loop"), () -> TestKernelSuiteTest.numbered(k.ptx()));
    }

    // ---- which loops are unrolled ----

    @Test
    void constantTripLoopIsUnrolled() throws Exception {
        PtxKernel k = compile("constantTrips");
        unrolled(k, 1);
        assertEquals(8, count(k.ptx(), "ld.global.u32"));
        assertTrue(k.ptx().contains("trip 8 of 8"), k.ptx());
        assertTrue(k.ptx().contains("exit after 8 trips"), k.ptx());
        assertFalse(k.ptx().contains("add.s32 %iL"), "the induction variable is a literal in each copy");
    }

    @Test
    void specialisedBoundUnrollsAndTheEmptyRemainderVanishes() throws Exception {
        PtxKernel k = compile(new Kernel(K.class, "byFours", Map.of(2, 8)));
        unrolled(k, 1);
        assertEquals(8, count(k.ptx(), "ld.global.u32"));
        assertTrue(k.ptx().contains("trip 2 of 2"), k.ptx());
        assertFalse(k.ptx().contains("ld.global.f32"), "the remainder loop has no trips and no code");

        PtxKernel ten = compile(new Kernel(K.class, "byFours", Map.of(2, 10)));
        unrolled(ten, 2);
        assertEquals(8, count(ten.ptx(), "ld.global.u32"));
        assertEquals(2, count(ten.ptx(), "ld.global.f32"), "the remainder's two trips");
    }

    @Test
    void runtimeBoundIsNotUnrolled() throws Exception {
        notUnrolled(compile("runtimeBound"));
        notUnrolled(compile("byFours"));   // the generic kernel: n is a parameter
    }

    @Test
    void zeroTripLoopDisappears() throws Exception {
        PtxKernel k = compile("emptyLoop");
        assertEquals(0, backEdges(k.ptx()));
        assertEquals(0, count(k.ptx(), "ld.global"), k.ptx());
        PtxKernel none = compile(new Kernel(K.class, "byFours", Map.of(2, 0)));
        assertEquals(0, backEdges(none.ptx()));
        assertEquals(0, count(none.ptx(), "ld.global"), none.ptx());
    }

    @Test
    void loopWithBarriersIsUnrolledAndAssembles() throws Exception {
        PtxKernel k = compile("barriers");
        unrolled(k, 1);
        assertEquals(8, count(k.ptx(), "bar.sync 0;"));
        assertEquals(1, count(k.ptx(), ".shared .align 16"), "one shared array");
    }

    @Test
    void loopThatAllocatesSharedMemoryIsLeftAlone() throws Exception {
        PtxKernel k = compile("allocatesInLoop");
        notUnrolled(k);
        assertEquals(1, count(k.ptx(), ".shared .align 16"), "one shared array, as without unrolling");
    }

    @Test
    void nestedConstantLoopsAreUnrolled() throws Exception {
        PtxKernel k = compile("nested");
        unrolled(k, 2);
        assertEquals(12 + 6, count(k.ptx(), "ld.global.u32"));
    }

    @Test
    void inductionVariableChangedByData() throws Exception {
        notUnrolled(compile("dataDependentStep"));
        notUnrolled(compile("loadedStep"));
    }

    @Test
    void limits() throws Exception {
        notUnrolled(compile("tooManyTrips"));
        PtxKernel max = compile("maxTrips");
        unrolled(max, 1);
        assertEquals(LoopUnrolling.MAX_TRIPS, count(max.ptx(), "ld.global.u32"));
        PtxKernel large = compile("tooLarge");
        assertTrue(backEdges(large.ptx()) > 0, "16 copies of big() are over the size limit");
        assertTrue(large.ptx().contains("trip 3 of 3"), "big()'s own loop is unrolled in its inlined copy");
    }

    @Test
    void doWhileBreakContinueHelpersLongsAndSwitches() throws Exception {
        PtxKernel d = compile("doWhile");
        unrolled(d, 1);
        assertEquals(4, count(d.ptx(), "ld.global.u32"));
        PtxKernel bc = compile("breakAndContinue");
        unrolled(bc, 1);
        assertEquals(6, count(bc.ptx(), "ld.global.u32"));
        PtxKernel h = compile("inHelper");
        assertEquals(1, count(h.ptx(), "trip 4 of 4"), "the call with a constant bound");
        assertEquals(1, backEdges(h.ptx()), "the call with a runtime bound keeps its loop");
        PtxKernel ls = compile("longCounterAndSwitch");
        unrolled(ls, 2);
        assertEquals(4, count(ls.ptx(), "ld.global.u64"));
        assertEquals(2, count(ls.ptx(), "ld.global.u32"), "each copy's switch is resolved");
        assertFalse(ls.ptx().contains("setp.eq.s32"), "no compare chain is left for the switches");
    }

    @Test
    void unrollingCanBeTurnedOff() throws Exception {
        String before = System.getProperty(LoopUnrolling.PROPERTY);
        System.setProperty(LoopUnrolling.PROPERTY, "false");
        try {
            notUnrolled(compile("constantTrips"));
        } finally {
            if (before == null) {
                System.clearProperty(LoopUnrolling.PROPERTY);
            } else {
                System.setProperty(LoopUnrolling.PROPERTY, before);
            }
        }
    }

    // ---- the unrolled code computes what the original does ----

    /** Defines one generated class. */
    private static final class OneClassLoader extends ClassLoader {
        OneClassLoader() {
            super(LoopUnrollingTest.class.getClassLoader());
        }

        Class<?> define(String name, byte[] bytes) {
            return defineClass(name, bytes, 0, bytes.length);
        }
    }

    /**
     * The kernel {@code kernel} after unrolling, as a method of a new class: the unrolled
     * instruction list written back to bytecode, so the JVM runs exactly the code the GPU gets.
     */
    static Kernel unrolledOnTheJvm(Kernel kernel) throws Exception {
        ClassFiles classes = new ClassFiles(kernel.owner().getClassLoader());
        MethodCode code = classes.uniqueMethod(kernel.owner().getName().replace('.', '/'), kernel.name());
        Class<?>[] params = kernel.method().getParameterTypes();
        Value[] locals = new Value[Math.max(code.maxLocals, 1)];
        locals[0] = Value.of(Kind.CTX);
        int slot = 1;
        for (int p = 1; p < params.length; p++) {
            Kind k = params[p] == Buf.class ? Kind.BUF : params[p] == int.class ? Kind.INT
                    : params[p] == long.class ? Kind.LONG : Kind.FLOAT;
            Integer c = kernel.constants().get(p - 1);
            locals[slot] = c != null ? Value.constant(k, c) : Value.of(k);
            slot += k.slots;
        }
        Analysis an = LoopUnrolling.analyse(new Scope(kernel, code, null, -1), classes, new Frame(locals, new Value[0]));
        MethodCode u = an.code;
        assertTrue(u.size() > code.size(), "something was unrolled in " + kernel);
        String cls = "gen.Unrolled_" + kernel.name();
        byte[] bytes = ClassFile.of().build(ClassDesc.of(cls), cb -> cb.withMethodBody(kernel.name(),
                MethodTypeDesc.ofDescriptor(code.descriptor), ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC, c -> {
                    Label[] labels = new Label[u.size()];
                    for (int i = 0; i < u.size(); i++) {
                        labels[i] = c.newLabel();
                    }
                    for (int i = 0; i < u.size(); i++) {
                        c.labelBinding(labels[i]);
                        if (u.line(i) >= 0) {
                            c.lineNumber(u.line(i));
                        }
                        write(c, u, i, labels);
                    }
                }));
        Class<?> generated = new OneClassLoader().define(cls, bytes);
        return new Kernel(generated, kernel.name(), kernel.constants());
    }

    private static void write(CodeBuilder c, MethodCode u, int i, Label[] labels) {
        Instruction insn = u.insn(i);
        int[] t = u.targets(i);
        switch (insn) {
            case BranchInstruction b -> c.branch(b.opcode(), labels[t[0]]);
            case TableSwitchInstruction s -> c.tableswitch(s.lowValue(), s.highValue(), labels[t[0]], cases(s.cases(), t, labels));
            case LookupSwitchInstruction s -> c.lookupswitch(labels[t[0]], cases(s.cases(), t, labels));
            default -> c.with(insn);
        }
    }

    private static List<SwitchCase> cases(List<SwitchCase> cases, int[] targets, Label[] labels) {
        List<SwitchCase> out = new ArrayList<>();
        for (int k = 0; k < cases.size(); k++) {
            out.add(SwitchCase.of(cases.get(k).caseValue(), labels[targets[k + 1]]));
        }
        return out;
    }

    /** Runs the original and the unrolled kernel on the same input; their outputs must be equal. */
    private static void sameResults(Kernel kernel, Grid grid, int[] input, Function<Buf[], Object[]> args) throws Exception {
        Kernel copy = unrolledOnTheJvm(kernel);
        try (Arena arena = Arena.ofShared(); CpuKernelRunner runner = new CpuKernelRunner()) {
            byte[][] results = new byte[2][];
            Kernel[] both = {kernel, copy};
            for (int r = 0; r < 2; r++) {
                Buf in = Buf.allocate(arena, 4L * input.length);
                for (int i = 0; i < input.length; i++) {
                    in.setInt(i, input[i]);
                }
                Buf out = Buf.allocate(arena, 64);
                runner.launch(both[r], grid, args.apply(new Buf[] {in, out}));
                results[r] = concat(in.segment().toArray(ValueLayout.JAVA_BYTE), out.segment().toArray(ValueLayout.JAVA_BYTE));
            }
            assertArrayEquals(results[0], results[1], "results of " + kernel + " with and without unrolling");
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    private static int[] input(int n, long seed) {
        java.util.Random random = new java.util.Random(seed);
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextInt(21) - 5;
        }
        return v;
    }

    @Test
    void unrolledCodeComputesTheSameResults() throws Exception {
        Grid one = Grid.of(1, 1);
        for (long seed = 1; seed <= 3; seed++) {
            int[] in = input(64, seed);
            sameResults(new Kernel(K.class, "constantTrips"), one, in, b -> new Object[] {b[0], b[1]});
            for (int n : new int[] {1, 4, 7, 8, 10, 13}) {
                sameResults(new Kernel(K.class, "byFours", Map.of(2, n)), one, in, b -> new Object[] {b[0], b[1], n});
            }
            sameResults(new Kernel(K.class, "nested"), one, in, b -> new Object[] {b[0], b[1]});
            sameResults(new Kernel(K.class, "doWhile"), one, in, b -> new Object[] {b[0], b[1]});
            sameResults(new Kernel(K.class, "breakAndContinue"), one, in, b -> new Object[] {b[0], b[1]});
            sameResults(new Kernel(K.class, "breakAndContinue"), one, new int[] {3, 0, 2, 0, 5, 4, 0, 0},
                    b -> new Object[] {b[0], b[1]});
            sameResults(new Kernel(K.class, "breakAndContinue"), one, new int[] {3, 0, 2, -1, 5, 4, 0, 0},
                    b -> new Object[] {b[0], b[1]});
            sameResults(new Kernel(K.class, "longCounterAndSwitch"), one, in, b -> new Object[] {b[0], b[1]});
            sameResults(new Kernel(K.class, "maxTrips"), one, in, b -> new Object[] {b[0], b[1]});
            sameResults(new Kernel(K.class, "barriers"), Grid.of(1, 64), in, b -> new Object[] {b[0]});
        }
    }
}
