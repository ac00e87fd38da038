package org.moecomm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.core.AbortReason;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.WaitTimeoutException;

/** The report of a kill-a-rank rank (scripts/gpu-kill-rank.sh reads it). */
class PeerLossRankMainTest {

    @Test
    void aFailedRunIsReportedWithItsKindAndBothCloses(@TempDir Path dir) throws Exception {
        WaitTimeoutException timeout = new WaitTimeoutException(1, 2, "dispatch[0]", 5, 4, 2000);
        RuntimeException seen = PeerLossRankMain.runAndReport(1, dir, done -> {
            for (int i = 1; i <= PeerLossRankMain.RUNNING_AFTER + 2; i++) {
                done.accept(i);
            }
            throw new MoeCommException("wrapped \"quoted\"\nnext line", timeout);
        }, () -> true, () -> { }, () -> {
            throw new IllegalStateException("backend close failed");
        });
        assertTrue(seen instanceof MoeCommException);
        assertTrue(Files.exists(dir.resolve("rank-1.running")));
        String json = Files.readString(dir.resolve("rank-1.json")).strip();
        assertTrue(json.startsWith("{\"rank\":1,"), json);
        assertTrue(json.contains("\"rounds_done\":12"), json);
        assertTrue(json.contains("\"kind\":\"timeout\""), json);
        assertTrue(json.contains("\"message\":\"wrapped \\\"quoted\\\" next line\""), json);
        assertTrue(json.contains("\"handle_close_error\":null"), json);
        assertTrue(json.contains("\"collective_teardown_skipped\":true"), json);
        assertTrue(json.contains("\"backend_close_error\":\"IllegalStateException: backend close failed\""), json);
        assertTrue(json.endsWith("}"), json);
    }

    @Test
    void roundsThatPassReturnNoFailure(@TempDir Path dir) throws Exception {
        assertNull(PeerLossRankMain.runAndReport(0, dir, done -> done.accept(1), () -> false, () -> { }, () -> { }));
        assertTrue(Files.readString(dir.resolve("rank-0.json")).contains("\"kind\":\"none\""));
    }

    @Test
    void theKindFollowsTheCauses() {
        assertEquals("aborted", PeerLossRankMain.kind(new IllegalStateException("x",
                new PeerAbortedException(0, 1, AbortReason.WAIT_TIMEOUT, "w"))));
        assertEquals("other", PeerLossRankMain.kind(new IllegalStateException("x")));
        RuntimeException e = new RuntimeException();
        assertSame("timeout", PeerLossRankMain.kind(new RuntimeException(new WaitTimeoutException(0, 1, "s", 1, 0, 1))));
        assertEquals("\"a\\\\b\\u0001\"", PeerLossRankMain.quote("a\\b\u0001"));
        assertEquals("", PeerLossRankMain.oneLine(e.getMessage()));
    }
}
