package org.moecomm.core.gpu;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.protocol.BufferLayout;

/**
 * Symmetric memory (NVSHMEM's heap) one handle needs on each rank, by buffer, and the sizing
 * rule of the heap.
 *
 * @param buffers bytes of each symmetric buffer of one handle (protocol buffers and the
 *                transport's barrier words), each rounded as the transport allocates it
 * @param total   their sum: what one handle takes from the heap on each rank
 */
public record SymmetricMemory(Map<String, Long> buffers, long total) {
    /** Head room added to the need when the heap is sized automatically: at least this many bytes... */
    public static final long MIN_MARGIN = 64L << 20;
    /** ...and at least this fraction of the need (allocator alignment, fragmentation). */
    public static final double MARGIN_FRACTION = 0.125;
    /** NVSHMEM maps its heap in granules of this size. */
    public static final long GRANULE = 2L << 20;

    public SymmetricMemory {
        buffers = Collections.unmodifiableMap(new LinkedHashMap<>(buffers));
    }

    /** What a handle of {@code config} allocates from the symmetric heap on each rank. */
    public static SymmetricMemory of(MoeConfig config) {
        BufferLayout l = new BufferLayout(config);
        Map<String, Long> b = new LinkedHashMap<>();
        b.put("barrier", rounded(8L * config.worldSize()));
        b.put("dispatchRecv", rounded(l.dispatchRecvBytes()));
        b.put("dispatchSend", rounded(l.dispatchSendBytes()));
        b.put("combineRecv", rounded(l.combineRecvBytes()));
        b.put("combineSend", rounded(l.combineSendBytes()));
        b.put("signals", rounded(l.signalBytes()));
        long total = b.values().stream().mapToLong(Long::longValue).sum();
        return new SymmetricMemory(b, total);
    }

    /** The heap size chosen for a need of {@code bytes}: need plus margin, rounded up to {@link #GRANULE}. */
    public static long heapSizeFor(long bytes) {
        long margin = Math.max(MIN_MARGIN, (long) Math.ceil(bytes * MARGIN_FRACTION));
        long size = Math.addExact(bytes, margin);
        return Math.addExact(size, GRANULE - 1) / GRANULE * GRANULE;
    }

    /**
     * Parses an {@code NVSHMEM_SYMMETRIC_SIZE} value the way NVSHMEM documents it: a number
     * (fractions allowed) with an optional suffix k/K, m/M, g/G, t/T (powers of 2^10).
     */
    public static long parseSize(String value) {
        String v = value.strip();
        if (v.isEmpty()) {
            throw new IllegalArgumentException("empty size");
        }
        int end = 0;
        while (end < v.length() && (Character.isDigit(v.charAt(end)) || v.charAt(end) == '.')) {
            end++;
        }
        if (end == 0) {
            throw new IllegalArgumentException("not a size: " + value);
        }
        double number = Double.parseDouble(v.substring(0, end));
        long scale = 1;
        if (end < v.length()) {
            scale = switch (Character.toLowerCase(v.charAt(end))) {
                case 'k' -> 1L << 10;
                case 'm' -> 1L << 20;
                case 'g' -> 1L << 30;
                case 't' -> 1L << 40;
                default -> throw new IllegalArgumentException("not a size: " + value);
            };
        }
        return (long) Math.ceil(number * scale);
    }

    static long rounded(long bytes) {
        return (bytes + 255) & ~255L;
    }

    static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("symmetric memory per rank: ").append(mib(total)).append(" (");
        boolean first = true;
        for (Map.Entry<String, Long> e : buffers.entrySet()) {
            if (!first) {
                s.append(", ");
            }
            first = false;
            s.append(e.getKey()).append(' ').append(e.getValue());
        }
        return s.append(" bytes)").toString();
    }
}
