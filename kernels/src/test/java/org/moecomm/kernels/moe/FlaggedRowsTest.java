package org.moecomm.kernels.moe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.cpu.CpuKernelRunner;
import org.moecomm.kernels.cpu.KernelExecutionException;
import org.moecomm.kernels.cpu.PeerWaitTimeoutException;

/**
 * {@link FlaggedRows} on the JVM: a row written flagged carries the flag in every word it wrote and
 * reads back as it was written (fresh random data, poisoned outputs); a reader that starts before
 * the words arrive waits for them; a word that never arrives fails the read with the wait's error,
 * naming the peer and the tag; the flag of a round, the epoch's plain round, the signal's bit.
 */
@Timeout(60)
class FlaggedRowsTest {
    private static final Kernel WRITE = new Kernel(FlaggedRowsKernels.class, "writeRow");
    private static final Kernel READ = new Kernel(FlaggedRowsKernels.class, "readRow");
    private static final Kernel CLEAR = new Kernel(FlaggedRowsKernels.class, "clearSlots");
    private static final int X_BYTES = 1024;
    private static final int SCALES = 8;
    private static final int META = 6;
    private static final int ROW_BYTES = MoeKernels.rowMetaOffset(X_BYTES, SCALES) + MoeKernels.align16(4 * META);
    private static final int ROWS = 4;
    private static final long SECOND = 1_000_000_000L;
    private static final int PEER = 3;
    private static final int TAG = 11;
    private static final byte POISON = (byte) 0xFF; // NaN in every float format

    private final Arena arena = Arena.ofShared();
    private final Random random = new Random(17);
    private final Buf x = Buf.allocate(arena, X_BYTES);
    private final Buf xScale = Buf.allocate(arena, 4L * SCALES);
    private final Buf meta = Buf.allocate(arena, 4L * META);
    /** ROWS flagged rows: twice the plain bytes. */
    private final Buf rows = Buf.allocate(arena, 2L * ROWS * ROW_BYTES);
    private final Buf expertX = Buf.allocate(arena, 3L * X_BYTES);
    private final Buf expertXScale = Buf.allocate(arena, 3L * 4 * SCALES);
    private final Buf noAbort = Buf.allocate(arena, 8);

    @AfterEach
    void close() {
        arena.close();
    }

    private void freshInputs(int staleFlag) {
        for (long i = 0; i < X_BYTES / 4; i++) {
            x.setInt(i, random.nextInt());
        }
        for (long i = 0; i < SCALES; i++) {
            xScale.setInt(i, random.nextInt());
        }
        for (long i = 0; i < META; i++) {
            meta.setInt(i, random.nextInt());
        }
        // every slot of an earlier round: a smaller flag, a value that is not the new one
        for (long s = 0; s < 2L * ROWS * ROW_BYTES / 8; s++) {
            rows.setLong(s, FlaggedRows.slot(staleFlag, random.nextInt()));
        }
        expertX.segment().fill(POISON);
        expertXScale.segment().fill(POISON);
    }

    private static void write(int threads, Buf rows, Buf x, Buf xScale, Buf meta, long row, int flag) {
        new CpuKernelRunner(1).launch(WRITE, Grid.of(1, threads), rows, x, xScale, meta, row, X_BYTES, SCALES, META,
                ROW_BYTES, flag);
    }

    private void read(int threads, long row, long dstRow, int flag, long timeoutNanos) {
        new CpuKernelRunner(1).launch(READ, Grid.of(1, threads), rows, expertX, expertXScale, noAbort, row, dstRow,
                X_BYTES, SCALES, ROW_BYTES, flag, timeoutNanos, PEER, TAG);
    }

    /** The plain word {@code w} of the row written from x, xScale and meta (null: not written). */
    private Integer plainWord(int w) {
        int scaleWord = MoeKernels.align16(X_BYTES) / 4;
        int metaWord = MoeKernels.rowMetaOffset(X_BYTES, SCALES) / 4;
        if (w < X_BYTES / 4) {
            return x.getInt(w);
        } else if (w >= scaleWord && w < scaleWord + SCALES) {
            return xScale.getInt(w - scaleWord);
        } else if (w >= metaWord && w < metaWord + META) {
            return meta.getInt(w - metaWord);
        }
        return null;
    }

    private void assertReadBack(long dstRow, String what) {
        for (long r = 0; r < 3; r++) {
            for (long i = 0; i < X_BYTES / 4; i++) {
                int expected = r == dstRow ? x.getInt(i) : -1;
                assertEquals(expected, expertX.getInt(r * X_BYTES / 4 + i), what + ": expertX row " + r + " word " + i);
            }
            for (long i = 0; i < SCALES; i++) {
                int expected = r == dstRow ? xScale.getInt(i) : -1;
                assertEquals(expected, expertXScale.getInt(r * SCALES + i), what + ": scale " + i + " of row " + r);
            }
        }
    }

    @ParameterizedTest(name = "{0} threads")
    @ValueSource(ints = {1, 32, 64, 96, 256})
    void aFlaggedRowCarriesItsFlagInEveryWordAndReadsBackAsWritten(int threads) {
        freshInputs(6);
        write(threads, rows, x, xScale, meta, 2, 7);
        for (int w = 0; w < ROW_BYTES / 4; w++) {
            long slot = rows.getLong(2L * ROW_BYTES / 4 + w); // row r's slots from r * ROW_BYTES / 4
            Integer plain = plainWord(w);
            if (plain != null) {
                assertEquals(FlaggedRows.slot(7, plain), slot, "slot " + w);
                assertTrue(FlaggedRows.arrived(slot, 7));
            } else {
                assertEquals(6, (int) (slot >>> 32), "padding slot " + w + " is not written");
            }
        }
        for (long s = 0; s < ROW_BYTES / 4; s++) {
            assertEquals(6, (int) (rows.getLong(s) >>> 32), "row 0 untouched");
        }
        read(threads, 2, 1, 7, SECOND);
        assertReadBack(1, threads + " threads");
    }

    @Test
    void aReaderThatStartsFirstWaitsForTheWords() throws Exception {
        freshInputs(8);
        CompletableFuture<Void> reader = CompletableFuture.runAsync(() -> read(64, 3, 0, 9, 20 * SECOND));
        Thread.sleep(200);
        assertFalse(reader.isDone(), "the reader returned before any word of its row arrived");
        write(32, rows, x, xScale, meta, 3, 9);
        reader.get(20, TimeUnit.SECONDS);
        assertReadBack(0, "late words");
    }

    @Test
    void aWordThatNeverArrivesFailsTheReadNamingPeerAndTag() {
        freshInputs(4);
        write(64, rows, x, xScale, meta, 1, 5);
        long stale = FlaggedRows.slot(4, 12345);
        rows.setLong(ROW_BYTES / 4 + MoeKernels.align16(X_BYTES) / 4 + 3, stale); // scale 3 of row 1
        KernelExecutionException e = assertThrows(KernelExecutionException.class, () -> read(64, 1, 2, 5, SECOND / 5));
        PeerWaitTimeoutException cause = assertInstanceOf(PeerWaitTimeoutException.class, e.getCause());
        assertEquals(PEER, cause.peer());
        assertEquals(TAG, cause.tag());
        assertEquals(5L << 32, cause.expected());
        assertEquals(stale, cause.seen());
    }

    /** The epoch's plain round zeroes a region's slots, and only them: the next epoch's flags start above every slot. */
    @ParameterizedTest(name = "{0} threads")
    @ValueSource(ints = {1, 96, 256})
    void clearingZeroesExactlyTheRegionsSlots(int threads) {
        freshInputs(Integer.MAX_VALUE - 1);
        long first = ROW_BYTES / 4;
        long slots = 2L * ROW_BYTES / 4;
        new CpuKernelRunner(1).launch(CLEAR, Grid.of(1, threads), rows, first, slots);
        for (long s = 0; s < 2L * ROWS * ROW_BYTES / 8; s++) {
            boolean cleared = s >= first && s < first + slots;
            assertEquals(cleared, rows.getLong(s) == 0, "slot " + s);
            assertEquals(cleared, !FlaggedRows.arrived(rows.getLong(s), Integer.MAX_VALUE - 1), "slot " + s);
        }
    }

    @Test
    void flagsGrowWithinAnEpochAndItsFirstRoundIsPlain() {
        assertEquals(1, FlaggedRows.flagOf(1, Integer.MAX_VALUE));
        assertEquals(Integer.MAX_VALUE - 1, FlaggedRows.flagOf(Integer.MAX_VALUE - 1L, Integer.MAX_VALUE));
        assertEquals(0, FlaggedRows.flagOf(Integer.MAX_VALUE, Integer.MAX_VALUE));
        assertEquals(1, FlaggedRows.flagOf(Integer.MAX_VALUE + 1L, Integer.MAX_VALUE));
        assertEquals(0, FlaggedRows.flagOf(6, 3));
        assertEquals(2, FlaggedRows.flagOf(5, 3));
        // every flag is positive: a bounded wait for flag << 32 is an unsigned and a signed comparison alike
        assertTrue(FlaggedRows.slot(Integer.MAX_VALUE - 1, -1) > FlaggedRows.slot(Integer.MAX_VALUE - 2, -1));
    }

    @Test
    void theSignalSaysHowManyRowsAndWhetherTheyAreFlagged() {
        int flagged = (int) ((FlaggedRows.SIGNAL_FLAGGED | 5) & 0xffffffffL);
        assertTrue(FlaggedRows.flaggedIn(flagged));
        assertEquals(5, FlaggedRows.rowsOf(flagged));
        assertFalse(FlaggedRows.flaggedIn(5));
        assertEquals(5, FlaggedRows.rowsOf(5));
        assertEquals(0x1234_5678_9abc_def0L, FlaggedRows.joined(FlaggedRows.slot(3, 0x9abcdef0), FlaggedRows.slot(3,
                0x12345678)));
    }
}
