package org.moecomm.kernels.api;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks an {@code int} kernel parameter whose value a GPU runner compiles into the kernel: the
 * kernel is compiled once per distinct value (the compiled-kernel cache is keyed by them), so
 * branches on it fold away and loops bounded by it can be unrolled, as a C++ template parameter
 * would; the compiled kernel has no parameter for it, so its launches pass the other arguments
 * only ({@link org.moecomm.kernels.ptx.PtxKernel#passedPositions()}). Use it for launch-invariant
 * values such as dtype codes, top-k or a handle's shapes (a division by one becomes a move, a
 * shift or a multiplication); not for a value that changes from launch to launch, which would
 * compile the kernel again each time. A kernel with such parameters is also compiled for the
 * block size of its launch, unless it is declared {@link AnyBlockSize}
 * ({@link Kernel#specializedFor(int[], Object[], int)}). On the JVM the parameter is an ordinary
 * argument.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface Specialize {
}
