package org.moecomm.core.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.AbortReason;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.InputCheck;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.testing.Harness;

/**
 * A failing rank releases its peers at once through the abort word: with a 60 s wait bound, the
 * peers fail within seconds, naming the rank and its reason; every handle is failed afterwards
 * and closes without waiting.
 */
@Timeout(value = 40)
class AbortTest {
    /** Far beyond the test's own timeout: a peer that waited it out would fail the test. */
    private static final Duration BOUND = Duration.ofSeconds(60);
    /** What "at once" means on a loaded 2-core machine. */
    private static final long RELEASED_WITHIN_MS = 5_000;
    private static final MoeConfig CONFIG = MoeConfig.builder().worldSize(4).numExperts(8).topK(2).hidden(256)
            .maxTokensPerRank(8).waitTimeout(BOUND).build();

    private record Outcome(Throwable failure, long elapsedMs, boolean failed) {
    }

    @BeforeAll
    static void warmUp() {
        Harness.checkedRounds(CONFIG, 1, round -> Workload.generate(CONFIG, round), false);
    }

    /** Rank 2 aborts before its dispatch: the others' dispatch recv fails fast naming rank 2. */
    @Test
    void aCallersAbortReleasesEveryPeer() {
        List<Outcome> outcomes = run(CONFIG, h -> {
            RankBuffers b = RankBuffers.allocate(h);
            DispatchInput in = b.upload(Workload.generate(CONFIG, 1).rank(h.rank()), false);
            if (h.rank() == 2) {
                h.abort("the test aborts rank 2");
                assertTrue(h.isFailed());
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> h.dispatchSend(in));
                assertTrue(e.getMessage().contains("has failed") && e.getMessage().contains("the test aborts rank 2"),
                        e.getMessage());
                h.abort("again"); // idempotent
                return;
            }
            h.dispatchSend(in);
            try {
                h.dispatchRecv(b.dispatchOutput());
            } finally {
                assertTrue(h.isFailed());
                IllegalStateException later = assertThrows(IllegalStateException.class,
                        () -> h.combineSend(b.combineInput().expertY()));
                assertInstanceOf(PeerAbortedException.class, later.getCause());
            }
        });
        assertNull(outcomes.get(2).failure());
        for (int r : new int[] {0, 1, 3}) {
            PeerAbortedException e = assertInstanceOf(PeerAbortedException.class, outcomes.get(r).failure());
            assertEquals(r, e.rank());
            assertEquals(2, e.abortedBy());
            assertEquals(AbortReason.CALLER, e.reason());
            // the wait that saw it: rank 2's signal, or an earlier one the abort came before
            assertTrue(e.seenIn().startsWith("the wait for dispatch[") || e.seenIn().startsWith("dispatch"),
                    e.seenIn());
            assertTrue(e.getMessage().contains("rank 2 aborted (its caller aborted the handle), seen in"), e.getMessage());
            assertTrue(outcomes.get(r).elapsedMs() < RELEASED_WITHIN_MS, "took " + outcomes.get(r).elapsedMs() + " ms");
        }
    }

    /**
     * Rank 3 fails in its own work, outside any call (as a device allocation that runs out of
     * memory does): {@code callOrAbort} aborts the handle before the exception propagates, so the
     * others, already waiting for rank 3's rows, fail at once naming rank 3, and rank 3 gets its
     * own exception back, unchanged.
     */
    @Test
    void aFailureOfTheCallersOwnWorkReleasesEveryPeer() {
        IllegalStateException ownFailure = new IllegalStateException("out of device memory for expertX");
        List<Outcome> outcomes = run(CONFIG, h -> {
            RankBuffers b = RankBuffers.allocate(h);
            DispatchInput in = b.upload(Workload.generate(CONFIG, 3).rank(h.rank()), false);
            int rounds = h.callOrAbort(() -> {
                if (h.rank() == 3) {
                    throw ownFailure;
                }
                h.dispatch(in, b.dispatchOutput());
                return 1;
            });
            assertEquals(1, rounds);
        });
        assertSame(ownFailure, outcomes.get(3).failure());
        assertTrue(outcomes.get(3).failed());
        for (int r : new int[] {0, 1, 2}) {
            PeerAbortedException e = assertInstanceOf(PeerAbortedException.class, outcomes.get(r).failure());
            assertEquals(3, e.abortedBy());
            assertEquals(AbortReason.CALLER, e.reason());
            assertTrue(outcomes.get(r).elapsedMs() < RELEASED_WITHIN_MS, "took " + outcomes.get(r).elapsedMs() + " ms");
            assertTrue(outcomes.get(r).failed());
        }
    }

    /**
     * Work that succeeds leaves the handle as it was: its result is returned, nothing is aborted,
     * and the round's outputs match the reference.
     */
    @Test
    void callOrAbortPassesAResultThrough() {
        List<Outcome> outcomes = run(CONFIG, h -> {
            RankBuffers b = RankBuffers.allocate(h);
            Workload w = Workload.generate(CONFIG, 4);
            DispatchInput in = b.upload(w.rank(h.rank()), false);
            b.poisonOutputs();
            h.runOrAbort(() -> h.dispatch(in, b.dispatchOutput()));
            ResultCheck.dispatch(w.reference(), h.rank(), h.memory(), b.dispatchOutput()).assertOk();
            assertEquals(h.rank(), h.callOrAbort(h::rank));
            b.runExperts();
            h.combine(b.combineInput(), b.out());
            ResultCheck.combine(w.reference(), h.rank(), w.expertFunction(), h.memory(), b.out()).assertOk();
        });
        for (Outcome o : outcomes) {
            assertNull(o.failure());
            assertFalse(o.failed());
        }
    }

    /**
     * Rank 1's ids are checked on the device and one is bad: its dispatch runs to its end, its next
     * call fails with the report and raises the abort, and the others, waiting in combine for
     * rank 1's rows, fail at once naming rank 1 and the input error.
     */
    @Test
    void anInputErrorFoundOnTheDeviceReleasesEveryPeer() {
        MoeConfig device = CONFIG.toBuilder().inputCheck(InputCheck.DEVICE).build();
        List<Outcome> outcomes = run(device, h -> {
            RankBuffers b = RankBuffers.allocate(h);
            Workload w = Workload.generate(device, 2, Workload.Options.defaults().tokens(6));
            DispatchInput in = b.upload(w.rank(h.rank()), false);
            if (h.rank() == 1) {
                setExpertId(h, in, 0, 0, 99);
            }
            h.dispatch(in, b.dispatchOutput());
            b.runExperts();
            h.combine(b.combineInput(), b.out());
        });
        IllegalArgumentException bad = assertInstanceOf(IllegalArgumentException.class, outcomes.get(1).failure());
        assertTrue(bad.getMessage().contains("found on the device"), bad.getMessage());
        for (int r : new int[] {0, 2, 3}) {
            PeerAbortedException e = assertInstanceOf(PeerAbortedException.class, outcomes.get(r).failure());
            assertEquals(1, e.abortedBy());
            assertEquals(AbortReason.INPUT_ERROR, e.reason());
            assertTrue(outcomes.get(r).elapsedMs() < RELEASED_WITHIN_MS, "took " + outcomes.get(r).elapsedMs() + " ms");
        }
        outcomes.forEach(o -> assertTrue(o.failed()));
    }

    /** The word names the rank (plus one, so that 0 means none) and the reason. */
    @Test
    void theAbortWordRoundTrips() {
        for (AbortReason r : AbortReason.values()) {
            long word = r.word(5);
            assertTrue(word != 0);
            assertEquals(5, AbortReason.rankOf(word));
            assertSame(r, AbortReason.of(word));
        }
        assertEquals(0, AbortReason.rankOf(AbortReason.CALLER.word(0)));
        assertSame(AbortReason.CALL_FAILED, AbortReason.of((1L << 32) | 77));
    }

    private static void setExpertId(MoeAllToAll h, DispatchInput in, int token, int slot, int id) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(4);
            s.set(ValueLayout.JAVA_INT, 0, id);
            h.memory().copyFromHost(in.indices().buf(), 4L * (token * h.config().topK() + slot), s);
        }
    }

    private interface RankBody {
        void run(MoeAllToAll h);
    }

    private static List<Outcome> run(MoeConfig config, RankBody body) {
        try (CpuCluster cluster = CpuCluster.create(config.worldSize())) {
            return cluster.runOnAllRanks(rank -> {
                try (MoeAllToAll h = cluster.createHandle(rank, config)) {
                    long start = System.nanoTime();
                    Throwable failure = null;
                    try {
                        body.run(h);
                    } catch (RuntimeException e) {
                        failure = e;
                    }
                    return new Outcome(failure, (System.nanoTime() - start) / 1_000_000, h.isFailed());
                }
            });
        }
    }
}
