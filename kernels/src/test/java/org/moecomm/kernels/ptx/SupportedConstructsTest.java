package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.LaunchBounds;
import org.moecomm.kernels.api.Numerics;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * One test per supported construct: the emitted PTX has the expected instructions, and
 * {@code ptxas -arch=sm_90a} accepts it. The kernels are the static methods below.
 */
class SupportedConstructsTest {
    @TempDir
    Path tmp;

    private final PendingAssembly assembly = new PendingAssembly();

    /** Compiles {@code name} (a kernel of this class) and returns the PTX; ptxas assembles it after the test's checks. */
    private String ptx(String name) throws Exception {
        return assembly.add(name, PtxCompiler.hopper().compile(new Kernel(SupportedConstructsTest.class, name)));
    }

    @AfterEach
    void everyKernelAssembles() throws Exception {
        assembly.assembleAll(tmp);
    }

    private static void has(String ptx, String... fragments) {
        for (String f : fragments) {
            assertTrue(ptx.contains(f), () -> "PTX lacks '" + f + "':\n" + TestKernelSuiteTest.numbered(ptx));
        }
    }

    private static void matches(String ptx, String regex) {
        assertTrue(Pattern.compile(regex, Pattern.MULTILINE).matcher(ptx).find(),
                () -> "PTX does not match /" + regex + "/:\n" + TestKernelSuiteTest.numbered(ptx));
    }

    // ---- module structure and ABI ----

    static void abi(KernelContext ctx, Buf b, int i, long l, float f) {
        b.setLong(0, i + l + (long) f);
    }

    @Test
    void moduleHeaderAndParameters() throws Exception {
        String p = ptx("abi");
        has(p, ".version 8.0\n", ".target sm_90a\n", ".address_size 64\n",
                ".visible .entry SupportedConstructsTest_abi(",
                ".param .u64 SupportedConstructsTest_abi_param_0,",
                ".param .u32 SupportedConstructsTest_abi_param_1,",
                ".param .u64 SupportedConstructsTest_abi_param_2,",
                ".param .f32 SupportedConstructsTest_abi_param_3\n)",
                "cvta.to.global.u64", ".file\t1 \"SupportedConstructsTest.java\"", ".loc\t1 ", "ret;");
    }

    // ---- int, long, float, double arithmetic ----

    static void intArith(KernelContext ctx, Buf b, int x, int y) {
        b.setInt(0, x + y);
        b.setInt(1, x - y);
        b.setInt(2, x * y);
        b.setInt(3, x / y);
        b.setInt(4, x % y);
        b.setInt(5, -x);
        b.setInt(6, (x & y) | (x ^ y));
    }

    @Test
    void intArithmetic() throws Exception {
        String p = ptx("intArith");
        has(p, "add.s32", "sub.s32", "mul.lo.s32", "div.s32", "rem.s32", "neg.s32", "and.b32", "or.b32", "xor.b32");
        matches(p, "setp\\.eq\\.s32 %tp\\d+, %iS\\d+, -1;");  // MIN_VALUE / -1 handled as on the JVM
    }

    static void longArith(KernelContext ctx, Buf b, long x, long y) {
        b.setLong(0, x + y);
        b.setLong(1, x - y);
        b.setLong(2, x * y);
        b.setLong(3, x / y);
        b.setLong(4, x % y);
        b.setLong(5, -x);
        b.setLong(6, (x & y) | (x ^ y));
    }

    @Test
    void longArithmetic() throws Exception {
        has(ptx("longArith"), "add.s64", "sub.s64", "mul.lo.s64", "div.s64", "rem.s64", "neg.s64", "and.b64", "or.b64", "xor.b64");
    }

    static void floatArith(KernelContext ctx, Buf b, float x, float y) {
        b.setFloat(0, x * y + x);
        b.setFloat(1, x - y);
        b.setFloat(2, x / y);
        b.setFloat(3, -x);
        b.setFloat(4, Math.fma(x, y, x));
    }

    @Test
    void floatArithmeticRoundsToNearestWithoutContraction() throws Exception {
        String p = ptx("floatArith");
        has(p, "mul.rn.f32", "add.rn.f32", "sub.rn.f32", "div.rn.f32", "fma.rn.f32", "xor.b32");
        assertEquals(1, p.split("fma\\.").length - 1, "only the explicit Math.fma may be an fma");
    }

    static void doubleArith(KernelContext ctx, Buf b, float x, float y) {
        double a = x;
        double c = y;
        b.setDouble(0, a * c + a);
        b.setDouble(1, a - c);
        b.setDouble(2, a / c);
        b.setDouble(3, -a);
        b.setDouble(4, Math.sqrt(a));
        b.setDouble(5, Math.fma(a, c, a));
    }

    @Test
    void doubleArithmetic() throws Exception {
        has(ptx("doubleArith"), "mul.rn.f64", "add.rn.f64", "sub.rn.f64", "div.rn.f64", "sqrt.rn.f64", "fma.rn.f64",
                "cvt.f64.f32", "xor.b64");
    }

    static void shifts(KernelContext ctx, Buf b, int x, int s, long l) {
        b.setInt(0, x << s);
        b.setInt(1, x >> s);
        b.setInt(2, x >>> s);
        b.setInt(3, x << 35);
        b.setLong(4, l << s);
        b.setLong(5, l >> s);
        b.setLong(6, l >>> 65);
    }

    @Test
    void shiftCountsAreMaskedAsInJava() throws Exception {
        String p = ptx("shifts");
        matches(p, "and\\.b32 %tr\\d+, %iS\\d+, 31;");
        matches(p, "and\\.b32 %tr\\d+, %iS\\d+, 63;");
        has(p, "shl.b32", "shr.s32", "shr.u32", "shl.b64", "shr.s64");
        matches(p, "shl\\.b32 %iS\\d+, %iS\\d+, 3;");   // 35 & 31
        matches(p, "shr\\.u64 %lS\\d+, %lS\\d+, 1;");   // 65 & 63
    }

    // ---- comparisons and branches ----

    static void floatCompare(KernelContext ctx, Buf b, float x, float y) {
        int r = 0;
        if (x < y) {
            r |= 1;
        }
        if (x > y) {
            r |= 2;
        }
        if (x == y) {
            r |= 4;
        }
        if (x != y) {
            r |= 8;
        }
        b.setInt(0, r);
    }

    @Test
    void floatComparisonsKeepJavaNaNSemantics() throws Exception {
        String p = ptx("floatCompare");
        // javac: x < y is fcmpg + ifge (skip when x >= y or NaN), x > y is fcmpl + ifle
        has(p, "setp.geu.f32", "setp.leu.f32", "setp.neu.f32", "setp.eq.f32");
    }

    static void longCompare(KernelContext ctx, Buf b, long x, long y, float f, float g) {
        double d = f;
        double e = g;
        b.setInt(0, x < y ? 1 : x == y ? 2 : 3);
        b.setInt(1, d <= e ? 1 : 0);
    }

    @Test
    void longAndDoubleComparisons() throws Exception {
        String p = ptx("longCompare");
        has(p, "setp.ge.s64", "setp.ne.s64", "setp.gtu.f64");
    }

    static void loops(KernelContext ctx, Buf b, int n) {
        int acc = 0;
        for (int i = 0; i < n; i++) {
            for (int j = i; j < n; j += 2) {
                if (j == 7) {
                    continue;
                }
                acc += j;
            }
            if (acc > 1000) {
                break;
            }
        }
        b.setInt(0, acc);
    }

    @Test
    void loopsBecomeLabelsAndBranches() throws Exception {
        String p = ptx("loops");
        matches(p, "^\\$L0_\\d+:$");
        matches(p, "@%tp\\d+ bra \\$L0_\\d+;");
        matches(p, "^\\tbra \\$L0_\\d+;");
        has(p, "add.s32 %iL");   // iinc
    }

    static void switches(KernelContext ctx, Buf b, int v) {
        int r = switch (v) {
            case 1 -> 10;
            case 2 -> 20;
            case 3 -> 30;
            case 1000 -> 40;
            default -> 0;
        };
        b.setInt(0, r);
    }

    @Test
    void switchesBecomeCompareChains() throws Exception {
        String p = ptx("switches");
        matches(p, "setp\\.eq\\.s32 %tp\\d+, %iS\\d+, 1000;");
    }

    static void earlyReturn(KernelContext ctx, Buf b, int n) {
        if (ctx.globalIdx() >= n) {
            return;
        }
        b.setInt(ctx.globalIdx(), 1);
    }

    @Test
    void earlyReturnIsRet() throws Exception {
        String p = ptx("earlyReturn");
        assertEquals(2, p.split("\tret;").length - 1, p);
    }

    // ---- conversions ----

    static void conversions(KernelContext ctx, Buf b, int i, long l, float f) {
        double d = f;
        b.setLong(0, i);
        b.setInt(1, (int) l);
        b.setFloat(2, i);
        b.setFloat(3, l);
        b.setInt(4, (int) f);
        b.setLong(5, (long) f);
        b.setInt(6, (int) d);
        b.setLong(7, (long) d);
        b.setFloat(8, (float) d);
        b.setDouble(9, l);
        b.setDouble(10, i);
        b.setInt(11, (byte) i + (short) i + (char) i);
    }

    @Test
    void conversionsSaturateAndMapNaNToZero() throws Exception {
        String p = ptx("conversions");
        has(p, "cvt.s64.s32", "cvt.u32.u64", "cvt.rn.f32.s32", "cvt.rn.f32.s64", "cvt.rzi.s32.f32", "cvt.rzi.s64.f32",
                "cvt.rzi.s32.f64", "cvt.rzi.s64.f64", "cvt.rn.f32.f64", "cvt.rn.f64.s64", "cvt.rn.f64.s32", "cvt.f64.f32",
                "setp.nan.f32", "setp.nan.f64", "bfe.s32", "and.b32");
        matches(p, "bfe\\.s32 %iS\\d+, %iS\\d+, 0, 8;");
        matches(p, "bfe\\.s32 %iS\\d+, %iS\\d+, 0, 16;");
        matches(p, "and\\.b32 %iS\\d+, %iS\\d+, 65535;");
        matches(p, "selp\\.b32 %iS\\d+, 0, %tr\\d+, %tp\\d+;");
    }

    // ---- constants ----

    static final long BIG = 0x1234_5678_9ABC_DEF0L;

    static void constants(KernelContext ctx, Buf b) {
        b.setInt(0, -1);
        b.setInt(1, 100);
        b.setInt(2, 1000);
        b.setInt(3, 100_000);
        b.setLong(4, BIG);
        b.setLong(5, Long.MIN_VALUE);
        b.setFloat(6, 1.5f);
        b.setDouble(7, 0.1);
        b.setInt(8, Integer.MIN_VALUE);
        b.setInt(9, KernelContext.WARP_SIZE);
    }

    @Test
    void constantsOfEveryType() throws Exception {
        String p = ptx("constants");
        has(p, "mov.b32 %iS2, -1;", "100000;", "1311768467463790320;", "-9223372036854775808;", "0f3FC00000;",
                "0d3FB999999999999A;", "-2147483648;", "mov.b32 %iS2, 32;");
    }

    // ---- inlining ----

    static void inlining(KernelContext ctx, Buf b, int x) {
        b.setInt(0, twice(x) + square(twice(x)));
        b.setLong(1, widen(ctx, x));
    }

    private static int twice(int v) {
        return v + v;
    }

    private static int square(int v) {
        if (v < 0) {
            return v * -v;
        }
        return v * v;
    }

    private static long widen(KernelContext ctx, int v) {
        return (long) v << ctx.localIdx();
    }

    @Test
    void staticCallsAreInlined() throws Exception {
        String p = ptx("inlining");
        has(p, "// inlined org.moecomm.kernels.ptx.SupportedConstructsTest.twice(I)I",
                "// inlined org.moecomm.kernels.ptx.SupportedConstructsTest.square(I)I", "$R1:", "$R2:", "$R3:", "$R4:");
        assertFalse(p.contains("call"), "no calls remain");
        matches(p, "%iL0_1");   // the callee's locals are its own registers
    }

    // ---- KernelContext ----

    static void context(KernelContext ctx, Buf b) {
        int[] s = ctx.allocateIntLocalArray(256);
        float[] f = ctx.allocateFloatLocalArray(64);
        long[] l = ctx.allocateLongLocalArray(32);
        s[ctx.localIdx()] = ctx.globalIdx() + ctx.groupIdy() + ctx.numGroupsX() + ctx.numGroupsY() + ctx.globalGroupSizeX();
        f[ctx.localIdx() & 63] = 1f;
        l[ctx.localIdx() & 31] = s.length;
        ctx.localBarrier();
        int old = ctx.atomicAdd(s, 0, 1) + ctx.atomicAdd(b, 1, 2) + ctx.atomicCas(b, 2, 3, 4);
        ctx.globalFence();
        b.setInt(3, old + (int) f[0] + (int) l[0]);
    }

    @Test
    void contextIntrinsics() throws Exception {
        String p = ptx("context");
        has(p, "%tid.x", "%ctaid.x", "%ctaid.y", "%ntid.x", "%nctaid.x", "%nctaid.y", "bar.sync 0;", "fence.acq_rel.gpu;",
                "atom.shared.add.u32", "atom.global.add.u32", "atom.global.cas.b32",
                ".shared .align 16 .b32 SupportedConstructsTest_context_smem0[256];",
                ".shared .align 16 .f32 SupportedConstructsTest_context_smem1[64];",
                ".shared .align 16 .b64 SupportedConstructsTest_context_smem2[32];",
                "mov.u32 %sS0, SupportedConstructsTest_context_smem0;",
                "st.shared.u32", "st.shared.f32", "st.shared.u64", "ld.shared.f32", "ld.shared.u64", "mov.b64 %lS", ", 256;");
    }

    static void sharedViaHelper(KernelContext ctx, Buf b) {
        int[] a = ctx.allocateIntLocalArray(128);
        fill(a, ctx.localIdx());
        ctx.localBarrier();
        b.setInt(ctx.localIdx(), a[127 - ctx.localIdx()] + length(a));
    }

    private static void fill(int[] a, int i) {
        a[i] = i * 3;
    }

    private static int length(int[] a) {
        return a.length;
    }

    @Test
    void sharedArraysPassToHelpers() throws Exception {
        String p = ptx("sharedViaHelper");
        has(p, "SupportedConstructsTest_sharedViaHelper_smem0[128]", "mov.b32 %iS0_2, 128;");
    }

    static void valueOfAssignment(KernelContext ctx, Buf b) {
        long[] l = ctx.allocateLongLocalArray(4);
        int[] s = ctx.allocateIntLocalArray(4);
        long x = l[1] = 5L;   // dup2_x2
        int y = s[2] = 7;     // dup_x2
        s[ctx.localIdx() & 3] += y;   // dup2
        b.setLong(0, x + y);
    }

    @Test
    void stackShuffles() throws Exception {
        ptx("valueOfAssignment");
    }

    // ---- Buf ----

    static void bufAccess(KernelContext ctx, Buf dst, Buf src, long i) {
        dst.setByte(i, src.getByte(i));
        dst.setShort(i, src.getShort(i));
        dst.setInt(i, src.getInt(i));
        dst.setLong(i, src.getLong(i));
        dst.setFloat(i, src.getFloat(i));
        dst.setDouble(i, src.getDouble(i));
        dst.copy16(i, src, i + 1);
        dst.slice(64, 64).setInt(0, 1);
    }

    @Test
    void bufAccessorsAreGlobalLoadsAndStores() throws Exception {
        String p = ptx("bufAccess");
        has(p, "ld.global.s8", "st.global.u8", "ld.global.s16", "st.global.u16", "ld.global.u32", "st.global.u32",
                "ld.global.u64", "st.global.u64", "ld.global.f32", "st.global.f32", "ld.global.f64", "st.global.f64",
                "ld.global.v4.u32 {", "st.global.v4.u32 [", ", 1;", ", 2;", ", 3;", ", 4;");
        matches(p, "shl\\.b64 %trd\\d+, %lS\\d+, 4;");
    }

    static void copyFour(KernelContext ctx, Buf dst, Buf src, long i, long stride) {
        dst.copy16x4(i, src, i + 1, stride);
    }

    @Test
    void copy16x4IssuesItsFourLoadsBeforeItsStores() throws Exception {
        String p = ptx("copyFour");
        assertLoadsThenStores(p, 4, "");
        assertFalse(p.contains("setp.gt.s32"), p); // not predicated
    }

    static void copyEight(KernelContext ctx, Buf dst, Buf src, long i, long stride) {
        dst.copy16x8(i, src, i + 1, stride);
    }

    @Test
    void copy16x8IssuesItsEightLoadsBeforeItsStores() throws Exception {
        String p = ptx("copyEight");
        assertLoadsThenStores(p, 8, "");
        assertFalse(p.contains("setp.gt.s32"), p);
    }

    static void copySomeOfEight(KernelContext ctx, Buf dst, Buf src, long i, long stride, int count) {
        dst.copy16x8N(i, src, i + 1, stride, count);
    }

    @Test
    void copy16x8NPredicatesItsEightLoadsOnTheCountAndIssuesThemBeforeItsStores() throws Exception {
        assertPredicatedLoadsThenStores(ptx("copySomeOfEight"), 8);
    }

    /** {@code n} loads and stores, the j-th predicated on {@code count > j}, all loads before the stores. */
    private static void assertPredicatedLoadsThenStores(String p, int n) {
        assertLoadsThenStores(p, n, "@%tp\\d+ ");
        for (int j = 0; j < n; j++) {
            matches(p, "setp\\.gt\\.s32 %tp\\d+, %iS\\d+, " + j + ";");
        }
    }

    /** {@code n} 16-byte loads, each with {@code guard} in front, all before the {@code n} stores. */
    private static void assertLoadsThenStores(String p, int n, String guard) {
        int lastLoad = p.lastIndexOf("ld.global.v4.u32");
        int firstStore = p.indexOf("st.global.v4.u32");
        assertTrue(lastLoad >= 0 && firstStore > lastLoad, p);
        assertEquals(n, p.split(guard + "ld\\.global\\.v4\\.u32", -1).length - 1, p);
        assertEquals(n, p.split(guard + "st\\.global\\.v4\\.u32", -1).length - 1, p);
    }

    @LaunchBounds(maxThreads = 256, minBlocksPerMultiprocessor = 2)
    static void bounded(KernelContext ctx, Buf out) {
        out.setInt(ctx.globalIdx(), 1);
    }

    @Test
    void launchBoundsBecomeTheEntrysMaxntidAndMinnctapersm() throws Exception {
        String p = ptx("bounded");
        matches(p, "\\)\\n\\.maxntid 256, 1, 1\\n\\.minnctapersm 2\\n\\{");
    }

    static void timed(KernelContext ctx, Buf out) {
        long start = ctx.clock();
        out.setInt(1, 7);
        out.setInt(2, ctx.clock() - start >= 0 ? 1 : 0); // the same on every runner
        long t = ctx.globalTimerNanos();
        out.setInt(3, ctx.globalTimerNanos() - t >= 0 ? 1 : 0);
    }

    @Test
    void clockReadsTheCycleCounter() throws Exception {
        String p = ptx("timed");
        assertEquals(2, p.split("mov\\.u64 %lS?\\d+, %clock64;", -1).length - 1, p);
        assertEquals(2, p.split("mov\\.u64 %lS?\\d+, %globaltimer;", -1).length - 1, p);
    }

    static void copySome(KernelContext ctx, Buf dst, Buf src, long i, long stride, int count) {
        dst.copy16xN(i, src, i + 1, stride, count);
    }

    @Test
    void copy16xNPredicatesItsFourLoadsOnTheCountAndIssuesThemBeforeItsStores() throws Exception {
        assertPredicatedLoadsThenStores(ptx("copySome"), 4);
    }

    // ---- Numerics, Math, Float ----

    static void numerics(KernelContext ctx, Buf b, float f) {
        b.setShort(0, Numerics.floatToBf16(f));
        b.setShort(1, Numerics.floatToFp16(f));
        b.setByte(4, Numerics.floatToFp8e4m3(f));
        b.setFloat(2, Numerics.bf16ToFloat(b.getShort(0)) + Numerics.fp16ToFloat(b.getShort(1))
                + Numerics.fp8e4m3ToFloat(b.getByte(4)));
    }

    @Test
    void narrowFloatConversions() throws Exception {
        String p = ptx("numerics");
        has(p, "cvt.rn.bf16.f32", "cvt.rn.f16.f32", "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.f16x2.e4m3x2",
                "cvt.f32.f16", "shl.b32 %tr");
        // the results are only stored as 16 and 8 bits: not sign-extended
        matches(p, "cvt\\.u32\\.u16 %iS\\d+, %th\\d+;");
        assertFalse(p.contains("cvt.s32.s16"), p);
        assertFalse(p.contains("bfe.s32"), p);
    }

    // ---- narrowing (i2s, i2b, i2c) and narrow intrinsic results: extended only where a use reads the upper bits ----

    /** Each narrow value's uses read only its own 16 or 8 bits. */
    static void narrowLowBits(KernelContext ctx, Buf b, int x, long q, float f) {
        b.setInt(0, (short) x << 16);
        b.setInt(1, (short) x & 0xffff);
        b.setLong(1, (short) x & 0xffffL);
        b.setInt(4, (byte) x << 24);
        b.setInt(5, (byte) x & 0xff);
        short bits = (short) (q >>> 16);                    // through a local into an intrinsic, as in bf16 widening
        b.setFloat(6, Numerics.bf16ToFloat(bits));
        b.setInt(7, lowHalf((short) (x >>> 3)));            // into an inlined call's parameter
        b.setShort(16, (short) (x + 1));                    // a 16-bit store
        b.setFloat(9, Numerics.fp8e4m3ToFloat((byte) (q >>> 8)));
        b.setLong(5, (Numerics.floatToBf16(f) & 0xffffL) << 16 | Numerics.floatToBf16(-f) & 0xffffL);
    }

    private static int lowHalf(short s) {
        return s & 0xffff;
    }

    static void charLowBits(KernelContext ctx, Buf b, int x) {
        b.setInt(0, (char) x << 16);
        b.setInt(1, (char) x & 0xff);
        b.setShort(4, (short) (char) x);
    }

    /** Each narrow value has a use that reads its upper bits: the extension stays. */
    static void narrowNeedsExtension(KernelContext ctx, Buf b, int x) {
        b.setInt(0, (short) x >> 4);            // a right shift brings the sign bits down
        b.setInt(1, (short) x < 0 ? 1 : 0);     // a comparison
        b.setInt(2, (short) x);                 // the int itself is stored
        b.setInt(3, (short) x << 8);            // a shift too short to push the upper bits out
        b.setInt(4, (short) x & 0x1ffff);       // a mask wider than 16 bits
        short s = (short) (x >> 1);             // a local with one use that reads all bits
        b.setInt(5, s & 0xff);
        b.setInt(6, s + 1);
        b.setInt(7, signOf((short) (x >>> 3))); // a callee that compares
        b.setInt(8, (byte) x << 16);            // a byte needs a shift of 24
        b.setInt(9, (char) x >> 1);
        b.setInt(10, Numerics.floatToBf16(Float.intBitsToFloat(x)));   // a narrow intrinsic result as an int
    }

    private static int signOf(short s) {
        return s < 0 ? -1 : 1;
    }

    private static int count(String ptx, String regex) {
        return (int) Pattern.compile(regex).matcher(ptx).results().count();
    }

    @Test
    void narrowingsWhoseUsesReadOnlyTheNarrowBitsAreNotExtended() throws Exception {
        String p = ptx("narrowLowBits");
        assertFalse(p.contains("bfe.s32"), p);        // i2s and i2b
        assertFalse(p.contains("cvt.s32.s16"), p);    // floatToBf16
        matches(p, "shl\\.b32 %iS\\d+, %iS\\d+, 16;");
        String c = ptx("charLowBits");
        assertFalse(c.contains("65535"), c);           // i2c
        assertFalse(c.contains("bfe.s32"), c);
    }

    @Test
    void narrowingsWithAUseOfTheUpperBitsAreExtended() throws Exception {
        String p = ptx("narrowNeedsExtension");
        assertEquals(7, count(p, "bfe\\.s32 %iS\\d+, %iS\\d+, 0, 16;"), p);
        assertEquals(1, count(p, "bfe\\.s32 %iS\\d+, %iS\\d+, 0, 8;"), p);
        assertEquals(1, count(p, "and\\.b32 %iS\\d+, %iS\\d+, 65535;"), p);
        has(p, "cvt.s32.s16");
    }

    @Test
    void narrowingsGiveTheJavaValuesOnTheCpuRunner() {
        int[] xs = {0, 1, -1, 0x7fff, 0x8000, 0xffff, 0x1_8000, 0x12345678, Integer.MIN_VALUE, 0xdeadbeef, -129, 200};
        try (Arena arena = Arena.ofShared()) {
            CpuKernelRunner runner = new CpuKernelRunner();
            try {
                for (int x : xs) {
                    long q = 0x0123_4567_89ab_cdefL * x;
                    float f = x * 0.001f;
                    Buf b = Buf.allocate(arena, 128);
                    b.segment().fill((byte) 0xA5); // poisoned before each kernel: no value left by the one before
                    runner.launch(new Kernel(SupportedConstructsTest.class, "narrowLowBits"), Grid.of(1, 1), b, x, q, f);
                    assertEquals((short) x << 16, b.getInt(0));
                    assertEquals((short) x & 0xffff, b.getInt(1));
                    assertEquals((short) x & 0xffffL, b.getLong(1));
                    assertEquals((byte) x << 24, b.getInt(4));
                    assertEquals((byte) x & 0xff, b.getInt(5));
                    assertEquals((int) (q >>> 16) << 16, Float.floatToRawIntBits(b.getFloat(6)));
                    assertEquals(x >>> 3 & 0xffff, b.getInt(7));
                    assertEquals((short) (x + 1), b.getShort(16));
                    assertEquals(Float.floatToRawIntBits(Numerics.fp8e4m3ToFloat((byte) (q >>> 8))),
                            Float.floatToRawIntBits(b.getFloat(9)));
                    assertEquals((Numerics.floatToBf16(f) & 0xffffL) << 16 | Numerics.floatToBf16(-f) & 0xffffL,
                            b.getLong(5));

                    b.segment().fill((byte) 0xA5);
                    runner.launch(new Kernel(SupportedConstructsTest.class, "charLowBits"), Grid.of(1, 1), b, x);
                    assertEquals((x & 0xffff) << 16, b.getInt(0));
                    assertEquals(x & 0xff, b.getInt(1));
                    assertEquals((short) x, b.getShort(4));

                    b.segment().fill((byte) 0xA5);
                    runner.launch(new Kernel(SupportedConstructsTest.class, "narrowNeedsExtension"), Grid.of(1, 1), b, x);
                    short s = (short) (x >> 1);
                    int[] expected = {(short) x >> 4, (short) x < 0 ? 1 : 0, (short) x, (short) x << 8, (short) x & 0x1ffff,
                            s & 0xff, s + 1, (short) (x >>> 3) < 0 ? -1 : 1, (byte) x << 16, (x & 0xffff) >> 1,
                            Numerics.floatToBf16(Float.intBitsToFloat(x))};
                    for (int i = 0; i < expected.length; i++) {
                        assertEquals(expected[i], b.getInt(i), "x = " + x + ", result " + i);
                    }
                }
            } finally {
                runner.close();
            }
        }
    }

    static void math(KernelContext ctx, Buf b, int i, long l, float f) {
        b.setInt(0, Math.min(i, 3) + Math.max(i, -3) + Math.abs(i));
        b.setLong(1, Math.min(l, 3L) + Math.max(l, -3L) + Math.abs(l));
        b.setFloat(2, Math.min(f, 1f) + Math.max(f, -1f) + Math.abs(f));
        b.setInt(3, Float.floatToRawIntBits(f) + Float.floatToIntBits(f) + (Float.isNaN(f) ? 1 : 0));
        b.setFloat(4, Float.intBitsToFloat(i));
        b.setInt(5, Integer.bitCount(i) + Integer.numberOfLeadingZeros(i) + Long.numberOfTrailingZeros(l));
    }

    @Test
    void mathIntrinsics() throws Exception {
        String p = ptx("math");
        has(p, "min.s32", "max.s32", "min.s64", "max.s64", "setp.nan.f32", "and.b32 %tr", ", 2147483647;",
                "testp.notanumber.f32", "popc.b32", "clz.b32", "brev.b64", "clz.b64");
    }

    // ---- assert ----

    static void withAssert(KernelContext ctx, Buf b, int n) {
        assert n > 0 : "n must be positive";
        b.setInt(0, n);
    }

    @Test
    void assertionsCompileAway() throws Exception {
        String p = ptx("withAssert");
        assertFalse(p.contains("AssertionError"));
    }

    // ---- entry names ----

    static final class Nested {
        static void k(KernelContext ctx) {
        }
    }

    @Test
    void entryNamesAreValidIdentifiers() throws Exception {
        assertEquals("SupportedConstructsTest_Nested_k", PtxCompiler.entryName(new Kernel(Nested.class, "k")));
        PtxKernel k = PtxCompiler.hopper().compile(new Kernel(Nested.class, "k"));
        assertTrue(k.ptx().contains(".visible .entry SupportedConstructsTest_Nested_k()"), k.ptx());
        assertTrue(Ptxas.assemble(k.ptx(), "sm_90a", tmp, "nested").ok());
    }
}
