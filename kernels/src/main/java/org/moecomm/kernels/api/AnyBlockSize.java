package org.moecomm.kernels.api;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Keeps a kernel compiled for any block size where a GPU runner would compile it for its launch's
 * block size ({@link Kernel#specializedFor(int[], Object[], int)}: a kernel with {@link Specialize}d
 * parameters): {@link KernelContext#localGroupSizeX()} stays the launch's value ({@code %ntid.x})
 * instead of a constant. A declared exception, for a kernel measured faster that way: the constant
 * lets the GPU compiler schedule a loop differently, which is not always better
 * (docs/kernels-in-java.md, "Semantics on the GPU").
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface AnyBlockSize {
}
