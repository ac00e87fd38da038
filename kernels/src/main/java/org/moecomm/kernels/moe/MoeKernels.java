package org.moecomm.kernels.moe;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.LaunchBounds;
import org.moecomm.kernels.api.Numerics;
import org.moecomm.kernels.api.Specialize;

/**
 * The four kernels of a dispatch/combine round (see docs/protocol.md, which defines every
 * buffer named here): {@link #pack} and {@link #scatter} for dispatch, {@link #gather} and
 * {@link #reduce} for combine.
 *
 * <p>Launch with {@link #THREADS} threads per block; any block size from 1 to
 * {@link #MAX_THREADS} works (the scans keep one entry per thread in shared memory).
 * Rows are copied by teams of whole warps, a power of two wide ({@link #teamShift}: one warp per row
 * when a block has many, the whole block on a decode block's one row) with 16-byte copies, so
 * token byte counts ({@code xBytes}, {@code yBytes}) and {@code rowBytes} must be multiples
 * of 16 (they are: H % 16 == 0). A quantising dispatch's tokens and scales are written by
 * {@link #finishShare} instead (eight threads per block of 128 values).
 *
 * <p>The kernels are written for the bytecode-to-PTX compiler: int/long/float arithmetic,
 * {@link Buf} accessors, context methods, block-shared arrays of constant size, loops and
 * ifs, and static helpers of the class (inlined). Every loop that contains a barrier has a bound
 * that is the same for all threads of the block.
 */
public final class MoeKernels {
    /** Kernel code of bf16 (as {@code DType.BF16.kernelCode()}). */
    public static final int DTYPE_BF16 = 0;
    /** Kernel code of fp16. */
    public static final int DTYPE_FP16 = 1;
    /** Kernel code of fp32. */
    public static final int DTYPE_FP32 = 2;
    /** Kernel code of fp8-e4m3. */
    public static final int DTYPE_FP8_E4M3 = 3;

    /** Threads per block to launch every kernel with. */
    public static final int THREADS = 256;
    /** Most threads per block the kernels accept: the size of the per-thread shared arrays. */
    public static final int MAX_THREADS = 256;
    /** Most slots per token ({@code topK}): pack keeps a token's routing as bits of a long. */
    public static final int MAX_TOP_K = 64;
    /** Expert ids pack stages in shared memory per chunk of tokens ({@code topK} per token). */
    static final int PACK_IDS = 2048;
    /** (row, pair) entries {@link #scatter} keeps in shared memory per chunk of rows. */
    static final int SCATTER_PAIRS = 2048;
    /** Most pairs of one source group the source-order receive takes ({@code M * Kd}): its list in shared memory. */
    public static final int ORDERED_PAIRS = 1024;
    /** Most local experts the source-order receive counts ({@code L}): its counters in shared memory. */
    public static final int ORDERED_EXPERTS = 1024;
    /** Most source groups the source-order receive orders ({@code NG}): their counts in shared memory. */
    public static final int ORDERED_GROUPS = 256;
    /** Most rows per source group (M) of the source-order receive: a pair note's row is 16 bits. */
    public static final int ORDERED_ROWS = 8;
    /** Values that share one float32 scale in fp8 tokens (and in a quantising dispatch's rows). */
    public static final int SCALE_BLOCK = 128;
    /** Threads that quantise one block of {@link #SCALE_BLOCK} values together ({@link #finishShare}). */
    static final int QUANT_LANES = 8;
    /** Flag of {@link #packRows}'s result: its rows (the low 32 bits) are all of the destination's. */
    static final long PACK_ALL_ROWS = 1L << 32;
    /** Shift of {@link #packRows}'s pair count in its result (above {@link #PACK_ALL_ROWS}). */
    static final int PACK_PAIRS_SHIFT = 33;
    /** Longs of x (four 16-bit values each) one of them loads per block: 4, so 16 values. */
    static final int QUANT_LOADS = SCALE_BLOCK / (4 * QUANT_LANES);

    /** log2 of {@link KernelContext#WARP_SIZE} (32). */
    static final int WARP_SHIFT = 5;

    private MoeKernels() {
    }

    /**
     * Dispatch, step 1: grid {@code W x Y} blocks, {@code x} = destination rank {@code d}.
     * Numbers the tokens routed to {@code d} (rows {@code j}) and their pairs ({@code q}) in
     * token order, writes {@code pairLocation[t][k] = d*M*Kd + q} for every {@code k} routed to
     * {@code d} (block 0 also writes -1 for ids that route nowhere), and, when this member
     * serves {@code d}, writes the rows into {@code dispatchSend} region {@code d/G} and their
     * count into {@code sendRows[d/G]}.
     *
     * <p>The {@code Y} blocks of one destination split the m tokens into {@code Y} contiguous
     * ranges, block {@code y} taking {@code [m*y/Y, m*(y+1)/Y)}: it counts the rows and pairs of
     * the whole chunks of tokens before its range (reading only their ids, no scan), numbers the
     * chunks that hold its tokens, and writes the pair locations and copies the rows of its own
     * tokens; block {@code Y - 1} writes
     * {@code sendRows}. One block per destination would leave most of a large GPU idle, since a
     * destination's rows are megabytes.
     *
     * <p>Two duties that save dispatch a launch each (they cost next to nothing here): with
     * {@code fixedTokens >= 0} that is m (the host knows it) and block (0, 0) writes it to
     * {@code numTokens} for the kernels after pack, so no copy from the host is needed; with
     * {@code checkIds != 0} the grid checks a count read from {@code numTokens} on the device and,
     * when it is in range, the ids of the m tokens (see {@link #report}).
     *
     * @param numTokens int32 {@code [1]}: m, the valid tokens, clamped to {@code [0, maxTokens]};
     *                  written when {@code fixedTokens >= 0}
     * @param inputReport int32 {@code [REPORT_INTS]}, zeroed once: the first bad input, when {@code checkIds != 0}
     * @param pairsPerRegion {@code M*Kd}: pair rows of one source's region of the combine buffers
     * @param fixedTokens m, or -1 to read it from {@code numTokens}
     */
    @LaunchBounds(maxThreads = MAX_THREADS, minBlocksPerMultiprocessor = 2)
    public static void pack(KernelContext ctx, Buf x, Buf xScale, Buf indices, Buf numTokens, Buf dispatchSend,
                            Buf sendRows, Buf pairLocation, Buf inputReport, int xBytes, int scalesPerToken, int topK,
                            int expertsPerRank, int groupSize, int member, int rowBytes, int maxTokens,
                            int pairsPerRegion, int fixedTokens, int checkIds) {
        int dest = ctx.groupIdx();
        boolean serves = dest % groupSize == member;
        int rows = (int) packRows(ctx, dest, ctx.numGroupsX(), x, xScale, indices, numTokens, pairLocation, inputReport,
                dispatchSend, (long) (dest / groupSize) * maxTokens, serves ? 1 : 0, dispatchSend, 0, -1, xBytes,
                scalesPerToken, topK, expertsPerRank, rowBytes, maxTokens, pairsPerRegion, fixedTokens, checkIds, -1,
                -1);
        if (serves && ctx.localIdx() == 0 && ctx.groupIdy() == ctx.numGroupsY() - 1) {
            sendRows.setInt(dest / groupSize, rows);
        }
    }

    /**
     * The body of {@link #pack} for destination {@code d = dest} of {@code world} (pack's
     * {@code groupIdx()} and {@code numGroupsX()}; the caller's block column): numbers the rows, writes
     * {@code pairLocation} (and m, and the input check, as pack documents) and, with
     * {@code copy != 0}, writes the rows of block {@code y}'s tokens (its range, as pack documents)
     * into {@code rowsOut} from row {@code outRegionRow} on. With {@code putPeer >= 0} the block
     * then puts each chunk's rows, non-blocking, to the same rows of {@code putPeer}'s
     * {@code putDst} from row {@code putRegionRow} (complete after {@code quiet}). Returns (every
     * thread) the rows that the tokens of the chunks up to the block's last route to {@code d}, with
     * {@link #PACK_ALL_ROWS} set when that last chunk ends at m: they are then all of {@code d}'s
     * rows (always for block {@code Y - 1}; for every block when m fits in one chunk, as in decode),
     * and the pairs of those rows from bit {@link #PACK_PAIRS_SHIFT} on.
     *
     * <p>With {@code quantizeFrom} a dtype code (bf16 or fp16) the rows carry x's tokens quantised
     * to fp8-e4m3 ({@link #finishShare}): {@code xBytes} is then H and {@code scalesPerToken}
     * H / 128, and xScale is not read; -1 copies x's bytes and xScale's scales as they are.
     *
     * <p>With {@code notesAt = round << 32 | firstNote} (-1 for none; a round's may be negative: the
     * round counts modulo 2^32 there) from a block that alone serves a mapped d (decode), the block
     * also writes d's pair notes of the round into {@code rowsOut} from word {@code firstNote} on
     * (its region: {@code AllToAllKernels.notesRegion}), each chunk's before its rows
     * ({@link #writePairNotes}), and the count note once every pair is numbered.
     */
    static long packRows(KernelContext ctx, int dest, int world, Buf x, Buf xScale, Buf indices, Buf numTokens,
                        Buf pairLocation, Buf inputReport, Buf rowsOut, long outRegionRow, int copy, Buf putDst,
                        long putRegionRow, int putPeer, int xBytes, int scalesPerToken, int topK, int expertsPerRank,
                        int rowBytes, int maxTokens, int pairsPerRegion, int fixedTokens, int checkIds,
                        int quantizeFrom, long notesAt) {
        int tid = ctx.localIdx();
        int threads = ctx.localGroupSizeX();
        int firstExpert = dest * expertsPerRank;
        int numExperts = world * expertsPerRank;

        // Scan buffers have two halves (ping-pong) so each scan step needs one barrier.
        int[] scanRows = ctx.allocateIntLocalArray(2 * MAX_THREADS);
        int[] scanPairs = ctx.allocateIntLocalArray(2 * MAX_THREADS);
        // The chunk's rows, by row number within the chunk, for the cooperative copy.
        int[] rowToken = ctx.allocateIntLocalArray(MAX_THREADS);
        int[] rowPairBase = ctx.allocateIntLocalArray(MAX_THREADS);
        int[] rowPairs = ctx.allocateIntLocalArray(MAX_THREADS);
        long[] rowMask = ctx.allocateLongLocalArray(MAX_THREADS);
        // Every token's routing, by token within the chunk, for the pair locations.
        long[] tokenLocal = ctx.allocateLongLocalArray(MAX_THREADS);
        long[] tokenDropped = ctx.allocateLongLocalArray(MAX_THREADS);
        int[] tokenPairBase = ctx.allocateIntLocalArray(MAX_THREADS);
        // The chunk's expert ids, loaded by all threads together: one round trip to memory, where a
        // token's thread reading its topK ids itself waits for each in turn (a decode round's cost).
        int[] chunkIds = ctx.allocateIntLocalArray(PACK_IDS);
        int chunkTokens = min(threads, PACK_IDS / topK);

        // The tokens before this block's range are only counted: their rows and pairs, summed here.
        int[] before = ctx.allocateIntLocalArray(2);

        // The first chunk's ids are staged before m is known, up to the rows the tensors have (m when
        // the host gives it, else M): their loads are in flight with the count's, where staging them
        // after reading m costs a decode round one more round trip to memory. [stagedFirst, stagedEnd)
        // are the tokens whose ids chunkIds holds (the same for every thread).
        int stagedFirst = 0;
        int stagedEnd = min(chunkTokens, fixedTokens >= 0 ? clamp(fixedTokens, 0, maxTokens) : maxTokens);
        stageIds(indices, 0, stagedEnd * topK, chunkIds, tid, threads);
        int count = tokenCount(ctx, numTokens, inputReport, fixedTokens, maxTokens, checkIds,
                dest == 0 && ctx.groupIdy() == 0 && tid == 0);
        int m = clamp(count, 0, maxTokens);
        // a count out of range is the round's one report: the ids of the tokens past the real ones
        // are not inputs, and checking them raced the count's report for the first claim
        int checkTokens = count == m ? checkIds : 0;
        // Block y of d takes tokens [begin, end): it numbers them, writes their pair locations and
        // copies their rows, so each block scans only the chunks that hold its own tokens (every block
        // scanning every chunk for a share of its rows spent most of a prefill pack in the scans).
        // The whole chunks before its first are only counted; the chunk that holds begin is
        // numbered whole (a decode round's one chunk is then numbered as by a single block).
        int begin = splitPoint(m, ctx.groupIdy(), ctx.numGroupsY());
        int end = splitPoint(m, ctx.groupIdy() + 1, ctx.numGroupsY());
        int firstChunk = begin - begin % chunkTokens;
        int rowsBefore = 0;
        int pairsBefore = 0;
        int numberedEnd = firstChunk; // tokens [0, numberedEnd) are numbered or counted
        if (firstChunk > 0) { // the same for every thread
            if (tid == 0) {
                before[0] = 0;
                before[1] = 0;
            }
            int countedRows = 0;
            int countedPairs = 0;
            for (int chunk = 0; chunk < firstChunk; chunk += chunkTokens) {
                if (chunk < stagedFirst || chunk + chunkTokens > stagedEnd) {
                    stageIds(indices, (long) chunk * topK, chunkTokens * topK, chunkIds, tid, threads);
                    stagedFirst = chunk;
                    stagedEnd = chunk + chunkTokens;
                }
                ctx.localBarrier();
                int pairs = routeToken(ctx, chunkIds, (chunk - stagedFirst) * topK, tokenLocal, tokenDropped, chunk,
                        chunkTokens, topK, tid, firstExpert, expertsPerRank, numExperts, dest == 0, false, inputReport);
                countedRows += pairs > 0 ? 1 : 0;
                countedPairs += pairs;
                // the next chunk overwrites the ids and routes
                ctx.localBarrier();
            }
            if (countedPairs > 0) {
                ctx.atomicAdd(before, 0, countedRows);
                ctx.atomicAdd(before, 1, countedPairs);
            }
            ctx.localBarrier();
            rowsBefore = before[0];
            pairsBefore = before[1];
        }
        // One token per thread per chunk; the range is the same for every thread, so is the trip count.
        for (int chunk = firstChunk; chunk < end; chunk += chunkTokens) {
            // the whole chunk is numbered; its tokens [skip, own) are the block's: checked, located, copied
            // (a block whose last chunk ends at m knows all of d's rows: decode's and 128 tokens' blocks)
            int n = min(chunkTokens, m - chunk);
            int skip = max(0, begin - chunk);
            int own = min(n, end - chunk);
            if (chunk < stagedFirst || chunk + n > stagedEnd) {
                stageIds(indices, (long) chunk * topK, n * topK, chunkIds, tid, threads);
                stagedFirst = chunk;
                stagedEnd = chunk + n;
            }
            int idsBase = (chunk - stagedFirst) * topK;
            ctx.localBarrier();
            // One thread per token. (One thread per (token, slot) for a decode chunk, with a barrier
            // before the tokens read the slots' routes, moved nothing in the W = 4 phases and cost
            // 14% at 4096 tokens for prefill chunks: docs/benchmarks.md.)
            int pairs = routeToken(ctx, chunkIds, idsBase, tokenLocal, tokenDropped, chunk, n, topK, tid, firstExpert,
                    expertsPerRank, numExperts, dest == 0, checkTokens != 0 && tid >= skip && tid < own, inputReport);
            scanRows[tid] = pairs > 0 ? 1 : 0;
            scanPairs[tid] = pairs;
            ctx.localBarrier();

            // Inclusive Hillis-Steele scan of (rows, pairs) over the chunk's n tokens (n is the same
            // for every thread: a decode round's one token needs no step).
            int src = 0;
            for (int offset = 1; offset < n; offset <<= 1) {
                int r = scanRows[src + tid];
                int p = scanPairs[src + tid];
                if (tid >= offset) {
                    r += scanRows[src + tid - offset];
                    p += scanPairs[src + tid - offset];
                }
                int dst = MAX_THREADS - src;
                scanRows[dst + tid] = r;
                scanPairs[dst + tid] = p;
                ctx.localBarrier();
                src = dst;
            }
            int chunkRow = scanRows[src + tid] - (pairs > 0 ? 1 : 0);
            int pairBase = pairsBefore + scanPairs[src + tid] - pairs;
            int chunkRows = scanRows[src + n - 1];
            int chunkPairs = scanPairs[src + n - 1];
            // the block's rows are the chunk's rows [lo, hi): those of the tokens before and after come first and last
            int lo = skip > 0 ? scanRows[src + skip - 1] : 0;
            int hi = own > 0 ? scanRows[src + own - 1] : 0;

            recordToken(tid, n, chunk + tid, chunkRow, pairBase, pairs, tokenLocal, tokenPairBase, rowToken, rowPairBase,
                    rowPairs, rowMask);
            ctx.localBarrier();
            if (notesAt != -1) {
                // before the rows: the receiver takes its slots from the notes while the rows are copied
                writePairNotes(ctx, rowsOut, notesAt, chunkIds, idsBase - chunk * topK, rowToken, rowPairBase, rowPairs,
                        rowMask, rowsBefore, chunkRows, m - chunk - n, pairsBefore + chunkPairs, topK, firstExpert,
                        pairsPerRegion, maxTokens, tid, threads);
            }

            writePairLocations(pairLocation, chunk, skip, own, topK, tokenLocal, tokenDropped, tokenPairBase,
                    dest * pairsPerRegion, tid, threads);
            if (copy != 0) {
                copyRowsToSend(ctx, x, xScale, chunkIds, idsBase, chunk, rowsOut, rowToken, rowPairBase, rowPairs,
                        rowMask, lo, hi, outRegionRow + rowsBefore, xBytes, scalesPerToken, topK, firstExpert,
                        rowBytes, quantizeFrom);
                boolean put = putPeer >= 0 && hi > lo;
                finishShare(ctx, x, rowToken, lo, hi, rowsOut, outRegionRow + rowsBefore, xBytes, quantizeFrom,
                        rowBytes, scanRows, put);
                if (put) {
                    long bytes = (long) (hi - lo) * rowBytes;
                    ctx.putBlockNbi(putDst.slice((putRegionRow + rowsBefore + lo) * rowBytes, bytes),
                            rowsOut.slice((outRegionRow + rowsBefore + lo) * rowBytes, bytes), bytes, putPeer);
                }
            }
            rowsBefore += chunkRows;
            pairsBefore += chunkPairs;
            numberedEnd = chunk + n;
            // The next chunk overwrites the shared arrays.
            ctx.localBarrier();
        }
        if (m == 0 && notesAt != -1 && tid == 0) {
            // no chunk: the count note, no pair
            ctx.storeRelaxed(rowsOut, notesAt & 0xffffffffL, notesAt & -(1L << 32));
        }
        return rowsBefore | (numberedEnd == m ? PACK_ALL_ROWS : 0) | ((long) pairsBefore << PACK_PAIRS_SHIFT);
    }

    /**
     * Writes the pair notes of a chunk's rows ({@link #recordToken}: chunk row {@code r} is row
     * {@code firstRow + r}; token {@code t}'s ids are {@code ids[idsBase + t*topK]} on) into a
     * destination's note region ({@code AllToAllKernels.notesRegion}; {@code notesAt = round << 32 |}
     * the region's first word in {@code notes}): note {@code 1 + q} of pair {@code q} is
     * {@code round << 32 | row << 16 | (l + 1)}, l its local expert; when no tokens follow the
     * chunk's ({@code tokensAfter == 0}) thread 0 then writes the count note,
     * {@code round << 32 | pairs}. One relaxed system-scope store per note ({@code storeRelaxed}: the
     * receiver's waits read the notes as they land), none waits: each note carries its round, so
     * none needs a fence.
     */
    static void writePairNotes(KernelContext ctx, Buf notes, long notesAt, int[] ids, int idsBase, int[] rowToken,
                               int[] rowPairBase, int[] rowPairs, long[] rowMask, int firstRow, int chunkRows,
                               int tokensAfter, int pairs, int topK, int firstExpert, int pairsPerRegion, int maxTokens,
                               int tid, int threads) {
        int kd = pairsPerRow(pairsPerRegion, maxTokens, topK);
        long tag = notesAt & -(1L << 32);
        long firstNote = notesAt & 0xffffffffL;
        for (int i = tid; i < chunkRows * kd; i += threads) {
            int r = i / kd;
            int p = i - r * kd;
            if (p < rowPairs[r]) {
                int l = nthLocalExpert(ids, idsBase + rowToken[r] * topK, topK, firstExpert, rowMask[r], p);
                long note = tag | ((long) (firstRow + r) << 16) | (l + 1);
                ctx.storeRelaxed(notes, firstNote + 1 + rowPairBase[r] + p, note);
            }
        }
        if (tokensAfter == 0 && tid == 0) {
            ctx.storeRelaxed(notes, firstNote, tag | pairs);
        }
    }

    /**
     * Copies ids {@code [first, first + count)} of {@code indices} into {@code ids}, the block's
     * threads taking every {@code threads}-th: four loads in flight per thread and step, since a
     * prefill chunk gives each thread topK of them (one at a time, each would wait for the last).
     */
    static void stageIds(Buf indices, long first, int count, int[] ids, int tid, int threads) {
        int i = tid;
        for (; i + 3 * threads < count; i += 4 * threads) {
            int a = indices.getInt(first + i);
            int b = indices.getInt(first + i + threads);
            int c = indices.getInt(first + i + 2 * threads);
            int d = indices.getInt(first + i + 3 * threads);
            ids[i] = a;
            ids[i + threads] = b;
            ids[i + 2 * threads] = c;
            ids[i + 3 * threads] = d;
        }
        for (; i < count; i += threads) {
            ids[i] = indices.getInt(first + i);
        }
    }

    /**
     * Slots of pack's input report (int32): slot 0 holds the kind of the first bad input found
     * (the claim), then token, slot and value, and last the flag the host polls.
     */
    public static final int REPORT_KIND = 0;
    public static final int REPORT_TOKEN = 1;
    public static final int REPORT_SLOT = 2;
    public static final int REPORT_VALUE = 3;
    public static final int REPORT_FLAG = 4;
    public static final int REPORT_INTS = 5;
    /** An expert id outside {@code [-1, E)}: token, slot and the id. */
    public static final int REPORT_BAD_ID = 1;
    /** A token count outside {@code [0, M]} (token and slot -1): the count. */
    public static final int REPORT_BAD_COUNT = 2;
    /** An expert id that an earlier slot of the same token names already: token, slot and the id. */
    public static final int REPORT_REPEATED_ID = 3;

    /**
     * Records a bad input unless one is recorded: the first caller claims {@code report[0]} with
     * its kind, writes the details, then sets the flag (the host reads the flag first; pack skips
     * bad ids and clamps the count, so the round still runs to its end).
     */
    static void report(KernelContext ctx, Buf report, int kind, int token, int slot, int value) {
        if (ctx.atomicCas(report, REPORT_KIND, 0, kind) == 0) {
            report.setInt(REPORT_TOKEN, token);
            report.setInt(REPORT_SLOT, slot);
            report.setInt(REPORT_VALUE, value);
            ctx.globalFence();
            report.setInt(REPORT_FLAG, 1);
        }
    }

    /**
     * Dispatch, step 2: grid {@code NG x Y} blocks, {@code x} = source group {@code g}; the
     * {@code Y} blocks of a group take its rows in turns of equal chunks. For each
     * received row and each of its pairs {@code p} (local expert {@code l}), takes
     * {@code slot = atomicAdd(expertNumTokens[l], 1)}, copies the token and its scales to
     * {@code expertX[l][slot]} and {@code expertXScale[l][slot]}, and records
     * {@code expertOrigin[l][slot] = g*M*Kd + pairBase + p}; {@code pairsFromGroup[g]} gets the
     * group's pair count. Expert capacity is {@code numGroups * maxTokens} rows.
     *
     * @param dispatchSignals long {@code [NG]}: the low 32 bits are the rows received from group g
     */
    public static void scatter(KernelContext ctx, Buf dispatchRecv, Buf dispatchSignals, Buf expertNumTokens,
                               Buf expertX, Buf expertXScale, Buf expertOrigin, Buf pairsFromGroup, int xBytes,
                               int scalesPerToken, int topK, int rowBytes, int maxTokens, int numGroups,
                               int pairsPerRegion) {
        int group = ctx.groupIdx();
        scatterRows(ctx, dispatchRecv, (int) (dispatchSignals.getLong(group) & 0xffffffffL), expertNumTokens, expertX,
                expertXScale, expertOrigin, pairsFromGroup, xBytes, scalesPerToken, topK, rowBytes, maxTokens,
                numGroups, pairsPerRegion);
    }

    /**
     * The body of {@link #scatter} for source group {@code g = groupIdx()}, which sent
     * {@code receivedRows} rows (clamped to {@code [0, maxTokens]}); slots are taken from
     * {@code slotCounts} (int32 {@code [L]}, zero before the first block of the launch starts).
     */
    static void scatterRows(KernelContext ctx, Buf dispatchRecv, int receivedRows, Buf slotCounts, Buf expertX,
                            Buf expertXScale, Buf expertOrigin, Buf pairsFromGroup, int xBytes, int scalesPerToken,
                            int topK, int rowBytes, int maxTokens, int numGroups, int pairsPerRegion) {
        int tid = ctx.localIdx();
        int threads = ctx.localGroupSizeX();
        int group = ctx.groupIdx();
        int rows = clamp(receivedRows, 0, maxTokens);
        int capacity = numGroups * maxTokens;
        int metaOffset = rowMetaOffset(xBytes, scalesPerToken);
        long regionRow = (long) group * maxTokens;
        int originBase = group * pairsPerRegion;
        // chunks hold as many rows as their pairs fit in shared memory
        int kd = pairsPerRow(pairsPerRegion, maxTokens, topK);
        int blocks = ctx.numGroupsY();
        // Rows per chunk: as many as shared memory holds, but few enough that all Y blocks get some.
        int chunkRows = max(1, min(min(threads, SCATTER_PAIRS / kd), (rows + blocks - 1) / blocks));

        // The chunk's copies to make, listed in phase 1: slot, local expert, row within the chunk.
        int[] copySlot = ctx.allocateIntLocalArray(SCATTER_PAIRS);
        int[] copyExpert = ctx.allocateIntLocalArray(SCATTER_PAIRS);
        int[] copyRow = ctx.allocateIntLocalArray(SCATTER_PAIRS);
        // Length of the list; two counters in turn, so one is reset while the other is read.
        int[] listed = ctx.allocateIntLocalArray(2);
        if (tid == 0) {
            listed[0] = 0;
            listed[1] = 0;
        }
        ctx.localBarrier();

        int turn = 0;
        for (int chunk = ctx.groupIdy() * chunkRows; chunk < rows; chunk += blocks * chunkRows) {
            int n = min(chunkRows, rows - chunk);
            // Phase 1: one thread per (row, pair) takes the pair's slot, so a decode round's few
            // rows do not chain their slot atomics one after the other (the order of slots is free).
            for (int item = tid; item < n * kd; item += threads) {
                int r = item / kd;
                int p = item - r * kd;
                long meta = metaIndex(regionRow + chunk + r, rowBytes, metaOffset);
                // the row's first pair, its pair count and this pair's expert in one round trip
                // (the expert slot p < Kd lies inside the row's meta whatever the count)
                int rowPairBase = dispatchRecv.getInt(meta);
                int rowPairs = dispatchRecv.getInt(meta + 1);
                int expert = dispatchRecv.getInt(meta + 2 + p);
                if (p < clamp(rowPairs, 0, kd)) {
                    int slot = ctx.atomicAdd(slotCounts, expert, 1);
                    // a slot past the expert's rows only comes with invalid input: never written
                    if (slot < capacity) {
                        int origin = originBase + rowPairBase + p;
                        expertOrigin.setInt((long) expert * capacity + slot, origin);
                        int c = ctx.atomicAdd(listed, turn, 1);
                        copySlot[c] = slot;
                        copyExpert[c] = expert;
                        copyRow[c] = (int) (regionRow + chunk + r);
                    }
                }
            }
            ctx.localBarrier();

            copyListed(ctx, dispatchRecv, expertX, expertXScale, listed[turn], copySlot, copyExpert, copyRow, capacity,
                    xBytes, scalesPerToken, rowBytes);
            if (tid == 0) {
                listed[1 - turn] = 0; // last read in the previous chunk, before its final barrier
            }
            turn = 1 - turn;
            // The next chunk overwrites the shared arrays.
            ctx.localBarrier();
        }
        if (tid == 0 && ctx.groupIdy() == 0) {
            // Pairs are numbered contiguously in row order: the last row ends the count.
            int total = 0;
            if (rows > 0) {
                long meta = metaIndex(regionRow + rows - 1, rowBytes, metaOffset);
                total = dispatchRecv.getInt(meta) + clamp(dispatchRecv.getInt(meta + 1), 0, kd);
            }
            pairsFromGroup.setInt(group, total);
        }
    }

    /**
     * Phase 2 of a scatter: teams of warps copy the listed pairs' rows ({@code copyRow}: rows of
     * {@code dispatchRecv}) with their scales to {@code expertX[copyExpert][copySlot]}; a decode
     * round's few pairs are spread over all the warps ({@link #teamShift}) rather than left to one
     * warp each. An entry whose slot is negative is skipped (no slot: invalid input).
     */
    static void copyListed(KernelContext ctx, Buf dispatchRecv, Buf expertX, Buf expertXScale, int copies,
                           int[] copySlot, int[] copyExpert, int[] copyRow, int capacity, int xBytes,
                           int scalesPerToken, int rowBytes) {
        int threads = ctx.localGroupSizeX();
        int shift = teamShift(threads, copies);
        int team = ctx.localIdx() >> shift;
        int lane = ctx.localIdx() & ((1 << shift) - 1);
        int teams = threads >> shift;
        if (team < teams) {
            for (int c = team; c < copies; c += teams) {
                int slot = copySlot[c];
                if (slot >= 0) {
                    copyRowToExpert(dispatchRecv, expertX, expertXScale, copyRow[c], (long) copyExpert[c] * capacity + slot,
                            lane, shift, xBytes, scalesPerToken, rowBytes);
                }
            }
        }
    }

    /**
     * The slots of a source-order receive block ({@code AllToAllKernels.receiveInSourceOrder}:
     * decode, where the protocol chooses it), the block of source group {@code g = group} and part
     * {@code part} of {@code parts} (the local experts {@code l} with {@code l mod parts == part}),
     * once its pairs are read: {@code counts} (shared, {@code [L]}) holds every earlier group's
     * pairs per local expert of the part, the list ({@code copies} entries of {@code copyExpert} and
     * {@code copyOrigin}) this group's pairs of the part. Each listed pair takes its slot after the
     * earlier groups' ({@code copySlot}; -1 past the expert's rows, which only invalid input
     * reaches) and records its origin; the last group's blocks then write {@code expertNumTokens}
     * of their part. No global atomics, and no block needs another's counts: each expert's slots
     * are taken by one block. Returns {@code copies}, the slots seen by every thread (a barrier).
     */
    static int slotsInSourceOrder(KernelContext ctx, int group, int part, int parts, int[] counts, int copies,
                                  int[] copySlot, int[] copyExpert, int[] copyOrigin, Buf expertNumTokens,
                                  Buf expertOrigin, int maxTokens, int numGroups, int expertsPerRank) {
        int tid = ctx.localIdx();
        int threads = ctx.localGroupSizeX();
        int capacity = numGroups * maxTokens;
        for (int c = tid; c < copies; c += threads) {
            int expert = copyExpert[c];
            int slot = ctx.atomicAdd(counts, expert, 1);
            if (slot < capacity) {
                expertOrigin.setInt((long) expert * capacity + slot, copyOrigin[c]);
            }
            copySlot[c] = slot < capacity ? slot : -1;
        }
        ctx.localBarrier();
        if (group == numGroups - 1) {
            for (int l = part + tid * parts; l < expertsPerRank; l += threads * parts) {
                expertNumTokens.setInt(l, counts[l]);
            }
        }
        return copies;
    }

    /**
     * Combine, step 1: grid {@code L x chunks} blocks. Copies expert output row
     * {@code expertY[l][slot]} to {@code combineSend} row {@code expertOrigin[l][slot]} for
     * every {@code slot < expertNumTokens[l]}. The {@code chunks} blocks of an expert take
     * stripes of one slot per warp in turn (block y: stripes {@code y, y + chunks, ...}); the warps
     * share a stripe's rows in teams ({@link #teamShift}), so a stripe of fewer rows than warps,
     * as in decode, still keeps every warp copying.
     */
    public static void gather(KernelContext ctx, Buf expertY, Buf expertNumTokens, Buf expertOrigin, Buf combineSend,
                              int yBytes, int expertCapacity) {
        int threads = ctx.localGroupSizeX();
        int expert = ctx.groupIdx();
        int n = clamp(expertNumTokens.getInt(expert), 0, expertCapacity);
        int warps = threads >> copyShift(threads);
        int pieces = yBytes >> 4;
        long firstRow = (long) expert * expertCapacity;
        for (int stripe = ctx.groupIdy() * warps; stripe < n; stripe += ctx.numGroupsY() * warps) {
            int rows = min(warps, n - stripe);
            int shift = teamShift(threads, rows);
            int team = ctx.localIdx() >> shift;
            int lane = ctx.localIdx() & ((1 << shift) - 1);
            int teams = threads >> shift;
            for (int j = team; j < rows && team < teams; j += teams) {
                long row = firstRow + stripe + j;
                copyPieces(combineSend, (long) expertOrigin.getInt(row) * pieces, expertY, row * pieces, pieces, lane,
                        shift);
            }
        }
    }

    /**
     * Combine, step 2: one block per token {@code t} (grid {@code M} blocks; tokens {@code >= m}
     * return at once). {@code out[t][h] = sum over k of weights[t][k] * y[h]}, y being
     * combineRecv row {@code pairLocation[t][k]} (skipped when -1), summed in float32 in
     * increasing k, then converted to {@code outDtype}. The threads take quads of four elements
     * ({@link #reduceSlice}): {@code hidden} must be a multiple of 4 and {@code combineRecv} and
     * {@code out} 8-byte aligned (they are: H % 16 == 0, buffers 16-byte aligned).
     *
     * @param weights float32 {@code [M][K]}
     * @param yDtype  dtype code of combineRecv's elements (bf16, fp16, fp32)
     * @param outDtype dtype code of out (bf16, fp16, fp32)
     *                 <p>topK and both dtypes are {@link Specialize}d: on a GPU the dtype branches
     *                 fold away, as in a C++ template.
     */
    public static void reduce(KernelContext ctx, Buf combineRecv, Buf pairLocation, Buf weights, Buf numTokens,
                              Buf out, int hidden, @Specialize int topK, @Specialize int yDtype,
                              @Specialize int outDtype) {
        int t = ctx.groupIdx();
        if (t < numTokens.getInt(0)) {
            reduceToken(ctx, t, combineRecv, pairLocation, weights, out, hidden, topK, yDtype, outDtype);
        }
    }

    /** The body of {@link #reduce} for token {@code t}: every thread of the block takes its share of the quads. */
    static void reduceToken(KernelContext ctx, int t, Buf combineRecv, Buf pairLocation, Buf weights, Buf out,
                            int hidden, int topK, int yDtype, int outDtype) {
        reduceSlice(t, ctx.localIdx(), ctx.localGroupSizeX(), combineRecv, pairLocation, weights, out, hidden, topK,
                yDtype, outDtype);
    }

    /** Elements of the hidden dimension one step of {@link #reduceSlice} sums together (a quad). */
    public static final int REDUCE_QUAD = 4;

    /**
     * {@link #reduce}'s sum for token {@code t} and the quads {@code q = firstQuad, firstQuad +
     * step, ...} of the hidden dimension (elements {@code 4q .. 4q+3}; the caller's threads, or the
     * threads of several blocks, split them). A 16-bit row's quad is one 8-byte load per pair (an
     * fp8 row's one 4-byte load), four times the bytes of one element per load (element loads left
     * the kernel at half the copy bandwidth); float32 rows are read per element. Each element is
     * summed in increasing k, as the reference does.
     */
    static void reduceSlice(int t, int firstQuad, int step, Buf combineRecv, Buf pairLocation, Buf weights, Buf out,
                            int hidden, int topK, int yDtype, int outDtype) {
        long first = (long) t * topK;
        int quads = hidden / REDUCE_QUAD;
        for (int q = firstQuad; q < quads; q += step) {
            int h = q * REDUCE_QUAD;
            if (yDtype == DTYPE_FP32) {
                for (int e = 0; e < REDUCE_QUAD; e++) {
                    store(out, (long) t * hidden + h + e, outDtype, sumElement(first, h + e, combineRecv, pairLocation,
                            weights, hidden, topK, yDtype));
                }
            } else {
                float a0 = 0f;
                float a1 = 0f;
                float a2 = 0f;
                float a3 = 0f;
                int k = 0;
                // Four pairs per step, loads first: the four row reads are independent, so a GPU has
                // them in flight together instead of waiting for each in turn.
                for (; k + 4 <= topK; k += 4) {
                    int l0 = pairLocation.getInt(first + k);
                    int l1 = pairLocation.getInt(first + k + 1);
                    int l2 = pairLocation.getInt(first + k + 2);
                    int l3 = pairLocation.getInt(first + k + 3);
                    long r0 = loadQuad(combineRecv, l0, hidden, h, yDtype);
                    long r1 = loadQuad(combineRecv, l1, hidden, h, yDtype);
                    long r2 = loadQuad(combineRecv, l2, hidden, h, yDtype);
                    long r3 = loadQuad(combineRecv, l3, hidden, h, yDtype);
                    float w0 = weights.getFloat(first + k);
                    float w1 = weights.getFloat(first + k + 1);
                    float w2 = weights.getFloat(first + k + 2);
                    float w3 = weights.getFloat(first + k + 3);
                    a0 = accumulate4(a0, 0, yDtype, l0, w0, r0, l1, w1, r1, l2, w2, r2, l3, w3, r3);
                    a1 = accumulate4(a1, 1, yDtype, l0, w0, r0, l1, w1, r1, l2, w2, r2, l3, w3, r3);
                    a2 = accumulate4(a2, 2, yDtype, l0, w0, r0, l1, w1, r1, l2, w2, r2, l3, w3, r3);
                    a3 = accumulate4(a3, 3, yDtype, l0, w0, r0, l1, w1, r1, l2, w2, r2, l3, w3, r3);
                }
                for (; k < topK; k++) {
                    int l = pairLocation.getInt(first + k);
                    long r = loadQuad(combineRecv, l, hidden, h, yDtype);
                    float w = weights.getFloat(first + k);
                    a0 = accumulate(a0, l, w, quadElement(r, 0, yDtype));
                    a1 = accumulate(a1, l, w, quadElement(r, 1, yDtype));
                    a2 = accumulate(a2, l, w, quadElement(r, 2, yDtype));
                    a3 = accumulate(a3, l, w, quadElement(r, 3, yDtype));
                }
                storeQuad(out, (long) t * hidden + h, outDtype, a0, a1, a2, a3);
            }
        }
    }

    /** Element h of token t's weighted sum over its pairs, read one element per pair (float32 rows). */
    static float sumElement(long first, int h, Buf combineRecv, Buf pairLocation, Buf weights, int hidden, int topK,
                            int yDtype) {
        float acc = 0f;
        for (int k = 0; k < topK; k++) {
            int l = pairLocation.getInt(first + k);
            acc = accumulate(acc, l, weights.getFloat(first + k), loadPair(combineRecv, l, hidden, h, yDtype));
        }
        return acc;
    }

    /**
     * Element h of combine row {@code location} as float32; a skipped pair (-1) reads row 0,
     * which always exists, and {@link #accumulate} ignores the value.
     */
    static float loadPair(Buf combineRecv, int location, int hidden, int h, int dtype) {
        return load(combineRecv, (long) max(location, 0) * hidden + h, dtype);
    }

    /**
     * Elements {@code h .. h+3} of combine row {@code location} (16-bit or fp8 {@code dtype}) as
     * one word, element {@code h + e} in its {@code e}-th 16 or 8 bits: one 8- or 4-byte load. A
     * skipped pair (-1) reads row 0, which always exists, and {@link #accumulate} ignores the value.
     */
    static long loadQuad(Buf combineRecv, int location, int hidden, int h, int dtype) {
        long first = (long) max(location, 0) * hidden + h;
        if (dtype == DTYPE_FP8_E4M3) {
            return combineRecv.getInt(first >> 2) & 0xffffffffL;
        }
        return combineRecv.getLong(first >> 2);
    }

    /** Element {@code e} of a quad of {@code dtype} elements ({@link #loadQuad}), as float32. */
    static float quadElement(long quad, int e, int dtype) {
        if (dtype == DTYPE_FP8_E4M3) {
            return Numerics.fp8e4m3ToFloat((byte) (quad >>> (8 * e)));
        }
        short bits = (short) (quad >>> (16 * e));
        return dtype == DTYPE_BF16 ? Numerics.bf16ToFloat(bits) : Numerics.fp16ToFloat(bits);
    }

    /** Element {@code e}'s sum over four pairs, in k order (one step of {@link #reduceSlice}). */
    static float accumulate4(float acc, int e, int dtype, int l0, float w0, long r0, int l1, float w1, long r1, int l2,
                             float w2, long r2, int l3, float w3, long r3) {
        acc = accumulate(acc, l0, w0, quadElement(r0, e, dtype));
        acc = accumulate(acc, l1, w1, quadElement(r1, e, dtype));
        acc = accumulate(acc, l2, w2, quadElement(r2, e, dtype));
        return accumulate(acc, l3, w3, quadElement(r3, e, dtype));
    }

    /** Stores elements {@code i .. i+3} of {@code b}: one 8-byte store for 16-bit dtypes. */
    static void storeQuad(Buf b, long i, int dtype, float v0, float v1, float v2, float v3) {
        if (dtype == DTYPE_BF16) {
            b.setLong(i >> 2, packQuad(Numerics.floatToBf16(v0), Numerics.floatToBf16(v1), Numerics.floatToBf16(v2),
                    Numerics.floatToBf16(v3)));
        } else if (dtype == DTYPE_FP16) {
            b.setLong(i >> 2, packQuad(Numerics.floatToFp16(v0), Numerics.floatToFp16(v1), Numerics.floatToFp16(v2),
                    Numerics.floatToFp16(v3)));
        } else {
            store(b, i, dtype, v0);
            store(b, i + 1, dtype, v1);
            store(b, i + 2, dtype, v2);
            store(b, i + 3, dtype, v3);
        }
    }

    static long packQuad(short s0, short s1, short s2, short s3) {
        return (s0 & 0xffffL) | (s1 & 0xffffL) << 16 | (s2 & 0xffffL) << 32 | (s3 & 0xffffL) << 48;
    }

    /** {@code acc + w * v} for a routed pair, {@code acc} for a skipped one; separate multiply and add (no fma), as on the JVM. */
    static float accumulate(float acc, int location, float w, float v) {
        return location >= 0 ? acc + w * v : acc;
    }

    // ---- helpers (inlined by the compiler) ----
    //
    // Package-private, not private: the CPU runner's loop form of AllToAllKernels then calls them
    // where it would have to inline a private method of this class, and stays under the 8000
    // bytes HotSpot compiles (MoeKernelsTest.everyLibraryKernelHasALoopForm).

    /**
     * The count: {@code fixedTokens} or the one in {@code numTokens}, not clamped (m is the count
     * clamped to {@code [0, maxTokens]}); the {@code first} thread of the grid writes a fixed m to
     * {@code numTokens} for the kernels after pack and, with {@code checkIds}, reports a count out
     * of range.
     */
    static int tokenCount(KernelContext ctx, Buf numTokens, Buf inputReport, int fixedTokens, int maxTokens,
                          int checkIds, boolean first) {
        int count = fixedTokens >= 0 ? fixedTokens : numTokens.getInt(0);
        int m = clamp(count, 0, maxTokens);
        if (fixedTokens >= 0 && first) {
            numTokens.setInt(0, m);
        }
        if (checkIds != 0 && m != count && first) {
            report(ctx, inputReport, REPORT_BAD_COUNT, -1, -1, count);
        }
        return count;
    }

    /**
     * After the scan: token {@code t}'s (thread {@code tid < n}) first pair here, and, when it has
     * a row, the row's token, pairs and routing by row number {@code chunkRow} for the copy.
     */
    static void recordToken(int tid, int n, int t, int chunkRow, int pairBase, int pairs, long[] tokenLocal,
                            int[] tokenPairBase, int[] rowToken, int[] rowPairBase, int[] rowPairs, long[] rowMask) {
        if (tid < n) {
            tokenPairBase[tid] = pairBase;
            if (pairs > 0) {
                rowToken[chunkRow] = t;
                rowPairBase[chunkRow] = pairBase;
                rowPairs[chunkRow] = pairs;
                rowMask[chunkRow] = tokenLocal[tid];
            }
        }
    }

    /**
     * Token {@code chunk + tid}'s routing to this destination (for {@code tid < n}), read once: bit
     * k of {@code tokenLocal[tid]} for a slot that names one of the destination's experts for the
     * first time in its token, of {@code tokenDropped[tid]} for a slot whose pairLocation this block
     * sets to -1: a repeat of an id an earlier slot names (docs/contract.md refuses repeated ids; the
     * kernels skip them like -1, so a token never has more than {@code Kd} pairs at one destination
     * and no buffer is overrun), and, at destination 0 ({@code dropsOutOfRange}), an id outside
     * {@code [0, E)}. With {@code check} the token's first repeat or id outside {@code [-1, E)} is
     * reported. The chunk's ids are {@code ids[idsBase]} on. Returns the token's pairs here (0 past
     * the chunk).
     */
    static int routeToken(KernelContext ctx, int[] ids, int idsBase, long[] tokenLocal, long[] tokenDropped, int chunk,
                          int n, int topK, int tid, int firstExpert, int expertsPerRank, int numExperts,
                          boolean dropsOutOfRange, boolean check, Buf inputReport) {
        if (tid >= n) {
            return 0;
        }
        int first = idsBase + tid * topK;
        long localMask = 0;
        long dropMask = 0;
        // the first bad slot, reported once after the loop: a report inlined per slot made the
        // unrolled loop long and branchy (one thread's routing of a decode token took 1.4 us)
        int badSlot = -1;
        for (int k = 0; k < topK; k++) {
            int id = ids[first + k];
            if (routesHere(id, firstExpert, expertsPerRank)) {
                if (namedBefore(ids, first, k, id)) {
                    dropMask |= 1L << k;
                    badSlot = badSlot < 0 ? k : badSlot;
                } else {
                    localMask |= 1L << k;
                }
            } else if (dropsOutOfRange && (id < 0 || id >= numExperts)) {
                dropMask |= 1L << k;
                badSlot = badSlot < 0 && id != -1 ? k : badSlot;
            }
        }
        if (check && badSlot >= 0) {
            int id = ids[first + badSlot];
            report(ctx, inputReport, routesHere(id, firstExpert, expertsPerRank) ? REPORT_REPEATED_ID : REPORT_BAD_ID,
                    chunk + tid, badSlot, id);
        }
        tokenLocal[tid] = localMask;
        tokenDropped[tid] = dropMask;
        return Long.bitCount(localMask);
    }

    /** Whether expert {@code id} is one of the destination's, whose experts start at {@code firstExpert}. */
    static boolean routesHere(int id, int firstExpert, int expertsPerRank) {
        int local = id - firstExpert;
        return local >= 0 && local < expertsPerRank;
    }

    /**
     * Whether a slot before {@code k} of a token (its ids from {@code ids[first]}) names {@code id}.
     * Without a branch per slot: the earlier ids' loads are all in flight at once.
     */
    static boolean namedBefore(int[] ids, int first, int k, int id) {
        int allDiffer = 1;
        for (int j = 0; j < k; j++) {
            allDiffer &= nonZero(ids[first + j] ^ id);
        }
        return allDiffer == 0;
    }

    /** 1 when {@code v != 0}, else 0, without a branch. */
    static int nonZero(int v) {
        return (v | -v) >>> 31;
    }

    /**
     * Writes the pair locations of the chunk's tokens {@code [skip, n)} (from token {@code chunk}) at this
     * destination, one thread per (token, slot): slot k of a token with routing {@code local}
     * (bits of {@code tokenLocal}) gets {@code firstLocation + pairBase + } the local slots before
     * it, a slot of {@code tokenDropped} gets -1 (exactly one block writes each entry: the
     * destination of an id in range, destination 0 for the others). A decode token's topK entries
     * are written side by side, not one after the other by its thread.
     */
    static void writePairLocations(Buf pairLocation, int chunk, int skip, int n, int topK, long[] tokenLocal,
                                   long[] tokenDropped, int[] tokenPairBase, int firstLocation, int tid, int threads) {
        for (int item = skip * topK + tid; item < n * topK; item += threads) {
            int token = item / topK;
            int k = item - token * topK;
            long bit = 1L << k;
            long local = tokenLocal[token];
            if ((local & bit) != 0) {
                pairLocation.setInt((long) chunk * topK + item,
                        firstLocation + tokenPairBase[token] + Long.bitCount(local & (bit - 1)));
            } else if ((tokenDropped[token] & bit) != 0) {
                pairLocation.setInt((long) chunk * topK + item, -1);
            }
        }
    }

    /**
     * pack's copy of rows {@code [lo, hi)} of the chunk (its ids {@code chunkIds[idsBase]} on): teams of warps ({@link #teamShift}) take them in turn; a
     * team copies the token in 16-byte pieces, the scales in 4-byte words and writes the meta, zeroing all padding.
     * When quantising ({@code quantizeFrom >= 0}) only the meta: {@link #finishShare} writes token and scales.
     */
    static void copyRowsToSend(KernelContext ctx, Buf x, Buf xScale, int[] chunkIds, int idsBase, int chunk,
                               Buf dispatchSend, int[] rowToken, int[] rowPairBase, int[] rowPairs, long[] rowMask,
                               int lo, int hi, long firstRow, int xBytes, int scalesPerToken, int topK,
                               int firstExpert, int rowBytes, int quantizeFrom) {
        int threads = ctx.localGroupSizeX();
        int shift = teamShift(threads, hi - lo);
        int width = 1 << shift;
        int team = ctx.localIdx() >> shift;
        int lane = ctx.localIdx() & (width - 1);
        int teams = threads >> shift;
        int pieces = quantizeFrom < 0 ? xBytes >> 4 : 0;
        int scaleOffset = align16(xBytes);
        int scaleWords = align16(4 * scalesPerToken) >> 2;
        int copiedScaleWords = quantizeFrom < 0 ? scaleWords : 0;
        int metaOffset = scaleOffset + (scaleWords << 2);
        int metaWords = align16(4 * (2 + topK)) >> 2;
        // Threads past the last whole team (block sizes not a multiple of 32) only wait.
        if (team < teams) {
            for (int r = lo + team; r < hi; r += teams) {
                int t = rowToken[r];
                long rowByte = (firstRow + r) * rowBytes;
                long dstPiece = rowByte >> 4;
                long srcPiece = (long) t * pieces;
                long firstScale = (long) t * scalesPerToken;
                // the lane's first scale is loaded before the token's pieces, so both are in flight
                // together: a decode row costs one round trip to memory, not one more for its scales
                int laneScale = lane < scalesPerToken && copiedScaleWords > 0 ? xScale.getInt(firstScale + lane) : 0;
                copyPiecesDeep(dispatchSend, dstPiece, x, srcPiece, pieces, lane, shift);
                long scaleWord = (rowByte + scaleOffset) >> 2;
                for (int i = lane; i < copiedScaleWords; i += width) {
                    int bits = laneScale;
                    if (i != lane) {
                        bits = i < scalesPerToken ? xScale.getInt(firstScale + i) : 0;
                    }
                    dispatchSend.setInt(scaleWord + i, bits);
                }
                long metaWord = (rowByte + metaOffset) >> 2;
                for (int i = lane; i < metaWords; i += width) {
                    int value = 0;
                    if (i == 0) {
                        value = rowPairBase[r];
                    } else if (i == 1) {
                        value = rowPairs[r];
                    } else if (i - 2 < rowPairs[r]) {
                        value = nthLocalExpert(chunkIds, idsBase + (t - chunk) * topK, topK, firstExpert, rowMask[r], i - 2);
                    }
                    dispatchSend.setInt(metaWord + i, value);
                }
            }
        }
    }

    /**
     * Local expert index of a token's n-th pair (in k order) on this destination: the n-th slot of
     * {@code localMask}; the token's ids are {@code ids[first]} on.
     */
    static int nthLocalExpert(int[] ids, int first, int topK, int firstExpert, long localMask, int n) {
        int seen = 0;
        int result = 0;
        for (int k = 0; k < topK; k++) {
            if ((localMask & (1L << k)) != 0) {
                if (seen == n) {
                    result = ids[first + k] - firstExpert;
                }
                seen++;
            }
        }
        return result;
    }

    /**
     * Ends block y's share {@code [lo, hi)} of the chunk's rows after {@link #copyRowsToSend}: when
     * quantising ({@code quantizeFrom}, the dtype code of x, bf16 or fp16), writes the tokens as fp8
     * codes and block scales (docs/contract.md, "Quantising dispatch"); with {@code put}, makes the
     * share visible to a network adapter (system fence) and waits for the whole block (barrier)
     * before the caller puts it.
     *
     * <p>Token {@code rowToken[r]} of x, {@code hidden} values, becomes {@code hidden} fp8-e4m3 codes
     * and one float32 scale per block of {@link #SCALE_BLOCK} values ({@link Numerics#fp8e4m3Scale} of
     * the block's largest magnitude; each code {@link Numerics#quantizeFp8e4m3} of its value), the
     * scale padding zeroed. {@link #QUANT_LANES} threads share a block of values, each taking
     * {@link #QUANT_LOADS} longs of it, interleaved so that their loads and stores are contiguous. A
     * step finds each lane's largest magnitude ({@link #findLaneMaxima}); after a barrier the lanes'
     * maxima, met in {@code laneMax} (as float bits), give the scale, and each lane reads its values
     * again (from the cache) and writes their codes ({@link #writeLaneCodes}), in the same round as
     * the next step's maxima, which go to the other half of {@code laneMax}. A block of fewer than
     * {@link #QUANT_LANES} threads plays several lanes per thread.
     *
     * <p>{@code laneMax} is pack's scan buffer ({@code 2 * MAX_THREADS} ints of shared memory), which
     * nothing reads between the chunk's numbering and the next chunk's scan: no shared memory of its own.
     *
     * <p>The steps and the put share one barrier call site: the CPU runner's loop form saves every
     * live local at each call site, and pack's budget (MoeKernelsTest.everyLibraryKernelHasALoopForm)
     * has no room for another. Every thread of the block must call it.
     */
    static void finishShare(KernelContext ctx, Buf x, int[] rowToken, int lo, int hi, Buf rowsOut, long firstRow,
                            int hidden, int quantizeFrom, int rowBytes, int[] laneMax, boolean put) {
        int steps = quantizeFrom >= 0 ? quantizeSteps(ctx.localGroupSizeX(), (hi - lo) * (hidden / SCALE_BLOCK)) : 0;
        // round i: the codes of step i - 1, the maxima of step i, a barrier (the last one: the put's);
        // one round without quantising, which the compiler unrolls to pack's plain fence and barrier
        int rounds = quantizeFrom >= 0 ? steps + 1 : 1;
        for (int i = 0; i < rounds; i++) {
            if (quantizeFrom >= 0) {
                quantizeRound(ctx, x, rowToken, lo, hi, rowsOut, firstRow, hidden, quantizeFrom, rowBytes, laneMax, i);
            }
            if (i < steps || put) {
                if (put && i == rounds - 1) {
                    // the whole share written (and visible to a network adapter) before the put reads it
                    ctx.systemFence();
                }
                ctx.localBarrier();
            }
        }
    }

    /** Lanes of a {@link #finishShare} step: whole groups of {@link #QUANT_LANES}, at least one group. */
    static int quantizeLanes(int threads) {
        return max(QUANT_LANES, threads - threads % QUANT_LANES);
    }

    /** Steps of {@link #finishShare} for {@code blocks} blocks of values. */
    static int quantizeSteps(int threads, int blocks) {
        int perStep = quantizeLanes(threads) / QUANT_LANES;
        return (blocks + perStep - 1) / perStep;
    }

    /**
     * Round {@code i} of {@link #finishShare} (between its barriers): the codes of step {@code i - 1}
     * and the lane maxima of step {@code i}, which go to the other half of {@code laneMax}.
     */
    static void quantizeRound(KernelContext ctx, Buf x, int[] rowToken, int lo, int hi, Buf rowsOut, long firstRow,
                              int hidden, int fromDtype, int rowBytes, int[] laneMax, int i) {
        int tid = ctx.localIdx();
        int threads = ctx.localGroupSizeX();
        int blocks = (hi - lo) * (hidden / SCALE_BLOCK);
        int lanes = quantizeLanes(threads);
        int perStep = lanes / QUANT_LANES;
        if (i > 0) {
            writeLaneCodes(x, rowToken, lo, (i - 1) * perStep, blocks, rowsOut, firstRow, hidden, fromDtype, rowBytes,
                    laneMax, halfOf(i - 1), tid, threads, lanes);
        }
        if (i * perStep < blocks) {
            findLaneMaxima(x, rowToken, lo, i * perStep, blocks, hidden, fromDtype, laneMax, halfOf(i), tid, threads,
                    lanes);
        }
    }

    /** The half of {@code laneMax} that step {@code step} of {@link #finishShare} uses: steps alternate. */
    static int halfOf(int step) {
        return (step & 1) * MAX_THREADS;
    }

    /**
     * {@link #finishShare}'s maxima of the step of blocks {@code first, first + 1, ...}: lane v (of the
     * {@code lanes}, thread {@code tid} playing v = tid, tid + threads, ...) writes the largest
     * magnitude of its values to {@code laneMax[half + v]}, as float bits (0 for a lane past the last block).
     */
    static void findLaneMaxima(Buf x, int[] rowToken, int lo, int first, int blocks, int hidden, int fromDtype,
                               int[] laneMax, int half, int tid, int threads, int lanes) {
        int blocksPerRow = hidden / SCALE_BLOCK;
        for (int v = tid; v < lanes; v += threads) {
            int block = first + v / QUANT_LANES;
            float m = 0f;
            if (block < blocks) {
                int r = block / blocksPerRow;
                m = laneMagnitude(x, blockLong(rowToken[lo + r], block - r * blocksPerRow, hidden) + v % QUANT_LANES,
                        fromDtype);
            }
            laneMax[half + v] = Float.floatToRawIntBits(m);
        }
    }

    /**
     * {@link #finishShare}'s codes of the step of blocks {@code first, first + 1, ...}: lane v of block
     * {@code first + v / QUANT_LANES} takes the block's scale from its lanes' maxima in
     * {@code laneMax[half]} and writes the codes of its values; the block's lane 0 writes the scale.
     */
    static void writeLaneCodes(Buf x, int[] rowToken, int lo, int first, int blocks, Buf rowsOut, long firstRow,
                               int hidden, int fromDtype, int rowBytes, int[] laneMax, int half, int tid, int threads,
                               int lanes) {
        int blocksPerRow = hidden / SCALE_BLOCK;
        for (int v = tid; v < lanes; v += threads) {
            int block = first + v / QUANT_LANES;
            if (block < blocks) {
                int r = block / blocksPerRow;
                int b = block - r * blocksPerRow;
                int lane = v % QUANT_LANES;
                float scale = Numerics.fp8e4m3Scale(groupMagnitude(laneMax, half + v - lane));
                long rowByte = (firstRow + lo + r) * rowBytes;
                quantizeLane(x, blockLong(rowToken[lo + r], b, hidden) + lane, rowsOut,
                        ((rowByte + (long) b * SCALE_BLOCK) >> 2) + lane, scale, fromDtype);
                if (lane == 0) {
                    writeScale(rowsOut, (rowByte + align16(hidden)) >> 2, b, blocksPerRow, scale);
                }
            }
        }
    }

    /** Long index in x of the first value of token t's block b (four 16-bit values per long). */
    static long blockLong(int t, int b, int hidden) {
        return ((long) t * hidden + (long) b * SCALE_BLOCK) >> 2;
    }

    /** Largest magnitude (NaN ignored) of a lane's values: longs {@code first + i * QUANT_LANES}, i < QUANT_LOADS. */
    static float laneMagnitude(Buf x, long first, int dtype) {
        float m = 0f;
        for (int i = 0; i < QUANT_LOADS; i++) {
            long bits = x.getLong(first + (long) i * QUANT_LANES);
            for (int k = 0; k < 4; k++) {
                m = Numerics.maxMagnitude(m, wideValue(bits, k, dtype));
            }
        }
        return m;
    }

    /** Largest of the {@link #QUANT_LANES} lane maxima (float bits) of one block, from {@code laneMax[first]}. */
    static float groupMagnitude(int[] laneMax, int first) {
        float m = 0f;
        for (int j = 0; j < QUANT_LANES; j++) {
            m = Numerics.maxMagnitude(m, Float.intBitsToFloat(laneMax[first + j]));
        }
        return m;
    }

    /**
     * The fp8 codes of a lane's values (as {@link #laneMagnitude} reads them) in a block of scale
     * {@code scale}: the four codes of long {@code first + i * QUANT_LANES} go to int
     * {@code firstWord + i * QUANT_LANES} of the row, in the values' order.
     */
    static void quantizeLane(Buf x, long first, Buf rowsOut, long firstWord, float scale, int dtype) {
        for (int i = 0; i < QUANT_LOADS; i++) {
            long bits = x.getLong(first + (long) i * QUANT_LANES);
            int codes = 0;
            for (int k = 0; k < 4; k++) {
                codes |= (Numerics.quantizeFp8e4m3(wideValue(bits, k, dtype), scale) & 0xff) << (8 * k);
            }
            rowsOut.setInt(firstWord + (long) i * QUANT_LANES, codes);
        }
    }

    /** Value k (0 to 3) of four little-endian 16-bit values of dtype bf16 or fp16 in a long, as float32. */
    static float wideValue(long bits, int k, int dtype) {
        short v = (short) (bits >>> (16 * k));
        return dtype == DTYPE_FP16 ? Numerics.fp16ToFloat(v) : Numerics.bf16ToFloat(v);
    }

    /** Scale of block b at float {@code scaleWord + b} of a row; the last block's lane also zeroes the padding. */
    static void writeScale(Buf rowsOut, long scaleWord, int b, int blocksPerRow, float scale) {
        rowsOut.setFloat(scaleWord + b, scale);
        if (b == blocksPerRow - 1) {
            for (int i = blocksPerRow; i < align16(4 * blocksPerRow) >> 2; i++) {
                rowsOut.setInt(scaleWord + i, 0);
            }
        }
    }

    /**
     * scatter's copy of one received row's token (16-byte pieces) and scales (4-byte words) by one
     * team of {@code 2^shift} threads.
     */
    static void copyRowToExpert(Buf dispatchRecv, Buf expertX, Buf expertXScale, long srcRow, long dstRow,
                                int lane, int shift, int xBytes, int scalesPerToken, int rowBytes) {
        int width = 1 << shift;
        int pieces = xBytes >> 4;
        long srcByte = srcRow * rowBytes;
        long srcPiece = srcByte >> 4;
        long dstPiece = dstRow * pieces;
        long srcWord = (srcByte + align16(xBytes)) >> 2;
        long dstWord = dstRow * scalesPerToken;
        // the lane's first scale in flight with the token's pieces (one round trip for both)
        int laneScale = lane < scalesPerToken ? dispatchRecv.getInt(srcWord + lane) : 0;
        copyPieces(expertX, dstPiece, dispatchRecv, srcPiece, pieces, lane, shift);
        for (int i = lane; i < scalesPerToken; i += width) {
            expertXScale.setInt(dstWord + i, i == lane ? laneScale : dispatchRecv.getInt(srcWord + i));
        }
    }

    /**
     * A team of {@code 2^shift} threads (lane {@code lane}) copies {@code pieces} 16-byte pieces
     * from {@code src} (from piece {@code srcPiece}) to {@code dst} (from {@code dstPiece}), up to
     * four per lane and step, loads first ({@link Buf#copy16xN}): a row of a few kilobytes costs
     * a quarter of the round trips to memory of one piece at a time, and a remainder of fewer
     * than four per lane costs one more, not one per piece. The width is a power of two so that
     * the remainder's pieces per lane are a shift, not a division.
     */
    static void copyPieces(Buf dst, long dstPiece, Buf src, long srcPiece, int pieces, int lane, int shift) {
        int width = 1 << shift;
        int i = lane;
        // whole groups of four unpredicated (measured faster than copy16xN for them), the rest predicated
        for (; i + 3 * width < pieces; i += 4 * width) {
            dst.copy16x4(dstPiece + i, src, srcPiece + i, width);
        }
        if (i < pieces) {
            dst.copy16xN(dstPiece + i, src, srcPiece + i, width, (pieces - i + width - 1) >> shift);
        }
    }

    /**
     * {@link #copyPieces} with eight loads in flight per lane ({@code Buf.copy16x8}): pack's rows
     * at prefill, where two blocks of 256 threads per SM with four loads each left the copy waiting
     * on memory (pack at 4096 tokens 108 -> 99 us, benchmarks/results/2026-12-04-pack-copy-depth-experiment/).
     * It costs 32 registers, which the kernels that call it can spare at two blocks per SM
     * ({@code @LaunchBounds}); scatter and gather, sized for more resident blocks, keep four.
     */
    static void copyPiecesDeep(Buf dst, long dstPiece, Buf src, long srcPiece, int pieces, int lane, int shift) {
        int width = 1 << shift;
        int i = lane;
        for (; i + 7 * width < pieces; i += 8 * width) {
            dst.copy16x8(dstPiece + i, src, srcPiece + i, width);
        }
        if (i < pieces) {
            dst.copy16x8N(dstPiece + i, src, srcPiece + i, width, (pieces - i + width - 1) >> shift);
        }
    }

    /**
     * log2 of the threads per team when a block copies {@code items} rows, one team per row at a
     * time: whole warps, as many per team as keep every warp busy. Many rows give one warp per row;
     * a decode block's one or two rows are each spread over several warps, so the copy takes one or
     * two round trips to memory instead of the seven of one warp on a 14 KB row while the others
     * wait. A power of two (the most warps that fit the rows, of the block's whole warps rounded
     * down to a power of two), so that a thread's team, lane and share are shifts and masks: a
     * division is dozens of dependent instructions on the GPU, and {@code items} is known only
     * at run time. A block has {@code threads >> shift} whole teams; threads past them only wait.
     */
    static int teamShift(int threads, int items) {
        int warpShift = copyShift(threads);
        int warpsShift = log2(threads) - warpShift;
        return warpShift + max(0, warpsShift - ceilLog2(items));
    }

    /** Byte offset of the meta within a dispatch row: after the token and its scales, each padded to 16. */
    static int rowMetaOffset(int xBytes, int scalesPerToken) {
        return align16(xBytes) + align16(4 * scalesPerToken);
    }

    /** Kd: the most pairs one row carries to its destination ({@code min(K, L)}, from the region's size). */
    static int pairsPerRow(int pairsPerRegion, int maxTokens, int topK) {
        return clamp(min(pairsPerRegion / maxTokens, topK), 1, SCATTER_PAIRS);
    }

    /** Int index of a row's meta in the dispatch buffer. */
    static long metaIndex(long row, int rowBytes, int metaOffset) {
        return (row * rowBytes + metaOffset) >> 2;
    }

    /**
     * log2 of the threads that copy one row together: a warp, or in a block of fewer threads the
     * most that are a power of two.
     */
    static int copyShift(int threads) {
        return min(WARP_SHIFT, log2(threads));
    }

    /** {@code floor(log2(v))} for {@code v >= 1}. */
    static int log2(int v) {
        return 31 - Integer.numberOfLeadingZeros(v);
    }

    /** {@code ceil(log2(v))} for {@code v >= 1}; 0 for {@code v <= 1}. */
    static int ceilLog2(int v) {
        return v <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(v - 1);
    }

    /**
     * {@code m * y / blocks} for {@code 0 <= y <= blocks}: where block {@code y}'s share of m
     * tokens starts. In 32 bits wherever the product fits (every M in practice): the GPU has no
     * 64-bit divide instruction, and the call that stands in for one (about 80 dependent
     * instructions) sat on every warp's path between m and the routing.
     */
    static int splitPoint(int m, int y, int blocks) {
        if (blocks == 1) {
            return m * y;
        }
        return (long) m * blocks <= Integer.MAX_VALUE ? m * y / blocks : (int) ((long) m * y / blocks);
    }

    static int align16(int bytes) {
        return (bytes + 15) & -16;
    }

    // Math.min and Math.max lower to single min/max instructions (no branches) on the GPU.
    static int min(int a, int b) {
        return Math.min(a, b);
    }

    static int max(int a, int b) {
        return Math.max(a, b);
    }

    static int clamp(int v, int lo, int hi) {
        if (v < lo) {
            return lo;
        }
        return v > hi ? hi : v;
    }

    /** Element i of b, of dtype {@code dtype}, as float32. */
    static float load(Buf b, long i, int dtype) {
        if (dtype == DTYPE_BF16) {
            return Numerics.bf16ToFloat(b.getShort(i));
        } else if (dtype == DTYPE_FP16) {
            return Numerics.fp16ToFloat(b.getShort(i));
        } else if (dtype == DTYPE_FP8_E4M3) {
            return Numerics.fp8e4m3ToFloat(b.getByte(i));
        }
        return b.getFloat(i);
    }

    /** Stores v into element i of b, converted (round to nearest even) to {@code dtype}. */
    static void store(Buf b, long i, int dtype, float v) {
        if (dtype == DTYPE_BF16) {
            b.setShort(i, Numerics.floatToBf16(v));
        } else if (dtype == DTYPE_FP16) {
            b.setShort(i, Numerics.floatToFp16(v));
        } else if (dtype == DTYPE_FP8_E4M3) {
            b.setByte(i, Numerics.floatToFp8e4m3(v));
        } else {
            b.setFloat(i, v);
        }
    }
}
