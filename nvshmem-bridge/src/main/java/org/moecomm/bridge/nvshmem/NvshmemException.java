package org.moecomm.bridge.nvshmem;

/**
 * A call into the NVSHMEM bridge failed, or the bridge cannot be used in this process. Carries
 * the call, the status code (a positive {@code cudaError_t}, or a negative bridge code) and the
 * bridge's description.
 */
public class NvshmemException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Status of a failure outside any native call (the library is missing, an argument is wrong). */
    public static final int NO_CODE = Integer.MIN_VALUE;

    private final String call;
    private final int code;

    public NvshmemException(String call, int code, String description) {
        super(message(call, code, description));
        this.call = call;
        this.code = code;
    }

    public NvshmemException(String message, Throwable cause) {
        super(message, cause);
        this.call = "";
        this.code = NO_CODE;
    }

    private static String message(String call, int code, String description) {
        StringBuilder b = new StringBuilder(call).append(" failed");
        if (code != NO_CODE) {
            b.append(" (").append(codeName(code)).append(')');
        }
        if (description != null && !description.isBlank()) {
            b.append(": ").append(description);
        }
        return b.toString();
    }

    /** Readable name of a bridge status code. */
    public static String codeName(int code) {
        return switch (code) {
            case 0 -> "success";
            case NvshmemNative.ERR_NOT_INITIALIZED -> "NVSHMEM not initialised";
            case NvshmemNative.ERR_NVSHMEM -> "NVSHMEM error";
            case NvshmemNative.ERR_OUT_OF_SYMMETRIC_MEMORY -> "out of symmetric memory";
            case NvshmemNative.ERR_ARGUMENT -> "bad argument";
            default -> code > 0 ? "cudaError " + code : "status " + code;
        };
    }

    public String call() {
        return call;
    }

    public int code() {
        return code;
    }

    /** True when the symmetric heap (NVSHMEM_SYMMETRIC_SIZE) had no room. */
    public boolean outOfSymmetricMemory() {
        return code == NvshmemNative.ERR_OUT_OF_SYMMETRIC_MEMORY;
    }
}
