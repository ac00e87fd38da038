package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.cpu.CpuKernelRunner;
import org.moecomm.kernels.cpu.CpuKernelRunner.Execution;
import org.moecomm.kernels.cpu.KernelExecutionException;

/**
 * The compiler's supported-constructs kernels and the test-kernel suite give the same bits on the
 * CPU runner's two executions of a block: a virtual thread per kernel thread (the reference) and the
 * kernel's loop form. Each kernel runs with the same pseudo-random buffers and scalars on both; every
 * buffer must come out equal, or both launches must fail with the same kind of exception.
 */
class LoopFormEquivalenceTest {
    private static final int BUF_BYTES = 64 * 1024;
    private static final Grid[] GRIDS = {Grid.of(1, 1), Grid.of(2, 64), Grid.of(3, 96)};
    /**
     * Kernels whose result depends on the order in which threads run (on a GPU too): the last of
     * many threads to store a value that came from an atomic wins. Compared with one thread only.
     */
    private static final java.util.Set<String> SCHEDULE_DEPENDENT = java.util.Set.of("SupportedConstructsTest.context");

    private static final CpuKernelRunner THREADS = new CpuKernelRunner(2, null, Execution.THREADS);
    private static final CpuKernelRunner LOOPS = new CpuKernelRunner(2, null, Execution.LOOPS);

    static Stream<Kernel> kernels() {
        List<Class<?>> classes = new ArrayList<>(TestKernelSuiteTest.SUITE);
        classes.add(SupportedConstructsTest.class);
        classes.add(LoopUnrollingTest.class);
        return classes.stream().flatMap(c -> Arrays.stream(c.getDeclaredMethods())
                .filter(m -> Modifier.isStatic(m.getModifiers()) && m.getReturnType() == void.class
                        && m.getParameterCount() > 0 && m.getParameterTypes()[0] == KernelContext.class)
                .filter(m -> Arrays.stream(c.getDeclaredMethods()).filter(o -> o.getName().equals(m.getName())).count() == 1)
                .sorted(Comparator.comparing(Method::getName))
                .map(m -> new Kernel(c, m.getName())));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("kernels")
    void loopsGiveTheBitsOfThreads(Kernel kernel) {
        assertEquals(Optional.empty(), CpuKernelRunner.loopFormRefusal(kernel), "why it has no loop form");
        int completed = 0;
        for (Grid grid : GRIDS) {
            if (grid.totalThreads() > 1 && SCHEDULE_DEPENDENT.contains(kernel.toString())) {
                continue;
            }
            for (long seed = 1; seed <= 2; seed++) {
                Outcome reference = run(THREADS, kernel, grid, seed);
                Outcome looped = run(LOOPS, kernel, grid, seed);
                String where = kernel + " on " + grid + ", seed " + seed;
                assertEquals(reference.failure(), looped.failure(), where + ": failure");
                completed += reference.failure() == null ? 1 : 0;
                for (int b = 0; b < reference.buffers().size(); b++) {
                    byte[] expected = reference.buffers().get(b);
                    byte[] actual = looped.buffers().get(b);
                    int at = Arrays.mismatch(expected, actual);
                    assertTrue(at < 0, where + ": buffer " + b + " differs first at byte " + at);
                }
            }
        }
        assertTrue(completed > 0, kernel + " failed on every grid and seed: the comparison says little");
    }

    private record Outcome(List<byte[]> buffers, String failure) {
    }

    private static Outcome run(CpuKernelRunner runner, Kernel kernel, Grid grid, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        Class<?>[] params = kernel.method().getParameterTypes();
        try (Arena arena = Arena.ofShared()) {
            Object[] args = new Object[params.length - 1];
            List<Buf> bufs = new ArrayList<>();
            for (int i = 1; i < params.length; i++) {
                Class<?> p = params[i];
                if (p == Buf.class) {
                    Buf b = Buf.allocate(arena, BUF_BYTES);
                    for (long w = 0; w < BUF_BYTES / 4; w++) {
                        // small values, so that data used as an index or a count stays in range
                        b.segment().setAtIndex(ValueLayout.JAVA_INT, w, random.nextInt(64));
                    }
                    bufs.add(b);
                    args[i - 1] = b;
                } else if (p == int.class) {
                    args[i - 1] = 1 + random.nextInt(40);
                } else if (p == long.class) {
                    args[i - 1] = (long) (1 + random.nextInt(40));
                } else {
                    args[i - 1] = 0.25f + random.nextInt(16);
                }
            }
            String failure = null;
            try {
                runner.launch(kernel, grid, args);
            } catch (KernelExecutionException e) {
                failure = e.getCause().getClass().getName();
            }
            return new Outcome(bufs.stream().map(b -> b.segment().toArray(ValueLayout.JAVA_BYTE)).toList(), failure);
        }
    }
}
