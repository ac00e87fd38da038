package org.moecomm.bench.gpu;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;

/**
 * Where the kernel benchmark runs: a CUDA GPU ({@link GpuBenchDevice}) or, for tests and dry
 * runs, the JVM ({@link CpuBenchDevice}). Everything the benchmark does to memory and kernels
 * goes through this interface, so input construction and output checks are the same code on
 * both.
 *
 * <p>Memory operations ({@link #fill}, {@link #copy}) and launches are enqueued in order on one
 * stream; {@link #upload} and {@link #download} return when done, after the work enqueued
 * before them.
 */
interface BenchDevice extends AutoCloseable {
    /** Device name, such as "NVIDIA H200" (what the JSON's {@code gpu} field records). */
    String name();

    /** "gpu" or "cpu". */
    String kind();

    /** Streaming multiprocessors (for the default grid); processors on the CPU. */
    int multiprocessors();

    /** {@code bytes} of device memory, contents undefined, until {@link #free(Buf)} or {@link #close()}. */
    Buf allocate(long bytes);

    /** Frees a buffer made by {@link #allocate(long)} (waits for enqueued work first). */
    void free(Buf buf);

    /** Copies all of host {@code src} into the start of {@code dst}. */
    void upload(Buf dst, MemorySegment src);

    /** Copies the start of {@code src} into all of host {@code dst}. */
    void download(MemorySegment dst, Buf src);

    /** Enqueues setting every byte of {@code dst} to {@code value}. */
    void fill(Buf dst, byte value);

    /** Enqueues copying all of {@code src} into the start of {@code dst}. */
    void copy(Buf dst, Buf src);

    /** Waits for everything enqueued. */
    void synchronize();

    /** Launches once with the runner's own argument checks (the first, checked run). */
    void launchChecked(Kernel kernel, Grid grid, Object... args);

    /** A launch ready to be timed: the kernel is loaded and the arguments converted once. */
    Runnable prepare(Kernel kernel, Grid grid, Object... args);

    /**
     * A prepared launch of the twin kernel {@code entry} with the same grid and arguments, through
     * the same launch call as {@link #prepare}; null when there is no such twin (see {@link #twinStatus()}).
     */
    Runnable prepareTwin(String entry, Grid grid, Object... args);

    /** Whether twins were loaded, or why not. */
    String twinStatus();

    /** Whether twins are loaded at all. */
    boolean hasTwins();

    /**
     * Registers, static shared memory and local memory of {@code kernel} as compiled for a launch
     * on {@code grid} with {@code args} (specialised for them, as {@link #prepare} runs it); null
     * where unknown.
     */
    String resources(Kernel kernel, Grid grid, Object... args);

    /** The same for a twin entry; null where unknown. */
    String twinResources(String entry);

    /**
     * Times each of {@code works} {@code reps} times after {@code warmups} untimed runs of each.
     * Every run is preceded by an untimed {@code setup}; the works are interleaved (in alternating
     * order) so both sides of a comparison see the same conditions.
     *
     * @return milliseconds, {@code [work][rep]}
     */
    double[][] time(int warmups, int reps, Runnable setup, List<Runnable> works);

    @Override
    void close();
}
