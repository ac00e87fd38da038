package org.moecomm.bridge.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.cpu.CpuKernelRunner;
import org.moecomm.kernels.ptx.PtxCompiler;

/**
 * Runs on every build, without a GPU: each case of the GPU comparison tests compiles to PTX and
 * runs on the CPU runner (right argument count and types, buffers large enough, normalizers
 * working), so that the GPU run, which is rare, does not find broken cases.
 */
class KernelCasesCpuTest {
    private final CpuKernelRunner cpu = new CpuKernelRunner();

    @Test
    void catalogFindsTheTestKernels() {
        List<Kernel> kernels = KernelCatalog.kernelsIn(CompiledKernelsGpuTest.TEST_KERNELS);
        assertTrue(kernels.stream().anyMatch(k -> k.toString().equals("ArithmeticKernels.intOps")), kernels.toString());
        List<String> without = kernels.stream().map(Kernel::toString)
                .filter(k -> !CompiledKernelsGpuTest.cases().containsKey(k)).toList();
        if (!without.isEmpty()) {
            System.out.println("test kernels without a GPU comparison case (the GPU run fails them): " + without);
        }
    }

    @TestFactory
    Stream<DynamicTest> everyGpuComparisonCaseRunsOnTheCpu() {
        List<Supplier<List<KernelCase>>> groups = new ArrayList<>(CompiledKernelsGpuTest.cases().values());
        groups.add(CompiledKernelsGpuTest::bridgeCases);
        groups.add(MoeKernelsGpuTest::allCases);
        return groups.stream().flatMap(g -> g.get().stream()).map(c -> DynamicTest.dynamicTest(c.toString(), () -> {
            PtxCompiler.compileCached(c.kernel);
            KernelComparison.runOnCpu(cpu, c);
        }));
    }
}
