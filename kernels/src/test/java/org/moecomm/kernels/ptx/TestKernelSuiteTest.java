package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.testkernels.ArithmeticKernels;
import org.moecomm.kernels.testkernels.AtomicKernels;
import org.moecomm.kernels.testkernels.ControlFlowKernels;
import org.moecomm.kernels.testkernels.ConversionKernels;
import org.moecomm.kernels.testkernels.CopyKernels;
import org.moecomm.kernels.testkernels.IndexKernels;
import org.moecomm.kernels.testkernels.SharedMemoryKernels;

/** Every kernel of the test-kernel suite compiles, and {@code ptxas -arch=sm_90a} accepts it. */
class TestKernelSuiteTest {
    /** The classes of the suite (kept in step with the testkernels package). */
    static final List<Class<?>> SUITE = List.of(ArithmeticKernels.class, AtomicKernels.class, ControlFlowKernels.class,
            ConversionKernels.class, CopyKernels.class, IndexKernels.class, SharedMemoryKernels.class);

    @TempDir
    Path tmp;

    /** The kernels of a class: its public static void methods whose first parameter is a KernelContext. */
    static List<Kernel> kernelsOf(Class<?> c) {
        return Arrays.stream(c.getDeclaredMethods())
                .filter(m -> Modifier.isPublic(m.getModifiers()) && Modifier.isStatic(m.getModifiers()))
                .filter(m -> m.getReturnType() == void.class && m.getParameterCount() > 0
                        && m.getParameterTypes()[0] == KernelContext.class)
                .sorted(Comparator.comparing(Method::getName))
                .map(m -> new Kernel(c, m.getName()))
                .toList();
    }

    static Stream<Kernel> suite() {
        return SUITE.stream().flatMap(c -> kernelsOf(c).stream());
    }

    @Test
    void suiteCoversEveryArea() {
        assertTrue(suite().count() >= 25, "suite has " + suite().count() + " kernels");
        for (Class<?> c : SUITE) {
            assertFalse(kernelsOf(c).isEmpty(), c + " has no kernels");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("suite")
    void compilesAndAssembles(Kernel kernel) throws Exception {
        PtxKernel k = PtxCompiler.hopper().compile(kernel);
        assertEquals(PtxCompiler.entryName(kernel), k.entryName());
        assertTrue(k.ptx().contains(".visible .entry " + k.entryName() + "("), k.ptx());
        Class<?>[] params = kernel.method().getParameterTypes();
        for (int i = 1; i < params.length; i++) {
            String type = params[i] == Buf.class || params[i] == long.class ? ".u64"
                    : params[i] == int.class ? ".u32" : ".f32";
            assertTrue(k.ptx().contains(".param " + type + " " + k.entryName() + "_param_" + (i - 1)),
                    "parameter " + i + " of " + kernel + " should be " + type);
        }
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), () -> "ptxas rejected " + kernel + ":\n" + r.output() + "\n" + numbered(k.ptx()));
    }

    static String numbered(String ptx) {
        StringBuilder sb = new StringBuilder();
        int n = 1;
        for (String line : ptx.split("\n")) {
            sb.append(String.format("%5d  %s%n", n++, line));
        }
        return sb.toString();
    }
}
