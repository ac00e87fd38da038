package org.moecomm.core.check;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.moecomm.core.DType;
import org.moecomm.core.DeviceMemory;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Tensor;
import org.moecomm.core.reference.Reference;
import org.moecomm.kernels.api.Buf;

/**
 * Compares one rank's device results with the {@link Reference}, after the outputs were
 * poisoned ({@link RankBuffers#POISON}) before the round:
 * <ul>
 *   <li>dispatch: per local expert, the count, and the rows (token bytes and scale bytes) as
 *       a multiset, byte for byte; rows beyond the count must still be poison;</li>
 *   <li>combine: {@code out [m][H]} bit for bit (the reduce kernel and the reference both sum
 *       float32 products from 0 in increasing k, multiply and add separately, and round once
 *       to outType, so equality is exact); rows beyond m must still be poison.</li>
 * </ul>
 * Rows never written (all poison) are reported as such.
 */
public final class ResultCheck {
    /** Mismatches listed per report before the rest are only counted. */
    private static final int MAX_LISTED = 8;
    /** Bytes of device memory {@link #allPoison(DeviceMemory, Buf, long, long, MemorySegment)} reads per copy. */
    private static final long UNTOUCHED_CHUNK = 1 << 20;
    /** {@link RankBuffers#POISON} bytes that {@link #allPoison(MemorySegment)} compares against, chunk by chunk. */
    private static final MemorySegment POISON_CHUNK = Arena.global().allocate(1 << 16, 16).fill(RankBuffers.POISON);

    private ResultCheck() {
    }

    /** The outcome of a check: empty problems means equal to the reference. */
    public record Report(String subject, List<String> problems) {
        public Report {
            problems = List.copyOf(problems);
        }

        public boolean ok() {
            return problems.isEmpty();
        }

        /** Throws {@link AssertionError} listing the problems unless {@link #ok()}. */
        public Report assertOk() {
            if (!ok()) {
                throw new AssertionError(this.toString());
            }
            return this;
        }

        /** Both reports' problems under one subject. */
        public Report and(Report other) {
            List<String> all = new ArrayList<>(problems);
            all.addAll(other.problems);
            return new Report(subject + " + " + other.subject, all);
        }

        @Override
        public String toString() {
            return ok() ? subject + ": ok" : subject + ": " + problems.size() + " problem(s):\n  " + String.join("\n  ", problems);
        }
    }

    /** A row's bytes as a map key. */
    private record Row(byte[] bytes) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Row r && Arrays.equals(r.bytes, bytes);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(bytes);
        }
    }

    /** Checks rank {@code rank}'s dispatch outputs. */
    public static Report dispatch(Reference ref, int rank, DeviceMemory memory, DispatchOutput out) {
        MoeConfig c = ref.config();
        List<String> problems = new ArrayList<>();
        List<List<Reference.ExpertRow>> expected = ref.dispatch(rank);
        int l = c.expertsPerRank();
        int h = c.hidden();
        int xb = h * c.expertInType().bytes();
        int sb = 4 * c.scalesPerToken();
        long cap = c.expertCapacity();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment counts = arena.allocate(4L * l, 4);
            memory.copyToHost(out.expertNumTokens().buf(), 0, counts);
            // one expert's rows and scales at a time, in host memory allocated once for all experts;
            // the rows beyond the count are read chunk by chunk into a buffer that stays in cache
            int most = RankBuffers.mostRows(counts, l, cap);
            MemorySegment xs = arena.allocate(Math.max(1, (long) most * xb), 16);
            MemorySegment ss = arena.allocate(Math.max(1, (long) most * sb), 16);
            MemorySegment chunk = arena.allocate(UNTOUCHED_CHUNK, 16);
            for (int i = 0; i < l; i++) {
                int expert = rank * l + i;
                int n = counts.getAtIndex(ValueLayout.JAVA_INT, i);
                List<Reference.ExpertRow> exp = expected.get(i);
                if (n == -1) {
                    problems.add("expert " + expert + ": expertNumTokens never written (poison), expected " + exp.size());
                    continue;
                }
                if (n < 0 || n > cap) {
                    problems.add("expert " + expert + ": count " + n + " outside [0, " + cap + "], expected " + exp.size());
                    continue;
                }
                if (n != exp.size()) {
                    problems.add("expert " + expert + ": count " + n + ", expected " + exp.size());
                }
                memory.copyToHost(out.expertX().buf(), i * cap * xb, xs.asSlice(0, (long) n * xb));
                if (sb > 0) {
                    memory.copyToHost(out.expertXScale().buf(), i * cap * sb, ss.asSlice(0, (long) n * sb));
                }
                compareRows(expert, n, exp, xs, ss, xb, sb, problems);
                if (!allPoison(memory, out.expertX().buf(), (i * cap + n) * xb, (cap - n) * xb, chunk)
                        || (sb > 0 && !allPoison(memory, out.expertXScale().buf(), (i * cap + n) * sb, (cap - n) * sb,
                        chunk))) {
                    problems.add("expert " + expert + ": rows beyond the count " + n + " were written");
                }
            }
        }
        return new Report("rank " + rank + " dispatch", problems);
    }

    /** Rows [0, n) of one expert as a multiset against the reference. */
    private static void compareRows(int expert, int n, List<Reference.ExpertRow> exp, MemorySegment xs,
                                    MemorySegment ss, int xb, int sb, List<String> problems) {
        Map<Row, Integer> want = new HashMap<>();
        Map<Row, Reference.ExpertRow> names = new HashMap<>();
        for (Reference.ExpertRow r : exp) {
            Row key = new Row(concat(r.tokenBytes(), floatBytes(r.scales())));
            want.merge(key, 1, Integer::sum);
            names.putIfAbsent(key, r);
        }
        List<String> unexpected = new ArrayList<>();
        for (int slot = 0; slot < n; slot++) {
            byte[] token = xs.asSlice((long) slot * xb, xb).toArray(ValueLayout.JAVA_BYTE);
            byte[] scales = sb > 0 ? ss.asSlice((long) slot * sb, sb).toArray(ValueLayout.JAVA_BYTE) : new byte[0];
            Row key = new Row(concat(token, scales));
            Integer left = want.get(key);
            if (left == null) {
                unexpected.add("slot " + slot + (allPoison(token) ? " (never written: poison)"
                        : allPoison(scales) && scales.length > 0 ? " (scales never written: poison)" : ""));
            } else if (left == 1) {
                want.remove(key);
            } else {
                want.put(key, left - 1);
            }
        }
        if (!unexpected.isEmpty()) {
            problems.add("expert " + expert + ": " + unexpected.size() + " row(s) match no expected pair: "
                    + firstFew(unexpected));
        }
        if (!want.isEmpty()) {
            List<String> missing = new ArrayList<>();
            want.forEach((k, v) -> missing.add(names.get(k) + (v > 1 ? " x" + v : "")));
            problems.add("expert " + expert + ": " + want.values().stream().mapToInt(Integer::intValue).sum()
                    + " expected pair(s) missing: " + firstFew(missing));
        }
    }

    /** Checks rank {@code rank}'s combine output against the reference with expert function {@code expert}. */
    public static Report combine(Reference ref, int rank, Reference.ExpertFunction expert, DeviceMemory memory,
                                 Tensor out) {
        MoeConfig c = ref.config();
        List<String> problems = new ArrayList<>();
        byte[] want = ref.combine(rank, expert);
        int m = ref.inputs(rank).m();
        int h = c.hidden();
        DType ot = c.outType();
        int rowBytes = h * ot.bytes();
        long rows = out.dim(0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment got = arena.allocate(Math.max(1, rows * rowBytes), 16);
            memory.copyToHost(out.buf(), 0, got.asSlice(0, rows * rowBytes));
            byte[] have = got.asSlice(0, (long) m * rowBytes).toArray(ValueLayout.JAVA_BYTE);
            List<String> mismatches = new ArrayList<>();
            int mismatchCount = 0;
            List<Integer> poisonRows = new ArrayList<>();
            for (int t = 0; t < m; t++) {
                if (allPoison(got.asSlice((long) t * rowBytes, rowBytes))) {
                    poisonRows.add(t);
                    continue;
                }
                if (Arrays.equals(have, t * rowBytes, (t + 1) * rowBytes, want, t * rowBytes, (t + 1) * rowBytes)) {
                    continue;
                }
                for (int i = 0; i < h; i++) {
                    int e = t * h + i;
                    boolean same = true;
                    for (int b = 0; b < ot.bytes(); b++) {
                        same &= have[e * ot.bytes() + b] == want[e * ot.bytes() + b];
                    }
                    if (!same) {
                        mismatchCount++;
                        if (mismatches.size() < MAX_LISTED) {
                            mismatches.add("out[" + t + "][" + i + "] = " + Reference.decode(ot, have, e) + ", expected "
                                    + Reference.decode(ot, want, e));
                        }
                    }
                }
            }
            if (!poisonRows.isEmpty()) {
                problems.add(poisonRows.size() + " token row(s) never written (poison): " + firstFew(poisonRows));
            }
            if (mismatchCount > 0) {
                problems.add(mismatchCount + " element(s) differ from the reference: " + String.join("; ", mismatches));
            }
            if (rows > m && !allPoison(got.asSlice((long) m * rowBytes, (rows - m) * rowBytes))) {
                problems.add("rows beyond m=" + m + " were written");
            }
        }
        return new Report("rank " + rank + " combine", problems);
    }

    /** Whether every byte is {@link RankBuffers#POISON}. */
    static boolean allPoison(byte[] bytes) {
        for (byte b : bytes) {
            if (b != RankBuffers.POISON) {
                return false;
            }
        }
        return true;
    }

    /** Whether bytes {@code [offset, offset + length)} of {@code buf} are all poison, read through {@code chunk}. */
    private static boolean allPoison(DeviceMemory memory, Buf buf, long offset, long length, MemorySegment chunk) {
        for (long done = 0; done < length; done += chunk.byteSize()) {
            MemorySegment part = chunk.asSlice(0, Math.min(chunk.byteSize(), length - done));
            memory.copyToHost(buf, offset + done, part);
            if (!allPoison(part)) {
                return false;
            }
        }
        return true;
    }

    private static boolean allPoison(MemorySegment s) {
        long n = s.byteSize();
        for (long i = 0; i < n; i += POISON_CHUNK.byteSize()) {
            long len = Math.min(POISON_CHUNK.byteSize(), n - i);
            if (MemorySegment.mismatch(s, i, i + len, POISON_CHUNK, 0, len) != -1) {
                return false;
            }
        }
        return true;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    private static byte[] floatBytes(float[] f) {
        byte[] b = new byte[f.length * 4];
        for (int i = 0; i < f.length; i++) {
            int bits = Float.floatToRawIntBits(f[i]);
            b[4 * i] = (byte) bits;
            b[4 * i + 1] = (byte) (bits >> 8);
            b[4 * i + 2] = (byte) (bits >> 16);
            b[4 * i + 3] = (byte) (bits >> 24);
        }
        return b;
    }

    private static String firstFew(List<?> items) {
        List<?> head = items.subList(0, Math.min(MAX_LISTED, items.size()));
        return head + (items.size() > MAX_LISTED ? " and " + (items.size() - MAX_LISTED) + " more" : "");
    }
}
