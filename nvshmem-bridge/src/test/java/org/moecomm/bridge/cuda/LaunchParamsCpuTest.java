package org.moecomm.bridge.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.Specialize;
import org.moecomm.kernels.ptx.PtxCompiler;
import org.moecomm.kernels.ptx.PtxKernel;

/**
 * The runner's parameter packing ({@link GpuKernelRunner#pack}), which needs no GPU: every
 * argument lands in its 8-byte slot of the off-heap segment by the kernel ABI, {@code Buf}s go
 * through the check in order, and wrong arguments fail with the messages launches always gave.
 */
class LaunchParamsCpuTest {
    /** A kernel shape with every parameter type (never run). */
    public static void mixed(KernelContext ctx, Buf out, int i, long l, float f, Buf in) {
    }

    /** The same shape with its two ints {@code @Specialize}d (never run). */
    public static void mixedSpecialized(KernelContext ctx, Buf out, @Specialize int i, long l, @Specialize int j, Buf in) {
    }

    private static final Kernel MIXED = new Kernel(LaunchParamsCpuTest.class, "mixed");
    private static final int[] ALL = {0, 1, 2, 3, 4};
    private static final long SENTINEL = 0x5a5a_5a5a_5a5a_5a5aL;

    private Arena arena;
    private MemorySegment slots;
    private Class<?>[] types;

    @BeforeEach
    void setUp() {
        arena = Arena.ofConfined();
        slots = arena.allocate(8 * Long.BYTES, Long.BYTES);
        slots.fill((byte) 0x5a);
        Class<?>[] p = MIXED.method().getParameterTypes();
        types = Arrays.copyOfRange(p, 1, p.length); // as the runner's load() does: after the context
    }

    @AfterEach
    void tearDown() {
        arena.close();
    }

    private long slot(int i) {
        return slots.getAtIndex(ValueLayout.JAVA_LONG, i);
    }

    @Test
    void everyTypeLandsInItsSlotByTheAbi() {
        Buf out = Buf.allocate(arena, 64);
        Buf in = Buf.allocate(arena, 32);
        GpuKernelRunner.pack(MIXED, types, new Object[] {out, -1, 0x1234_5678_9abc_def0L, -0.0f, in}, ALL, slots, null);
        assertEquals(out.address(), slot(0));
        assertEquals(0xffff_ffffL, slot(1), "an int is zero-extended into the low half");
        assertEquals(0x1234_5678_9abc_def0L, slot(2));
        assertEquals(0x8000_0000L, slot(3), "a float is its raw bits in the low half");
        assertEquals(in.address(), slot(4));
        assertEquals(SENTINEL, slot(5), "slots past the arguments are left alone");

        GpuKernelRunner.pack(MIXED, types, new Object[] {in, 7, -2L, 1.5f, out}, ALL, slots, null);
        assertEquals(in.address(), slot(0), "the slots are rewritten by the next launch");
        assertEquals(7L, slot(1));
        assertEquals(-2L, slot(2));
        assertEquals(Float.floatToRawIntBits(1.5f) & 0xffff_ffffL, slot(3));
        assertEquals(out.address(), slot(4));
    }

    @Test
    void eachBufIsCheckedInOrderWithItsIndex() {
        Buf out = Buf.allocate(arena, 64);
        Buf in = Buf.allocate(arena, 32);
        List<String> seen = new ArrayList<>();
        GpuKernelRunner.pack(MIXED, types, new Object[] {out, 1, 2L, 3f, in}, ALL, slots,
                (kernel, index, buf) -> seen.add(kernel.name() + ":" + index + ":" + buf.byteSize()));
        assertEquals(List.of("mixed:0:64", "mixed:4:32"), seen);
    }

    @Test
    void aFailedCheckStopsThePacking() {
        Buf out = Buf.allocate(arena, 64);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GpuKernelRunner.pack(MIXED, types, new Object[] {out, 1, 2L, 3f, out}, ALL, slots,
                        (kernel, index, buf) -> {
                            throw new IllegalArgumentException("bad " + index);
                        }));
        assertEquals("bad 0", e.getMessage());
        assertEquals(SENTINEL, slot(0), "nothing is written for a Buf that failed its check");
    }

    @Test
    void wrongArgumentsFailNamingKernelAndArgument() {
        Buf out = Buf.allocate(arena, 64);
        assertEquals("kernel LaunchParamsCpuTest.mixed takes 5 arguments after the KernelContext, got 4",
                assertThrows(IllegalArgumentException.class,
                        () -> GpuKernelRunner.pack(MIXED, types, new Object[] {out, 1, 2L, 3f}, ALL, slots, null))
                        .getMessage());
        assertEquals("kernel LaunchParamsCpuTest.mixed: argument 3 must be a long, got java.lang.Integer",
                assertThrows(IllegalArgumentException.class,
                        () -> GpuKernelRunner.pack(MIXED, types, new Object[] {out, 1, 2, 3f, out}, ALL, slots, null))
                        .getMessage());
        assertEquals("kernel LaunchParamsCpuTest.mixed: argument 1 must be a Buf, got null",
                assertThrows(IllegalArgumentException.class,
                        () -> GpuKernelRunner.pack(MIXED, types, new Object[] {null, 1, 2L, 3f, out}, ALL, slots, null))
                        .getMessage());
        assertEquals("kernel LaunchParamsCpuTest.mixed: argument 4 must be a float, got java.lang.Double",
                assertThrows(IllegalArgumentException.class,
                        () -> GpuKernelRunner.pack(MIXED, types, new Object[] {out, 1, 2L, 3.0, out}, ALL, slots, null))
                        .getMessage());
    }

    @Test
    void aKernelWithoutParametersPacksNothing() {
        GpuKernelRunner.pack(MIXED, new Class<?>[0], new Object[0], new int[0], slots, null);
        long[] all = slots.toArray(ValueLayout.JAVA_LONG);
        long[] untouched = new long[all.length];
        Arrays.fill(untouched, SENTINEL);
        assertArrayEquals(untouched, all);
    }

    @Test
    void aSpecializedKernelTakesAndIsPassedOnlyItsOtherArguments() {
        Kernel generic = new Kernel(LaunchParamsCpuTest.class, "mixedSpecialized");
        Object[] args = {Buf.allocate(arena, 64), 3, -2L, 5, Buf.allocate(arena, 32)};
        Kernel special = generic.specializedFor(generic.specializedPositions(), args);
        PtxKernel ptx = PtxCompiler.hopper().compile(special);
        assertArrayEquals(new int[] {0, 2, 4}, ptx.passedPositions());
        String entry = ptx.entryName();
        List<String> declared = ptx.ptx().lines().filter(line -> line.contains(".param .") && line.contains(entry))
                .map(String::strip).toList();
        assertEquals(List.of(".param .u64 " + entry + "_param_0,", ".param .u64 " + entry + "_param_2,",
                ".param .u64 " + entry + "_param_4"), declared, "the entry's parameters are the passed arguments, named by position");
        assertArrayEquals(new int[] {0, 1, 2, 3, 4}, new PtxKernel(generic, entry, "").passedPositions(),
                "the generic kernel takes every argument");

        Class<?>[] p = generic.method().getParameterTypes();
        List<String> seen = new ArrayList<>();
        GpuKernelRunner.pack(special, Arrays.copyOfRange(p, 1, p.length), args, ptx.passedPositions(), slots,
                (kernel, index, buf) -> seen.add(index + ":" + buf.byteSize()));
        assertEquals(((Buf) args[0]).address(), slot(0));
        assertEquals(-2L, slot(1), "the long follows the first Buf: the specialised int is not passed");
        assertEquals(((Buf) args[4]).address(), slot(2));
        assertEquals(SENTINEL, slot(3), "three slots for three parameters");
        assertEquals(List.of("0:64", "4:32"), seen, "Bufs are checked by their argument index");
    }
}
