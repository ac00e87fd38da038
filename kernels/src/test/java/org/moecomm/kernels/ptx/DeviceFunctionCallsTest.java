package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.moe.AllToAllKernels;
import org.moecomm.kernels.moe.MoeKernels;
import org.moecomm.kernels.comm.CommKernels;

/** Kernels calling the one-sided communication methods compile to calls of the bridge's device functions. */
class DeviceFunctionCallsTest {
    /** The bridge's device functions, seen from the kernels module. */
    private static final Path DEVFNS = Path.of("..", "nvshmem-bridge", "src", "main", "cpp", "nvshmem",
            "moe_nvshmem_devfns.cu");

    @TempDir
    Path tmp;

    @Test
    void callsAreDeclaredExternAndListedAndPtxasAcceptsTheRelocatableModule() throws Exception {
        PtxKernel exchange = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(CommKernels.class, "exchange"));
        assertEquals(List.of("mnvd_put_signal_block", "mnvd_wait_ge"), exchange.deviceFunctions());
        assertTrue(exchange.ptx().contains(DeviceFunctions.PUT_SIGNAL_BLOCK.declaration()), exchange.ptx());
        assertTrue(exchange.ptx().contains("call (callr), mnvd_wait_ge, ("), exchange.ptx());
        PtxKernel count = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(CommKernels.class, "count"));
        assertEquals(List.of("mnvd_signal_op", "mnvd_wait_ge"), count.deviceFunctions());
        PtxKernel shares = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(CommKernels.class, "putShares"));
        assertEquals(List.of("mnvd_put_signal_add_block"), shares.deviceFunctions());
        assertTrue(shares.ptx().contains(DeviceFunctions.PUT_SIGNAL_ADD_BLOCK.declaration()), shares.ptx());
        PtxKernel pingPong = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(CommKernels.class, "pingPong"));
        assertEquals(Set.of("mnvd_put_signal_block", "mnvd_wait_ge"), Set.copyOf(pingPong.deviceFunctions()));
        for (PtxKernel k : List.of(exchange, count, shares, pingPong)) {
            Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
            assertTrue(r.ok(), k.entryName() + ": " + r.output());
        }
    }

    @Test
    void theAllToAllKernelsCompileAndPtxasAcceptsThem() throws Exception {
        for (String name : List.of("dispatchSend", "dispatchRecv", "combineSend", "combineRecv", "dispatch")) {
            PtxKernel k = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(AllToAllKernels.class, name));
            assertTrue(!k.deviceFunctions().isEmpty(), name);
            Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
            assertTrue(r.ok(), name + ": " + r.output());
        }
    }

    /**
     * The round kernels that store into mapped peers take the peers' addresses from the host's
     * table ({@code peerBuf(symmetric, pe, peerOffsets)}: a load and an add), not from
     * {@code nvshmem_ptr}'s device function, which the loads around it would wait for.
     */
    @Test
    void theRoundKernelsResolvePeersFromTheHostsTableWithoutACall() {
        for (String name : List.of("dispatchSend", "combineSend", "combineRecv", "dispatch")) {
            PtxKernel k = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(AllToAllKernels.class, name));
            assertTrue(!k.deviceFunctions().contains(DeviceFunctions.PTR.name()), name + " calls " + k.deviceFunctions());
            assertTrue(!k.ptx().contains("call (callr), mnvd_ptr"), name);
        }
        PtxKernel send = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(AllToAllKernels.class, "dispatchSend"));
        // pe widened, scaled to the table's int64 entry, loaded, added to the symmetric address
        assertTrue(Pattern.compile("cvt\\.s64\\.s32 (%\\w+), %\\w+;\\s*shl\\.b64 (%\\w+), \\1, 3;\\s*add\\.s64 (%\\w+), "
                + "%\\w+, \\2;\\s*ld\\.global\\.u64 (%\\w+), \\[\\3\\];\\s*add\\.s64 %\\w+, %\\w+, \\4;")
                .matcher(send.ptx()).find(), "no table lookup in dispatchSend:\n" + send.ptx());
    }

    /**
     * The combine kernels count nothing: each block adds to a mapped peer's signal word with one
     * release add ({@code addRelease}); NVSHMEM's signal add is left for put peers.
     */
    @Test
    void theCombineKernelsSignalMappedPeersWithAReleaseAdd() {
        for (String name : List.of("combineSend", "combineRecv")) {
            PtxKernel k = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(AllToAllKernels.class, name));
            assertTrue(k.ptx().contains("red.release.sys.global.add.u64 ["), name + ":\n" + k.ptx());
            assertTrue(k.deviceFunctions().contains(DeviceFunctions.SIGNAL_OP.name()), name + " calls "
                    + k.deviceFunctions());
            assertTrue(!k.ptx().contains("atom.global.add.u32"), name + " counts its blocks:\n" + k.ptx());
        }
        // combine send looks at each combine-done word with an acquire load beside its first loads
        PtxKernel send = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(AllToAllKernels.class, "combineSend"));
        assertTrue(send.ptx().contains("ld.acquire.sys.global.u64 "), send.ptx());
    }

    @Test
    void kernelsWithoutCommunicationCallNoDeviceFunction() {
        PtxKernel pack = new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(MoeKernels.class, "pack"));
        assertEquals(List.of(), pack.deviceFunctions());
        assertTrue(!pack.ptx().contains(".extern .func"));
    }

    /** The compiler's declarations and the bridge's C definitions agree on every parameter's width. */
    @Test
    void declarationsMatchTheBridgeSource() throws IOException {
        String source = Files.readString(DEVFNS);
        for (DeviceFunctions.Function fn : List.of(DeviceFunctions.PUT_SIGNAL_BLOCK,
                DeviceFunctions.PUT_SIGNAL_ADD_BLOCK, DeviceFunctions.SIGNAL_OP,
                DeviceFunctions.WAIT_GE)) {
            Matcher m = Pattern.compile("__device__ __noinline__ ((?:unsigned long )?\\w+\\*?) " + fn.name()
                    + "\\(([^)]*)\\)").matcher(source);
            assertTrue(m.find(), fn.name() + " is not defined in " + DEVFNS);
            String ret = m.group(1);
            String width = ret.equals("void") ? null : ret.equals("unsigned long long") ? "b64"
                    : ret.equals("int") ? "b32" : "unknown: " + ret;
            assertEquals(fn.returnType(), width, fn.name() + " result");
            List<String> widths = new ArrayList<>();
            for (String param : m.group(2).replaceAll("\\s+", " ").split(",")) {
                String p = param.trim();
                widths.add(p.contains("*") || p.startsWith("unsigned long long") ? "b64"
                        : p.startsWith("int ") ? "b32" : "unknown: " + p);
            }
            assertEquals(fn.paramTypes(), widths, fn.name() + " parameters");
        }
    }
}
