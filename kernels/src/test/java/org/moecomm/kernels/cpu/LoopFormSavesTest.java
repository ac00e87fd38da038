package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;

/**
 * The saves at a loop form's split points: a kernel with more live locals at a barrier than one
 * save method takes ({@link LoopFormCompiler#SAVED_PER_METHOD}) saves them in parts and gives the
 * bits of the reference execution (a virtual thread per kernel thread); and a runner's
 * {@link CpuKernelRunner#prepare} builds a kernel's loop form before its first launch.
 */
class LoopFormSavesTest {
    private static final int THREADS = 64;
    private static final int BLOCKS = 3;

    private final Arena arena = Arena.ofShared();
    private final CpuKernelRunner loops = new CpuKernelRunner(2, null, CpuKernelRunner.Execution.LOOPS, THREADS);
    private final CpuKernelRunner threads = new CpuKernelRunner(2, null, CpuKernelRunner.Execution.THREADS, THREADS);

    @AfterEach
    void close() {
        loops.close();
        threads.close();
        arena.close();
    }

    /** Kernels under test. */
    static final class Kernels {
        /**
         * 37 locals of every kind (int, long, float, double, references) live across a barrier,
         * each read after it; the barrier also passes each thread's seed to its mirror thread.
         */
        public static void manyLiveLocals(KernelContext ctx, Buf in, Buf out) {
            int[] shared = ctx.allocateIntLocalArray(THREADS);
            int tid = ctx.localIdx();
            int g = ctx.groupIdx() * ctx.localGroupSizeX() + tid;
            int seed = in.getInt(g);
            int i0 = seed + 1;
            int i1 = seed * 3;
            int i2 = seed ^ 0x5a5a;
            int i3 = seed >>> 3;
            int i4 = seed - 77;
            int i5 = seed * seed;
            int i6 = seed | 0x100;
            int i7 = seed & 0xff0f;
            int i8 = Integer.rotateLeft(seed, 5);
            int i9 = seed * 31 + 7;
            int i10 = ~seed;
            int i11 = seed << 2;
            int i12 = seed % 1009;
            int i13 = seed / 3;
            int i14 = seed + tid;
            int i15 = seed - tid;
            int i16 = seed * tid;
            int i17 = seed ^ tid;
            int i18 = seed + g;
            int i19 = seed * 17 - g;
            long l0 = (long) seed << 33;
            long l1 = seed * 1_000_003L;
            long l2 = Long.rotateRight(seed, 7);
            long l3 = -seed * 9L;
            long l4 = (long) g << 40 | seed;
            long l5 = seed * (long) tid + 1;
            float f0 = seed * 0.5f;
            float f1 = seed / 7f;
            float f2 = -seed * 1.25f;
            float f3 = tid + 0.75f;
            float f4 = g * 3.5f;
            double d0 = seed * 0.25;
            double d1 = seed / 9.0;
            double d2 = g + 0.125;
            int[] a0 = ctx.allocateIntLocalArray(1);
            Buf b0 = in;
            Buf b1 = out;
            shared[tid] = seed;
            ctx.localBarrier();
            int mirror = shared[ctx.localGroupSizeX() - 1 - tid];
            long h = mirror;
            h = h * 31 + i0 + i1 + i2 + i3 + i4 + i5 + i6 + i7 + i8 + i9;
            h = h * 31 + i10 + i11 + i12 + i13 + i14 + i15 + i16 + i17 + i18 + i19;
            h = h * 31 + l0 + l1 + l2 + l3 + l4 + l5;
            h = h * 31 + Float.floatToRawIntBits(f0) + Float.floatToRawIntBits(f1) + Float.floatToRawIntBits(f2)
                    + Float.floatToRawIntBits(f3) + Float.floatToRawIntBits(f4);
            h = h * 31 + Double.doubleToRawLongBits(d0) + Double.doubleToRawLongBits(d1)
                    + Double.doubleToRawLongBits(d2);
            h = h * 31 + a0.length + b0.getInt(g) + (b1 == out ? 1 : 0);
            out.setLong(g, h);
        }

        /** A kernel with a barrier that only {@link #prepareBuildsTheLoopFormAndChecksTheArguments} runs. */
        public static void prepared(KernelContext ctx, Buf out) {
            int v = ctx.localIdx() + 1;
            ctx.localBarrier();
            out.setInt(ctx.groupIdx() * ctx.localGroupSizeX() + ctx.localIdx(), v);
        }
    }

    @Test
    void moreLiveLocalsThanOneSaveMethodTakesGiveTheReferenceBits() {
        Kernel kernel = new Kernel(Kernels.class, "manyLiveLocals");
        assertEquals(java.util.Optional.empty(), CpuKernelRunner.loopFormRefusal(kernel), "why it has no loop form");
        Random random = new Random(7);
        for (int trial = 0; trial < 3; trial++) {
            int[] seeds = random.ints(BLOCKS * THREADS).toArray();
            long[] viaLoops = run(loops, kernel, seeds);
            long[] viaThreads = run(threads, kernel, seeds);
            assertTrue(Arrays.stream(viaLoops).noneMatch(v -> v == POISON), "a thread's output was not written");
            assertEquals(Arrays.toString(viaThreads), Arrays.toString(viaLoops), "trial " + trial);
        }
    }

    @Test
    void saveMethodsTakeAtMostTheirShareOfLocals() throws ReflectiveOperationException {
        Method kernel = Kernels.class.getMethod("manyLiveLocals", KernelContext.class, Buf.class, Buf.class);
        LoopForm form = CpuKernelRunner.loopForm(kernel).orElseThrow();
        Class<?> generated = MethodHandles.reflectAs(Method.class, form.sweep()).getDeclaringClass();
        List<Method> saves = Arrays.stream(generated.getDeclaredMethods())
                .filter(m -> m.getName().startsWith("save$")).toList();
        assertFalse(saves.isEmpty(), "no save methods in " + Arrays.toString(generated.getDeclaredMethods()));
        for (Method save : saves) {
            // (Object[] refs, long[] prims, locals...)
            assertTrue(save.getParameterCount() - 2 <= LoopFormCompiler.SAVED_PER_METHOD,
                    save.getName() + " takes " + (save.getParameterCount() - 2) + " locals");
        }
        // the barrier's 40-odd live locals take three parts
        assertTrue(saves.stream().anyMatch(m -> m.getName().equals("save$1$2")), saves.toString());
    }

    @Test
    void prepareBuildsTheLoopFormAndChecksTheArguments() throws ReflectiveOperationException {
        Kernel kernel = new Kernel(Kernels.class, "prepared");
        Method method = Kernels.class.getMethod("prepared", KernelContext.class, Buf.class);
        Buf out = Buf.of(arena.allocate(4L * THREADS, 16));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> loops.prepare(kernel, THREADS, out, 1));
        assertTrue(e.getMessage().contains("Kernels.prepared"), e.getMessage());
        assertFalse(CpuKernelRunner.loopFormBuilt(method), "a refused prepare built the loop form");
        loops.prepare(kernel, THREADS, out);
        assertTrue(CpuKernelRunner.loopFormBuilt(method), "prepare did not build the loop form");
        loops.launch(kernel, Grid.of(1, THREADS), out);
        for (int t = 0; t < THREADS; t++) {
            assertEquals(t + 1, out.getInt(t), "thread " + t);
        }
    }

    private static final long POISON = 0x7f7f7f7f7f7f7f7fL;

    private long[] run(CpuKernelRunner runner, Kernel kernel, int[] seeds) {
        Buf in = Buf.of(arena.allocate(4L * seeds.length, 16));
        Buf out = Buf.of(arena.allocate(8L * seeds.length, 16));
        for (int i = 0; i < seeds.length; i++) {
            in.setInt(i, seeds[i]);
            out.setLong(i, POISON);
        }
        runner.launch(kernel, Grid.of(BLOCKS, THREADS), in, out);
        long[] values = new long[seeds.length];
        for (int i = 0; i < seeds.length; i++) {
            values[i] = out.getLong(i);
        }
        assertNotEquals(0, values.length);
        return values;
    }
}
