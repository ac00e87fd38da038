package org.moecomm.kernels.ptx;

/**
 * A kernel cannot be compiled to PTX: it uses a construct outside the supported subset (see
 * {@code docs/kernels-in-java.md}) or breaks a rule of the kernel API.
 *
 * <p>The message names the kernel, the construct, and where it is: the class, method and source
 * line (from the class file's line-number table) of the offending bytecode, followed by the call
 * sites it was inlined through. The parts are also available separately.
 */
public final class KernelCompileException extends RuntimeException {
    private final String className;
    private final String methodName;
    private final int line;
    private final String construct;

    /**
     * @param message    the full message
     * @param className  binary name of the class holding the offending code, or {@code null}
     * @param methodName name of the method holding the offending code, or {@code null}
     * @param line       source line, or {@code -1} where the class file has no line numbers
     * @param construct  the unsupported construct, in words
     */
    public KernelCompileException(String message, String className, String methodName, int line, String construct) {
        super(message);
        this.className = className;
        this.methodName = methodName;
        this.line = line;
        this.construct = construct;
    }

    public KernelCompileException(String message, Throwable cause) {
        super(message, cause);
        this.className = null;
        this.methodName = null;
        this.line = -1;
        this.construct = null;
    }

    /** Binary name of the class whose bytecode could not be compiled, or {@code null}. */
    public String className() {
        return className;
    }

    /** Method whose bytecode could not be compiled, or {@code null}. */
    public String methodName() {
        return methodName;
    }

    /** Source line of the offending bytecode, or {@code -1} when unknown. */
    public int line() {
        return line;
    }

    /** The construct that is not supported, in words, or {@code null}. */
    public String construct() {
        return construct;
    }
}
