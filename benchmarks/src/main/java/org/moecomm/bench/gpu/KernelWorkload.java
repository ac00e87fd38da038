package org.moecomm.bench.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.protocol.BufferLayout;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Numerics;

/**
 * The inputs of one rank's four MoE kernels at one shape, built on the host as a real round
 * would leave them (docs/protocol.md), and the expected outputs they are checked against.
 *
 * <p>The simulated rank is rank 0 of {@code W}; every buffer is one rank's view:
 * <ul>
 *   <li>pack: this rank's tokens ({@code M} valid), each routed to {@code K} distinct experts
 *       drawn uniformly (seeded), fp8/bf16 token bytes random, scales in [0.5, 2);</li>
 *   <li>scatter: the receive area filled as if every source group's member had packed its own
 *       random tokens (its own seed; group 0's member is this rank, whose rows are its own) and
 *       put the region addressed to this rank; signals say {@code 1 << 32 | rows};</li>
 *   <li>gather: the expert output rows of every received pair (random bits);</li>
 *   <li>reduce: this rank's combine receive area filled, for every rank {@code d}, with one row
 *       per pair this rank sent to {@code d} (finite random values of the expert output dtype),
 *       random weights in [0, 1), and the pair locations pack produced.</li>
 * </ul>
 * The expected outputs come from a host re-implementation of each step written from the
 * protocol (not from the kernels): a buffer that starts filled with {@link #POISON} must end up
 * equal to the expected one bit for bit (pack, reduce); scatter's slot order is free, so its
 * rows are checked through their recorded origins.
 *
 * <p>Host memory is native (an arena closed by {@link #close()}); at DeepSeek-V3 sizes and 4096
 * tokens it is about 1.5 GB.
 */
final class KernelWorkload implements AutoCloseable {
    /** Byte every output buffer is filled with before a checked run. */
    static final byte POISON = (byte) 0xFF;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** One rank's dispatch inputs. */
    record RankInput(int[] indices, MemorySegment x, float[] xScale) {
    }

    final String preset;
    final MoeConfig config;
    final BufferLayout layout;
    final int rank = 0;
    final int member;
    final int m;
    final int w;
    final int g;
    final int ng;
    final int e;
    final int l;
    final int k;
    final int kd;
    final int h;
    final int s;
    final int xBytes;
    final int rowBytes;
    final int yBytes;
    final int outBytes;
    final int ppr;
    final int capacity;
    final int yDtype;
    final int outDtype;

    private final Arena arena = Arena.ofShared();

    // ---- this rank's inputs ----
    final RankInput own;
    final float[] weights;

    // ---- pack: expected outputs from buffers filled with POISON ----
    final MemorySegment packSend;
    final int[] packSendRows;
    final int[] packPairLocation;
    /** Rows and pairs this rank's tokens send to each destination rank. */
    final int[] rowsTo;
    final int[] pairsTo;

    // ---- scatter ----
    /** dispatchRecv: region g = the rows group g's member sent to this rank. */
    final MemorySegment dispatchRecv;
    final int[] rowsFrom;
    final int[] pairsFrom;
    final long[] dispatchSignals;
    /** For group g and pair q of its region: the row, and the local expert. */
    final int[][] pairRow;
    final int[][] pairExpert;
    /** Rows every local expert receives. */
    final int[] expertCount;

    // ---- gather: expert l's rows 0..expertCount[l]-1, compact from row expertYFirst[l] ----
    final MemorySegment expertY;
    final long[] expertYFirst;

    // ---- reduce: rank d's rows 0..pairsTo[d]-1, compact from row combineFirst[d] ----
    final MemorySegment combineRecv;
    final long[] combineFirst;
    final MemorySegment reduceOut;

    KernelWorkload(String preset, MoeConfig config, long seed) {
        this.preset = preset;
        this.config = config;
        this.layout = new BufferLayout(config);
        this.m = config.maxTokensPerRank();
        this.w = config.worldSize();
        this.g = config.groupSize();
        this.ng = config.numGroups();
        this.e = config.numExperts();
        this.l = config.expertsPerRank();
        this.k = config.topK();
        this.kd = config.maxPairsPerRank();
        this.h = config.hidden();
        this.s = config.scalesPerToken();
        this.member = rank % g;
        this.xBytes = layout.xBytes();
        this.rowBytes = layout.rowBytes();
        this.yBytes = layout.yBytes();
        this.outBytes = config.outType().bytes();
        this.ppr = layout.pairsPerRegion();
        this.capacity = config.expertCapacity();
        this.yDtype = config.expertOutType().kernelCode();
        this.outDtype = config.outType().kernelCode();
        try {
            this.own = rankInput(rank, seed, arena);
            SplittableRandom r = new SplittableRandom(mix(seed, -1));
            this.weights = new float[m * k];
            for (int i = 0; i < weights.length; i++) {
                weights[i] = (float) r.nextDouble();
            }

            // pack, from buffers filled with POISON (an int of POISON bytes is -1)
            this.packSend = arena.allocate(sendBytes(), 16).fill(POISON);
            this.packSendRows = new int[ng];
            Arrays.fill(packSendRows, -1);
            this.packPairLocation = new int[m * k];
            Arrays.fill(packPairLocation, -1);
            this.rowsTo = new int[w];
            this.pairsTo = new int[w];
            for (int d = 0; d < w; d++) {
                boolean serves = d % g == member;
                int[] rp = packDestination(own, d, serves ? packSend : null, (long) (d / g) * m, packPairLocation);
                rowsTo[d] = rp[0];
                pairsTo[d] = rp[1];
                if (serves) {
                    packSendRows[d / g] = rp[0];
                }
            }

            // dispatch receive: what every group's member packed for this rank
            this.dispatchRecv = arena.allocate(sendBytes(), 16);
            this.rowsFrom = new int[ng];
            this.pairsFrom = new int[ng];
            this.dispatchSignals = new long[ng];
            for (int grp = 0; grp < ng; grp++) {
                int peer = grp * g + member;
                try (Arena tmp = Arena.ofConfined()) {
                    RankInput in = peer == rank ? own : rankInput(peer, seed, tmp);
                    int[] rp = packDestination(in, rank, dispatchRecv, (long) grp * m, null);
                    rowsFrom[grp] = rp[0];
                    pairsFrom[grp] = rp[1];
                    dispatchSignals[grp] = (1L << 32) | rp[0];
                }
            }
            this.pairRow = new int[ng][];
            this.pairExpert = new int[ng][];
            this.expertCount = new int[l];
            int metaOffset = layout.metaOffset();
            for (int grp = 0; grp < ng; grp++) {
                pairRow[grp] = new int[pairsFrom[grp]];
                pairExpert[grp] = new int[pairsFrom[grp]];
                for (int j = 0; j < rowsFrom[grp]; j++) {
                    long meta = ((long) grp * m + j) * rowBytes + metaOffset;
                    int base = dispatchRecv.get(INT, meta);
                    int n = dispatchRecv.get(INT, meta + 4);
                    for (int p = 0; p < n; p++) {
                        int local = dispatchRecv.get(INT, meta + 8 + 4L * p);
                        pairRow[grp][base + p] = j;
                        pairExpert[grp][base + p] = local;
                        expertCount[local]++;
                    }
                }
            }

            // expert outputs of the received pairs (gather copies bits: any bits do)
            this.expertYFirst = new long[l + 1];
            for (int i = 0; i < l; i++) {
                expertYFirst[i + 1] = expertYFirst[i] + expertCount[i];
            }
            this.expertY = arena.allocate(Math.max(1, expertYFirst[l] * yBytes), 16);
            fillRandom(expertY, new SplittableRandom(mix(seed, -2)));

            // combine receive: one row per pair this rank sent to d, finite values
            this.combineFirst = new long[w + 1];
            for (int d = 0; d < w; d++) {
                combineFirst[d + 1] = combineFirst[d] + pairsTo[d];
            }
            this.combineRecv = arena.allocate(Math.max(1, combineFirst[w] * yBytes), 16);
            fillFinite(combineRecv, combineFirst[w] * h, config.expertOutType(), new SplittableRandom(mix(seed, -3)));

            this.reduceOut = arena.allocate((long) m * h * outBytes, 16);
            referenceReduce();
        } catch (RuntimeException | Error ex) {
            arena.close();
            throw ex;
        }
    }

    // ---- sizes of the device buffers (docs/protocol.md) ----

    long xBytesTotal() {
        return (long) m * xBytes;
    }

    /** xScale {@code [M][S]} float32 (16 bytes when there are no scales: the kernels never read it then). */
    long xScaleBytes() {
        return Math.max(16, 4L * m * s);
    }

    /** dispatchSend and dispatchRecv: {@code [NG][M]} rows. */
    long sendBytes() {
        return (long) ng * m * rowBytes;
    }

    long expertXBytes() {
        return (long) l * capacity * xBytes;
    }

    long expertXScaleBytes() {
        return Math.max(16, 4L * l * capacity * s);
    }

    long expertYBytes() {
        return (long) l * capacity * yBytes;
    }

    /** combineSend: {@code [NG][M*Kd]} rows of yBytes. */
    long combineSendBytes() {
        return (long) ng * ppr * yBytes;
    }

    /** combineRecv: {@code [W][M*Kd]} rows of yBytes. */
    long combineRecvBytes() {
        return (long) w * ppr * yBytes;
    }

    long outBytesTotal() {
        return (long) m * h * outBytes;
    }

    // ---- bytes each kernel reads and writes (what achieved GB/s is computed from) ----

    static final String PACK_BYTES = "M*K*4 (indices) + M*K*4 (pairLocation) + R*(xBytes + 4*S) (tokens and scales read)"
            + " + R*rowBytes (rows written) + 4*NG (sendRows); R = rows sent";
    static final String SCATTER_BYTES = "R*align16(4*(2+K)) (meta read) + P*(xBytes + 4*S) (tokens and scales read)"
            + " + P*(xBytes + 4*S + 4) (expert rows, scales, origins written) + 8*NG + 4*NG; R, P = rows, pairs received";
    static final String GATHER_BYTES = "P*(yBytes + 4) (expert rows and origins read) + P*yBytes (rows written) + 4*L;"
            + " P = pairs received";
    static final String REDUCE_BYTES = "M*K*8 (locations, weights) + M*K*yBytes (combine rows read)"
            + " + M*H*outBytes (out written)";

    long packBytes() {
        long rows = 0;
        for (int grp = 0; grp < ng; grp++) {
            rows += Math.max(0, packSendRows[grp]);
        }
        return 8L * m * k + rows * (xBytes + 4L * s) + rows * rowBytes + 4L * ng;
    }

    long scatterBytes() {
        long rows = Arrays.stream(rowsFrom).asLongStream().sum();
        long pairs = Arrays.stream(pairsFrom).asLongStream().sum();
        return rows * BufferLayout.align16(4 * (2 + k)) + pairs * (xBytes + 4L * s) + pairs * (xBytes + 4L * s + 4)
                + 12L * ng;
    }

    long gatherBytes() {
        long pairs = Arrays.stream(pairsFrom).asLongStream().sum();
        return pairs * (yBytes + 4L) + pairs * yBytes + 4L * l;
    }

    long reduceBytes() {
        long valid = Arrays.stream(packPairLocation).filter(v -> v >= 0).count();
        return 8L * m * k + valid * yBytes + (long) m * h * outBytes;
    }

    // ---- construction ----

    private static long mix(long seed, long rank) {
        long z = seed * 0x9E3779B97F4A7C15L + rank * 0xBF58476D1CE4E5B9L + 0x94D049BB133111EBL;
        z = (z ^ (z >>> 31)) * 0xD6E8FEB86659FD93L;
        return z ^ (z >>> 29);
    }

    /** A rank's tokens: K distinct uniformly random experts each, random token bytes, scales in [0.5, 2). */
    private RankInput rankInput(int r, long seed, Arena where) {
        SplittableRandom rnd = new SplittableRandom(mix(seed, r));
        int[] indices = new int[m * k];
        for (int t = 0; t < m; t++) {
            int n = 0;
            while (n < k) {
                int id = rnd.nextInt(e);
                boolean dup = false;
                for (int j = 0; j < n; j++) {
                    dup |= indices[t * k + j] == id;
                }
                if (!dup) {
                    indices[t * k + n++] = id;
                }
            }
        }
        MemorySegment x = where.allocate(Math.max(1, (long) m * xBytes), 16);
        fillRandom(x, rnd);
        float[] scales = new float[m * s];
        for (int i = 0; i < scales.length; i++) {
            scales[i] = (float) (0.5 + 1.5 * rnd.nextDouble());
        }
        return new RankInput(indices, x, scales);
    }

    /**
     * What pack does for destination {@code d} (docs/protocol.md, step 1): numbers the tokens
     * routed to d (rows) and their pairs in token order; writes the pair locations into
     * {@code loc} when given (and -1 for ids routed nowhere when d is 0), and the rows into
     * {@code out} from row {@code firstRow} when given.
     *
     * @return {rows, pairs}
     */
    private int[] packDestination(RankInput in, int d, MemorySegment out, long firstRow, int[] loc) {
        int first = d * l;
        int rows = 0;
        int pairs = 0;
        for (int t = 0; t < m; t++) {
            int n = 0;
            int location = d * ppr + pairs;
            for (int kk = 0; kk < k; kk++) {
                int id = in.indices()[t * k + kk];
                int local = id - first;
                if (local >= 0 && local < l) {
                    n++;
                    if (loc != null) {
                        loc[t * k + kk] = location++;
                    }
                } else if (loc != null && d == 0 && (id < 0 || id >= e)) {
                    loc[t * k + kk] = -1;
                }
            }
            if (n > 0) {
                if (out != null) {
                    writeRow(in, t, out, (firstRow + rows) * rowBytes, pairs, n, first);
                }
                rows++;
            }
            pairs += n;
        }
        return new int[] {rows, pairs};
    }

    /** One dispatch row: token bytes, scales then zeros to 16, meta (pairBase, numLocal, locals in k order) then zeros. */
    private void writeRow(RankInput in, int t, MemorySegment out, long rowByte, int pairBase, int n, int first) {
        MemorySegment.copy(in.x(), (long) t * xBytes, out, rowByte, xBytes);
        long scale = rowByte + layout.scaleOffset();
        int scaleWords = BufferLayout.align16(4 * s) / 4;
        for (int i = 0; i < scaleWords; i++) {
            out.set(FLOAT, scale + 4L * i, i < s ? in.xScale()[t * s + i] : 0f);
        }
        long meta = rowByte + layout.metaOffset();
        int metaWords = BufferLayout.align16(4 * (2 + k)) / 4;
        for (int i = 0; i < metaWords; i++) {
            out.set(INT, meta + 4L * i, 0);
        }
        out.set(INT, meta, pairBase);
        out.set(INT, meta + 4, n);
        int p = 0;
        for (int kk = 0; kk < k; kk++) {
            int local = in.indices()[t * k + kk] - first;
            if (local >= 0 && local < l) {
                out.set(INT, meta + 8 + 4L * p++, local);
            }
        }
    }

    static void fillRandom(MemorySegment seg, SplittableRandom r) {
        long n = seg.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            seg.set(LONG, i, r.nextLong());
        }
        for (; i < n; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    /** {@code count} finite non-zero values of {@code dtype}, magnitudes in [1/8, 32). */
    static void fillFinite(MemorySegment seg, long count, DType dtype, SplittableRandom r) {
        for (long i = 0; i < count; i++) {
            switch (dtype) {
                case BF16 -> {
                    int bits = r.nextInt();
                    // sign (bit 15) and mantissa (bits 0-6) random, exponent 124..131
                    int v = (bits & 0x807F) | ((124 + ((bits >>> 8) & 7)) << 7);
                    seg.set(SHORT, 2 * i, (short) v);
                }
                case FP16 -> seg.set(SHORT, 2 * i, Numerics.floatToFp16(value(r)));
                case FP32 -> seg.set(FLOAT, 4 * i, value(r));
                default -> throw new IllegalArgumentException("expert output dtype " + dtype);
            }
        }
    }

    private static float value(SplittableRandom r) {
        float mag = (float) Math.scalb(1.0 + r.nextDouble(), r.nextInt(-3, 5));
        return r.nextBoolean() ? mag : -mag;
    }

    /** reduce (step 4): out[t][h] = sum over k of w * y, float32, increasing k, separate multiply and add. */
    private void referenceReduce() {
        float[] acc = new float[h];
        for (int t = 0; t < m; t++) {
            Arrays.fill(acc, 0f);
            for (int kk = 0; kk < k; kk++) {
                int loc = packPairLocation[t * k + kk];
                if (loc < 0) {
                    continue;
                }
                float wt = weights[t * k + kk];
                int d = loc / ppr;
                int q = loc % ppr;
                long row = (combineFirst[d] + q) * yBytes;
                for (int i = 0; i < h; i++) {
                    float v = load(combineRecv, row, i, yDtype);
                    float prod = wt * v;
                    acc[i] = acc[i] + prod;
                }
            }
            long o = (long) t * h * outBytes;
            for (int i = 0; i < h; i++) {
                store(reduceOut, o, i, outDtype, acc[i]);
            }
        }
    }

    private static float load(MemorySegment seg, long rowByte, int i, int dtype) {
        return switch (dtype) {
            case 0 -> Numerics.bf16ToFloat(seg.get(SHORT, rowByte + 2L * i));
            case 1 -> Numerics.fp16ToFloat(seg.get(SHORT, rowByte + 2L * i));
            case 2 -> seg.get(FLOAT, rowByte + 4L * i);
            default -> throw new IllegalArgumentException("dtype code " + dtype);
        };
    }

    private static void store(MemorySegment seg, long rowByte, int i, int dtype, float v) {
        switch (dtype) {
            case 0 -> seg.set(SHORT, rowByte + 2L * i, Numerics.floatToBf16(v));
            case 1 -> seg.set(SHORT, rowByte + 2L * i, Numerics.floatToFp16(v));
            case 2 -> seg.set(FLOAT, rowByte + 4L * i, v);
            default -> throw new IllegalArgumentException("dtype code " + dtype);
        }
    }

    // ---- filling device buffers ----

    /** This rank's pack inputs. */
    void uploadPackInputs(BenchDevice dev, Buf x, Buf xScale, Buf indices, Buf numTokens) {
        dev.upload(x, own.x());
        if (s > 0) {
            dev.upload(xScale, MemorySegment.ofArray(own.xScale()));
        }
        dev.upload(indices, MemorySegment.ofArray(own.indices()));
        dev.upload(numTokens, MemorySegment.ofArray(new int[] {m}));
    }

    void uploadScatterInputs(BenchDevice dev, Buf dispatchRecvBuf, Buf signals) {
        dev.upload(dispatchRecvBuf, dispatchRecv);
        dev.upload(signals, MemorySegment.ofArray(dispatchSignals));
    }

    /** The state scatter leaves, with each expert's slots in origin order (one of the orders scatter may produce). */
    void uploadScatterState(BenchDevice dev, Buf expertNumTokens, Buf expertOrigin) {
        int[] origin = new int[l * capacity];
        Arrays.fill(origin, -1);
        int[] next = new int[l];
        for (int grp = 0; grp < ng; grp++) {
            for (int q = 0; q < pairsFrom[grp]; q++) {
                int local = pairExpert[grp][q];
                origin[local * capacity + next[local]++] = grp * ppr + q;
            }
        }
        dev.upload(expertNumTokens, MemorySegment.ofArray(expertCount));
        dev.upload(expertOrigin, MemorySegment.ofArray(origin));
    }

    /** The expert output rows of every received pair (gather's input). */
    void uploadExpertY(BenchDevice dev, Buf expertYBuf) {
        for (int i = 0; i < l; i++) {
            long n = (long) expertCount[i] * yBytes;
            if (n > 0) {
                dev.upload(expertYBuf.slice((long) i * capacity * yBytes, n), expertY.asSlice(expertYFirst[i] * yBytes, n));
            }
        }
    }

    /** Reduce's inputs: the combine rows every rank sent back, weights, and the pair locations pack produced. */
    void uploadReduceInputs(BenchDevice dev, Buf combineRecvBuf, Buf pairLocation, Buf weightsBuf) {
        for (int d = 0; d < w; d++) {
            long n = (long) pairsTo[d] * yBytes;
            if (n > 0) {
                dev.upload(combineRecvBuf.slice((long) d * ppr * yBytes, n), combineRecv.asSlice(combineFirst[d] * yBytes, n));
            }
        }
        dev.upload(pairLocation, MemorySegment.ofArray(packPairLocation));
        dev.upload(weightsBuf, MemorySegment.ofArray(weights));
    }

    // ---- checks: null when the output is right, else what is wrong (the first difference) ----

    /** pack's three outputs, each whole buffer bit for bit (they were filled with POISON before the run). */
    String checkPack(BenchDevice dev, Buf send, Buf sendRows, Buf pairLocation) {
        try (Arena a = Arena.ofConfined()) {
            int[] rows = downloadInts(dev, a, sendRows, ng);
            for (int grp = 0; grp < ng; grp++) {
                if (rows[grp] != packSendRows[grp]) {
                    return "sendRows[" + grp + "] = " + rows[grp] + ", expected " + packSendRows[grp];
                }
            }
            int[] loc = downloadInts(dev, a, pairLocation, m * k);
            for (int i = 0; i < loc.length; i++) {
                if (loc[i] != packPairLocation[i]) {
                    return "pairLocation[" + i / k + "][" + i % k + "] = " + loc[i] + ", expected " + packPairLocation[i];
                }
            }
            MemorySegment got = a.allocate(sendBytes(), 16);
            dev.download(got, send);
            long at = got.mismatch(packSend);
            if (at >= 0) {
                return "dispatchSend differs at " + describeSendByte(at) + ": " + hexByte(got, at) + ", expected "
                        + hexByte(packSend, at);
            }
        }
        return null;
    }

    /**
     * scatter: every expert's count, every group's pair count, and every filled slot: its origin
     * names a pair of this expert not seen before, its token and scales equal that pair's row.
     */
    String checkScatter(BenchDevice dev, Buf expertNumTokens, Buf expertX, Buf expertXScale, Buf expertOrigin,
                        Buf pairsFromGroup) {
        try (Arena a = Arena.ofConfined()) {
            int[] pfg = downloadInts(dev, a, pairsFromGroup, ng);
            for (int grp = 0; grp < ng; grp++) {
                if (pfg[grp] != pairsFrom[grp]) {
                    return "pairsFromGroup[" + grp + "] = " + pfg[grp] + ", expected " + pairsFrom[grp];
                }
            }
            int[] counts = downloadInts(dev, a, expertNumTokens, l);
            for (int i = 0; i < l; i++) {
                if (counts[i] != expertCount[i]) {
                    return "expertNumTokens[" + i + "] = " + counts[i] + ", expected " + expertCount[i];
                }
            }
            boolean[][] seen = new boolean[ng][];
            for (int grp = 0; grp < ng; grp++) {
                seen[grp] = new boolean[pairsFrom[grp]];
            }
            int scaleOffset = layout.scaleOffset();
            for (int i = 0; i < l; i++) {
                int n = counts[i];
                if (n == 0) {
                    continue;
                }
                try (Arena ea = Arena.ofConfined()) {
                    int[] origins = downloadInts(dev, ea, expertOrigin.slice(4L * i * capacity, 4L * n), n);
                    MemorySegment xs = ea.allocate((long) n * xBytes, 16);
                    dev.download(xs, expertX.slice((long) i * capacity * xBytes, (long) n * xBytes));
                    MemorySegment sc = null;
                    if (s > 0) {
                        sc = ea.allocate(4L * n * s, 16);
                        dev.download(sc, expertXScale.slice(4L * i * capacity * s, 4L * n * s));
                    }
                    for (int slot = 0; slot < n; slot++) {
                        int o = origins[slot];
                        String where = "expert " + i + " slot " + slot + " (origin " + o + ")";
                        int grp = o < 0 ? -1 : o / ppr;
                        int q = o < 0 ? -1 : o % ppr;
                        if (grp < 0 || grp >= ng || q >= pairsFrom[grp]) {
                            return where + ": no such pair was received";
                        }
                        if (pairExpert[grp][q] != i) {
                            return where + ": that pair goes to expert " + pairExpert[grp][q];
                        }
                        if (seen[grp][q]) {
                            return where + ": pair placed twice";
                        }
                        seen[grp][q] = true;
                        long src = ((long) grp * m + pairRow[grp][q]) * rowBytes;
                        long diff = MemorySegment.mismatch(xs, (long) slot * xBytes, (long) (slot + 1) * xBytes,
                                dispatchRecv, src, src + xBytes);
                        if (diff >= 0) {
                            return where + ": token byte " + diff + " differs from group " + grp + " row "
                                    + pairRow[grp][q];
                        }
                        if (sc != null) {
                            long sSrc = src + scaleOffset;
                            diff = MemorySegment.mismatch(sc, 4L * slot * s, 4L * (slot + 1) * s, dispatchRecv, sSrc,
                                    sSrc + 4L * s);
                            if (diff >= 0) {
                                return where + ": scale " + diff / 4 + " differs from group " + grp + " row "
                                        + pairRow[grp][q];
                            }
                        }
                    }
                }
            }
        }
        return null;
    }

    /**
     * gather: with the expert counts and origins the device holds (scatter's, any slot order),
     * every received pair's combine row is its expert output row, bit for bit.
     */
    String checkGather(BenchDevice dev, Buf expertNumTokens, Buf expertOrigin, Buf combineSend) {
        try (Arena a = Arena.ofConfined()) {
            int[] counts = downloadInts(dev, a, expertNumTokens, l);
            if (!Arrays.equals(counts, expertCount)) {
                return "gather's input expertNumTokens is not the expected one: " + Arrays.toString(counts);
            }
            int[][] slotOf = new int[ng][];
            for (int grp = 0; grp < ng; grp++) {
                slotOf[grp] = new int[pairsFrom[grp]];
                Arrays.fill(slotOf[grp], -1);
            }
            int[] origins = downloadInts(dev, a, expertOrigin, l * capacity);
            for (int i = 0; i < l; i++) {
                for (int slot = 0; slot < counts[i]; slot++) {
                    int o = origins[i * capacity + slot];
                    int grp = o < 0 ? -1 : o / ppr;
                    int q = o < 0 ? -1 : o % ppr;
                    if (grp < 0 || grp >= ng || q >= pairsFrom[grp] || slotOf[grp][q] >= 0) {
                        return "gather's input expertOrigin is not a placement of the received pairs (expert " + i
                                + " slot " + slot + ": " + o + ")";
                    }
                    slotOf[grp][q] = i * capacity + slot;
                }
            }
            for (int grp = 0; grp < ng; grp++) {
                int n = pairsFrom[grp];
                if (n == 0) {
                    continue;
                }
                try (Arena ga = Arena.ofConfined()) {
                    MemorySegment got = ga.allocate((long) n * yBytes, 16);
                    dev.download(got, combineSend.slice((long) grp * ppr * yBytes, (long) n * yBytes));
                    for (int q = 0; q < n; q++) {
                        int ls = slotOf[grp][q];
                        int i = ls / capacity;
                        int slot = ls % capacity;
                        long src = (expertYFirst[i] + slot) * yBytes;
                        long diff = MemorySegment.mismatch(got, (long) q * yBytes, (long) (q + 1) * yBytes, expertY, src,
                                src + yBytes);
                        if (diff >= 0) {
                            return "combineSend group " + grp + " row " + q + " byte " + diff + " is not expert " + i
                                    + " slot " + slot + "'s output";
                        }
                    }
                }
            }
        }
        return null;
    }

    /** reduce: the whole output bit for bit. */
    String checkReduce(BenchDevice dev, Buf out) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment got = a.allocate(outBytesTotal(), 16);
            dev.download(got, out);
            long at = got.mismatch(reduceOut);
            if (at >= 0) {
                long elem = at / outBytes;
                long t = elem / h;
                long i = elem % h;
                return String.format(Locale.ROOT, "out[%d][%d] = %s, expected %s", t, i, element(got, elem),
                        element(reduceOut, elem));
            }
        }
        return null;
    }

    private String element(MemorySegment seg, long elem) {
        return switch (outDtype) {
            case 0 -> String.format(Locale.ROOT, "0x%04x (%s)", seg.get(SHORT, 2 * elem) & 0xffff,
                    Numerics.bf16ToFloat(seg.get(SHORT, 2 * elem)));
            case 1 -> String.format(Locale.ROOT, "0x%04x (%s)", seg.get(SHORT, 2 * elem) & 0xffff,
                    Numerics.fp16ToFloat(seg.get(SHORT, 2 * elem)));
            default -> String.valueOf(seg.get(FLOAT, 4 * elem));
        };
    }

    private String describeSendByte(long at) {
        long row = at / rowBytes;
        long in = at % rowBytes;
        String part = in < layout.scaleOffset() ? "token byte " + in
                : in < layout.metaOffset() ? "scale byte " + (in - layout.scaleOffset())
                : "meta byte " + (in - layout.metaOffset());
        return "region " + row / m + " row " + row % m + " " + part;
    }

    private static String hexByte(MemorySegment seg, long at) {
        return String.format(Locale.ROOT, "0x%02x", seg.get(ValueLayout.JAVA_BYTE, at) & 0xff);
    }

    private static int[] downloadInts(BenchDevice dev, Arena a, Buf src, int n) {
        if (n == 0) {
            return new int[0];
        }
        MemorySegment seg = a.allocate(4L * n, 16);
        dev.download(seg, src);
        return seg.toArray(ValueLayout.JAVA_INT);
    }

    @Override
    public void close() {
        arena.close();
    }

    @Override
    public String toString() {
        return preset + " " + config;
    }
}
