package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * PTX that a test checks as text first and hands to ptxas after its checks (from the test's
 * {@code @AfterEach}): the text checks run where ptxas is not installed too, and the assembly
 * then skips the test with the reason ({@link Ptxas#assumeAvailable}) instead of hiding them.
 */
final class PendingAssembly {
    private record Module(String what, String ptx, String entry) {
    }

    private final List<Module> modules = new ArrayList<>();

    /** Queues {@code k}'s PTX for {@link #assembleAll}; returns the PTX. */
    String add(String what, PtxKernel k) {
        modules.add(new Module(what, k.ptx(), k.entryName()));
        return k.ptx();
    }

    /** Assembles every queued module for sm_90a, failing on the first that ptxas rejects. */
    void assembleAll(Path tmp) throws Exception {
        try {
            for (Module m : modules) {
                Ptxas.Result r = Ptxas.assemble(m.ptx(), "sm_90a", tmp, m.entry());
                assertTrue(r.ok(), () -> "ptxas rejected " + m.what() + ":\n" + r.output() + "\n"
                        + TestKernelSuiteTest.numbered(m.ptx()));
            }
        } finally {
            modules.clear();
        }
    }
}
