package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The decision to skip the collective teardown after a failure, and the bounded collective step. */
@Timeout(30)
class TeardownTest {

    @Test
    void anyFailureSkipsTheCollectiveTeardownAndKeepsTheFirstReason() {
        Teardown t = new Teardown();
        assertTrue(t.collectiveAllowed());
        assertNull(t.reason());
        t.noteFailure("rank 1: the wait for dispatch[2] ran out");
        t.noteFailure("rank 1: CUDA failed");
        assertFalse(t.collectiveAllowed());
        assertEquals("rank 1: the wait for dispatch[2] ran out", t.reason());
        t.noteRecovered();
        assertFalse(t.collectiveAllowed(), "one of two failures recovered");
        t.noteRecovered();
        assertTrue(t.collectiveAllowed());
        assertNull(t.reason());
        t.noteRecovered(); // more recoveries than failures never allow a later failure to be forgotten
        t.noteFailure(null);
        assertFalse(t.collectiveAllowed());
        assertEquals("a failure", t.reason());
    }

    @Test
    void aStepThatFinishesReturnsTrueAndAStepThatThrowsRethrows() {
        AtomicBoolean ran = new AtomicBoolean();
        assertTrue(Teardown.runBounded(() -> ran.set(true), Duration.ofSeconds(10), "test-step"));
        assertTrue(ran.get());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Teardown.runBounded(() -> {
                    throw new IllegalStateException("finalize failed");
                }, Duration.ofSeconds(10), "test-step"));
        assertEquals("finalize failed", e.getMessage());
    }

    @Test
    void aStepThatHangsIsLeftBehindAfterTheBound() throws InterruptedException {
        CountDownLatch never = new CountDownLatch(1);
        long t0 = System.nanoTime();
        assertFalse(Teardown.runBounded(() -> {
            try {
                never.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, Duration.ofMillis(200), "test-hanging-step"));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 150 && ms < 5_000, ms + " ms");
        never.countDown();
    }
}
