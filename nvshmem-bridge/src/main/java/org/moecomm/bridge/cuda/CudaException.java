package org.moecomm.bridge.cuda;

/**
 * A CUDA driver call failed. Carries the call, the numeric {@code CUresult} and its name
 * ({@code CUDA_ERROR_INVALID_VALUE}, ...), and, where the driver produced one, a log (the JIT
 * linker's error log, say).
 */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int code;
    private final String errorName;
    private final String log;

    public CudaException(String call, int code, String errorName, String description, String log) {
        super(message(call, code, errorName, description, log));
        this.call = call;
        this.code = code;
        this.errorName = errorName;
        this.log = log == null ? "" : log;
    }

    private static String message(String call, int code, String errorName, String description, String log) {
        StringBuilder b = new StringBuilder();
        b.append(call).append(" failed: ").append(errorName).append(" (").append(code).append(')');
        if (description != null && !description.isEmpty()) {
            b.append(": ").append(description);
        }
        if (log != null && !log.isBlank()) {
            b.append('\n').append(log.strip());
        }
        return b.toString();
    }

    /** The failing call, as written by the caller ({@code "cuLaunchKernel(axpy)"}). */
    public String call() {
        return call;
    }

    /** The {@code CUresult} value, or a negative shim code (no driver, missing entry point). */
    public int code() {
        return code;
    }

    /** The CUDA error name ({@code CUDA_ERROR_INVALID_VALUE}), or the shim's name for negative codes. */
    public String errorName() {
        return errorName;
    }

    /** The driver's log for this failure (JIT compile or link errors), or an empty string. */
    public String log() {
        return log;
    }
}
