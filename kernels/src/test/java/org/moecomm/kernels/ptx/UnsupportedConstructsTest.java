package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.LaunchBounds;
import org.moecomm.kernels.api.Numerics;

/**
 * Constructs outside the supported subset fail with a {@link KernelCompileException} whose
 * message names the class, the method, the source line and the construct. The offending line of
 * each kernel below carries a {@code // BAD:<name>} marker; the test finds its number in this
 * file's source.
 */
class UnsupportedConstructsTest {
    private static final Path SOURCE = Path.of("src/test/java/org/moecomm/kernels/ptx/UnsupportedConstructsTest.java");

    static int sink;
    static int notFinal = 3;
    static final int[] TABLE = {1, 2, 3};

    private static int markerLine(String marker) throws IOException {
        List<String> lines = Files.readAllLines(SOURCE);
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("// BAD:" + marker)) {
                return i + 1;
            }
        }
        throw new AssertionError("no marker BAD:" + marker + " in " + SOURCE);
    }

    /** Compiles {@code kernel}, expects a failure at the marked line naming {@code construct}. */
    private static KernelCompileException fails(String kernel, String marker, String construct) throws IOException {
        KernelCompileException e = assertThrows(KernelCompileException.class,
                () -> PtxCompiler.hopper().compile(new Kernel(UnsupportedConstructsTest.class, kernel)));
        String m = e.getMessage();
        int line = markerLine(marker);
        assertTrue(m.contains("UnsupportedConstructsTest"), m);
        assertTrue(m.contains("UnsupportedConstructsTest.java:" + line + ")"), () -> "expected line " + line + " in: " + m);
        assertTrue(m.contains(construct), () -> "expected '" + construct + "' in: " + m);
        assertEquals(line, e.line(), m);
        assertEquals(UnsupportedConstructsTest.class.getName(), e.className(), m);
        return e;
    }

    private static KernelCompileException failsIn(String kernel, String method, String marker, String construct)
            throws IOException {
        KernelCompileException e = fails(kernel, marker, construct);
        assertEquals(method, e.methodName(), e.getMessage());
        assertTrue(e.getMessage().contains("UnsupportedConstructsTest." + method + "("), e.getMessage());
        assertTrue(e.getMessage().contains("inlined at"), e.getMessage());
        return e;
    }

    @LaunchBounds(maxThreads = 2048)
    static void overBounded(KernelContext ctx, Buf b) {
        b.setInt(0, 1);
    }

    @Test
    void launchBoundsOutOfRangeAreRefused() {
        KernelCompileException e = assertThrows(KernelCompileException.class,
                () -> PtxCompiler.hopper().compile(new Kernel(UnsupportedConstructsTest.class, "overBounded")));
        assertTrue(e.getMessage().contains("@LaunchBounds needs 1 <= maxThreads <= 1024"), e.getMessage());
    }

    static void newObject(KernelContext ctx, Buf b) {
        Object o = new Object(); // BAD:new
        b.setInt(0, o.hashCode());
    }

    @Test
    void objectAllocation() throws IOException {
        KernelCompileException e = fails("newObject", "new", "object allocation (new java.lang.Object)");
        assertEquals("newObject", e.methodName());
        assertTrue(e.getMessage().startsWith("cannot compile kernel UnsupportedConstructsTest.newObject: "), e.getMessage());
    }

    static void newArray(KernelContext ctx, Buf b) {
        int[] a = new int[4]; // BAD:newarray
        b.setInt(0, a[1]);
    }

    @Test
    void arraysNotFromLocalAllocation() throws IOException {
        fails("newArray", "newarray", "array allocation (new int[])");
    }

    static void staticArray(KernelContext ctx, Buf b) {
        b.setInt(0, TABLE[1]); // BAD:statictable
    }

    @Test
    void staticArrayField() throws IOException {
        fails("staticArray", "statictable", "read of static field org.moecomm.kernels.ptx.UnsupportedConstructsTest.TABLE");
    }

    static void staticNonFinal(KernelContext ctx, Buf b) {
        b.setInt(0, notFinal); // BAD:getstatic
    }

    @Test
    void nonConstantStaticField() throws IOException {
        fails("staticNonFinal", "getstatic", "read of static field org.moecomm.kernels.ptx.UnsupportedConstructsTest.notFinal");
    }

    static void staticWrite(KernelContext ctx, Buf b) {
        sink = 5; // BAD:putstatic
    }

    @Test
    void staticFieldWrite() throws IOException {
        fails("staticWrite", "putstatic", "write of static field");
    }

    static void virtualCall(KernelContext ctx, Buf b) {
        b.setLong(0, b.byteSize()); // BAD:virtual
    }

    @Test
    void instanceMethodCall() throws IOException {
        fails("virtualCall", "virtual", "call of instance method org.moecomm.kernels.api.Buf.byteSize");
    }

    static void lambda(KernelContext ctx, Buf b) {
        IntUnaryOperator f = v -> v + 1; // BAD:lambda
        b.setInt(0, f.applyAsInt(1));
    }

    @Test
    void lambdas() throws IOException {
        fails("lambda", "lambda", "invokedynamic");
    }

    static void concat(KernelContext ctx, Buf b, int x) {
        String s = "x=" + x; // BAD:concat
        b.setInt(0, s.length());
    }

    @Test
    void stringConcatenation() throws IOException {
        fails("concat", "concat", "invokedynamic makeConcatWithConstants");
    }

    static void tryCatch(KernelContext ctx, Buf b) {
        try {
            b.setInt(0, 1); // BAD:try
        } catch (RuntimeException e) {
            b.setInt(0, 2);
        }
    }

    @Test
    void exceptionHandlers() throws IOException {
        fails("tryCatch", "try", "try/catch/finally");
    }

    static void throwing(KernelContext ctx, Buf b, int n) {
        if (n < 0) {
            throw new IllegalArgumentException(); // BAD:throw
        }
    }

    @Test
    void throwStatements() throws IOException {
        fails("throwing", "throw", "object allocation (new java.lang.IllegalArgumentException)");
    }

    static void monitor(KernelContext ctx, Buf b) {
        synchronized (b) { // BAD:monitor
            b.setInt(0, 1);
        }
    }

    @Test
    void synchronizedBlocks() throws IOException {
        fails("monitor", "monitor", "synchronized block");
    }

    static void typeCheck(KernelContext ctx, Buf b) {
        Object o = b;
        if (o instanceof Buf) { // BAD:instanceof
            b.setInt(0, 1);
        }
    }

    @Test
    void typeChecks() throws IOException {
        fails("typeCheck", "instanceof", "instanceof org.moecomm.kernels.api.Buf");
    }

    static void referenceEquality(KernelContext ctx, Buf a, Buf b) {
        if (a == b) { // BAD:acmp
            a.setInt(0, 1);
        }
    }

    @Test
    void referenceComparisons() throws IOException {
        fails("referenceEquality", "acmp", "reference comparison (if_acmpne)");
    }

    static void nullReference(KernelContext ctx, Buf b) {
        Buf other = null; // BAD:null
        if (ctx.localIdx() == 0) {
            other = b;
        }
        other.setInt(0, 1);
    }

    @Test
    void nullReferences() throws IOException {
        fails("nullReference", "null", "null reference");
    }

    static void floatRemainder(KernelContext ctx, Buf b, float x, float y) {
        b.setFloat(0, x % y); // BAD:frem
    }

    @Test
    void floatingPointRemainder() throws IOException {
        fails("floatRemainder", "frem", "floating-point remainder (frem)");
    }

    static void dynamicSharedSize(KernelContext ctx, Buf b, int n) {
        int[] s = ctx.allocateIntLocalArray(n); // BAD:dynshared
        s[0] = 1;
    }

    @Test
    void nonConstantSharedArraySize() throws IOException {
        fails("dynamicSharedSize", "dynshared", "shared array size that is not a compile-time constant");
    }

    static void recursive(KernelContext ctx, Buf b, int n) {
        b.setInt(0, fib(n));
    }

    private static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2); // BAD:recursion
    }

    @Test
    void recursion() throws IOException {
        failsIn("recursive", "fib", "recursion", "recursive call of org.moecomm.kernels.ptx.UnsupportedConstructsTest.fib");
    }

    static void nativeCall(KernelContext ctx, Buf b) {
        b.setLong(0, System.nanoTime()); // BAD:native
    }

    @Test
    void nativeMethods() throws IOException {
        fails("nativeCall", "native", "call of java.lang.System.nanoTime, which has no bytecode to inline");
    }

    static void badReturnType(KernelContext ctx, Buf b, int x) {
        b.setInt(0, String.valueOf(x).length()); // BAD:returntype
    }

    @Test
    void callsReturningNonKernelTypes() throws IOException {
        fails("badReturnType", "returntype", "returning java.lang.String");
    }

    static void deepError(KernelContext ctx, Buf b) {
        helperThatAllocates(b); // BAD:callsite
    }

    private static void helperThatAllocates(Buf b) {
        b.setInt(0, new StringBuilder().length()); // BAD:deep
    }

    @Test
    void errorsInInlinedHelpersNameTheHelperAndTheCallSite() throws IOException {
        String m = failsIn("deepError", "helperThatAllocates", "deep", "object allocation (new java.lang.StringBuilder)")
                .getMessage();
        int call = markerLine("callsite");
        String site = ", inlined at " + UnsupportedConstructsTest.class.getName() + ".deepError(UnsupportedConstructsTest.java:"
                + call + ")";
        assertTrue(m.contains(site), () -> "expected the call site, line " + call + ", in: " + m);
    }

    static void tooMuchShared(KernelContext ctx, Buf b) {
        long[] a = ctx.allocateLongLocalArray(4096);
        long[] c = ctx.allocateLongLocalArray(4096);
        a[0] = 1;
        c[0] = 1;
    }

    @Test
    void staticSharedMemoryLimit() {
        KernelCompileException e = assertThrows(KernelCompileException.class,
                () -> PtxCompiler.hopper().compile(new Kernel(UnsupportedConstructsTest.class, "tooMuchShared")));
        assertTrue(e.getMessage().contains("65536 bytes"), e.getMessage());
    }

    static void fp8(KernelContext ctx, Buf b, float f) {
        b.setByte(0, Numerics.floatToFp8e4m3(f)); // BAD:fp8
    }

    @Test
    void fp8NeedsAda() throws IOException {
        KernelCompileException e = assertThrows(KernelCompileException.class,
                () -> new PtxCompiler(new PtxTarget("sm_80", "8.0")).compile(new Kernel(UnsupportedConstructsTest.class, "fp8")));
        assertTrue(e.getMessage().contains("Numerics.floatToFp8e4m3 needs sm_89 or newer; the target is sm_80"), e.getMessage());
        assertEquals(markerLine("fp8"), e.line());
    }

    void instanceKernel(KernelContext ctx) {
    }

    static void wrongParameter(KernelContext ctx, double d) {
    }

    @Test
    void notAKernel() {
        for (String k : new String[] {"instanceKernel", "wrongParameter", "noSuchMethod"}) {
            KernelCompileException e = assertThrows(KernelCompileException.class,
                    () -> PtxCompiler.hopper().compile(new Kernel(UnsupportedConstructsTest.class, k)));
            assertTrue(e.getMessage().contains(k), e.getMessage());
        }
    }
}
