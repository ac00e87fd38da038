package org.moecomm.kernels.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.cpu.CpuKernelRunner;
import org.moecomm.kernels.ptx.PtxCompiler;
import org.moecomm.kernels.ptx.PtxKernel;
import org.moecomm.kernels.ptx.Ptxas;

/** docs/kernels-in-java.md's complete example: the CPU launch, the PTX and ptxas, a confined arena's error. */
class SaxpyExampleTest {
    @Test
    void runsOnTheCpuRunner() {
        float[] y = Saxpy.runOnCpu(1000, 2f);
        for (int i = 0; i < y.length; i++) {
            assertEquals(2f * i + 1f, y[i], "y[" + i + "]");
        }
    }

    @Test
    void compilesToPtxThatPtxasAccepts(@TempDir Path dir) throws IOException, InterruptedException {
        PtxKernel k = PtxCompiler.hopper().compile(Saxpy.SAXPY);
        assertEquals("Saxpy_saxpy", k.entryName());
        assertTrue(k.ptx().contains(".visible .entry Saxpy_saxpy("), k.ptx());
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", dir, k.entryName()); // skipped without ptxas
        assertTrue(r.ok(), r.output());
    }

    @Test
    void aConfinedArenaIsNamedInTheError() {
        try (Arena arena = Arena.ofConfined()) {
            Buf x = Buf.allocate(arena, 64);
            Buf y = Buf.allocate(arena, 64);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new CpuKernelRunner().launch(Saxpy.SAXPY, Grid.of(1, 32), x, y, 1f, 16));
            assertTrue(e.getMessage().contains("Arena.ofConfined()") && e.getMessage().contains("Arena.ofShared()"),
                    e.getMessage());
        }
    }
}
