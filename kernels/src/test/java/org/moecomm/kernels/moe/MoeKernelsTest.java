package org.moecomm.kernels.moe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.Numerics;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * Each MoE kernel, run by the {@link CpuKernelRunner}, against a plain loop written here from
 * docs/protocol.md; outputs are poisoned first so that missing and stray writes show. The last
 * tests run whole rounds (pack, puts by hand, scatter, expert, gather, puts, reduce).
 */
class MoeKernelsTest {
    private static final Kernel PACK = new Kernel(MoeKernels.class, "pack");
    private static final Kernel SCATTER = new Kernel(MoeKernels.class, "scatter");
    private static final Kernel GATHER = new Kernel(MoeKernels.class, "gather");
    private static final Kernel REDUCE = new Kernel(MoeKernels.class, "reduce");
    private static final byte POISON = (byte) 0xff;
    /** pairLocation's poison: 0xff bytes would read as -1, a value pack writes. */
    static final byte LOCATION_POISON = 0x5a;

    private final Arena arena = Arena.ofShared();
    private final CpuKernelRunner runner = new CpuKernelRunner();

    /** Blocks per destination (pack) or source group (scatter): the y extent of their grids. */
    private int blocksY = 1;

    @AfterEach
    void close() {
        arena.close();
    }


    /** One group's tokens (host copies), sized for M tokens; only the first {@code count} are valid. */
    record Tokens(byte[] x, float[] scales, int[] indices, int count) {
    }

    // ---- helpers ----


    private Buf buf(long bytes) {
        return Buf.allocate(arena, bytes);
    }

    private Buf poisoned(long bytes, byte poison) {
        Buf b = buf(bytes);
        b.segment().fill(poison);
        return b;
    }

    private Buf bytes(byte[] a) {
        Buf b = buf(a.length);
        MemorySegment.copy(a, 0, b.segment(), ValueLayout.JAVA_BYTE, 0, a.length);
        return b;
    }

    private Buf ints(int[] a) {
        Buf b = buf(4L * a.length);
        MemorySegment.copy(a, 0, b.segment(), ValueLayout.JAVA_INT_UNALIGNED, 0, a.length);
        return b;
    }

    private Buf floats(float[] a) {
        Buf b = buf(4L * a.length);
        MemorySegment.copy(a, 0, b.segment(), ValueLayout.JAVA_FLOAT_UNALIGNED, 0, a.length);
        return b;
    }

    private static byte[] read(Buf b, long offset, int length) {
        byte[] a = new byte[length];
        MemorySegment.copy(b.segment(), ValueLayout.JAVA_BYTE, offset, a, 0, length);
        return a;
    }

    private static void assertPoisoned(Buf b, long offset, long length, byte poison, String what) {
        for (long i = offset; i < offset + length; i++) {
            if (b.segment().get(ValueLayout.JAVA_BYTE, i) != poison) {
                throw new AssertionError(what + ": byte " + i + " was written");
            }
        }
    }

    /**
     * Random tokens: x from random values of the dtype (finite), scales in [0.5, 2), K distinct
     * experts per token with some ids -1; tokens past {@code count} get routes too (must be ignored).
     */
    static Tokens randomTokens(MoeShape c, int count, SplittableRandom r) {
        byte[] x = new byte[c.m() * c.xBytes()];
        for (int i = 0; i < c.m() * c.h(); i++) {
            float v = (float) (r.nextDouble() * 4 - 2);
            if (c.fp8()) {
                x[i] = Numerics.floatToFp8e4m3(v);
            } else {
                short s = Numerics.floatToBf16(v);
                x[2 * i] = (byte) s;
                x[2 * i + 1] = (byte) (s >> 8);
            }
        }
        float[] scales = new float[Math.max(1, c.m() * c.s())];
        for (int i = 0; i < c.m() * c.s(); i++) {
            scales[i] = (float) (0.5 + 1.5 * r.nextDouble());
        }
        int[] indices = new int[c.m() * c.k()];
        for (int t = 0; t < c.m(); t++) {
            int[] perm = r.ints(0, c.e()).distinct().limit(c.k()).toArray();
            for (int k = 0; k < c.k(); k++) {
                indices[t * c.k() + k] = r.nextInt(7) == 0 ? -1 : perm[k];
            }
        }
        return new Tokens(x, scales, indices, count);
    }

    /** Rows pack produces for destination d, in order: {token, pairBase, numLocal, local ids...}. */
    static List<int[]> referenceRows(MoeShape c, Tokens tk, int d) {
        List<int[]> rows = new ArrayList<>();
        int q = 0;
        for (int t = 0; t < Math.min(tk.count(), c.m()); t++) {
            List<Integer> locals = new ArrayList<>();
            for (int k = 0; k < c.k(); k++) {
                int id = tk.indices()[t * c.k() + k];
                if (id >= 0 && id / c.l() == d) {
                    locals.add(id - d * c.l());
                }
            }
            if (locals.isEmpty()) {
                continue;
            }
            int[] row = new int[3 + locals.size()];
            row[0] = t;
            row[1] = q;
            row[2] = locals.size();
            for (int i = 0; i < locals.size(); i++) {
                row[3 + i] = locals.get(i);
            }
            rows.add(row);
            q += locals.size();
        }
        return rows;
    }

    /** pairLocation as pack must leave it; null marks entries pack must not touch. */
    static Integer[] referencePairLocation(MoeShape c, Tokens tk) {
        Integer[] loc = new Integer[c.m() * c.k()];
        for (int d = 0; d < c.w(); d++) {
            for (int[] row : referenceRows(c, tk, d)) {
                int t = row[0];
                int q = row[1];
                for (int k = 0; k < c.k(); k++) {
                    int id = tk.indices()[t * c.k() + k];
                    if (id >= 0 && id / c.l() == d) {
                        loc[t * c.k() + k] = d * c.maxPairs() + q++;
                    }
                }
            }
        }
        for (int t = 0; t < Math.min(tk.count(), c.m()); t++) {
            for (int k = 0; k < c.k(); k++) {
                if (tk.indices()[t * c.k() + k] < 0) {
                    loc[t * c.k() + k] = -1;
                }
            }
        }
        return loc;
    }

    /** The bytes of one dispatch row, padding zeroed. */
    static byte[] referenceRowBytes(MoeShape c, Tokens tk, int[] row) {
        byte[] out = new byte[c.rowBytes()];
        int t = row[0];
        System.arraycopy(tk.x(), t * c.xBytes(), out, 0, c.xBytes());
        MemorySegment seg = MemorySegment.ofArray(out);
        int scaleOffset = MoeShape.align16(c.xBytes());
        for (int i = 0; i < c.s(); i++) {
            seg.set(ValueLayout.JAVA_FLOAT_UNALIGNED, scaleOffset + 4L * i, tk.scales()[t * c.s() + i]);
        }
        int metaOffset = scaleOffset + MoeShape.align16(4 * c.s());
        seg.set(ValueLayout.JAVA_INT_UNALIGNED, metaOffset, row[1]);
        seg.set(ValueLayout.JAVA_INT_UNALIGNED, metaOffset + 4, row[2]);
        for (int i = 0; i < row[2]; i++) {
            seg.set(ValueLayout.JAVA_INT_UNALIGNED, metaOffset + 8 + 4L * i, row[3 + i]);
        }
        return out;
    }

    /** pack's outputs on one rank. */
    record PackOut(Buf dispatchSend, Buf sendRows, Buf pairLocation, Buf numTokens, Buf inputReport) {
    }

    /** pack with the ids checked, m in a buffer (or, with {@code fixed}, given as an int and the buffer poisoned). */
    private PackOut runPack(MoeShape c, Tokens tk, int member, int numTokens, int threads, boolean fixed) {
        Buf send = poisoned((long) c.ng() * c.m() * c.rowBytes(), POISON);
        Buf sendRows = poisoned(4L * c.ng(), POISON);
        Buf pairLocation = poisoned(4L * c.m() * c.k(), LOCATION_POISON);
        Buf count = fixed ? poisoned(4, POISON) : ints(new int[] {numTokens});
        Buf report = buf(4L * MoeKernels.REPORT_INTS);
        runner.launch(PACK, Grid.of(c.w(), blocksY, threads), bytes(tk.x()), floats(tk.scales()), ints(tk.indices()),
                count, send, sendRows, pairLocation, report, c.xBytes(), c.s(), c.k(), c.l(), c.g(), member,
                c.rowBytes(), c.m(), c.maxPairs(), fixed ? numTokens : -1, 1);
        return new PackOut(send, sendRows, pairLocation, count, report);
    }

    private PackOut runPack(MoeShape c, Tokens tk, int member, int numTokens, int threads) {
        return runPack(c, tk, member, numTokens, threads, false);
    }

    private void checkPack(MoeShape c, Tokens tk, int member, PackOut out) {
        Integer[] loc = referencePairLocation(c, tk);
        for (int i = 0; i < loc.length; i++) {
            int actual = out.pairLocation().getInt(i);
            if (loc[i] == null) {
                assertEquals(0x5a5a5a5a, actual, "pairLocation[" + i + "] must stay untouched");
            } else {
                assertEquals(loc[i].intValue(), actual, "pairLocation[" + i + "]");
            }
        }
        for (int d = 0; d < c.w(); d++) {
            int region = d / c.g();
            long regionByte = (long) region * c.m() * c.rowBytes();
            if (d % c.g() != member) {
                continue;
            }
            List<int[]> rows = referenceRows(c, tk, d);
            assertEquals(rows.size(), out.sendRows().getInt(region), "sendRows[" + region + "]");
            for (int j = 0; j < rows.size(); j++) {
                assertArrayEquals(referenceRowBytes(c, tk, rows.get(j)),
                        read(out.dispatchSend(), regionByte + (long) j * c.rowBytes(), c.rowBytes()),
                        "dispatchSend region " + region + " row " + j);
            }
            assertPoisoned(out.dispatchSend(), regionByte + (long) rows.size() * c.rowBytes(),
                    (long) (c.m() - rows.size()) * c.rowBytes(), POISON, "rows past sendRows of region " + region);
        }
        // Every region is written: region rho is destination rho*G + member's.
    }

    // ---- pack ----

    @ParameterizedTest(name = "W={0} G={1} L={2} K={3} H={4} M={5} fp8={6} m={7} threads={8}")
    @CsvSource({
            "4, 1, 3, 4, 272, 300, true, 300, 256", // fp8 + 3 scales, m = M, two chunks
            "4, 1, 3, 4, 160, 300, false, 211, 256", // bf16, no scales
            "4, 2, 2, 3, 128, 70, true, 70, 100", // G = 2, odd block size with a partial warp
            "4, 2, 5, 6, 96, 64, false, 33, 256", // G = 2, K > L
            "2, 1, 4, 2, 64, 40, false, 0, 256", // m = 0
            "1, 1, 8, 8, 32, 50, true, 50, 1", // W = 1, single-thread blocks
            "3, 1, 2, 2, 48, 30, false, 45, 64", // m > M: clamped to M
            "4, 1, 12, 40, 64, 130, false, 130, 256", // K = 40: chunks of 51 tokens (the staged ids fill shared memory)
            "2, 1, 40, 64, 32, 70, false, 67, 128", // K = 64, the most: chunks of 32 tokens
    })
    void packMatchesReference(int w, int g, int l, int k, int h, int m, boolean fp8, int count, int threads) {
        MoeShape c = new MoeShape(w, g, l, k, h, m, fp8);
        Tokens tk = randomTokens(c, count, new SplittableRandom(w * 1000 + m));
        int[] reference = null;
        boolean fixed = (w + m + threads) % 2 == 0; // both ways of passing m across the cases
        for (int member = 0; member < g; member++) {
            PackOut out = runPack(c, tk, member, count, threads, fixed);
            checkPack(c, tk, member, out);
            if (count > m) { // clamped, and reported as a bad count
                assertEquals(MoeKernels.REPORT_BAD_COUNT, out.inputReport().getInt(MoeKernels.REPORT_KIND));
                assertEquals(count, out.inputReport().getInt(MoeKernels.REPORT_VALUE));
            } else {
                for (int i = 0; i < MoeKernels.REPORT_INTS; i++) {
                    assertEquals(0, out.inputReport().getInt(i), "valid input, yet the report has slot " + i + " set");
                }
            }
            if (fixed) {
                assertEquals(Math.min(count, m), out.numTokens().getInt(0), "pack writes the m it was given");
            }
            int[] loc = new int[c.m() * c.k()];
            MemorySegment.copy(out.pairLocation().segment(), ValueLayout.JAVA_INT_UNALIGNED, 0, loc, 0, loc.length);
            if (reference == null) {
                reference = loc;
            } else {
                // every member of a group finds its combine rows the same way
                assertArrayEquals(reference, loc, "pairLocation differs between members");
            }
        }
    }

    @Test
    void packHasIdsMinusOneOnlyAndAllIdsOnOneRank() {
        MoeShape c = new MoeShape(2, 1, 4, 3, 32, 20, false);
        Tokens tk = randomTokens(c, 20, new SplittableRandom(5));
        for (int t = 0; t < c.m(); t++) {
            for (int k = 0; k < c.k(); k++) {
                // token 3: all -1; others: experts 4..6 (all on rank 1)
                tk.indices()[t * c.k() + k] = t == 3 ? -1 : 4 + k;
            }
        }
        PackOut out = runPack(c, tk, 0, 20, 256);
        checkPack(c, tk, 0, out);
        assertEquals(0, out.sendRows().getInt(0));
        assertEquals(19, out.sendRows().getInt(1));
    }

    /** A bad id is reported once, with its token, slot and value, and pack still numbers the good ones. */
    @Test
    void packReportsABadExpertId() {
        MoeShape c = new MoeShape(4, 1, 4, 3, 32, 40, false);
        Tokens tk = randomTokens(c, 40, new SplittableRandom(21));
        int bad = c.w() * c.l() + 5;
        tk.indices()[17 * c.k() + 2] = bad;
        blocksY = 3;
        PackOut out = runPack(c, tk, 0, 40, 64, true);
        assertEquals(17, out.inputReport().getInt(MoeKernels.REPORT_TOKEN));
        assertEquals(2, out.inputReport().getInt(MoeKernels.REPORT_SLOT));
        assertEquals(MoeKernels.REPORT_BAD_ID, out.inputReport().getInt(MoeKernels.REPORT_KIND));
        assertEquals(bad, out.inputReport().getInt(MoeKernels.REPORT_VALUE));
        assertEquals(1, out.inputReport().getInt(MoeKernels.REPORT_FLAG));
        assertEquals(-1, out.pairLocation().getInt(17 * c.k() + 2), "a bad id routes nowhere");
        tk.indices()[17 * c.k() + 2] = -1; // the good ones as the reference routes them, the bad one as unused
        checkPack(c, tk, 0, out);
        // ids beyond m are not checked
        tk.indices()[17 * c.k() + 2] = 0;
        tk.indices()[39 * c.k()] = bad;
        PackOut first = runPack(c, tk, 0, 39, 64, false);
        assertEquals(0, first.inputReport().getInt(MoeKernels.REPORT_FLAG));
    }

    /**
     * A token's routing to a destination against its definition (docs/contract.md), on random ids
     * with repeats, -1 and ids out of range, in both of its forms: a bit set of the destination's
     * experts (up to 64 of them) and the comparison with the earlier slots (more).
     */
    @ParameterizedTest(name = "L={0} K={1}")
    @CsvSource({"1,1", "4,8", "64,8", "64,64", "65,8", "128,16"})
    void routeTokenMatchesItsDefinition(int expertsPerRank, int topK) {
        SplittableRandom random = new SplittableRandom(31L * expertsPerRank + topK);
        int world = 3;
        int numExperts = world * expertsPerRank;
        long[] local = new long[1];
        long[] dropped = new long[1];
        for (int trial = 0; trial < 4000; trial++) {
            int dest = random.nextInt(world);
            int firstExpert = dest * expertsPerRank;
            int[] ids = new int[topK];
            for (int k = 0; k < topK; k++) {
                int pick = random.nextInt(8);
                if (pick == 0) {
                    ids[k] = -1;
                } else if (pick == 1) { // out of range, above E or below -1
                    ids[k] = random.nextBoolean() ? numExperts + random.nextInt(3) : -2 - random.nextInt(3);
                } else if (pick == 2 && k > 0) { // a repeat
                    ids[k] = ids[random.nextInt(k)];
                } else if (pick == 3) { // any destination's
                    ids[k] = random.nextInt(numExperts);
                } else {
                    ids[k] = firstExpert + random.nextInt(expertsPerRank);
                }
            }
            boolean dropsOutOfRange = dest == 0;
            long wantLocal = 0;
            long wantDropped = 0;
            for (int k = 0; k < topK; k++) {
                int id = ids[k];
                boolean repeat = false;
                for (int j = 0; j < k; j++) {
                    repeat |= ids[j] == id;
                }
                if (id >= firstExpert && id < firstExpert + expertsPerRank) {
                    if (repeat) {
                        wantDropped |= 1L << k;
                    } else {
                        wantLocal |= 1L << k;
                    }
                } else if (dropsOutOfRange && (id < 0 || id >= numExperts)) {
                    wantDropped |= 1L << k;
                }
            }
            local[0] = -7;
            dropped[0] = -7;
            int pairs = MoeKernels.routeToken(null, ids, 0, local, dropped, 0, 1, topK, 0, firstExpert,
                    expertsPerRank, numExperts, dropsOutOfRange, false, null);
            String ctx = "ids " + Arrays.toString(ids) + " at destination " + dest;
            assertEquals(wantLocal, local[0], ctx);
            assertEquals(wantDropped, dropped[0], ctx);
            assertEquals(Long.bitCount(wantLocal), pairs, ctx);
        }
    }

    /** A repeated id is reported at its second slot and routes nowhere, in both forms of the repeat test. */
    @ParameterizedTest(name = "L={0}")
    @CsvSource({"4", "100"})
    void packReportsARepeatedExpertId(int expertsPerRank) {
        MoeShape c = new MoeShape(2, 1, expertsPerRank, 4, 32, 12, false);
        Tokens tk = randomTokens(c, 12, new SplittableRandom(expertsPerRank));
        int id = tk.indices()[5 * c.k()];
        tk.indices()[5 * c.k() + 3] = id;
        PackOut out = runPack(c, tk, 0, 12, 64, true);
        assertEquals(5, out.inputReport().getInt(MoeKernels.REPORT_TOKEN));
        assertEquals(3, out.inputReport().getInt(MoeKernels.REPORT_SLOT));
        assertEquals(MoeKernels.REPORT_REPEATED_ID, out.inputReport().getInt(MoeKernels.REPORT_KIND));
        assertEquals(id, out.inputReport().getInt(MoeKernels.REPORT_VALUE));
        assertEquals(-1, out.pairLocation().getInt(5 * c.k() + 3), "a repeat routes nowhere");
        assertTrue(out.pairLocation().getInt(5 * c.k()) >= 0, "its first slot is routed");
    }

    /** A count outside [0, M] read from the buffer is clamped and reported (the host did not see it). */
    @Test
    void packReportsABadCount() {
        MoeShape c = new MoeShape(2, 1, 4, 2, 32, 20, false);
        Tokens tk = randomTokens(c, 20, new SplittableRandom(22));
        for (int count : new int[] {23, -2}) {
            PackOut out = runPack(c, tk, 0, count, 64, false);
            assertEquals(MoeKernels.REPORT_BAD_COUNT, out.inputReport().getInt(MoeKernels.REPORT_KIND));
            assertEquals(count, out.inputReport().getInt(MoeKernels.REPORT_VALUE));
            assertEquals(1, out.inputReport().getInt(MoeKernels.REPORT_FLAG));
            int clamped = Math.max(0, Math.min(count, c.m()));
            checkPack(c, new Tokens(tk.x(), tk.scales(), tk.indices(), clamped), 0, out); // m clamped to [0, M]
        }
    }

    // ---- scatter ----

    /** dispatchRecv of rank d as the puts leave it: region g = group g's rows for d. */
    private Buf recvArea(MoeShape c, List<Tokens> groups, int d) {
        Buf recv = poisoned((long) c.ng() * c.m() * c.rowBytes(), POISON);
        for (int g = 0; g < c.ng(); g++) {
            List<int[]> rows = referenceRows(c, groups.get(g), d);
            for (int j = 0; j < rows.size(); j++) {
                byte[] row = referenceRowBytes(c, groups.get(g), rows.get(j));
                MemorySegment.copy(row, 0, recv.segment(), ValueLayout.JAVA_BYTE,
                        ((long) g * c.m() + j) * c.rowBytes(), row.length);
            }
        }
        return recv;
    }

    @ParameterizedTest(name = "W={0} G={1} L={2} K={3} H={4} M={5} fp8={6} threads={7}")
    @CsvSource({
            "4, 1, 3, 4, 272, 300, true, 256", // four groups, fp8 with scales, more rows than threads
            "4, 2, 4, 6, 96, 60, false, 256", // two groups of two, bf16
            "2, 2, 2, 2, 128, 40, true, 100", // one group, odd block size
            "8, 1, 3, 8, 32, 20, false, 32",
    })
    void scatterMatchesReference(int w, int g, int l, int k, int h, int m, boolean fp8, int threads) {
        MoeShape c = new MoeShape(w, g, l, k, h, m, fp8);
        SplittableRandom r = new SplittableRandom(w * 31 + k);
        int d = w - 1;
        List<Tokens> groups = new ArrayList<>();
        for (int gi = 0; gi < c.ng(); gi++) {
            // group 0 sends nothing (m = 0) when there are several groups
            int count = c.ng() > 1 && gi == 0 ? 0 : gi == 1 ? m : r.nextInt(m + 1);
            groups.add(randomTokens(c, count, r));
        }
        Buf recv = recvArea(c, groups, d);
        long[] signals = new long[c.ng()];
        for (int gi = 0; gi < c.ng(); gi++) {
            signals[gi] = 3L << 32 | referenceRows(c, groups.get(gi), d).size();
        }
        Buf signalBuf = buf(8L * c.ng());
        MemorySegment.copy(signals, 0, signalBuf.segment(), ValueLayout.JAVA_LONG_UNALIGNED, 0, signals.length);
        Buf expertNumTokens = buf(4L * l);
        Buf expertX = poisoned((long) l * c.capacity() * c.xBytes(), POISON);
        Buf expertXScale = poisoned(Math.max(4, 4L * l * c.capacity() * c.s()), POISON);
        Buf expertOrigin = poisoned(4L * l * c.capacity(), POISON);
        Buf pairsFromGroup = poisoned(4L * c.ng(), POISON);
        runner.launch(SCATTER, Grid.of(c.ng(), blocksY, threads), recv, signalBuf, expertNumTokens, expertX, expertXScale,
                expertOrigin, pairsFromGroup, c.xBytes(), c.s(), c.k(), c.rowBytes(), c.m(), c.ng(), c.maxPairs());

        // expected: for each local expert, origin -> (group, token)
        List<Map<Integer, int[]>> expected = new ArrayList<>();
        for (int e = 0; e < l; e++) {
            expected.add(new HashMap<>());
        }
        for (int gi = 0; gi < c.ng(); gi++) {
            List<int[]> rows = referenceRows(c, groups.get(gi), d);
            int pairs = 0;
            for (int[] row : rows) {
                for (int p = 0; p < row[2]; p++) {
                    expected.get(row[3 + p]).put(gi * c.maxPairs() + row[1] + p, new int[] {gi, row[0]});
                }
                pairs += row[2];
            }
            assertEquals(pairs, pairsFromGroup.getInt(gi), "pairsFromGroup[" + gi + "]");
        }
        for (int e = 0; e < l; e++) {
            Map<Integer, int[]> want = expected.get(e);
            int n = expertNumTokens.getInt(e);
            assertEquals(want.size(), n, "expertNumTokens[" + e + "]");
            for (int slot = 0; slot < n; slot++) {
                int origin = expertOrigin.getInt((long) e * c.capacity() + slot);
                int[] source = want.remove(origin);
                assertNotNull(source, "expert " + e + " slot " + slot + ": unexpected or repeated origin " + origin);
                Tokens tk = groups.get(source[0]);
                long row = (long) e * c.capacity() + slot;
                assertArrayEquals(Arrays.copyOfRange(tk.x(), source[1] * c.xBytes(), (source[1] + 1) * c.xBytes()),
                        read(expertX, row * c.xBytes(), c.xBytes()), "expertX of expert " + e + " slot " + slot);
                for (int i = 0; i < c.s(); i++) {
                    assertEquals(tk.scales()[source[1] * c.s() + i], expertXScale.getFloat(row * c.s() + i));
                }
            }
            assertTrue(want.isEmpty(), "expert " + e + " misses origins " + want.keySet());
            long first = (long) e * c.capacity() + n;
            assertPoisoned(expertX, first * c.xBytes(), (long) (c.capacity() - n) * c.xBytes(), POISON,
                    "expertX past the count of expert " + e);
            assertPoisoned(expertOrigin, 4 * first, 4L * (c.capacity() - n), POISON,
                    "expertOrigin past the count of expert " + e);
            if (c.s() > 0) {
                assertPoisoned(expertXScale, 4 * first * c.s(), 4L * (c.capacity() - n) * c.s(), POISON,
                        "expertXScale past the count of expert " + e);
            }
        }
    }

    // ---- gather ----

    @ParameterizedTest(name = "L={0} capacity={1} yBytes={2} chunks={3} threads={4}")
    @CsvSource({
            "3, 200, 256, 4, 256",
            "2, 50, 96, 1, 100",
            "4, 33, 16, 2, 7",
    })
    void gatherMatchesReference(int l, int capacity, int yBytes, int chunks, int threads) {
        SplittableRandom r = new SplittableRandom(l * 7 + capacity);
        int sendRows = l * capacity + 5;
        int[] counts = new int[l];
        for (int e = 0; e < l; e++) {
            counts[e] = e == 0 ? capacity : e == 1 ? 0 : r.nextInt(capacity + 1);
        }
        // distinct destination rows, as expertOrigin holds them
        int[] perm = r.ints(0, sendRows).distinct().limit((long) l * capacity).toArray();
        int[] origin = new int[l * capacity];
        byte[] y = new byte[l * capacity * yBytes];
        r.nextBytes(y);
        Map<Integer, Integer> sourceOf = new HashMap<>();
        for (int e = 0; e < l; e++) {
            for (int s = 0; s < capacity; s++) {
                origin[e * capacity + s] = s < counts[e] ? perm[e * capacity + s] : -1;
                if (s < counts[e]) {
                    sourceOf.put(origin[e * capacity + s], e * capacity + s);
                }
            }
        }
        Buf combineSend = poisoned((long) sendRows * yBytes, POISON);
        runner.launch(GATHER, Grid.of(l, chunks, threads), bytes(y), ints(counts), ints(origin), combineSend, yBytes,
                capacity);
        for (int row = 0; row < sendRows; row++) {
            Integer src = sourceOf.get(row);
            if (src == null) {
                assertPoisoned(combineSend, (long) row * yBytes, yBytes, POISON, "combineSend row " + row);
            } else {
                byte[] want = new byte[yBytes];
                System.arraycopy(y, src * yBytes, want, 0, yBytes);
                assertArrayEquals(want, read(combineSend, (long) row * yBytes, yBytes), "combineSend row " + row);
            }
        }
    }

    // ---- reduce ----

    static int dtypeBytes(int dtype) {
        return dtype == MoeKernels.DTYPE_FP32 ? 4 : dtype == MoeKernels.DTYPE_FP8_E4M3 ? 1 : 2;
    }

    static float loadRef(MemorySegment s, long i, int dtype) {
        return switch (dtype) {
            case MoeKernels.DTYPE_BF16 -> Numerics.bf16ToFloat(s.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i));
            case MoeKernels.DTYPE_FP16 -> Numerics.fp16ToFloat(s.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i));
            case MoeKernels.DTYPE_FP8_E4M3 -> Numerics.fp8e4m3ToFloat(s.get(ValueLayout.JAVA_BYTE, i));
            default -> s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * i);
        };
    }

    static void storeRef(MemorySegment s, long i, int dtype, float v) {
        switch (dtype) {
            case MoeKernels.DTYPE_BF16 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i, Numerics.floatToBf16(v));
            case MoeKernels.DTYPE_FP16 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2 * i, Numerics.floatToFp16(v));
            case MoeKernels.DTYPE_FP8_E4M3 -> s.set(ValueLayout.JAVA_BYTE, i, Numerics.floatToFp8e4m3(v));
            default -> s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * i, v);
        }
    }

    @ParameterizedTest(name = "H={0} K={1} M={2} m={3} y={4} out={5} threads={6}")
    @CsvSource({
            "128, 4, 20, 20, 0, 0, 256", // bf16 -> bf16, m = M
            "96, 3, 30, 17, 2, 1, 256", // fp32 -> fp16
            "64, 8, 10, 0, 1, 0, 256", // m = 0
            "300, 2, 12, 5, 0, 2, 100", // H larger than the block, fp32 out
            "32, 5, 9, 9, 3, 0, 1", // fp8 expert outputs, one thread
    })
    void reduceMatchesReference(int h, int k, int m, int count, int yDtype, int outDtype, int threads) {
        SplittableRandom r = new SplittableRandom(h + k + m);
        int recvRows = 3 * m * k;
        MemorySegment y = arena.allocate((long) recvRows * h * dtypeBytes(yDtype), 64);
        for (long i = 0; i < (long) recvRows * h; i++) {
            storeRef(y, i, yDtype, (float) (r.nextDouble() * 8 - 4));
        }
        int[] loc = new int[m * k];
        float[] weights = new float[m * k];
        for (int i = 0; i < m * k; i++) {
            loc[i] = r.nextInt(5) == 0 ? -1 : r.nextInt(recvRows);
            weights[i] = (float) r.nextDouble();
        }
        Buf out = poisoned((long) m * h * dtypeBytes(outDtype), POISON);
        runner.launch(REDUCE, Grid.of(m, threads), Buf.of(y), ints(loc), floats(weights), ints(new int[] {count}), out,
                h, k, yDtype, outDtype);
        MemorySegment want = arena.allocate((long) m * h * dtypeBytes(outDtype));
        for (int t = 0; t < count; t++) {
            for (int i = 0; i < h; i++) {
                float acc = 0f;
                for (int j = 0; j < k; j++) {
                    if (loc[t * k + j] >= 0) {
                        acc += weights[t * k + j] * loadRef(y, (long) loc[t * k + j] * h + i, yDtype);
                    }
                }
                storeRef(want, (long) t * h + i, outDtype, acc);
            }
        }
        int rowBytes = h * dtypeBytes(outDtype);
        for (int t = 0; t < m; t++) {
            if (t < count) {
                assertArrayEquals(read(Buf.of(want), (long) t * rowBytes, rowBytes),
                        read(out, (long) t * rowBytes, rowBytes), "out row " + t);
            } else {
                assertPoisoned(out, (long) t * rowBytes, rowBytes, POISON, "out row " + t + " (t >= m)");
            }
        }
    }

    // ---- whole rounds ----

    /** The expert: y = bf16(x * (e + 1) / 4), x dequantised with its block scale. */
    static float expert(MoeShape c, byte[] x, long xByte, float scale, int globalExpert) {
        float v = c.fp8() ? Numerics.fp8e4m3ToFloat(x[(int) xByte]) * scale
                : Numerics.bf16ToFloat((short) ((x[(int) xByte] & 0xff) | x[(int) xByte + 1] << 8));
        return v * ((globalExpert + 1) * 0.25f);
    }

    /**
     * Runs one round on W simulated ranks (buffers per rank, puts as copies) and checks every
     * rank's output against sum_k w * expert(x) in float32 (bf16 expert outputs and output).
     */
    private void roundTrip(MoeShape c, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int w = c.w();
        List<Tokens> groups = new ArrayList<>();
        List<float[]> weights = new ArrayList<>();
        for (int g = 0; g < c.ng(); g++) {
            groups.add(randomTokens(c, g == 0 ? c.m() : r.nextInt(c.m() + 1), r));
            float[] wt = new float[c.m() * c.k()];
            for (int i = 0; i < wt.length; i++) {
                wt[i] = (float) r.nextDouble();
            }
            weights.add(wt);
        }
        int yBytes = 2 * c.h();
        int threads = MoeKernels.THREADS;
        PackOut[] packed = new PackOut[w];
        Buf[] recv = new Buf[w];
        Buf[] signals = new Buf[w];
        Buf[] combineRecv = new Buf[w];
        for (int rank = 0; rank < w; rank++) {
            recv[rank] = poisoned((long) c.ng() * c.m() * c.rowBytes(), POISON);
            signals[rank] = buf(8L * c.ng());
            combineRecv[rank] = poisoned((long) w * c.maxPairs() * yBytes, POISON);
        }
        // 1. pack and dispatch puts
        for (int rank = 0; rank < w; rank++) {
            int g = rank / c.g();
            int member = rank % c.g();
            packed[rank] = runPack(c, groups.get(g), member, groups.get(g).count(), threads);
            for (int d = 0; d < w; d++) {
                if (d % c.g() == member) {
                    int rows = packed[rank].sendRows().getInt(d / c.g());
                    long from = (long) (d / c.g()) * c.m() * c.rowBytes();
                    long to = (long) g * c.m() * c.rowBytes();
                    MemorySegment.copy(packed[rank].dispatchSend().segment(), from, recv[d].segment(), to,
                            (long) rows * c.rowBytes());
                    signals[d].setLong(g, 1L << 32 | rows);
                }
            }
        }
        // 2. scatter, expert, gather and combine puts, per destination rank
        for (int d = 0; d < w; d++) {
            Buf expertNumTokens = buf(4L * c.l());
            Buf expertX = poisoned((long) c.l() * c.capacity() * c.xBytes(), POISON);
            Buf expertXScale = poisoned(Math.max(4, 4L * c.l() * c.capacity() * c.s()), POISON);
            Buf expertOrigin = poisoned(4L * c.l() * c.capacity(), POISON);
            Buf pairsFromGroup = poisoned(4L * c.ng(), POISON);
            runner.launch(SCATTER, Grid.of(c.ng(), blocksY, threads), recv[d], signals[d], expertNumTokens, expertX,
                    expertXScale, expertOrigin, pairsFromGroup, c.xBytes(), c.s(), c.k(), c.rowBytes(), c.m(), c.ng(),
                    c.maxPairs());
            byte[] xs = read(expertX, 0, (int) expertX.byteSize());
            Buf expertY = poisoned((long) c.l() * c.capacity() * yBytes, POISON);
            for (int l = 0; l < c.l(); l++) {
                for (int slot = 0; slot < expertNumTokens.getInt(l); slot++) {
                    long row = (long) l * c.capacity() + slot;
                    for (int i = 0; i < c.h(); i++) {
                        float scale = c.s() > 0 ? expertXScale.getFloat(row * c.s() + i / 128) : 1f;
                        long xByte = row * c.xBytes() + (long) i * (c.fp8() ? 1 : 2);
                        expertY.setShort(row * c.h() + i,
                                Numerics.floatToBf16(expert(c, xs, xByte, scale, d * c.l() + l)));
                    }
                }
            }
            Buf combineSend = poisoned((long) c.ng() * c.maxPairs() * yBytes, POISON);
            runner.launch(GATHER, Grid.of(c.l(), 2, threads), expertY, expertNumTokens, expertOrigin, combineSend,
                    yBytes, c.capacity());
            for (int g = 0; g < c.ng(); g++) {
                int pairs = pairsFromGroup.getInt(g);
                for (int s = g * c.g(); s < (g + 1) * c.g(); s++) {
                    MemorySegment.copy(combineSend.segment(), (long) g * c.maxPairs() * yBytes,
                            combineRecv[s].segment(), (long) d * c.maxPairs() * yBytes, (long) pairs * yBytes);
                }
            }
        }
        // 3. reduce on every rank, against the formula
        for (int s = 0; s < w; s++) {
            int g = s / c.g();
            Tokens tk = groups.get(g);
            float[] wt = weights.get(g);
            Buf out = poisoned((long) c.m() * c.h() * 2, POISON);
            runner.launch(REDUCE, Grid.of(c.m(), threads), combineRecv[s], packed[s].pairLocation(), floats(wt),
                    ints(new int[] {tk.count()}), out, c.h(), c.k(), MoeKernels.DTYPE_BF16, MoeKernels.DTYPE_BF16);
            for (int t = 0; t < tk.count(); t++) {
                for (int i = 0; i < c.h(); i++) {
                    float acc = 0f;
                    for (int k = 0; k < c.k(); k++) {
                        int e = tk.indices()[t * c.k() + k];
                        if (e >= 0) {
                            float scale = c.s() > 0 ? tk.scales()[t * c.s() + i / 128] : 1f;
                            long xByte = (long) t * c.xBytes() + (long) i * (c.fp8() ? 1 : 2);
                            float y = Numerics.bf16ToFloat(Numerics.floatToBf16(expert(c, tk.x(), xByte, scale, e)));
                            acc += wt[t * c.k() + k] * y;
                        }
                    }
                    short want = Numerics.floatToBf16(acc);
                    short got = out.getShort((long) t * c.h() + i);
                    if (want != got) {
                        throw new AssertionError("rank " + s + " token " + t + " h " + i + ": want "
                                + Numerics.bf16ToFloat(want) + ", got " + Numerics.bf16ToFloat(got));
                    }
                }
            }
            assertPoisoned(out, (long) tk.count() * c.h() * 2, (long) (c.m() - tk.count()) * c.h() * 2, POISON,
                    "out past m on rank " + s);
        }
    }

    @Test
    void oneRankRoundGivesTheWeightedSumBf16() {
        roundTrip(new MoeShape(1, 1, 4, 3, 128, 40, false), 1);
    }

    @Test
    void oneRankRoundGivesTheWeightedSumFp8WithScales() {
        roundTrip(new MoeShape(1, 1, 6, 4, 256, 30, true), 2);
    }

    @Test
    void fourRankRoundWithGroupsOfTwo() {
        roundTrip(new MoeShape(4, 2, 2, 3, 144, 24, true), 3);
        roundTrip(new MoeShape(4, 1, 3, 4, 64, 20, false), 4);
    }

    @Test
    void severalBlocksPerRankShareTheWorkWithTheSameResults() {
        blocksY = 3;
        packMatchesReference(4, 2, 2, 3, 128, 70, true, 70, 100);
        packMatchesReference(4, 1, 3, 4, 272, 300, true, 300, 256);
        scatterMatchesReference(4, 1, 3, 4, 272, 300, true, 256);
        scatterMatchesReference(2, 2, 2, 2, 128, 40, true, 100);
        roundTrip(new MoeShape(4, 2, 2, 3, 144, 24, true), 5);
        blocksY = 7;
        roundTrip(new MoeShape(4, 1, 3, 4, 64, 20, false), 6);
    }

    @Test
    void blocksWhoseTokensStartPastTheFirstChunkCountTheChunksBefore() {
        // pack's block y takes tokens [m*y/Y, m*(y+1)/Y): with small chunks most blocks count
        // whole chunks before theirs and number a chunk that starts before their first token
        blocksY = 5;
        packMatchesReference(4, 1, 12, 40, 64, 130, false, 130, 256); // chunks of 51 tokens
        packMatchesReference(2, 1, 40, 64, 32, 70, false, 67, 128); // chunks of 32 tokens
        packMatchesReference(1, 1, 8, 8, 32, 50, true, 50, 1); // one token per chunk
        packMatchesReference(3, 1, 2, 2, 48, 30, false, 45, 64); // m clamped to M
        blocksY = 3;
        roundTrip(new MoeShape(2, 1, 40, 64, 32, 70, false), 7);
    }

    /**
     * The CPU backend runs the library's kernels as loops: none of these may fall back to a thread
     * per GPU thread. The joined decode dispatch ({@code AllToAllKernels.dispatch}) is the one
     * exception, past the size HotSpot compiles (docs/kernels-in-java.md, "How kernels run on the JVM").
     */
    @ParameterizedTest(name = "{0}.{1}")
    @CsvSource({"MoeKernels, pack", "MoeKernels, scatter", "MoeKernels, gather", "MoeKernels, reduce",
            "AllToAllKernels, dispatchSend", "AllToAllKernels, dispatchRecv", "AllToAllKernels, combineSend",
            "AllToAllKernels, combineRecv"})
    void everyLibraryKernelHasALoopForm(String owner, String name) {
        Class<?> c = owner.equals("MoeKernels") ? MoeKernels.class : AllToAllKernels.class;
        assertEquals(java.util.Optional.empty(),
                CpuKernelRunner.loopFormRefusal(new Kernel(c, name)), "why it has none");
    }

    @Test
    void kernelsHaveTheDocumentedSignatures() {
        assertEquals(20, PACK.method().getParameterCount());
        assertEquals(15, SCATTER.method().getParameterCount());
        assertEquals(7, GATHER.method().getParameterCount());
        assertEquals(10, REDUCE.method().getParameterCount());
    }
}
