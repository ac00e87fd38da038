package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.testkernels.ConversionKernels;
import org.moecomm.kernels.testkernels.SharedMemoryKernels;

/** The public API: targets, the process-wide cache, the dump directory, entry names. */
class PtxCompilerTest {
    @TempDir
    Path tmp;

    static void tiny(KernelContext ctx, Buf b) {
        b.setInt(ctx.globalIdx(), 1);
    }

    @Test
    void hopperTarget() {
        assertEquals("sm_90a", PtxCompiler.hopper().target().sm());
        assertEquals(90, PtxTarget.HOPPER.smVersion());
        assertSame(PtxCompiler.hopper(), PtxCompiler.hopper());
        assertThrows(IllegalArgumentException.class, () -> new PtxTarget("hopper", "8.0"));
        assertThrows(IllegalArgumentException.class, () -> new PtxTarget("sm_90a", "8"));
    }

    @Test
    void cacheReturnsTheSameCompiledKernel() {
        Kernel k = new Kernel(PtxCompilerTest.class, "tiny");
        PtxKernel a = PtxCompiler.compileCached(k);
        PtxKernel b = PtxCompiler.compileCached(new Kernel(PtxCompilerTest.class, "tiny"));
        assertSame(a, b);
        PtxKernel other = PtxCompiler.compileCached(k, new PtxTarget("sm_90", "8.0"));
        assertNotSame(a, other);
        assertTrue(other.ptx().contains(".target sm_90\n"), other.ptx());
        assertEquals(a.ptx(), PtxCompiler.hopper().compile(k).ptx(), "compilation is deterministic");
    }

    @Test
    void dumpPropertyWritesPtxFiles() throws Exception {
        Path dir = tmp.resolve("dump");
        String old = System.getProperty(PtxCompiler.DUMP_PROPERTY);
        System.setProperty(PtxCompiler.DUMP_PROPERTY, dir.toString());
        try {
            PtxKernel k = PtxCompiler.hopper().compile(new Kernel(PtxCompilerTest.class, "tiny"));
            Path file = dir.resolve("PtxCompilerTest_tiny.ptx");
            assertTrue(Files.exists(file));
            assertEquals(k.ptx(), Files.readString(file));
            // a specialisation keeps a file of its own: its values in position order, its block size
            Kernel special = new Kernel(PtxCompilerTest.class, "tiny", java.util.Map.of(2, -1, 0, 7)).forBlockThreads(64);
            assertEquals("PtxCompilerTest_tiny-7_m1-b64.ptx", PtxCompiler.dumpName(special));
            PtxKernel specialised = PtxCompiler.hopper().compile(special);
            assertEquals(specialised.ptx(), Files.readString(dir.resolve("PtxCompilerTest_tiny-7_m1-b64.ptx")));
            assertEquals(k.ptx(), Files.readString(file), "the unspecialised kernel's file stays as it was");
        } finally {
            if (old == null) {
                System.clearProperty(PtxCompiler.DUMP_PROPERTY);
            } else {
                System.setProperty(PtxCompiler.DUMP_PROPERTY, old);
            }
        }
    }

    @Test
    void otherTargetsAssemble() throws Exception {
        PtxCompiler ampere = new PtxCompiler(new PtxTarget("sm_80", "7.0"));
        PtxKernel k = ampere.compile(new Kernel(SharedMemoryKernels.class, "blockReduceFloat"));
        assertTrue(k.ptx().contains(".version 7.0\n.target sm_80\n"), k.ptx());
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_80", tmp, k.entryName());
        assertTrue(r.ok(), r.output());
        PtxKernel h = new PtxCompiler(new PtxTarget("sm_90a", "9.0")).compile(new Kernel(ConversionKernels.class, "roundTrip"));
        assertTrue(Ptxas.assemble(h.ptx(), "sm_90a", tmp, h.entryName()).ok());
    }

    @Test
    void ptxKernelRecord() {
        PtxKernel k = PtxCompiler.hopper().compile(new Kernel(PtxCompilerTest.class, "tiny"));
        assertEquals("PtxCompilerTest_tiny", k.entryName());
        assertEquals(new Kernel(PtxCompilerTest.class, "tiny"), k.kernel());
        assertTrue(k.toString().contains("PtxCompilerTest_tiny"));
    }
}
