package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.kernels.api.Kernel;

/**
 * Every kernel of the library ({@code org.moecomm.kernels.moe.MoeKernels}) compiles and
 * {@code ptxas -arch=sm_90a} accepts it. The class is looked up by name so this test does not
 * tie the compiler's tests to the library's source.
 */
class LibraryKernelsTest {
    static final String LIBRARY = "org.moecomm.kernels.moe.MoeKernels";

    @TempDir
    Path tmp;

    static Stream<Kernel> library() {
        try {
            return TestKernelSuiteTest.kernelsOf(Class.forName(LIBRARY)).stream();
        } catch (ClassNotFoundException e) {
            return Stream.empty();
        }
    }

    @Test
    void libraryHasTheFourKernels() {
        List<String> names = library().map(Kernel::name).toList();
        Assumptions.assumeFalse(names.isEmpty(), LIBRARY + " is not on the class path");
        assertTrue(names.containsAll(List.of("pack", "scatter", "gather", "reduce")), names.toString());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("library")
    void compilesAndAssembles(Kernel kernel) throws Exception {
        PtxKernel k = PtxCompiler.hopper().compile(kernel);
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), () -> "ptxas rejected " + kernel + ":\n" + r.output() + "\n" + TestKernelSuiteTest.numbered(k.ptx()));
    }
}
