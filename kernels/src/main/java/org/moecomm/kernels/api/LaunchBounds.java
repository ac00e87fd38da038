package org.moecomm.kernels.api;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Bounds a kernel's launches, as CUDA C++'s {@code __launch_bounds__} does: no block has more than
 * {@link #maxThreads()} threads, and the GPU compiler keeps the kernel's registers low enough for
 * {@link #minBlocksPerMultiprocessor()} such blocks to be resident on one multiprocessor at once
 * (PTX {@code .maxntid} and {@code .minnctapersm}; ptxas spills what does not fit). Use it where
 * a kernel's grid is sized for that many resident blocks and its registers would otherwise allow
 * fewer (docs/kernels-in-java.md, "Occupancy").
 *
 * <p>Both runners refuse a launch with more threads per block than {@code maxThreads}, before it
 * starts, with an {@link IllegalArgumentException} naming the kernel.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface LaunchBounds {
    /** Most threads per block of any launch (1 to 1024). */
    int maxThreads();

    /** Blocks of {@code maxThreads} threads that must fit on one multiprocessor at once (at least 1). */
    int minBlocksPerMultiprocessor() default 1;
}
