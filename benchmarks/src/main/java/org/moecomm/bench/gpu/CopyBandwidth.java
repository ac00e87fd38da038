package org.moecomm.bench.gpu;

import java.util.List;
import java.util.Map;
import org.moecomm.bridge.cuda.CudaContext;
import org.moecomm.kernels.api.Buf;

/**
 * The copy bandwidth achieved GB/s is compared with: one buffer copied into another by the
 * device's own copy ({@link BenchDevice#copy}: {@code cuMemcpyDtoDAsync} on the GPU,
 * {@code MemorySegment.copy} on the JVM), timed like a kernel ({@link BenchDevice#time}), read +
 * write counted (2 x the size). The kernel benchmark measures it once per run in its process; a
 * rank process of the per-phase benchmark measures it through {@link #onGpu} with every rank
 * copying at the same time.
 */
public final class CopyBandwidth {
    /** The copy of {@link #onGpu}, as results name it. */
    public static final String GPU_COPY = "cuMemcpyDtoDAsync";
    /** The copy of {@link #onHost}, as results name it. */
    public static final String HOST_COPY = "MemorySegment.copy";

    private CopyBandwidth() {
    }

    /**
     * Milliseconds of each of {@code reps} copies of {@code bytes} on {@code dev}, after
     * {@code warmups} untimed ones, {@code beforeEach} (untimed) before every copy.
     */
    static double[] samples(BenchDevice dev, long bytes, int warmups, int reps, Runnable beforeEach) {
        Buf src = dev.allocate(bytes);
        Buf dst = dev.allocate(bytes);
        try {
            dev.fill(src, (byte) 1);
            return dev.time(warmups, reps, beforeEach, List.of(() -> dev.copy(dst, src)))[0];
        } finally {
            dev.free(src);
            dev.free(dst);
        }
    }

    /** GB/s of copying {@code bytes} in {@code millis}, read + write counted. */
    public static double gbps(long bytes, double millis) {
        return 2.0 * bytes / (millis * 1e-3) / 1e9;
    }

    /**
     * {@link #samples} on the GPU of {@code context} (not closed here), with its own stream. Before
     * each copy: the stream drained, then {@code align} (a barrier of the ranks sharing the GPU, so
     * that they copy at the same time), then an untimed memset of {@code flushBytes} (evicts the L2
     * cache and keeps the stream busy while the copy is enqueued, as in the kernel benchmark).
     */
    public static double[] onGpu(CudaContext context, long bytes, long flushBytes, int warmups, int reps,
                                 Runnable align) {
        try (GpuBenchDevice dev = new GpuBenchDevice(context)) {
            return aligned(dev, bytes, flushBytes, warmups, reps, align);
        }
    }

    /** {@link #onGpu} on the JVM's memory: the caller's thread copies, {@code align} before each copy. */
    public static double[] onHost(long bytes, long flushBytes, int warmups, int reps, Runnable align) {
        try (CpuBenchDevice dev = new CpuBenchDevice(Map.of())) {
            return aligned(dev, bytes, flushBytes, warmups, reps, align);
        }
    }

    private static double[] aligned(BenchDevice dev, long bytes, long flushBytes, int warmups, int reps,
                                    Runnable align) {
        Buf flush = flushBytes > 0 ? dev.allocate(flushBytes) : null;
        try {
            return samples(dev, bytes, warmups, reps, () -> {
                dev.synchronize();
                align.run();
                if (flush != null) {
                    dev.fill(flush, (byte) 0);
                }
            });
        } finally {
            if (flush != null) {
                dev.free(flush);
            }
        }
    }
}
