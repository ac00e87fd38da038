package org.moecomm.kernels.moe;

import org.moecomm.kernels.api.AnyBlockSize;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.LaunchBounds;
import org.moecomm.kernels.api.Specialize;

/**
 * One kernel per half of a dispatch/combine round (docs/protocol.md): each moves its data
 * <em>and</em> talks to the peers itself, so a round is four launches whose arguments never change
 * from round to round (a CUDA graph can replay them).
 *
 * <ul>
 *   <li>{@link #dispatchSend}: pack, rows straight into mapped peers' receive buffers or staged and
 *       put, then the destination's dispatch signal;</li>
 *   <li>{@link #dispatchRecv}: bounded waits for every source group, scatter, expert counts;</li>
 *   <li>{@link #combineSend}: bounded waits for the previous round's combine-done, gather into
 *       mapped peers or staged and put, then the combine signals;</li>
 *   <li>{@link #combineRecv}: bounded waits, weighted reduction, combine-done signals;</li>
 *   <li>{@link #dispatch}: at decode sizes, dispatch send's blocks and the source-order dispatch
 *       receive's blocks in one grid (one launch for the whole dispatch).</li>
 * </ul>
 *
 * <p><b>Round state on the device.</b> {@code state} (int32 words, zero when the handle is made)
 * holds the number of the round in progress (the int64 at word {@link #STATE_ROUND}), advanced by
 * {@link #dispatchSend}'s last block, dispatch's completion counters, and the combine rows
 * expected from each rank so far. Signal values are computed from them, never passed by the host.
 *
 * <p><b>Completion.</b> A signal may only count what every block that contributed has finished.
 * The dispatch grids count their finished blocks: a block ends with a barrier, its thread 0 makes
 * the block's writes visible to the whole system ({@code systemFence}, or {@code quiet} for puts;
 * only to the device, {@code globalFence}, in dispatch receive, whose results stay local) and adds
 * one to a counter; the block that brings the counter to the grid size fences again, resets the
 * counter (after the fence, which then need not wait for that store) and raises the signals
 * ({@code round << 32 | rows}). A dispatch send with one block per destination (decode) skips the
 * count: its one block is the last. The combine grids count nothing: each block adds what it
 * contributed to the peers' signal words itself, with a release ({@link #signalFromBlock}), and the
 * receiver waits for the sum it expects (combine: the rows, from dispatch's pair counts;
 * combine-done: {@link #DONE_PER_ROUND} per round). Outside {@link #dispatch} no block waits for
 * another block of its own grid, so the grids need not be resident all at once: a block only
 * waits for other ranks' earlier kernels; {@link #dispatch}'s receive blocks wait for its send
 * blocks, and the protocol launches it only when every block is resident (docs/protocol.md,
 * "Progress").
 *
 * <p><b>Compiled for the handle.</b> Every int parameter that a handle fixes (its shapes and
 * choices) is {@link Specialize}d, so a handle's kernels carry them as constants, and the GPU
 * runner compiles them for the handle's block size too ({@code Kernel.specializedFor}; combine
 * recv, declared {@link AnyBlockSize}, for any); what changes between rounds or ranks
 * ({@code fixedTokens}, {@code rank}, the wait's tag) stays a parameter.
 *
 * <p><b>Where a peer is mapped</b> ({@code peerModes[pe] == }{@link #PEER_DIRECT}, NVLink or P2P)
 * rows are stored straight into its buffer through {@code peerBuf}, its address from the host's
 * table ({@code peerOffsets}); elsewhere
 * ({@link #PEER_PUT}: InfiniBand, EFA, or forced) they are written to the symmetric staging area
 * and put with NVSHMEM's non-blocking puts.
 */
public final class AllToAllKernels {
    /** Long index (int32 words 0-1) of {@code state}: the round in progress (0 before the first). */
    public static final int STATE_ROUND = 0;
    /** Blocks of the current {@link #dispatchSend} launch that have finished. */
    public static final int STATE_DISPATCH_SENT = 2;
    /** Blocks of the current {@link #dispatchRecv} launch that have finished. */
    public static final int STATE_DISPATCH_RECEIVED = 3;
    /**
     * int32 {@code [W]} from here: blocks of {@link #dispatchSend} done per destination; then
     * int32 {@code [W]}: the destination's rows of the current launch, written by its last block in
     * y (the one whose tokens end at m) for the block that raises the signal; then int64
     * {@code [W]} ({@link #combineExpectedIndex}): the combine rows expected from each rank over
     * every round so far; then int64 {@code [W][MAX_RECEIVE_PARTS]} ({@link #receiveRoundIndex},
     * the first NG used): each source group's receive round, per part.
     */
    public static final int STATE_DESTINATIONS = 4;

    /**
     * What the blocks of one {@link #combineRecv} grid add, together, to each peer's combine-done
     * word per round (each its share, {@link #doneShare}): the word reaches {@code n * DONE_PER_ROUND}
     * when round {@code n} is read on every block, whatever the grid's size.
     */
    public static final long DONE_PER_ROUND = 1L << 20;

    /**
     * What block (0, 0) of every rank's {@link #combineSend} adds to every peer's combine word
     * once per round, beside the rows: a rank that expects no rows from a peer still waits for
     * it, so a peer has finished its dispatch receive of the round (it reads {@code dispatchRecv},
     * which the next round's dispatch send rewrites) before the rank's round can end. Above any
     * round's rows: {@code combine[d]} holds {@code n * COMBINE_PER_ROUND} plus every row so far.
     */
    public static final long COMBINE_PER_ROUND = 1L << 32;

    /** Groups (W / G) a {@link #combineSend} block counts its rows for, in shared memory. */
    public static final int MAX_GROUPS = 1024;

    /**
     * Rows of {@code peerOffsets} (int64 {@code [3][W]}, host-filled: {@code Transport.peerOffset}):
     * the offsets of every peer's copy of {@code dispatchRecv}, {@code combineRecv} and the signals.
     */
    public static final int OFFSETS_DISPATCH_RECV = 0;
    /** Row of {@code peerOffsets}: {@code combineRecv}. */
    public static final int OFFSETS_COMBINE_RECV = 1;
    /** Row of {@code peerOffsets}: the signal words. */
    public static final int OFFSETS_SIGNALS = 2;
    /** Rows of {@code peerOffsets}. */
    public static final int OFFSETS_ROWS = 3;

    /** {@code peerModes} value: the peer's memory is mapped; store into it directly. */
    public static final int PEER_DIRECT = 1;
    /** {@code peerModes} value: stage in the symmetric send area and put. */
    public static final int PEER_PUT = 0;

    private AllToAllKernels() {
    }

    /** int32 words of {@code state} for {@code worldSize} ranks. */
    public static int stateWords(int worldSize) {
        return STATE_DESTINATIONS + (4 + 2 * MAX_RECEIVE_PARTS) * worldSize;
    }

    /** Most blocks per source group of the source-order receive (a power of two; {@link #receiveInSourceOrder}). */
    public static final int MAX_RECEIVE_PARTS = 8;

    /**
     * Long index of {@code state}'s first expected-combine-rows counter (one per rank {@code d},
     * int64): the pairs this rank's group has sent to {@code d}'s experts over every round so far,
     * which {@code d} returns as combine rows. Added to by {@link #dispatchSend}, read by
     * {@link #combineRecv}.
     */
    public static int combineExpectedIndex(int worldSize) {
        return (STATE_DESTINATIONS + 2 * worldSize) / 2;
    }

    /**
     * Long index of {@code state}'s receive round of part {@code part} of source group {@code g}
     * (int64): the last round whose rows from {@code g} that block received, in the source-order
     * receive ({@link #receiveInSourceOrder}). Each such block keeps its own round, read at its
     * start and advanced by itself, instead of the grid's {@link #STATE_ROUND}: in
     * {@link #dispatch} it runs beside the send blocks, one of which advances {@code STATE_ROUND}
     * at a moment it cannot know.
     */
    public static int receiveRoundIndex(int worldSize, int g, int part) {
        return (STATE_DESTINATIONS + 4 * worldSize) / 2 + g * MAX_RECEIVE_PARTS + part;
    }

    /**
     * {@link MoeKernels#packRows}'s {@code notesAt} for a block of {@code dispatchSend}: where a
     * block that stores its rows straight into a peer ({@code direct}) writes its group's pair
     * notes with {@code pairNotes != 0}, {@code round << 32 | } {@link #notesRegion}; else -1.
     */
    static long notesAt(boolean direct, int pairNotes, long round, int numGroups, int maxTokens, int rowBytes,
                        int group, int pairsPerRegion) {
        return direct && pairNotes != 0
                ? round << 32 | notesRegion(numGroups, maxTokens, rowBytes, group, pairsPerRegion) : -1;
    }

    /**
     * Index (int64 words) in {@code dispatchRecv} of source group {@code g}'s pair notes: after the
     * {@code [NG][M]} rows, one region of {@code 1 + M*Kd} words per source group. A sender that
     * stores its rows straight into a peer (one block per destination: decode) writes there, before
     * the rows, a note per pair it sends, {@code round << 32 | row << 16 | (l + 1)} at word
     * {@code 1 + q} for its pair {@code q} in row {@code row} to local expert {@code l}, and the
     * count note {@code round << 32 | pairs} at word 0. Each note says by itself that it is of the
     * round, so the receiver can wait for it without a fence on either side and take its slots
     * while the rows are still on their way; only the copy waits for the dispatch signal
     * (docs/protocol.md, "Pair notes").
     */
    public static long notesRegion(int numGroups, int maxTokens, int rowBytes, int g, int pairsPerRegion) {
        return ((long) numGroups * maxTokens * rowBytes >> 3) + (long) g * (1 + pairsPerRegion);
    }

    /**
     * Dispatch send: grid {@code W x Y}, {@code x} = destination {@code d}. Numbers the rows and
     * writes {@code pairLocation} as {@link MoeKernels#pack} does (and m, and the input check);
     * where this member serves {@code d}, block {@code y} writes the rows of its range of tokens to
     * {@code d}'s {@code dispatchRecv} region {@code g} (directly, or staged in {@code dispatchSend}
     * region {@code d/G} and put), and the last block of {@code d} sets {@code d}'s
     * {@code dispatch[g]} signal to {@code round << 32 | rows}. The last block of the grid advances
     * the round.
     *
     * <p>With {@code pairNotes != 0} (decode, where the receiver takes its slots in source order)
     * a block that alone serves a mapped {@code d} also writes its group's pair notes into
     * {@code d}'s {@code dispatchRecv} ({@link #notesRegion}) before the rows.
     *
     * @param signals the handle's symmetric signal words ({@code [NG]} dispatch, {@code [W]} combine, {@code [W]} combine-done)
     * @param peerModes int32 {@code [W]}: {@link #PEER_DIRECT} or {@link #PEER_PUT}
     * @param peerOffsets int64 {@code [OFFSETS_ROWS][W]}: the peers' copies of the symmetric buffers
     *                    ({@link KernelContext#peerBuf(Buf, int, Buf)}), filled once by the host
     * @param quantizeFrom -1, or the dtype code (bf16, fp16) of x's tokens, which the rows then carry quantised
     *                     to fp8-e4m3 with block scales ({@link MoeKernels#finishShare}; xBytes = H)
     */
    @LaunchBounds(maxThreads = MoeKernels.MAX_THREADS, minBlocksPerMultiprocessor = 2)
    public static void dispatchSend(KernelContext ctx, Buf x, Buf xScale, Buf indices, Buf numTokens,
                                    Buf dispatchSend, Buf dispatchRecv, Buf signals, Buf pairLocation,
                                    Buf inputReport, Buf state, Buf peerModes, Buf peerOffsets,
                                    @Specialize int xBytes, @Specialize int scalesPerToken, @Specialize int topK,
                                    @Specialize int expertsPerRank, @Specialize int groupSize, int rank,
                                    @Specialize int rowBytes, @Specialize int maxTokens, @Specialize int pairsPerRegion,
                                    int fixedTokens, @Specialize int checkIds, @Specialize int quantizeFrom,
                                    @Specialize int pairNotes) {
        sendToDestination(ctx, ctx.groupIdx(), ctx.numGroupsX(), x, xScale, indices, numTokens, dispatchSend,
                dispatchRecv, signals, pairLocation, inputReport, state, peerModes, peerOffsets, xBytes, scalesPerToken,
                topK, expertsPerRank, groupSize, rank, rowBytes, maxTokens, pairsPerRegion, fixedTokens, checkIds,
                quantizeFrom, pairNotes);
    }

    /**
     * The body of {@link #dispatchSend} for destination {@code dest} of {@code world}: the block
     * column {@code dest} of a grid whose y extent is dest's blocks ({@link #dispatch} runs it
     * beside the receive blocks).
     */
    static void sendToDestination(KernelContext ctx, int dest, int world, Buf x, Buf xScale, Buf indices,
                                  Buf numTokens, Buf dispatchSend, Buf dispatchRecv, Buf signals, Buf pairLocation,
                                  Buf inputReport, Buf state, Buf peerModes, Buf peerOffsets, int xBytes,
                                  int scalesPerToken, int topK, int expertsPerRank, int groupSize, int rank,
                                  int rowBytes, int maxTokens, int pairsPerRegion, int fixedTokens, int checkIds,
                                  int quantizeFrom, int pairNotes) {
        long stateRound = state.getLong(STATE_ROUND);
        int mode = peerModes.getInt(dest);
        // resolved before the mode is known (unused for a put peer): from the host's table, a load
        // in flight with the round's and the mode's (nvshmem_ptr's call waited for them, and the
        // ids' loads after it waited for the call)
        Buf peerRecv = ctx.peerBuf(dispatchRecv, dest, offsetsRow(peerOffsets, OFFSETS_DISPATCH_RECV, world));
        long round = stateRound + 1;
        int group = rank / groupSize;
        boolean serves = dest % groupSize == rank % groupSize;
        boolean direct = serves && mode == PEER_DIRECT;
        long recvRegionRow = (long) group * maxTokens;
        Buf rowsOut = dispatchSend;
        long outRegionRow = (long) (dest / groupSize) * maxTokens;
        if (direct) {
            rowsOut = peerRecv;
            outRegionRow = recvRegionRow;
        }
        int putPeer = serves && !direct ? dest : -1;
        // a put destination reads the rows' own metas after its signal instead (docs/protocol.md, "Pair notes")
        long notesAt = notesAt(direct, pairNotes, round, world / groupSize, maxTokens, rowBytes, group, pairsPerRegion);
        long packed = MoeKernels.packRows(ctx, dest, world, x, xScale, indices, numTokens, pairLocation, inputReport,
                rowsOut, outRegionRow, serves ? 1 : 0, dispatchRecv, recvRegionRow, putPeer, xBytes, scalesPerToken,
                topK, expertsPerRank, rowBytes, maxTokens, pairsPerRegion, fixedTokens, checkIds, quantizeFrom,
                notesAt);
        int rows = (int) packed;
        boolean allRows = (packed & MoeKernels.PACK_ALL_ROWS) != 0;
        int pairs = (int) (packed >>> MoeKernels.PACK_PAIRS_SHIFT);
        // One block serving a mapped destination (decode) signals it with a release store: the
        // thread that stores resolves the peer's signal words while the block's last copies drain.
        boolean releaseSignal = direct && ctx.numGroupsY() == 1;
        Buf peerSignals = releaseSignal && ctx.localIdx() == 0
                ? ctx.peerBuf(signals, dest, offsetsRow(peerOffsets, OFFSETS_SIGNALS, world)) : signals;
        if (putPeer >= 0) {
            ctx.quiet();
        }

        ctx.localBarrier();
        if (ctx.localIdx() == 0) {
            finishDispatchSend(ctx, signals, peerSignals, releaseSignal, state, round, dest, world, group, serves,
                    rows, allRows, pairs);
        }
    }

    /**
     * Thread 0's end of a {@link #dispatchSend} block (after its final barrier): makes the block's
     * rows visible, counts the block; the last block of {@code dest} raises {@code dest}'s signal
     * (when this member serves it), the last send block ({@code world} columns) advances the round.
     * Package-private: the CPU runner's loop form of dispatchSend calls it rather than inlining it
     * (8000 bytes).
     *
     * @param releaseSignal the block alone serves a mapped {@code dest}: its signal is one release
     *                      store into {@code peerSignals}, {@code dest}'s signal words
     * @param rows {@code dest}'s rows of the tokens up to the end of this block's last chunk
     *             ({@link MoeKernels#packRows})
     * @param allRows {@code rows} are all of {@code dest}'s (the block's last chunk ends at m; always
     *                for the last block in y, which leaves them in the round state for a block
     *                without them that may raise the signal)
     * @param pairs {@code dest}'s pairs of the tokens up to the end of this block's last chunk: the
     *              last block in y adds them to the combine rows expected from {@code dest}
     */
    static void finishDispatchSend(KernelContext ctx, Buf signals, Buf peerSignals, boolean releaseSignal, Buf state,
                                   long round, int dest, int world, int group, boolean serves, int rows,
                                   boolean allRows, int pairs) {
        // One block per destination (decode) is its last: no count, no second fence before the signal.
        boolean alone = ctx.numGroupsY() == 1;
        int rowsWord = STATE_DESTINATIONS + world + dest;
        if (releaseSignal) {
            // the block's rows, seen through its final barrier, before the signal: one release store
            // (a fence, then the nvshmem signal's own lookup of the peer, cost 2.1-3 us at 1 token)
            ctx.storeRelease(peerSignals, group, (round << 32) | rows);
        } else {
            if (!alone && ctx.groupIdy() == ctx.numGroupsY() - 1) {
                state.setInt(rowsWord, rows); // the destination's rows: this block's tokens end at m
            }
            ctx.systemFence();
            if (alone || ctx.atomicAdd(state, STATE_DESTINATIONS + dest, 1) == ctx.numGroupsY() - 1) {
                if (serves) {
                    if (!alone) {
                        ctx.systemFence(); // the other blocks' rows, seen through the count, before the signal
                    }
                    // after the fence the signal needs no release of its own (a release store here
                    // was no faster at 8 tokens, W = 4: 32.7 and 34.2 us against 31.8 twice)
                    // else written by the last block in y before its count, seen through this count
                    int total = allRows ? rows : state.getInt(rowsWord);
                    ctx.signalSet(signals.slice(8L * group, 8), (round << 32) | total, dest);
                }
                if (!alone) {
                    state.setInt(STATE_DESTINATIONS + dest, 0); // after the fence, which need not wait for it
                }
            }
        }
        if (ctx.groupIdy() == ctx.numGroupsY() - 1) {
            // every member of the group, served or not: dest returns a combine row per pair to each.
            // After the signal: only combine recv, a later kernel, reads it, and before it the
            // signal's release would wait for this load's round trip too.
            long expected = combineExpectedIndex(world) + dest;
            state.setLong(expected, state.getLong(expected) + pairs);
        }
        if (ctx.atomicAdd(state, STATE_DISPATCH_SENT, 1) == world * ctx.numGroupsY() - 1) {
            state.setInt(STATE_DISPATCH_SENT, 0);
            state.setLong(STATE_ROUND, round);
        }
    }

    /**
     * Dispatch receive: grid {@code NG x Y}, {@code x} = source group {@code g}. Waits, bounded,
     * for {@code dispatch[g] >= round << 32} (a wait that runs out is recorded in {@code errors}
     * and the group counts as having sent no rows), then scatters the group's rows as
     * {@link MoeKernels#scatter} does, in one of two ways, chosen by the protocol per handle:
     * <ul>
     *   <li>counted ({@code orderedSlots == 0}, any {@code Y}): thread 0 waits for group {@code g};
     *       slots come from {@code slotCounts} (int32 {@code [L]}, zero between rounds) by global
     *       atomics, and the last block of the grid writes the counts to {@code expertNumTokens}
     *       and zeroes {@code slotCounts};</li>
     *   <li>ordered ({@code orderedSlots == 1}, decode; {@code Y} a power of two up to
     *       {@link #MAX_RECEIVE_PARTS}, block {@code y} the part of the local experts
     *       {@code l mod Y == y}): the slots follow the groups' order, counted in shared memory from
     *       groups {@code 0..g}'s pair notes or metas ({@link #receiveInSourceOrder}): no global
     *       atomics and no completion count; {@code slotCounts} is not touched.</li>
     * </ul>
     *
     * @param peerModes int32 {@code [W]}: how each peer's rows come ({@link #PEER_DIRECT}: with pair notes)
     * @param waitTag the tag of the wait for signal word 0; word {@code i} has {@code waitTag + i}
     */
    public static void dispatchRecv(KernelContext ctx, Buf dispatchRecv, Buf signals, Buf peerModes, Buf slotCounts,
                                    Buf expertNumTokens, Buf expertX, Buf expertXScale, Buf expertOrigin,
                                    Buf pairsFromGroup, Buf state, Buf errors, long timeoutNanos, int waitTag,
                                    int rank, @Specialize int groupSize, @Specialize int expertsPerRank,
                                    @Specialize int xBytes, @Specialize int scalesPerToken, @Specialize int topK,
                                    @Specialize int rowBytes, @Specialize int maxTokens, @Specialize int numGroups,
                                    @Specialize int pairsPerRegion, @Specialize int orderedSlots) {
        int g = ctx.groupIdx();
        int tid = ctx.localIdx();
        int threads = ctx.localGroupSizeX();
        if (orderedSlots != 0) {
            receiveInSourceOrder(ctx, g, ctx.groupIdy(), ctx.numGroupsY(), dispatchRecv, signals, peerModes,
                    expertNumTokens, expertX, expertXScale, expertOrigin, pairsFromGroup, state, errors, timeoutNanos,
                    waitTag, rank, groupSize, expertsPerRank, xBytes, scalesPerToken, topK, rowBytes, maxTokens,
                    numGroups, pairsPerRegion);
        } else {
            long round = state.getLong(STATE_ROUND);
            int[] shared = ctx.allocateIntLocalArray(1);
            if (tid == 0) {
                int rows = receivedRows(ctx, signals, g, round, timeoutNanos, errors, rank, groupSize, waitTag);
                shared[0] = rows;
            }
            ctx.localBarrier();
            MoeKernels.scatterRows(ctx, dispatchRecv, shared[0], slotCounts, expertX, expertXScale, expertOrigin,
                    pairsFromGroup, xBytes, scalesPerToken, topK, rowBytes, maxTokens, numGroups, pairsPerRegion);
            if (lastBlock(ctx, state, STATE_DISPATCH_RECEIVED, shared)) {
                for (int l = tid; l < expertsPerRank; l += threads) {
                    expertNumTokens.setInt(l, ctx.atomicAdd(slotCounts, l, 0));
                    slotCounts.setInt(l, 0);
                }
            }
        }
    }

    /**
     * A whole dispatch in one launch (decode): grid {@code (W + NG*P) x 1}; its parameters are
     * {@link #dispatchSend}'s, then the receive's. Block {@code x < W} is
     * {@link #dispatchSend}'s block for destination {@code x} ({@code pairNotes}: 1, as the receive
     * takes its slots in source order); block {@code W + g*P + q} is
     * {@link #dispatchRecv}'s ordered receive of source group {@code g}, part {@code q} of
     * {@code P = 2^partShift}, which needs no other receive block (the protocol launches this
     * kernel only where dispatch recv takes its slots in source order). The receive blocks start
     * with the send blocks: their prologue (the round, the first poll of each signal) overlaps the
     * send, and no kernel boundary lies between the last signal and the scatter. A receive block
     * waits for send blocks of its own grid (those of this rank's own group's destinations), so the
     * protocol launches it only when every block of the grid may wait for others (on a GPU: all
     * resident at once; docs/protocol.md, "Progress").
     */
    @LaunchBounds(maxThreads = MoeKernels.MAX_THREADS, minBlocksPerMultiprocessor = 2)
    public static void dispatch(KernelContext ctx, Buf x, Buf xScale, Buf indices, Buf numTokens, Buf dispatchSend,
                                Buf dispatchRecv, Buf signals, Buf pairLocation, Buf inputReport, Buf state,
                                Buf peerModes, Buf peerOffsets, @Specialize int xBytes,
                                @Specialize int scalesPerToken, @Specialize int topK, @Specialize int expertsPerRank,
                                @Specialize int groupSize, int rank, @Specialize int rowBytes,
                                @Specialize int maxTokens, @Specialize int pairsPerRegion, int fixedTokens,
                                @Specialize int checkIds, @Specialize int quantizeFrom, @Specialize int pairNotes,
                                Buf expertNumTokens, Buf expertX, Buf expertXScale,
                                Buf expertOrigin, Buf pairsFromGroup, Buf errors, long timeoutNanos, int waitTag,
                                @Specialize int numGroups, @Specialize int partShift) {
        int world = numGroups * groupSize;
        int block = ctx.groupIdx();
        if (block < world) {
            sendToDestination(ctx, block, world, x, xScale, indices, numTokens, dispatchSend, dispatchRecv, signals,
                    pairLocation, inputReport, state, peerModes, peerOffsets, xBytes, scalesPerToken, topK,
                    expertsPerRank, groupSize, rank, rowBytes, maxTokens, pairsPerRegion, fixedTokens, checkIds,
                    quantizeFrom, pairNotes);
        } else {
            // shifts, not divisions: a division is dozens of dependent instructions on the GPU
            int parts = 1 << partShift;
            receiveInSourceOrder(ctx, (block - world) >> partShift, (block - world) & (parts - 1), parts, dispatchRecv,
                    signals, peerModes, expertNumTokens, expertX, expertXScale, expertOrigin, pairsFromGroup, state,
                    errors, timeoutNanos, waitTag, rank, groupSize, expertsPerRank, xBytes, scalesPerToken, topK,
                    rowBytes, maxTokens, numGroups, pairsPerRegion);
        }
    }

    /**
     * The ordered receive of {@link #dispatchRecv} for source group {@code g}, part {@code part}
     * of its {@code parts} blocks: the pairs of groups {@code 0..g}, then
     * {@link MoeKernels#slotsInSourceOrder}, then the copy of group {@code g}'s rows. A group whose
     * member here stores its rows directly ({@link #PEER_DIRECT}) is read from its pair notes
     * ({@link #notesRegion}), each waited for on its own, so the slots are taken while the senders
     * still copy and fence their rows, and only the copy waits for group {@code g}'s signal; a
     * group whose rows are put is read from the rows' metas after its signal. The round is the
     * block's own ({@link #receiveRoundIndex}): read here, advanced by thread 0 once every thread
     * has read it.
     */
    static void receiveInSourceOrder(KernelContext ctx, int g, int part, int parts, Buf dispatchRecv, Buf signals,
                                     Buf peerModes, Buf expertNumTokens, Buf expertX, Buf expertXScale,
                                     Buf expertOrigin, Buf pairsFromGroup, Buf state, Buf errors, long timeoutNanos,
                                     int waitTag, int rank, int groupSize, int expertsPerRank, int xBytes,
                                     int scalesPerToken, int topK, int rowBytes, int maxTokens, int numGroups,
                                     int pairsPerRegion) {
        int tid = ctx.localIdx();
        int threads = ctx.localGroupSizeX();
        int member = rank % groupSize;
        long roundIndex = receiveRoundIndex(numGroups * groupSize, g, part);
        long round = state.getLong(roundIndex) + 1;
        // per group s <= g: its pairs (notes) or rows (put), and which
        int[] sent = ctx.allocateIntLocalArray(MoeKernels.ORDERED_GROUPS);
        int[] noted = ctx.allocateIntLocalArray(MoeKernels.ORDERED_GROUPS);
        int[] counts = ctx.allocateIntLocalArray(MoeKernels.ORDERED_EXPERTS);
        int[] listed = ctx.allocateIntLocalArray(1);
        int[] copySlot = ctx.allocateIntLocalArray(MoeKernels.ORDERED_PAIRS);
        int[] copyExpert = ctx.allocateIntLocalArray(MoeKernels.ORDERED_PAIRS);
        int[] copyRow = ctx.allocateIntLocalArray(MoeKernels.ORDERED_PAIRS);
        int[] copyOrigin = ctx.allocateIntLocalArray(MoeKernels.ORDERED_PAIRS);
        for (int l = tid; l < expertsPerRank; l += threads) {
            counts[l] = 0;
        }
        if (tid == 0) {
            listed[0] = 0;
        }
        for (int s = tid; s <= g; s += threads) {
            boolean viaNotes = peerModes.getInt(s * groupSize + member) == PEER_DIRECT;
            noted[s] = viaNotes ? 1 : 0;
            // a wait is a split point of the CPU runner's loop form: its result goes to a local first
            if (viaNotes) {
                int pairs = notedPairs(ctx, dispatchRecv, s, round, timeoutNanos, errors, rank, groupSize, waitTag,
                        maxTokens, rowBytes, numGroups, pairsPerRegion);
                sent[s] = pairs;
            } else {
                int rows = receivedRows(ctx, signals, s, round, timeoutNanos, errors, rank, groupSize, waitTag);
                sent[s] = rows;
            }
        }
        ctx.localBarrier();
        if (tid == 0) {
            state.setLong(roundIndex, round); // every thread read it before the barrier
        }

        // Every pair of groups 0..g (items: a group's notes, or its rows' (row, pair) metas),
        // numbered across the groups and dealt to the threads in turn, so that a decode round's few
        // pairs are read all at once (a thread's pairs of successive groups would wait for each other).
        int kd = MoeKernels.pairsPerRow(pairsPerRegion, maxTokens, topK);
        int metaOffset = MoeKernels.rowMetaOffset(xBytes, scalesPerToken);
        int before = 0; // items of the groups before s
        for (int s = 0; s <= g; s++) {
            int viaNotes = noted[s];
            int items = viaNotes != 0 ? MoeKernels.clamp(sent[s], 0, pairsPerRegion)
                    : MoeKernels.clamp(sent[s], 0, maxTokens) * kd;
            long notes = notesRegion(numGroups, maxTokens, rowBytes, s, pairsPerRegion) + 1;
            int first = tid - before % threads; // the first j with (before + j) % threads == tid
            if (first < 0) {
                first += threads;
            }
            for (int j = first; j < items; j += threads) {
                int row;
                int pair; // its number among the group's pairs
                int expert;
                if (viaNotes != 0) {
                    long note = ctx.waitAtLeast(dispatchRecv.slice(8 * (notes + j), 8), round << 32, timeoutNanos,
                            errors, rank, s * groupSize + member, waitTag + s);
                    // a wait that ran out (recorded, raised on the host) counts as no pair
                    boolean arrived = KernelContext.reached(note, round << 32);
                    row = arrived ? (int) (note >>> 16) & 0xffff : maxTokens;
                    pair = j;
                    expert = ((int) note & 0xffff) - 1;
                } else {
                    row = j / kd;
                    int p = j - row * kd;
                    long meta = MoeKernels.metaIndex((long) s * maxTokens + row, rowBytes, metaOffset);
                    // the row's first pair, its pair count and this pair's expert in one round trip
                    int rowPairBase = dispatchRecv.getInt(meta);
                    int rowPairs = MoeKernels.clamp(dispatchRecv.getInt(meta + 1), 0, kd);
                    expert = dispatchRecv.getInt(meta + 2 + p);
                    pair = rowPairBase + p;
                    if (s == g && p == 0 && row == items / kd - 1 && part == 0) {
                        // pairs are numbered contiguously in row order: the last row ends the count
                        pairsFromGroup.setInt(g, rowPairBase + rowPairs);
                    }
                    if (p >= rowPairs) {
                        row = maxTokens; // no such pair
                    }
                }
                if (row < maxTokens && expert >= 0 && expert < expertsPerRank && (expert & (parts - 1)) == part) {
                    if (s < g) {
                        ctx.atomicAdd(counts, expert, 1);
                    } else {
                        int c = ctx.atomicAdd(listed, 0, 1);
                        copyExpert[c] = expert;
                        copyRow[c] = g * maxTokens + row;
                        copyOrigin[c] = g * pairsPerRegion + pair;
                    }
                }
            }
            before += items;
        }
        if (tid == 0 && part == 0 && (noted[g] != 0 || sent[g] == 0)) {
            pairsFromGroup.setInt(g, noted[g] != 0 ? MoeKernels.clamp(sent[g], 0, pairsPerRegion) : 0);
        }
        ctx.localBarrier();
        int copies = MoeKernels.slotsInSourceOrder(ctx, g, part, parts, counts, listed[0], copySlot, copyExpert,
                copyOrigin, expertNumTokens, expertOrigin, maxTokens, numGroups, expertsPerRank);
        // the rows themselves: after group g's signal (a put group's was waited for above). Every
        // thread has read the count (listed[0]) before the slots' barrier: a signal's wait that ran
        // out (recorded, raised on the host) clears it, and nothing is copied.
        if (tid == 0 && copies > 0 && noted[g] != 0) {
            int rows = receivedRows(ctx, signals, g, round, timeoutNanos, errors, rank, groupSize, waitTag);
            if (rows == 0) {
                listed[0] = 0;
            }
        }
        ctx.localBarrier();
        MoeKernels.copyListed(ctx, dispatchRecv, expertX, expertXScale, listed[0], copySlot, copyExpert, copyRow,
                numGroups * maxTokens, xBytes, scalesPerToken, rowBytes);
        if (part == 0 && noted[g] != 0) {
            // Group g's note words past its pairs get the round too, so that every word is rewritten
            // every round: a word left for 2^31 rounds would pass a later round's wait (the waits
            // compare modulo 2^64). Its sender wrote the others, and rewrites none before round + 1.
            // Last: off the path of the slots and the copy.
            long notes = notesRegion(numGroups, maxTokens, rowBytes, g, pairsPerRegion) + 1;
            for (int q = MoeKernels.clamp(sent[g], 0, pairsPerRegion) + tid; q < pairsPerRegion; q += threads) {
                ctx.storeRelaxed(dispatchRecv, notes + q, round << 32);
            }
        }
    }

    /**
     * The pairs source group {@code s} sent this round, from its count note ({@link #notesRegion}).
     */
    static int notedPairs(KernelContext ctx, Buf dispatchRecv, int s, long round, long timeoutNanos, Buf errors,
                          int rank, int groupSize, int waitTag, int maxTokens, int rowBytes, int numGroups,
                          int pairsPerRegion) {
        return countOfRound(ctx, dispatchRecv.slice(8 * notesRegion(numGroups, maxTokens, rowBytes, s,
                pairsPerRegion), 8), round, timeoutNanos, errors, rank, s * groupSize + rank % groupSize, waitTag + s);
    }

    /** The rows source group {@code s} sent this round, from its dispatch signal. */
    static int receivedRows(KernelContext ctx, Buf signals, int s, long round, long timeoutNanos, Buf errors,
                            int rank, int groupSize, int waitTag) {
        return countOfRound(ctx, signals.slice(8L * s, 8), round, timeoutNanos, errors, rank,
                s * groupSize + rank % groupSize, waitTag + s);
    }

    /**
     * The count a word of the round holds ({@code round << 32 | count}: a dispatch signal or a
     * count note), from the value the bounded wait for {@code round << 32} returns, or 0 when the
     * wait ran out (recorded in {@code errors}, raised on the host). The word is this round's, not a
     * later one's (the next is written only after this rank's round has ended), so the count needs
     * no load of its own after the wait.
     */
    static int countOfRound(KernelContext ctx, Buf word, long round, long timeoutNanos, Buf errors, int rank, int peer,
                            int tag) {
        long seen = ctx.waitAtLeast(word, round << 32, timeoutNanos, errors, rank, peer, tag);
        return KernelContext.reached(seen, round << 32) ? (int) (seen & 0xffffffffL) : 0;
    }

    /**
     * Combine send: grid {@code L x chunks}. Waits, bounded, until every rank {@code s} has
     * finished reading its combine area of the previous round ({@code combineDone[s] >= (round - 1)
     * * DONE_PER_ROUND}); then copies expert output row {@code expertY[l][slot]}, for every {@code slot <
     * expertNumTokens[l]}, to combine row {@code rank*M*Kd + q} of every member {@code s} of the
     * row's source group {@code g} ({@code expertOrigin = g*M*Kd + q}): directly where {@code s}
     * is mapped, else staged in {@code combineSend} row {@code g*M*Kd + q} and put by the warp.
     * Each block then adds the rows it wrote to {@code s} to {@code s}'s {@code combine[rank]}
     * ({@link #signalFromBlock}; block (0, 0) also adds {@link #COMBINE_PER_ROUND}): no grid count,
     * no last block.
     *
     * @param anyPut 1 when some peer is {@link #PEER_PUT} (the second pass is needed)
     */
    public static void combineSend(KernelContext ctx, Buf expertY, Buf expertNumTokens, Buf expertOrigin,
                                   Buf combineSend, Buf combineRecv, Buf signals, Buf state, Buf peerModes,
                                   Buf peerOffsets, Buf errors, long timeoutNanos, int waitTag, int rank,
                                   @Specialize int worldSize, @Specialize int groupSize, @Specialize int yBytes,
                                   @Specialize int expertCapacity, @Specialize int pairsPerRegion,
                                   @Specialize int anyPut) {
        long round = state.getLong(STATE_ROUND);
        int tid = ctx.localIdx();
        int threads = ctx.localGroupSizeX();
        int numGroups = worldSize / groupSize;
        int doneWord = numGroups + worldSize;
        // the block's rows per source group: what it adds to each member's combine signal
        int[] rowsToGroup = ctx.allocateIntLocalArray(MAX_GROUPS);
        int expert = ctx.groupIdx();
        // read before the waits (a local count, final since dispatch receive): its load overlaps them
        int n = MoeKernels.clamp(expertNumTokens.getInt(expert), 0, expertCapacity);
        int warps = threads >> MoeKernels.copyShift(threads);
        int firstStripe = ctx.groupIdy() * warps;
        // A block without rows (most of them in decode: a token's K pairs among L experts) writes
        // nothing and signals nothing, so it does not wait for the peers' combine-done either.
        boolean writes = firstStripe < n;
        for (int g = tid; g < numGroups; g += threads) {
            rowsToGroup[g] = 0;
        }
        for (int s = tid; s < worldSize && writes; s += threads) {
            Buf done = signals.slice(8L * (doneWord + s), 8);
            awaitFrom(ctx, ctx.loadAcquire(done, 0), done, (round - 1) * DONE_PER_ROUND, timeoutNanos, errors, rank, s,
                    waitTag + doneWord + s);
        }
        ctx.localBarrier();

        int pieces = yBytes >> 4;
        long firstRow = (long) expert * expertCapacity;
        int stripeStep = ctx.numGroupsY() * warps;
        // Stripes of one slot per warp as in MoeKernels.gather; teams of warps share a stripe's rows.
        for (int stripe = firstStripe; stripe < n; stripe += stripeStep) {
            int rows = MoeKernels.min(warps, n - stripe);
            int shift = MoeKernels.teamShift(threads, rows);
            int team = tid >> shift;
            int lane = tid & ((1 << shift) - 1);
            int teams = threads >> shift;
            for (int j = team; j < rows && team < teams; j += teams) {
                long row = firstRow + stripe + j;
                int origin = expertOrigin.getInt(row);
                int g = origin / pairsPerRegion;
                long recvRow = (long) rank * pairsPerRegion + (origin - g * pairsPerRegion);
                if (lane == 0) {
                    ctx.atomicAdd(rowsToGroup, g, 1);
                }
                boolean staged = false;
                for (int i = 0; i < groupSize; i++) {
                    int s = g * groupSize + i;
                    int mode = peerModes.getInt(s);
                    // beside the mode's load, from the host's table as in dispatchSend
                    Buf peerRecv = ctx.peerBuf(combineRecv, s,
                            offsetsRow(peerOffsets, OFFSETS_COMBINE_RECV, worldSize));
                    if (mode == PEER_DIRECT) {
                        MoeKernels.copyPieces(peerRecv, recvRow * pieces, expertY, row * pieces, pieces, lane,
                                shift);
                    } else if (!staged) {
                        MoeKernels.copyPieces(combineSend, (long) origin * pieces, expertY, row * pieces, pieces, lane,
                                shift);
                        staged = true;
                    }
                }
            }
        }
        if (anyPut != 0) {
            // the staged rows written (and visible to a network adapter) before the puts read them
            ctx.systemFence();
            ctx.localBarrier();
            int warp = tid >> MoeKernels.WARP_SHIFT; // the hardware's warp: the put is a warp's collective
            if (warp < warps) { // one warp per row's put
                for (int slot = firstStripe + warp; slot < n; slot += stripeStep) {
                    int origin = expertOrigin.getInt(firstRow + slot);
                    int g = origin / pairsPerRegion;
                    long recvRow = (long) rank * pairsPerRegion + (origin - g * pairsPerRegion);
                    for (int i = 0; i < groupSize; i++) {
                        int s = g * groupSize + i;
                        if (peerModes.getInt(s) == PEER_PUT) {
                            ctx.putWarpNbi(combineRecv.slice(recvRow * yBytes, yBytes),
                                    combineSend.slice((long) origin * yBytes, yBytes), yBytes, s);
                        }
                    }
                }
            }
            ctx.quiet();
        }
        ctx.localBarrier();
        long perRound = ctx.groupIdx() == 0 && ctx.groupIdy() == 0 ? COMBINE_PER_ROUND : 0;
        for (int s = tid; s < worldSize; s += threads) {
            long add = perRound + rowsToGroup[s / groupSize];
            if (add > 0) {
                signalFromBlock(ctx, signals, numGroups + rank, add, s, peerModes, peerOffsets, worldSize);
            }
        }
    }

    /**
     * Combine receive: grid {@code X x Y} ({@code X <= M}); block {@code (x, y)} takes tokens
     * {@code x, x + X, ...} below m and their hidden quads {@code y*B + i + j*Y*B} (elements
     * {@code 4q .. 4q+3}, {@code B} threads per block). Every block waits, bounded, until
     * {@code combine[d] >= round * COMBINE_PER_ROUND} plus every row expected from rank {@code d}
     * so far (the counter of {@link #combineExpectedIndex}; also a block without tokens: the rows
     * of this round must have arrived before combine-done lets a peer run ahead), then reduces its tokens as
     * {@link MoeKernels#reduce} does, and adds its share ({@link #doneShare}) to this rank's
     * {@code combineDone} word on every rank. Compiled for any block size ({@link AnyBlockSize}):
     * with the block size a constant it ran 2-6% slower at 1024 and 2048 tokens
     * (docs/benchmarks.md, "Combine recv without its block size").
     */
    @AnyBlockSize
    public static void combineRecv(KernelContext ctx, Buf combineRecv, Buf pairLocation, Buf weights,
                                   Buf numTokens, Buf out, Buf signals, Buf state, Buf peerModes, Buf peerOffsets,
                                   Buf errors, long timeoutNanos, int waitTag, int rank, @Specialize int worldSize,
                                   @Specialize int numGroups, @Specialize int hidden, @Specialize int maxTokens,
                                   @Specialize int topK, @Specialize int yDtype, @Specialize int outDtype) {
        long round = state.getLong(STATE_ROUND);
        int tid = ctx.localIdx();
        int threads = ctx.localGroupSizeX();
        int expected = combineExpectedIndex(worldSize);
        for (int d = tid; d < worldSize; d += threads) {
            ctx.waitAtLeast(signals.slice(8L * (numGroups + d), 8),
                    round * COMBINE_PER_ROUND + state.getLong(expected + d), timeoutNanos, errors, rank, d,
                    waitTag + numGroups + d);
        }
        ctx.localBarrier();
        // a count out of range (reported by dispatch send's check) never reads past M tokens. Read
        // after the waits: read before them, the 128-token W=4 combine took 168 us instead of 144
        // (benchmarks/results/2026-12-03-decode-copies/)
        int m = MoeKernels.clamp(numTokens.getInt(0), 0, maxTokens);
        // the y blocks of a token split its hidden dimension (in quads): a decode round's few
        // tokens are latency-bound in one block (K row reads per quad, one quad per thread and step)
        int firstQuad = ctx.groupIdy() * threads + tid;
        int stepQuad = ctx.numGroupsY() * threads;
        for (int t = ctx.groupIdx(); t < m; t += ctx.numGroupsX()) {
            MoeKernels.reduceSlice(t, firstQuad, stepQuad, combineRecv, pairLocation, weights, out, hidden, topK,
                    yDtype, outDtype);
        }
        ctx.localBarrier();
        long share = doneShare(ctx.groupIdy() * ctx.numGroupsX() + ctx.groupIdx(),
                ctx.numGroupsX() * ctx.numGroupsY());
        for (int d = tid; d < worldSize; d += threads) {
            signalFromBlock(ctx, signals, numGroups + worldSize + rank, share, d, peerModes, peerOffsets, worldSize);
        }
    }

    /** Blocks per multiprocessor {@link #combineRecvResident}'s register budget is for. */
    public static final int COMBINE_RECV_RESIDENT_BLOCKS = 4;

    /**
     * {@link #combineRecv} with a register budget of its own: {@link #COMBINE_RECV_RESIDENT_BLOCKS}
     * blocks of {@link MoeKernels#MAX_THREADS} threads per multiprocessor, where ptxas gives
     * combineRecv itself a budget for eight (deepseek-v3: 56 registers against 32), so that a thread
     * keeps more of a token's row reads in flight. The protocol launches it where its whole grid is
     * resident at once (decode handles: a grid of one wave, whose blocks are latency-bound);
     * a larger grid runs combineRecv, of which a multiprocessor holds twice the blocks
     * (docs/benchmarks.md, "Combine recv's register budget").
     */
    @LaunchBounds(maxThreads = MoeKernels.MAX_THREADS, minBlocksPerMultiprocessor = COMBINE_RECV_RESIDENT_BLOCKS)
    public static void combineRecvResident(KernelContext ctx, Buf combineRecv, Buf pairLocation, Buf weights,
                                           Buf numTokens, Buf out, Buf signals, Buf state, Buf peerModes,
                                           Buf peerOffsets, Buf errors, long timeoutNanos, int waitTag, int rank,
                                           @Specialize int worldSize, @Specialize int numGroups,
                                           @Specialize int hidden, @Specialize int maxTokens, @Specialize int topK,
                                           @Specialize int yDtype, @Specialize int outDtype) {
        combineRecv(ctx, combineRecv, pairLocation, weights, numTokens, out, signals, state, peerModes, peerOffsets,
                errors, timeoutNanos, waitTag, rank, worldSize, numGroups, hidden, maxTokens, topK, yDtype, outDtype);
    }

    /**
     * Waits, bounded, until {@code signal} reaches {@code value} (modulo 2^64, as
     * {@link KernelContext#waitAtLeast}), given {@code seen}: the word's acquire load
     * ({@link KernelContext#loadAcquire}), issued beside the loads {@code value} is computed from.
     * A wait met at once then costs that one round trip, where the wait alone loads the word again
     * after them. True when the value arrived.
     */
    static boolean awaitFrom(KernelContext ctx, long seen, Buf signal, long value, long timeoutNanos, Buf errors,
                             int rank, int peer, int tag) {
        if (KernelContext.reached(seen, value)) {
            return true;
        }
        // a wait is a split point of the CPU runner's loop form: its result goes to a local first
        long last = ctx.waitAtLeast(signal, value, timeoutNanos, errors, rank, peer, tag);
        return KernelContext.reached(last, value);
    }

    /**
     * Block {@code block}'s share of {@link #DONE_PER_ROUND} among {@code blocks}: the shares of
     * a grid sum to it exactly.
     */
    static long doneShare(int block, int blocks) {
        // in 32 bits (DONE_PER_ROUND is 2^20): a 64-bit division and remainder are two calls of
        // about 80 dependent instructions each on the GPU, at the end of every block's path
        int total = (int) DONE_PER_ROUND;
        int share = total / blocks;
        return share + (block < total - share * blocks ? 1 : 0);
    }

    /**
     * One thread, after its block's last barrier: adds {@code delta} to signal word {@code word}
     * of rank {@code pe}, ordered after everything the block wrote and read before that barrier.
     * A mapped peer's word is one release add at its address from the host's table; a put peer's
     * gets a system fence (after the block's {@code quiet}, which completed its puts) and
     * NVSHMEM's signal add.
     */
    static void signalFromBlock(KernelContext ctx, Buf signals, int word, long delta, int pe, Buf peerModes,
                                Buf peerOffsets, int worldSize) {
        if (peerModes.getInt(pe) == PEER_DIRECT) {
            ctx.addRelease(ctx.peerBuf(signals, pe, offsetsRow(peerOffsets, OFFSETS_SIGNALS, worldSize)), word, delta);
        } else {
            ctx.systemFence();
            ctx.signalAdd(signals.slice(8L * word, 8), delta, pe);
        }
    }

    /** Row {@code row} of {@code peerOffsets}: one int64 offset per PE. */
    static Buf offsetsRow(Buf peerOffsets, int row, int worldSize) {
        return peerOffsets.slice(8L * row * worldSize, 8L * worldSize);
    }

    /**
     * Ends a block's part of dispatch receive's counted grid: after a barrier, thread 0 orders the
     * block's writes before what follows on this device ({@code globalFence}: the results stay
     * here) and counts the block in {@code state[counter]}; returns true, in every thread of the
     * block, for the last block of the grid, which also resets the counter for the next launch.
     */
    private static boolean lastBlock(KernelContext ctx, Buf state, int counter, int[] shared) {
        ctx.localBarrier();
        if (ctx.localIdx() == 0) {
            ctx.globalFence();
            int last = ctx.atomicAdd(state, counter, 1) == ctx.numGroupsX() * ctx.numGroupsY() - 1 ? 1 : 0;
            if (last == 1) {
                ctx.globalFence();
                // reset after the fence, which would otherwise wait for this store too; the next
                // launch of the grid comes after this one
                state.setInt(counter, 0);
            }
            shared[0] = last;
        }
        ctx.localBarrier();
        return shared[0] == 1;
    }
}
