package org.moecomm.core.protocol;

import org.moecomm.core.MoeConfig;
import org.moecomm.kernels.moe.AllToAllKernels;
import org.moecomm.kernels.moe.MoeKernels;

/**
 * Every size and offset of the protocol's buffers, computed once from a {@link MoeConfig}
 * (docs/protocol.md, "Buffers"). Symmetric buffers have the same layout on every rank.
 *
 * <p>A dispatch row is {@code [token: xBytes][scales: S*4, padded to 16][meta: (2+K) int32, padded to 16]};
 * a combine row is one expert output of {@code yBytes}.
 */
public final class BufferLayout {
    private final MoeConfig config;
    private final int xBytes;
    private final int scaleBytes;
    private final int metaBytes;
    private final int rowBytes;
    private final int yBytes;
    private final int pairsPerRegion;

    public BufferLayout(MoeConfig config) {
        this.config = config;
        this.xBytes = Math.multiplyExact(config.hidden(), config.expertInType().bytes());
        this.scaleBytes = 4 * config.scalesPerToken();
        this.metaBytes = 4 * (2 + config.topK());
        this.rowBytes = Math.addExact(Math.addExact(align16(xBytes), align16(scaleBytes)), align16(metaBytes));
        this.yBytes = Math.multiplyExact(config.hidden(), config.expertOutType().bytes());
        this.pairsPerRegion = Math.multiplyExact(config.maxTokensPerRank(), config.maxPairsPerRank());
    }

    public static int align16(int bytes) {
        return Math.addExact(bytes, 15) & ~15;
    }

    public MoeConfig config() {
        return config;
    }

    // ---- rows ----

    /** Token bytes of a dispatch row: H * expertInType.bytes (x's bytes, or fp8 codes when dispatch quantises). */
    public int xBytes() {
        return xBytes;
    }

    /** Scale bytes of a token (S * 4, unpadded). */
    public int scaleBytes() {
        return scaleBytes;
    }

    /** Offset of the scales within a dispatch row. */
    public int scaleOffset() {
        return align16(xBytes);
    }

    /** Offset of the meta words within a dispatch row. */
    public int metaOffset() {
        return align16(xBytes) + align16(scaleBytes);
    }

    /** Bytes of one dispatch row. */
    public int rowBytes() {
        return rowBytes;
    }

    /** Bytes of one combine row (one expert output): H * expertOutType.bytes. */
    public int yBytes() {
        return yBytes;
    }

    /** Rows of one combine region: M * Kd. */
    public int pairsPerRegion() {
        return pairsPerRegion;
    }

    // ---- symmetric buffers ----

    /** {@code dispatchRecv}: {@code [NG][M]} rows, then the pair notes ({@link #pairNoteWords}). */
    public long dispatchRecvBytes() {
        return dispatchRowBytes() + 8 * pairNoteWords();
    }

    /** {@code dispatchSend [NG][M]} rows (destination d in region d / G). */
    public long dispatchSendBytes() {
        return dispatchRowBytes();
    }

    /** {@code [NG][M]} dispatch rows: where the pair notes start in dispatchRecv. */
    public long dispatchRowBytes() {
        return (long) config.numGroups() * config.maxTokensPerRank() * rowBytes;
    }

    /**
     * int64 pair notes after dispatchRecv's rows ({@code AllToAllKernels.notesRegion}): per source
     * group a count note and {@code M*Kd} pair notes, where the source-order receive may run
     * ({@code M <= MoeKernels.ORDERED_ROWS}); none above.
     */
    public long pairNoteWords() {
        return config.maxTokensPerRank() <= MoeKernels.ORDERED_ROWS
                ? (long) config.numGroups() * (1 + pairsPerRegion) : 0;
    }

    /** {@code combineRecv [W][M*Kd]} rows of yBytes. */
    public long combineRecvBytes() {
        return (long) config.worldSize() * pairsPerRegion * yBytes;
    }

    /** {@code combineSend [NG][M*Kd]} rows of yBytes. */
    public long combineSendBytes() {
        return (long) config.numGroups() * pairsPerRegion * yBytes;
    }

    /** Signal words: NG dispatch, W combine, W combine-done. */
    public int signalCount() {
        return config.numGroups() + 2 * config.worldSize();
    }

    public long signalBytes() {
        return 8L * signalCount();
    }

    /** Offset of region {@code group} in dispatchRecv / dispatchSend. */
    public long dispatchRegionOffset(int region) {
        return (long) region * config.maxTokensPerRank() * rowBytes;
    }

    /** Offset of region {@code region} in combineRecv (a source rank) or combineSend (a group). */
    public long combineRegionOffset(int region) {
        return (long) region * pairsPerRegion * yBytes;
    }

    /** Signal raised by group {@code g}'s dispatch rows. */
    public int dispatchSignal(int group) {
        return group;
    }

    /** Signal raised by rank {@code d}'s combine rows. */
    public int combineSignal(int sourceRank) {
        return config.numGroups() + sourceRank;
    }

    /** Signal raised by rank {@code s} when it has finished reading its combine area. */
    public int combineDoneSignal(int rank) {
        return config.numGroups() + config.worldSize() + rank;
    }

    /** Symmetric bytes per rank. */
    public long symmetricBytes() {
        return dispatchRecvBytes() + dispatchSendBytes() + combineRecvBytes() + combineSendBytes() + signalBytes();
    }

    // ---- local buffers ----

    /** {@code roundState}: int32 words of {@code AllToAllKernels} (the round and the grids' completion counters). */
    public long roundStateBytes() {
        return 4L * AllToAllKernels.stateWords(config.worldSize());
    }

    /** {@code slotCounts [L]} int32: dispatch recv's slot counters, zero between rounds. */
    public long slotCountsBytes() {
        return 4L * config.expertsPerRank();
    }

    /** {@code peerModes [W]} int32: {@code AllToAllKernels.PEER_DIRECT} or {@code PEER_PUT} per peer. */
    public long peerModesBytes() {
        return 4L * config.worldSize();
    }

    /**
     * {@code peerOffsets [3][W]} int64: every peer's copy of dispatchRecv, combineRecv and the
     * signals as an offset from this rank's ({@code AllToAllKernels.OFFSETS_*}).
     */
    public long peerOffsetsBytes() {
        return 8L * AllToAllKernels.OFFSETS_ROWS * config.worldSize();
    }

    /** {@code pairLocation [M][K]} int32. */
    public long pairLocationBytes() {
        return 4L * config.maxTokensPerRank() * config.topK();
    }

    /** {@code pairsFromGroup [NG]} int32. */
    public long pairsFromGroupBytes() {
        return 4L * config.numGroups();
    }

    /** {@code expertOrigin [L][NG*M]} int32. */
    public long expertOriginBytes() {
        return 4L * config.expertsPerRank() * config.expertCapacity();
    }

    /** {@code numTokens [1]} int32 (padded to 16). */
    public long numTokensBytes() {
        return 16;
    }

    /** Local bytes per rank (the buffers above plus a small dummy buffer). */
    public long localBytes() {
        return roundStateBytes() + slotCountsBytes() + peerModesBytes() + peerOffsetsBytes() + pairLocationBytes()
                + pairsFromGroupBytes() + expertOriginBytes() + numTokensBytes() + DUMMY_BYTES;
    }

    /** Size of the placeholder passed for unused buffer parameters (xScale without scales). */
    public static final long DUMMY_BYTES = 16;

    /**
     * Dispatch signal value of round {@code round} carrying {@code count} rows: {@code round << 32 |
     * count} (combine and combine-done words are sums: docs/protocol.md, "Steps of round n").
     */
    public static long signalValue(long round, int count) {
        return round << 32 | (count & 0xffffffffL);
    }

    @Override
    public String toString() {
        return "rowBytes=" + rowBytes + " yBytes=" + yBytes + " symmetric=" + symmetricBytes() + " local="
                + localBytes();
    }
}
