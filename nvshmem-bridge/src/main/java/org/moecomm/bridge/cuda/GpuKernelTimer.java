package org.moecomm.bridge.cuda;

import java.util.Arrays;
import java.util.Objects;

/**
 * Times GPU work with CUDA events on one stream: the hook the kernel benchmarks build on.
 * Each repetition runs an untimed {@code setup} (resetting counters, say), then the timed
 * {@code work}, both enqueued on the stream; the result is GPU time per repetition, free of
 * host-side launch jitter as far as the stream is kept busy.
 */
public final class GpuKernelTimer {
    /**
     * Per-repetition GPU times in milliseconds.
     *
     * @param samples one value per timed repetition, in order
     */
    public record Timing(String name, double[] samples) {
        public double min() {
            return Arrays.stream(samples).min().orElse(Double.NaN);
        }

        public double median() {
            double[] s = samples.clone();
            Arrays.sort(s);
            int n = s.length;
            return n == 0 ? Double.NaN : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        }

        public double mean() {
            return Arrays.stream(samples).average().orElse(Double.NaN);
        }

        /** {@code bytes} moved per repetition over the median time, in GB/s (1e9 bytes per second). */
        public double gbPerSecond(long bytes) {
            return bytes / (median() * 1e-3) / 1e9;
        }

        @Override
        public String toString() {
            return String.format("%s: median %.2f us, min %.2f us, mean %.2f us over %d runs", name, median() * 1e3,
                    min() * 1e3, mean() * 1e3, samples.length);
        }
    }

    private final CudaStream stream;

    public GpuKernelTimer(CudaStream stream) {
        this.stream = Objects.requireNonNull(stream, "stream");
    }

    /** Times {@code work} {@code reps} times after {@code warmups} untimed runs. */
    public Timing time(String name, int warmups, int reps, Runnable work) {
        return time(name, warmups, reps, () -> { }, work);
    }

    /** Times {@code work} {@code reps} times after {@code warmups} untimed runs, {@code setup} before each run, untimed. */
    public Timing time(String name, int warmups, int reps, Runnable setup, Runnable work) {
        if (reps < 1 || warmups < 0) {
            throw new IllegalArgumentException("reps must be positive and warmups non-negative");
        }
        CudaContext context = stream.context();
        for (int i = 0; i < warmups; i++) {
            setup.run();
            work.run();
        }
        stream.synchronize();
        CudaEvent[] start = new CudaEvent[reps];
        CudaEvent[] end = new CudaEvent[reps];
        try {
            for (int i = 0; i < reps; i++) {
                start[i] = context.createEvent();
                end[i] = context.createEvent();
            }
            for (int i = 0; i < reps; i++) {
                setup.run();
                start[i].record(stream);
                work.run();
                end[i].record(stream);
            }
            stream.synchronize();
            double[] ms = new double[reps];
            for (int i = 0; i < reps; i++) {
                ms[i] = end[i].elapsedMillisSince(start[i]);
            }
            return new Timing(name, ms);
        } finally {
            for (int i = 0; i < reps; i++) {
                if (start[i] != null) {
                    start[i].close();
                }
                if (end[i] != null) {
                    end[i].close();
                }
            }
        }
    }
}
