package org.moecomm.bridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
 * runs on the CPU runner (right argument count and types, buffers large enough, the case's
 * expectations met: every output written somewhere, every buffer of no rows left alone, every
 * report made), so that the GPU run, which is rare, does not find broken cases.
 */
class KernelCasesCpuTest {
    private final CpuKernelRunner cpu = new CpuKernelRunner();
    private final CpuKernelRunner threads = new CpuKernelRunner(Runtime.getRuntime().availableProcessors(), null,
            CpuKernelRunner.Execution.THREADS);
    private final CpuKernelRunner loops = new CpuKernelRunner(Runtime.getRuntime().availableProcessors(), null,
            CpuKernelRunner.Execution.LOOPS);

    @Test
    void catalogFindsTheTestKernels() {
        List<Kernel> kernels = KernelCatalog.kernelsIn(CompiledKernelsGpuTest.TEST_KERNELS);
        assertTrue(kernels.stream().anyMatch(k -> k.toString().equals("ArithmeticKernels.intOps")), kernels.toString());
        List<String> without = kernels.stream().map(Kernel::toString)
                .filter(k -> !CompiledKernelsGpuTest.cases().containsKey(k)).toList();
        assertEquals(List.of(), without, "test kernels without a GPU comparison case (the GPU run fails them)");
    }

    @TestFactory
    Stream<DynamicTest> everyGpuComparisonCaseRunsOnTheCpu() {
        return allCases().map(c -> DynamicTest.dynamicTest(c.toString(), () -> {
            PtxCompiler.compileCached(c.kernel);
            KernelComparison.runOnCpu(cpu, c); // with the case's expectations (KernelComparison.checkExpectations)
        }));
    }

    /**
     * The CPU runner's two ways of executing a block (a virtual thread per kernel thread, the
     * reference; the kernel's loop form) give the same bytes in every buffer of every case, after
     * the cases' normalizers (rows whose order is free).
     */
    @TestFactory
    Stream<DynamicTest> loopsAndThreadsGiveTheSameBits() {
        return allCases().map(c -> DynamicTest.dynamicTest(c.toString(), () -> {
            assertEquals(Optional.empty(), CpuKernelRunner.loopFormRefusal(c.kernel), "why it has no loop form");
            try (Arena arena = Arena.ofShared()) {
                Map<String, MemorySegment> reference = KernelComparison.runOnCpu(threads, c, arena);
                Map<String, MemorySegment> looped = KernelComparison.runOnCpu(loops, c, arena);
                List<String> problems = new ArrayList<>();
                for (String name : reference.keySet()) {
                    String d = KernelComparison.describeDifference(name, looped.get(name), reference.get(name));
                    if (d != null) {
                        problems.add(d.replace("cpu", "loops").replace("gpu", "threads"));
                    }
                }
                assertTrue(problems.isEmpty(), () -> c + ": loops and threads differ\n" + String.join("\n", problems));
            }
        }));
    }

    private static Stream<KernelCase> allCases() {
        List<Supplier<List<KernelCase>>> groups = new ArrayList<>(CompiledKernelsGpuTest.cases().values());
        groups.add(CompiledKernelsGpuTest::bridgeCases);
        groups.add(MoeKernelsGpuTest::allCases);
        return groups.stream().flatMap(g -> g.get().stream());
    }
}
