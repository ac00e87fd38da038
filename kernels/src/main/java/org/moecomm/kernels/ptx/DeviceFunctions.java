package org.moecomm.kernels.ptx;

import java.util.List;

/**
 * The NVSHMEM bridge's device functions that compiled kernels call for the one-sided
 * communication methods of {@code KernelContext}: declared {@code .extern .func} in the module and
 * called with the PTX calling convention; the CUDA driver's linker resolves them from the
 * bridge's relocatable device code ({@code nvshmem-bridge/src/main/cpp/nvshmem/moe_nvshmem_devfns.cu})
 * when the module is loaded. The signatures here and there must agree (plain pointers and
 * integers: the ABI is the project's, not NVSHMEM's).
 */
final class DeviceFunctions {
    /** {@code op} values of {@code mnvd_signal_op}. */
    static final int SIGNAL_SET = 0;
    static final int SIGNAL_ADD = 1;

    /**
     * One device function.
     *
     * @param name       its symbol
     * @param returnType PTX type of its result, or {@code null} for none
     * @param paramTypes PTX types of its parameters ({@code b64} for pointers and 64-bit integers)
     */
    record Function(String name, String returnType, List<String> paramTypes) {
        String declaration() {
            StringBuilder sb = new StringBuilder(".extern .func ");
            if (returnType != null) {
                sb.append("(.param .").append(returnType).append(" ").append(name).append("_retval) ");
            }
            sb.append(name).append("(");
            for (int i = 0; i < paramTypes.size(); i++) {
                sb.append(i == 0 ? "" : ", ").append(".param .").append(paramTypes.get(i)).append(' ')
                        .append(name).append("_param_").append(i);
            }
            return sb.append(");").toString();
        }
    }

    /** void mnvd_put_signal_block(void* dst, const void* src, u64 bytes, u64* sig, u64 value, int pe) */
    static final Function PUT_SIGNAL_BLOCK = new Function("mnvd_put_signal_block", null,
            List.of("b64", "b64", "b64", "b64", "b64", "b32"));
    /** void mnvd_put_signal_add_block(void* dst, const void* src, u64 bytes, u64* sig, u64 value, int pe) */
    static final Function PUT_SIGNAL_ADD_BLOCK = new Function("mnvd_put_signal_add_block", null,
            List.of("b64", "b64", "b64", "b64", "b64", "b32"));
    /** void mnvd_signal_op(u64* sig, u64 value, int op, int pe) */
    static final Function SIGNAL_OP = new Function("mnvd_signal_op", null, List.of("b64", "b64", "b32", "b32"));
    /**
     * u64 mnvd_wait_ge(const u64* sig, u64 value, u64 timeout_ns, void* err_ctx, int rank, int peer, int tag):
     * the word's value it saw last (reached value: arrived; else it ran out)
     */
    static final Function WAIT_GE = new Function("mnvd_wait_ge", "b64",
            List.of("b64", "b64", "b64", "b64", "b32", "b32", "b32"));

    /** void* mnvd_ptr(const void* ptr, int pe): pe's copy of a symmetric address (generic), or null */
    static final Function PTR = new Function("mnvd_ptr", "b64", List.of("b64", "b32"));
    /** void mnvd_put_nbi_block(void* dst, const void* src, u64 bytes, int pe) */
    static final Function PUT_NBI_BLOCK = new Function("mnvd_put_nbi_block", null,
            List.of("b64", "b64", "b64", "b32"));
    /** void mnvd_put_nbi_warp(void* dst, const void* src, u64 bytes, int pe) */
    static final Function PUT_NBI_WARP = new Function("mnvd_put_nbi_warp", null,
            List.of("b64", "b64", "b64", "b32"));
    /** void mnvd_quiet(void) */
    static final Function QUIET = new Function("mnvd_quiet", null, List.of());

    private DeviceFunctions() {
    }

    /**
     * Emits a call of {@code fn} with {@code args} (registers or immediates of the parameter
     * types; pointers are global addresses, turned into the generic ones C functions take) and
     * returns the register holding the result, or {@code null}.
     *
     * @param pointers which arguments are pointers
     */
    static String call(PtxFunction f, Function fn, List<String> args, boolean... pointers) {
        f.declareExtern(fn.name(), fn.declaration());
        String[] values = args.toArray(String[]::new);
        for (int i = 0; i < pointers.length; i++) {
            if (pointers[i]) {
                String generic = f.tmp("b64");
                f.op("cvta.global.u64 " + generic + ", " + values[i]);
                values[i] = generic;
            }
        }
        String result = fn.returnType() == null ? null : f.tmp(fn.returnType());
        // The .param declarations of a call live in a scope of their own.
        f.raw("\t{");
        StringBuilder operands = new StringBuilder();
        for (int i = 0; i < values.length; i++) {
            String p = "callp" + i;
            String type = fn.paramTypes().get(i);
            f.op(".param ." + type + " " + p);
            f.op("st.param." + type + " [" + p + "], " + values[i]);
            operands.append(i == 0 ? "" : ", ").append(p);
        }
        if (result != null) {
            f.op(".param ." + fn.returnType() + " callr");
            f.op("call (callr), " + fn.name() + ", (" + operands + ")");
            f.op("ld.param." + fn.returnType() + " " + result + ", [callr]");
        } else {
            f.op("call " + fn.name() + ", (" + operands + ")");
        }
        f.raw("\t}");
        return result;
    }
}
