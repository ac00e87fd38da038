package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.comm.PeerAccessKernels;

/**
 * {@code peerBuf}, {@code putBlockNbi}, {@code putWarpNbi}, {@code quiet} and {@code systemFence}
 * compile to calls of the bridge's device functions ({@code mnvd_ptr}, {@code mnvd_put_nbi_block},
 * {@code mnvd_put_nbi_warp}, {@code mnvd_quiet}) and an inline {@code fence.acq_rel.sys}, and ptxas
 * accepts the relocatable modules.
 */
class PeerAccessCallsTest {
    /** The bridge's device functions, seen from the kernels module. */
    private static final Path DEVFNS = Path.of("..", "nvshmem-bridge", "src", "main", "cpp", "nvshmem",
            "moe_nvshmem_devfns.cu");

    @TempDir
    Path tmp;

    private static PtxKernel compile(String name) {
        return new PtxCompiler(PtxTarget.HOPPER).compile(new Kernel(PeerAccessKernels.class, name));
    }

    @Test
    void allFiveMethodsLowerToTheirCallsAndInstructions() throws Exception {
        PtxKernel k = compile("allMethods");
        String ptx = k.ptx();
        assertEquals(List.of("mnvd_ptr", "mnvd_put_nbi_block", "mnvd_put_nbi_warp", "mnvd_quiet"),
                k.deviceFunctions(), ptx);
        for (DeviceFunctions.Function fn : List.of(DeviceFunctions.PTR, DeviceFunctions.PUT_NBI_BLOCK,
                DeviceFunctions.PUT_NBI_WARP, DeviceFunctions.QUIET)) {
            assertTrue(ptx.contains(fn.declaration()), fn.name() + " is not declared:\n" + ptx);
        }
        assertTrue(ptx.contains(".extern .func (.param .b64 mnvd_ptr_retval) mnvd_ptr(.param .b64 mnvd_ptr_param_0, "
                + ".param .b32 mnvd_ptr_param_1);"), ptx);
        assertTrue(ptx.contains("call (callr), mnvd_ptr, ("), ptx);
        assertTrue(ptx.contains("call mnvd_put_nbi_block, ("), ptx);
        assertTrue(ptx.contains("call mnvd_put_nbi_warp, ("), ptx);
        assertTrue(ptx.contains("call mnvd_quiet, ("), ptx);
        assertTrue(ptx.contains("fence.acq_rel.sys"), ptx);
        // the pointer goes in generic, comes back global, and the store uses the global one
        Matcher back = Pattern.compile("ld\\.param\\.b64 (%\\w+), \\[callr\\];\\s*\\}\\s*cvta\\.to\\.global\\.u64 (%\\w+), \\1;")
                .matcher(ptx);
        assertTrue(back.find(), "mnvd_ptr's result is not turned into a global address:\n" + ptx);
        assertTrue(ptx.contains("cvta.global.u64"), ptx);
        assertTrue(Pattern.compile("st\\.global\\.u64 \\[").matcher(ptx).find(), ptx);
        // fence.acq_rel.sys comes after the store through peerBuf and before the barrier
        int store = ptx.indexOf("st.global.u64");
        int fence = ptx.indexOf("fence.acq_rel.sys");
        int barrier = ptx.indexOf("bar.sync 0");
        assertTrue(store < fence && fence < barrier, ptx);
        Ptxas.Result r = Ptxas.assemble(ptx, "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), k.entryName() + ": " + r.output() + "\n" + ptx);
    }

    @Test
    void theTestKernelsCompileAndPtxasAcceptsThem() throws Exception {
        // the device functions each kernel links (they need no ptxas), then ptxas on each
        Map<String, List<String>> linked = new LinkedHashMap<>();
        linked.put("storeThroughPeer", List.of("mnvd_ptr", "mnvd_signal_op", "mnvd_wait_ge"));
        linked.put("putBlock", List.of("mnvd_put_nbi_block", "mnvd_quiet", "mnvd_signal_op", "mnvd_wait_ge"));
        linked.put("putWarps", List.of("mnvd_put_nbi_warp", "mnvd_quiet", "mnvd_signal_op", "mnvd_wait_ge"));
        List<PtxKernel> kernels = new ArrayList<>();
        linked.forEach((name, functions) -> {
            PtxKernel k = compile(name);
            assertEquals(functions, k.deviceFunctions(), name);
            kernels.add(k);
        });
        for (PtxKernel k : kernels) {
            Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
            assertTrue(r.ok(), k.entryName() + ": " + r.output() + "\n" + k.ptx());
        }
    }

    /** The new declarations and the bridge's C definitions agree on the result and every parameter's width. */
    @Test
    void declarationsMatchTheBridgeSource() throws IOException {
        String source = Files.readString(DEVFNS);
        for (DeviceFunctions.Function fn : List.of(DeviceFunctions.PTR, DeviceFunctions.PUT_NBI_BLOCK,
                DeviceFunctions.PUT_NBI_WARP, DeviceFunctions.QUIET)) {
            Matcher m = Pattern.compile("__device__ __noinline__ (\\w+\\*?) " + fn.name() + "\\(([^)]*)\\)")
                    .matcher(source);
            assertTrue(m.find(), fn.name() + " is not defined in " + DEVFNS);
            String ret = m.group(1);
            assertEquals(fn.returnType() == null ? "void" : fn.returnType().equals("b64") ? "void*" : "int", ret,
                    fn.name() + " result");
            List<String> widths = new ArrayList<>();
            String params = m.group(2).replaceAll("\\s+", " ").trim();
            if (!params.equals("void") && !params.isEmpty()) {
                for (String param : params.split(",")) {
                    String p = param.trim();
                    widths.add(p.contains("*") || p.startsWith("unsigned long long") ? "b64"
                            : p.startsWith("int ") ? "b32" : "unknown: " + p);
                }
            }
            assertEquals(fn.paramTypes(), widths, fn.name() + " parameters");
        }
    }
}
