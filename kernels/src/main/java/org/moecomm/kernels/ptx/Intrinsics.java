package org.moecomm.kernels.ptx;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The methods a kernel may call that the compiler replaces by PTX instead of inlining: the
 * {@code KernelContext} methods, the {@code Buf} accessors, the {@code Numerics} conversions, and
 * a few {@code java.lang} methods. Each entry's lowering sits here, in one place; its JVM
 * implementation is the Java method itself (or, for {@code KernelContext}, the CPU runner's
 * context), and the two must agree.
 *
 * <p>Operands arrive as registers in the order of the JVM operand stack (the receiver first for
 * instance methods; the {@code KernelContext} receiver has no register and is {@code null}).
 */
final class Intrinsics {
    private static final String CTX = "org/moecomm/kernels/api/KernelContext";
    private static final String BUF = "org/moecomm/kernels/api/Buf";
    private static final String NUMERICS = "org/moecomm/kernels/api/Numerics";
    private static final String B = Kind.BUF_DESCRIPTOR;

    /**
     * One lowering call: operand registers, the result register (or {@code null}), the shared
     * array allocated, and whether the uses of a narrow ({@code short}, {@code byte}) result read
     * only its own bits ({@link LowBits}): then it needs no sign extension.
     */
    record Call(PtxFunction f, String[] args, String result, SharedArray array, boolean lowBitsOnly) {
        String arg(int i) {
            return args[i];
        }
    }

    @FunctionalInterface
    interface Lowering {
        void lower(Call c);
    }

    /**
     * @param javaName  for messages
     * @param minSm     lowest architecture whose PTX has the instructions
     * @param allocates the element kind's array kind when this allocates a shared array, else {@code null}
     */
    record Intrinsic(String javaName, int minSm, Kind allocates, Lowering lowering) {
    }

    private static final Map<String, Intrinsic> TABLE = new HashMap<>();
    /** Intrinsics whose lowering reads only the low bits of their (narrow) last argument: how many. */
    private static final Map<String, Integer> LAST_ARGUMENT_BITS = new HashMap<>();

    private Intrinsics() {
    }

    /** The intrinsic for a call to {@code owner.name descriptor}, or {@code null}. */
    static Intrinsic find(String owner, String name, String descriptor) {
        return TABLE.get(owner + "." + name + descriptor);
    }

    /** How many low bits of its last argument the lowering of intrinsic {@code owner.name descriptor} reads (32: all of an int). */
    static int lastArgumentBits(String owner, String name, String descriptor) {
        return LAST_ARGUMENT_BITS.getOrDefault(owner + "." + name + descriptor, 32);
    }

    /**
     * The value a call of intrinsic {@code owner.name descriptor} has at compile time, or null:
     * {@code localGroupSizeX()} in a kernel compiled for one block size
     * ({@link org.moecomm.kernels.api.Kernel#forBlockThreads}), and the pure {@code java.lang} ones
     * (min, max, abs, bit counts) of constant arguments ({@code args}, ints as their long values;
     * null when not all are constants), computed as the JVM does. A size the handle or the block
     * fixes reaches a kernel through them ({@code min(WARP, threads)}): folded, what is divided by
     * it is divided by a constant ({@link ConstantDivision}).
     */
    static Long constantValue(org.moecomm.kernels.api.Kernel kernel, String owner, String name, String descriptor,
                              long[] args) {
        String call = owner + "." + name + descriptor;
        if (call.equals(CTX + ".localGroupSizeX()I")) {
            return kernel.blockThreads() > 0 ? Long.valueOf(kernel.blockThreads()) : null;
        }
        if (args == null) {
            return null;
        }
        return switch (call) {
            case "java/lang/Math.min(II)I" -> (long) Math.min((int) args[0], (int) args[1]);
            case "java/lang/Math.max(II)I" -> (long) Math.max((int) args[0], (int) args[1]);
            case "java/lang/Math.abs(I)I" -> (long) Math.abs((int) args[0]);
            case "java/lang/Math.min(JJ)J" -> Math.min(args[0], args[1]);
            case "java/lang/Math.max(JJ)J" -> Math.max(args[0], args[1]);
            case "java/lang/Math.abs(J)J" -> Math.abs(args[0]);
            case "java/lang/Integer.bitCount(I)I" -> (long) Integer.bitCount((int) args[0]);
            case "java/lang/Integer.numberOfLeadingZeros(I)I" -> (long) Integer.numberOfLeadingZeros((int) args[0]);
            case "java/lang/Integer.numberOfTrailingZeros(I)I" -> (long) Integer.numberOfTrailingZeros((int) args[0]);
            case "java/lang/Long.bitCount(J)I" -> (long) Long.bitCount(args[0]);
            case "java/lang/Long.numberOfLeadingZeros(J)I" -> (long) Long.numberOfLeadingZeros(args[0]);
            case "java/lang/Long.numberOfTrailingZeros(J)I" -> (long) Long.numberOfTrailingZeros(args[0]);
            default -> null;
        };
    }

    private static void readsLowBitsOfLastArgument(String owner, String name, String descriptor, int bits) {
        LAST_ARGUMENT_BITS.put(owner + "." + name + descriptor, bits);
    }

    private static void def(String owner, String name, String descriptor, Lowering l) {
        def(owner, name, descriptor, 0, l);
    }

    private static void def(String owner, String name, String descriptor, int minSm, Lowering l) {
        String simple = owner.substring(owner.lastIndexOf('/') + 1);
        TABLE.put(owner + "." + name + descriptor, new Intrinsic(simple + "." + name, minSm, null, l));
    }

    private static void defAlloc(String name, String descriptor, Kind arrayKind) {
        TABLE.put(CTX + "." + name + descriptor, new Intrinsic("KernelContext." + name, 0, arrayKind,
                c -> c.f().op("mov.u32 " + c.result() + ", " + c.f().shared(c.array()))));
    }

    /** {@code base + (index << shift)}: the global address of element {@code index}. */
    static String elementAddress(PtxFunction f, String base, String index, int shift) {
        String addr = f.tmp("b64");
        if (shift == 0) {
            f.op("add.s64 " + addr + ", " + base + ", " + index);
        } else {
            f.op("shl.b64 " + addr + ", " + index + ", " + shift);
            f.op("add.s64 " + addr + ", " + base + ", " + addr);
        }
        return addr;
    }

    /** {@code array + index * bytes}: the shared address of element {@code index}. */
    static String sharedAddress(PtxFunction f, String array, String index, int bytes) {
        String addr = f.tmp("b32");
        f.op("mad.lo.s32 " + addr + ", " + index + ", " + bytes + ", " + array);
        return addr;
    }

    private static void special(PtxFunction f, String result, String sreg) {
        f.op("mov.u32 " + result + ", " + sreg);
    }

    private static void load(String name, String desc, String ldType, int shift) {
        def(BUF, name, desc, c -> c.f().op("ld.global." + ldType + " " + c.result() + ", ["
                + elementAddress(c.f(), c.arg(0), c.arg(1), shift) + "]"));
    }

    private static void store(String name, String desc, String stType, int shift) {
        def(BUF, name, desc, c -> c.f().op("st.global." + stType + " ["
                + elementAddress(c.f(), c.arg(0), c.arg(1), shift) + "], " + c.arg(2)));
    }

    /** Java's {@code Math.min}/{@code max} for float or double, bit-exact (NaN and signed zeros included). */
    private static void floatMinMax(Call c, boolean min, boolean dbl) {
        PtxFunction f = c.f();
        String ft = dbl ? "f64" : "f32";
        String bt = dbl ? "b64" : "b32";
        String a = c.arg(0);
        String b = c.arg(1);
        // equal operands (only +0.0 and -0.0 differ in bits): OR of the bits gives -0.0 for min, AND +0.0 for max
        String ba = f.tmp(bt);
        String bb = f.tmp(bt);
        f.op("mov." + bt + " " + ba + ", " + a);
        f.op("mov." + bt + " " + bb + ", " + b);
        f.op((min ? "or." : "and.") + bt + " " + ba + ", " + ba + ", " + bb);
        String eqValue = f.tmp(ft);
        f.op("mov." + bt + " " + eqValue + ", " + ba);
        String p = f.pred();
        String r1 = f.tmp(ft);
        f.op("setp." + (min ? "lt." : "gt.") + ft + " " + p + ", " + a + ", " + b);
        f.op("selp." + ft + " " + r1 + ", " + a + ", " + b + ", " + p);
        String q = f.pred();
        f.op("setp.eq." + ft + " " + q + ", " + a + ", " + b);
        f.op("selp." + ft + " " + r1 + ", " + eqValue + ", " + r1 + ", " + q);
        String n = f.pred();
        f.op("setp.nan." + ft + " " + n + ", " + a + ", " + a);
        f.op("selp." + ft + " " + c.result() + ", " + a + ", " + r1 + ", " + n);
    }

    private static void intAbs(Call c, String t) {
        PtxFunction f = c.f();
        String neg = f.tmp("b" + t.substring(1));
        String p = f.pred();
        f.op("neg." + t + " " + neg + ", " + c.arg(0));
        f.op("setp.lt." + t + " " + p + ", " + c.arg(0) + ", 0");
        f.op("selp.b" + t.substring(1) + " " + c.result() + ", " + neg + ", " + c.arg(0) + ", " + p);
    }

    private static void floatToFp16(Call c) {
        String h = c.f().tmp("b16");
        c.f().op("cvt.rn.f16.f32 " + h + ", " + c.arg(0));
        widen16(c, h);
    }

    /** A 16-bit result as the JVM's short (sign-extended), or zero-extended where only its own bits are read. */
    private static void widen16(Call c, String h) {
        c.f().op((c.lowBitsOnly() ? "cvt.u32.u16 " : "cvt.s32.s16 ") + c.result() + ", " + h);
    }

    /**
     * {@code Buf.copy16x4} and {@code Buf.copy16x8} ({@code count} null), {@code Buf.copy16xN} and
     * {@code Buf.copy16x8N} (copy {@code j} only when {@code j < count}, by predicates): {@code n}
     * 16-byte loads at {@code srcIndex + j*stride}, all issued before the {@code n} stores, so that
     * they are in flight together.
     */
    private static void copyPieces(Call c, int n, String count) {
        PtxFunction f = c.f();
        String step = f.tmp("b64");
        f.op("shl.b64 " + step + ", " + c.arg(4) + ", 4");
        String[] src = new String[n];
        String[] dst = new String[n];
        String[] guard = new String[n];
        String[] values = new String[n];
        src[0] = elementAddress(f, c.arg(2), c.arg(3), 4);
        dst[0] = elementAddress(f, c.arg(0), c.arg(1), 4);
        for (int j = 0; j < n; j++) {
            if (j > 0) {
                src[j] = f.tmp("b64");
                dst[j] = f.tmp("b64");
                f.op("add.s64 " + src[j] + ", " + src[j - 1] + ", " + step);
                f.op("add.s64 " + dst[j] + ", " + dst[j - 1] + ", " + step);
            }
            guard[j] = "";
            if (count != null) {
                String p = f.pred();
                f.op("setp.gt.s32 " + p + ", " + count + ", " + j);
                guard[j] = "@" + p + " ";
            }
            values[j] = "{" + f.tmp("b32") + ", " + f.tmp("b32") + ", " + f.tmp("b32") + ", " + f.tmp("b32") + "}";
            f.op(guard[j] + "ld.global.v4.u32 " + values[j] + ", [" + src[j] + "]");
        }
        for (int j = 0; j < n; j++) {
            f.op(guard[j] + "st.global.v4.u32 [" + dst[j] + "], " + values[j]);
        }
    }

    private static void fp16ToFloat(Call c) {
        String h = c.f().tmp("b16");
        c.f().op("cvt.u16.u32 " + h + ", " + c.arg(0));
        c.f().op("cvt.f32.f16 " + c.result() + ", " + h);
    }

    static {
        // ---- KernelContext: launch geometry ----
        def(CTX, "globalIdx", "()I", c -> {
            PtxFunction f = c.f();
            String g = f.tmp("b32");
            String n = f.tmp("b32");
            String t = f.tmp("b32");
            special(f, g, "%ctaid.x");
            special(f, n, "%ntid.x");
            special(f, t, "%tid.x");
            f.op("mad.lo.s32 " + c.result() + ", " + g + ", " + n + ", " + t);
        });
        def(CTX, "localIdx", "()I", c -> special(c.f(), c.result(), "%tid.x"));
        def(CTX, "groupIdx", "()I", c -> special(c.f(), c.result(), "%ctaid.x"));
        def(CTX, "groupIdy", "()I", c -> special(c.f(), c.result(), "%ctaid.y"));
        def(CTX, "localGroupSizeX", "()I", c -> special(c.f(), c.result(), "%ntid.x"));
        def(CTX, "numGroupsX", "()I", c -> special(c.f(), c.result(), "%nctaid.x"));
        def(CTX, "numGroupsY", "()I", c -> special(c.f(), c.result(), "%nctaid.y"));
        def(CTX, "globalGroupSizeX", "()I", c -> {
            PtxFunction f = c.f();
            String g = f.tmp("b32");
            String n = f.tmp("b32");
            special(f, g, "%nctaid.x");
            special(f, n, "%ntid.x");
            f.op("mul.lo.s32 " + c.result() + ", " + g + ", " + n);
        });

        // ---- KernelContext: synchronisation, shared memory, atomics ----
        def(CTX, "localBarrier", "()V", c -> c.f().op("bar.sync 0"));
        def(CTX, "globalFence", "()V", c -> c.f().op("fence.acq_rel.gpu"));
        def(CTX, "clock", "()J", c -> c.f().op("mov.u64 " + c.result() + ", %clock64"));
        def(CTX, "globalTimerNanos", "()J", c -> c.f().op("mov.u64 " + c.result() + ", %globaltimer"));
        defAlloc("allocateIntLocalArray", "(I)[I", Kind.INT_ARRAY);
        defAlloc("allocateFloatLocalArray", "(I)[F", Kind.FLOAT_ARRAY);
        defAlloc("allocateLongLocalArray", "(I)[J", Kind.LONG_ARRAY);
        def(CTX, "atomicAdd", "(" + B + "JI)I", c -> c.f().op("atom.global.add.u32 " + c.result() + ", ["
                + elementAddress(c.f(), c.arg(1), c.arg(2), 2) + "], " + c.arg(3)));
        def(CTX, "atomicAdd", "([III)I", c -> c.f().op("atom.shared.add.u32 " + c.result() + ", ["
                + sharedAddress(c.f(), c.arg(1), c.arg(2), 4) + "], " + c.arg(3)));
        def(CTX, "atomicCas", "(" + B + "JII)I", c -> c.f().op("atom.global.cas.b32 " + c.result() + ", ["
                + elementAddress(c.f(), c.arg(1), c.arg(2), 2) + "], " + c.arg(3) + ", " + c.arg(4)));

        // ---- KernelContext: one-sided communication (the bridge's device functions) ----
        def(CTX, "putSignalBlock", "(" + B + B + "J" + B + "JI)V", c -> DeviceFunctions.call(c.f(),
                DeviceFunctions.PUT_SIGNAL_BLOCK, List.of(c.arg(1), c.arg(2), c.arg(3), c.arg(4), c.arg(5), c.arg(6)),
                true, true, false, true));
        def(CTX, "putSignalAddBlock", "(" + B + B + "J" + B + "JI)V", c -> DeviceFunctions.call(c.f(),
                DeviceFunctions.PUT_SIGNAL_ADD_BLOCK, List.of(c.arg(1), c.arg(2), c.arg(3), c.arg(4), c.arg(5),
                        c.arg(6)), true, true, false, true));
        def(CTX, "signalSet", "(" + B + "JI)V", c -> DeviceFunctions.call(c.f(), DeviceFunctions.SIGNAL_OP,
                List.of(c.arg(1), c.arg(2), String.valueOf(DeviceFunctions.SIGNAL_SET), c.arg(3)), true));
        def(CTX, "signalAdd", "(" + B + "JI)V", c -> DeviceFunctions.call(c.f(), DeviceFunctions.SIGNAL_OP,
                List.of(c.arg(1), c.arg(2), String.valueOf(DeviceFunctions.SIGNAL_ADD), c.arg(3)), true));
        def(CTX, "waitAtLeast", "(" + B + "JJ" + B + "III)J", c -> {
            String seen = DeviceFunctions.call(c.f(), DeviceFunctions.WAIT_GE, List.of(c.arg(1), c.arg(2),
                    c.arg(3), c.arg(4), c.arg(5), c.arg(6), c.arg(7)), true, false, false, true);
            c.f().op("mov.b64 " + c.result() + ", " + seen);
        });
        def(CTX, "peerBuf", "(" + B + "I)" + B, c -> {
            String generic = DeviceFunctions.call(c.f(), DeviceFunctions.PTR, List.of(c.arg(1), c.arg(2)), true);
            c.f().op("cvta.to.global.u64 " + c.result() + ", " + generic);
        });
        def(CTX, "peerBuf", "(" + B + "I" + B + ")" + B, c -> {
            // the symmetric address plus the host's offset for pe: a load and an add, no call
            PtxFunction f = c.f();
            String pe = f.tmp("b64");
            f.op("cvt.s64.s32 " + pe + ", " + c.arg(2));
            String offset = f.tmp("b64");
            f.op("ld.global.u64 " + offset + ", [" + elementAddress(f, c.arg(3), pe, 3) + "]");
            f.op("add.s64 " + c.result() + ", " + c.arg(1) + ", " + offset);
        });
        def(CTX, "putBlockNbi", "(" + B + B + "JI)V", c -> DeviceFunctions.call(c.f(), DeviceFunctions.PUT_NBI_BLOCK,
                List.of(c.arg(1), c.arg(2), c.arg(3), c.arg(4)), true, true));
        def(CTX, "putWarpNbi", "(" + B + B + "JI)V", c -> DeviceFunctions.call(c.f(), DeviceFunctions.PUT_NBI_WARP,
                List.of(c.arg(1), c.arg(2), c.arg(3), c.arg(4)), true, true));
        def(CTX, "quiet", "()V", c -> DeviceFunctions.call(c.f(), DeviceFunctions.QUIET, List.of()));
        def(CTX, "systemFence", "()V", c -> c.f().op("fence.acq_rel.sys"));
        def(CTX, "storeRelease", "(" + B + "JJ)V", c -> c.f().op("st.release.sys.global.u64 ["
                + elementAddress(c.f(), c.arg(1), c.arg(2), 3) + "], " + c.arg(3)));
        def(CTX, "storeRelaxed", "(" + B + "JJ)V", c -> c.f().op("st.relaxed.sys.global.u64 ["
                + elementAddress(c.f(), c.arg(1), c.arg(2), 3) + "], " + c.arg(3)));
        def(CTX, "loadAcquire", "(" + B + "J)J", c -> c.f().op("ld.acquire.sys.global.u64 " + c.result() + ", ["
                + elementAddress(c.f(), c.arg(1), c.arg(2), 3) + "]"));
        def(CTX, "addRelease", "(" + B + "JJ)V", c -> c.f().op("red.release.sys.global.add.u64 ["
                + elementAddress(c.f(), c.arg(1), c.arg(2), 3) + "], " + c.arg(3)));

        // ---- Buf accessors: element index in units of the type's width ----
        load("getByte", "(J)B", "s8", 0);
        store("setByte", "(JB)V", "u8", 0);
        load("getShort", "(J)S", "s16", 1);
        store("setShort", "(JS)V", "u16", 1);
        load("getInt", "(J)I", "u32", 2);
        store("setInt", "(JI)V", "u32", 2);
        load("getLong", "(J)J", "u64", 3);
        store("setLong", "(JJ)V", "u64", 3);
        load("getFloat", "(J)F", "f32", 2);
        store("setFloat", "(JF)V", "f32", 2);
        load("getDouble", "(J)D", "f64", 3);
        store("setDouble", "(JD)V", "f64", 3);
        def(BUF, "copy16", "(J" + B + "J)V", c -> {
            PtxFunction f = c.f();
            String src = elementAddress(f, c.arg(2), c.arg(3), 4);
            String dst = elementAddress(f, c.arg(0), c.arg(1), 4);
            String v = "{" + f.tmp("b32") + ", " + f.tmp("b32") + ", " + f.tmp("b32") + ", " + f.tmp("b32") + "}";
            f.op("ld.global.v4.u32 " + v + ", [" + src + "]");
            f.op("st.global.v4.u32 [" + dst + "], " + v);
        });
        def(BUF, "copy16x4", "(J" + B + "JJ)V", c -> copyPieces(c, 4, null));
        def(BUF, "copy16xN", "(J" + B + "JJI)V", c -> copyPieces(c, 4, c.arg(5)));
        def(BUF, "copy16x8", "(J" + B + "JJ)V", c -> copyPieces(c, 8, null));
        def(BUF, "copy16x8N", "(J" + B + "JJI)V", c -> copyPieces(c, 8, c.arg(5)));
        def(BUF, "slice", "(JJ)" + B, c -> c.f().op("add.s64 " + c.result() + ", " + c.arg(0) + ", " + c.arg(1)));

        // ---- Numerics: narrow float formats (round to nearest even; fp8 saturates to finite) ----
        def(NUMERICS, "bf16ToFloat", "(S)F", c -> {
            String t = c.f().tmp("b32");
            c.f().op("shl.b32 " + t + ", " + c.arg(0) + ", 16");
            c.f().op("mov.b32 " + c.result() + ", " + t);
        });
        def(NUMERICS, "floatToBf16", "(F)S", 80, c -> {
            String h = c.f().tmp("b16");
            c.f().op("cvt.rn.bf16.f32 " + h + ", " + c.arg(0));
            widen16(c, h);
        });
        def(NUMERICS, "fp16ToFloat", "(S)F", Intrinsics::fp16ToFloat);
        def(NUMERICS, "floatToFp16", "(F)S", Intrinsics::floatToFp16);
        def(NUMERICS, "fp8e4m3ToFloat", "(B)F", 89, c -> {
            PtxFunction f = c.f();
            String in = f.tmp("b16");
            String pair = f.tmp("b32");
            String lo = f.tmp("b16");
            String hi = f.tmp("b16");
            f.op("cvt.u16.u32 " + in + ", " + c.arg(0));
            f.op("cvt.rn.f16x2.e4m3x2 " + pair + ", " + in);
            f.op("mov.b32 {" + lo + ", " + hi + "}, " + pair);
            f.op("cvt.f32.f16 " + c.result() + ", " + lo);
        });
        def(NUMERICS, "floatToFp8e4m3", "(F)B", 89, c -> {
            PtxFunction f = c.f();
            String zero = f.tmp("f32");
            String pair = f.tmp("b16");
            String wide = f.tmp("b32");
            f.op("mov.f32 " + zero + ", 0f00000000");
            f.op("cvt.rn.satfinite.e4m3x2.f32 " + pair + ", " + zero + ", " + c.arg(0));
            f.op("cvt.u32.u16 " + wide + ", " + pair);
            if (c.lowBitsOnly()) {
                f.op("mov.b32 " + c.result() + ", " + wide);
            } else {
                f.op("bfe.s32 " + c.result() + ", " + wide + ", 0, 8");
            }
        });
        def("java/lang/Float", "floatToFloat16", "(F)S", Intrinsics::floatToFp16);
        def("java/lang/Float", "float16ToFloat", "(S)F", Intrinsics::fp16ToFloat);
        // read only a narrow argument's own bits: shl by 16, cvt.u16.u32 (truncates), st.u16 / st.u8
        readsLowBitsOfLastArgument(NUMERICS, "bf16ToFloat", "(S)F", 16);
        readsLowBitsOfLastArgument(NUMERICS, "fp16ToFloat", "(S)F", 16);
        readsLowBitsOfLastArgument("java/lang/Float", "float16ToFloat", "(S)F", 16);
        readsLowBitsOfLastArgument(NUMERICS, "fp8e4m3ToFloat", "(B)F", 8); // the e4m3x2 pair's high byte is ignored
        readsLowBitsOfLastArgument(BUF, "setShort", "(JS)V", 16);
        readsLowBitsOfLastArgument(BUF, "setByte", "(JB)V", 8);

        // ---- bit views ----
        def("java/lang/Float", "floatToRawIntBits", "(F)I", c -> c.f().op("mov.b32 " + c.result() + ", " + c.arg(0)));
        def("java/lang/Float", "intBitsToFloat", "(I)F", c -> c.f().op("mov.b32 " + c.result() + ", " + c.arg(0)));
        def("java/lang/Double", "doubleToRawLongBits", "(D)J", c -> c.f().op("mov.b64 " + c.result() + ", " + c.arg(0)));
        def("java/lang/Double", "longBitsToDouble", "(J)D", c -> c.f().op("mov.b64 " + c.result() + ", " + c.arg(0)));
        def("java/lang/Float", "isNaN", "(F)Z", c -> {
            String p = c.f().pred();
            c.f().op("testp.notanumber.f32 " + p + ", " + c.arg(0));
            c.f().op("selp.b32 " + c.result() + ", 1, 0, " + p);
        });
        def("java/lang/Double", "isNaN", "(D)Z", c -> {
            String p = c.f().pred();
            c.f().op("testp.notanumber.f64 " + p + ", " + c.arg(0));
            c.f().op("selp.b32 " + c.result() + ", 1, 0, " + p);
        });

        // ---- Math ----
        String m = "java/lang/Math";
        def(m, "min", "(II)I", c -> c.f().op("min.s32 " + c.result() + ", " + c.arg(0) + ", " + c.arg(1)));
        def(m, "max", "(II)I", c -> c.f().op("max.s32 " + c.result() + ", " + c.arg(0) + ", " + c.arg(1)));
        def(m, "min", "(JJ)J", c -> c.f().op("min.s64 " + c.result() + ", " + c.arg(0) + ", " + c.arg(1)));
        def(m, "max", "(JJ)J", c -> c.f().op("max.s64 " + c.result() + ", " + c.arg(0) + ", " + c.arg(1)));
        def(m, "min", "(FF)F", c -> floatMinMax(c, true, false));
        def(m, "max", "(FF)F", c -> floatMinMax(c, false, false));
        def(m, "min", "(DD)D", c -> floatMinMax(c, true, true));
        def(m, "max", "(DD)D", c -> floatMinMax(c, false, true));
        def(m, "abs", "(I)I", c -> intAbs(c, "s32"));
        def(m, "abs", "(J)J", c -> intAbs(c, "s64"));
        def(m, "abs", "(F)F", c -> {
            String t = c.f().tmp("b32");
            c.f().op("mov.b32 " + t + ", " + c.arg(0));
            c.f().op("and.b32 " + t + ", " + t + ", 2147483647");
            c.f().op("mov.b32 " + c.result() + ", " + t);
        });
        def(m, "abs", "(D)D", c -> {
            String t = c.f().tmp("b64");
            c.f().op("mov.b64 " + t + ", " + c.arg(0));
            c.f().op("and.b64 " + t + ", " + t + ", 9223372036854775807");
            c.f().op("mov.b64 " + c.result() + ", " + t);
        });
        def(m, "sqrt", "(D)D", c -> c.f().op("sqrt.rn.f64 " + c.result() + ", " + c.arg(0)));
        def(m, "fma", "(FFF)F", c -> c.f().op("fma.rn.f32 " + c.result() + ", " + c.arg(0) + ", " + c.arg(1) + ", " + c.arg(2)));
        def(m, "fma", "(DDD)D", c -> c.f().op("fma.rn.f64 " + c.result() + ", " + c.arg(0) + ", " + c.arg(1) + ", " + c.arg(2)));

        // ---- Integer / Long bit counts ----
        def("java/lang/Integer", "bitCount", "(I)I", c -> c.f().op("popc.b32 " + c.result() + ", " + c.arg(0)));
        def("java/lang/Integer", "numberOfLeadingZeros", "(I)I", c -> c.f().op("clz.b32 " + c.result() + ", " + c.arg(0)));
        def("java/lang/Integer", "numberOfTrailingZeros", "(I)I", c -> {
            String t = c.f().tmp("b32");
            c.f().op("brev.b32 " + t + ", " + c.arg(0));
            c.f().op("clz.b32 " + c.result() + ", " + t);
        });
        def("java/lang/Long", "bitCount", "(J)I", c -> c.f().op("popc.b64 " + c.result() + ", " + c.arg(0)));
        def("java/lang/Long", "numberOfLeadingZeros", "(J)I", c -> c.f().op("clz.b64 " + c.result() + ", " + c.arg(0)));
        def("java/lang/Long", "numberOfTrailingZeros", "(J)I", c -> {
            String t = c.f().tmp("b64");
            c.f().op("brev.b64 " + t + ", " + c.arg(0));
            c.f().op("clz.b64 " + c.result() + ", " + t);
        });
    }
}
