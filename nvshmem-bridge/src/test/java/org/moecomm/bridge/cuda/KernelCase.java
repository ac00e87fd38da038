package org.moecomm.bridge.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;

/**
 * One launch to compare between runners: the kernel, its grid, and its arguments in parameter
 * order, each buffer with the bytes it starts with. Outputs start poisoned ({@link #POISON} bytes)
 * so that missing and stray writes show. Normalizers rewrite a buffer's result, on both sides,
 * before the bit-for-bit comparison (canonical NaNs, rows whose order is free).
 */
final class KernelCase {
    /**
     * The poison byte: as a float, double, bf16, fp16 or fp8 a finite value no case computes, and
     * as an int a large negative one that no index or count takes. Not a NaN (a NaN normalizer
     * would make an unwritten element equal to a written NaN) and not {@code -1} (a dropped pair's
     * location).
     */
    static final byte POISON = (byte) 0xA5;

    /** A buffer argument: a name for messages and its initial bytes. */
    record BufArg(String name, byte[] initial) {
    }

    /** A scalar argument (Integer, Long or Float). */
    record ScalarArg(Object value) {
    }

    /** Rewrites result buffers in place, given all of them by name (the same code runs on both sides). */
    interface Normalizer {
        void normalize(Map<String, MemorySegment> results);
    }

    final Kernel kernel;
    final Grid grid;
    final List<Object> args = new ArrayList<>();
    final Map<String, BufArg> buffers = new LinkedHashMap<>();
    /** The buffers made by {@link #out} with bytes: the kernel writes them. */
    final Set<String> outputs = new LinkedHashSet<>();
    /** The buffers made by {@link #unwritten}: the kernel leaves them as they are. */
    final Set<String> untouched = new LinkedHashSet<>();
    /** The buffers named by {@link #reportsInto}: not all zero after the launch. */
    final Set<String> reports = new LinkedHashSet<>();
    final List<Normalizer> normalizers = new ArrayList<>();
    String label = "";

    private KernelCase(Kernel kernel, Grid grid) {
        this.kernel = kernel;
        this.grid = grid;
    }

    static KernelCase of(Class<?> owner, String name, Grid grid) {
        return new KernelCase(new Kernel(owner, name), grid);
    }

    KernelCase label(String text) {
        this.label = text;
        return this;
    }

    KernelCase buf(String name, byte[] initial) {
        if (buffers.containsKey(name)) {
            throw new IllegalArgumentException("two buffers named " + name);
        }
        BufArg b = new BufArg(name, initial.length == 0 ? new byte[16] : initial);
        buffers.put(name, b);
        args.add(b);
        return this;
    }

    KernelCase ints(String name, int... v) {
        return buf(name, toBytes(MemorySegment.ofArray(v)));
    }

    KernelCase longs(String name, long... v) {
        return buf(name, toBytes(MemorySegment.ofArray(v)));
    }

    KernelCase floats(String name, float... v) {
        return buf(name, toBytes(MemorySegment.ofArray(v)));
    }

    KernelCase doubles(String name, double... v) {
        return buf(name, toBytes(MemorySegment.ofArray(v)));
    }

    KernelCase shorts(String name, short... v) {
        return buf(name, toBytes(MemorySegment.ofArray(v)));
    }

    /** An output buffer of {@code bytes} bytes, poisoned; of none (an output the shape lacks): a poisoned byte. */
    KernelCase out(String name, long bytes) {
        poisoned(name, bytes);
        if (bytes > 0) {
            outputs.add(name);
        }
        return this;
    }

    /** A poisoned buffer of {@code bytes} bytes that the kernel must not write (an output of no rows). */
    KernelCase unwritten(String name, long bytes) {
        poisoned(name, bytes);
        untouched.add(name);
        return this;
    }

    /** The case's input is bad: the kernel must report it in {@code buffer} (zeroed before). */
    KernelCase reportsInto(String buffer) {
        if (!buffers.containsKey(buffer)) {
            throw new IllegalArgumentException("no buffer named " + buffer);
        }
        reports.add(buffer);
        return this;
    }

    private void poisoned(String name, long bytes) {
        byte[] b = new byte[Math.toIntExact(Math.max(bytes, 1))];
        Arrays.fill(b, POISON);
        buf(name, b);
    }

    /** A buffer of {@code bytes} zero bytes (counters, accumulators). */
    KernelCase zeros(String name, long bytes) {
        return buf(name, new byte[Math.toIntExact(Math.max(bytes, 1))]);
    }

    KernelCase arg(int v) {
        args.add(new ScalarArg(v));
        return this;
    }

    KernelCase arg(long v) {
        args.add(new ScalarArg(v));
        return this;
    }

    KernelCase arg(float v) {
        args.add(new ScalarArg(v));
        return this;
    }

    KernelCase normalize(Normalizer n) {
        normalizers.add(n);
        return this;
    }

    /** Applies {@code n} to one buffer's result. */
    KernelCase normalize(String buffer, Consumer<MemorySegment> n) {
        return normalize(all -> n.accept(all.get(buffer)));
    }

    /** Every NaN float of {@code buffer} becomes the canonical NaN (the GPU need not keep payloads). */
    KernelCase floatNaNsEqual(String buffer) {
        return normalize(buffer, s -> {
            for (long i = 0; i + 4 <= s.byteSize(); i += 4) {
                if (Float.isNaN(s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, i))) {
                    s.set(ValueLayout.JAVA_INT_UNALIGNED, i, 0x7fc00000);
                }
            }
        });
    }

    /** Every NaN double of {@code buffer} becomes the canonical NaN. */
    KernelCase doubleNaNsEqual(String buffer) {
        return normalize(buffer, s -> {
            for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
                if (Double.isNaN(s.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, i))) {
                    s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, 0x7ff8000000000000L);
                }
            }
        });
    }

    static byte[] toBytes(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_BYTE);
    }

    @Override
    public String toString() {
        return kernel + (label.isEmpty() ? "" : " [" + label + "]") + " grid " + grid.blocksX() + "x" + grid.blocksY()
                + "x" + grid.threads();
    }
}
