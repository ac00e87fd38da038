package org.moecomm.kernels.cpu;

/**
 * A kernel launch on the {@link CpuKernelRunner} failed: a kernel thread threw (the
 * {@linkplain #getCause() cause}) or broke the barrier rules. The message names the kernel,
 * the block and the thread.
 */
public final class KernelExecutionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public KernelExecutionException(String message, Throwable cause) {
        super(message, cause);
    }
}
