package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.core.DType;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerWrites;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.reference.Reference;
import org.moecomm.core.testing.Harness;
import org.moecomm.kernels.moe.MoeKernels;

/**
 * Dispatch recv's two ways of taking slots ({@code AllToAllKernels.dispatchRecv}): in source
 * order, counted in shared memory, at decode sizes (up to 8 tokens; a power of two of blocks per
 * source group, each taking a share of the local experts),
 * and counted by global atomics elsewhere. Decode-size rounds take the ordered slots, with
 * dispatch in one launch and in two, and match the reference on fresh inputs with poisoned
 * outputs, at one thread per block and at the GPU's block size, and every local expert's rows come
 * group by group in increasing source group.
 */
@Timeout(120)
class SlotOrderTest {
    static Stream<Arguments> decodeConfigs() {
        MoeConfig one = Harness.config().worldSize(4).numExperts(16).topK(4).hidden(256).maxTokensPerRank(1).build();
        MoeConfig groups = Harness.config().worldSize(4).groupSize(2).numExperts(16).topK(4).hidden(256)
                .maxTokensPerRank(8).build();
        MoeConfig fp8 = Harness.config().worldSize(4).numExperts(32).topK(6).hidden(640).maxTokensPerRank(4)
                .inType(DType.FP8_E4M3).outType(DType.BF16).build();
        MoeConfig quantising = Harness.config().worldSize(2).numExperts(8).topK(3).hidden(384).maxTokensPerRank(8)
                .inType(DType.BF16).expertInType(DType.FP8_E4M3).build();
        MoeConfig parts = Harness.config().worldSize(2).numExperts(16).topK(8).hidden(256).maxTokensPerRank(8).build();
        // rows put rather than stored: the receiver reads their metas after the signal, not pair notes
        MoeConfig puts = groups.toBuilder().peerWrites(PeerWrites.PUTS).build();
        return Stream.of(1, MoeKernels.THREADS).flatMap(threads -> Stream.of(
                Arguments.of("one token", one, threads), Arguments.of("groups", groups, threads),
                Arguments.of("fp8 with scales", fp8, threads), Arguments.of("quantising", quantising, threads),
                Arguments.of("eight parts per group, an expert each", parts, threads),
                Arguments.of("puts", puts, threads)));
    }

    /**
     * Four rounds on one handle: dispatch whole (one launch, {@code AllToAllKernels.dispatch}) and
     * as its two halves in turn, m as a Java int and in device memory, so every combination runs.
     */
    @ParameterizedTest(name = "{0}, {2} threads per block")
    @MethodSource("decodeConfigs")
    void decodeRoundsTakeSlotsInSourceOrderInOneAndTwoLaunchesAndMatchTheReference(String name, MoeConfig config,
                                                                                   int threads) {
        List<Workload> workloads = List.of(Workload.generate(config, 900),
                Workload.generate(config, 901, Workload.Options.defaults().drop(0.2).randomTokens()),
                Workload.generate(config, 902, Workload.Options.defaults().skewedTo(config.worldSize() - 1)),
                Workload.generate(config, 903, Workload.Options.defaults().randomTokens()));
        List<List<String>> problems = Harness.onAllRanks(config, threads, (h, b) -> {
            List<String> p = new ArrayList<>();
            if (!((AllToAllProtocol) h).slotsInSourceOrder()) {
                p.add("rank " + h.rank() + ": the handle counts its slots by global atomics");
            }
            if (!((AllToAllProtocol) h).dispatchesInOneLaunch()) {
                p.add("rank " + h.rank() + ": dispatch is two launches at a decode size");
            }
            for (int i = 0; i < workloads.size(); i++) {
                Workload w = workloads.get(i);
                boolean oneLaunch = i % 2 == 0;
                ResultCheck.Report report = oneLaunch ? CheckedRound.runWhole(b, w, i >= 2)
                        : CheckedRound.run(b, w, i >= 2);
                if (!report.ok()) {
                    p.add("round " + i + (oneLaunch ? " (one launch): " : " (two launches): ") + report);
                }
                p.addAll(sourceOrderProblems(h, b, w.reference(), "round " + i));
            }
            return p;
        });
        List<String> all = problems.stream().flatMap(List::stream).toList();
        assertTrue(all.isEmpty(), name + ": " + String.join("\n", all));
    }

    /**
     * Every word of every source group's pair notes carries the round just ended, also the words
     * past the round's pairs: a word left unwritten for 2^31 rounds would pass the receiver's wait
     * for a later round (the waits compare modulo 2^64), so none may stay behind. Four rounds across
     * round 2^32 (dispatch in one launch and in two), m from 0 to 8 per group: most rounds fill few
     * of a region's 8 * 4 notes.
     */
    @Test
    void everyPairNoteIsRewrittenEveryRound() {
        MoeConfig config = Harness.config().worldSize(4).groupSize(2).numExperts(16).topK(4).hidden(256)
                .maxTokensPerRank(8).build();
        long start = (1L << 32) - 2;
        List<Workload> workloads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            workloads.add(Workload.generate(config, 1300 + i, Workload.Options.defaults().randomTokens()));
        }
        List<List<String>> problems = Harness.onAllRanks(config, (h, b) -> {
            AllToAllProtocol p = (AllToAllProtocol) h;
            p.resumeAfter(start);
            List<String> mine = new ArrayList<>();
            for (int i = 0; i < workloads.size(); i++) {
                // one launch and two in turn, m as a Java int and in device memory
                ResultCheck.Report report = i % 2 == 0 ? CheckedRound.runWhole(b, workloads.get(i), i >= 2)
                        : CheckedRound.run(b, workloads.get(i), i >= 2);
                if (!report.ok()) {
                    mine.add("rank " + h.rank() + ", round " + i + ": " + report);
                }
                int round = (int) (start + i + 1);
                long[] notes = p.pairNotesBetweenRounds();
                if (notes.length == 0) {
                    mine.add("rank " + h.rank() + ": no pair notes at a decode size");
                }
                for (int w = 0; w < notes.length; w++) {
                    if ((int) (notes[w] >>> 32) != round) {
                        mine.add("rank " + h.rank() + ", round " + i + ": note word " + w + " is of round "
                                + (int) (notes[w] >>> 32) + ", not " + round);
                    }
                }
            }
            return mine;
        });
        List<String> all = problems.stream().flatMap(List::stream).toList();
        assertTrue(all.isEmpty(), String.join("\n", all.subList(0, Math.min(20, all.size()))));
    }

    @Test
    void largerRoundsAndManyExpertsCountTheirSlots() {
        MoeConfig decode = Harness.config().worldSize(2).numExperts(8).topK(2).hidden(128).maxTokensPerRank(8).build();
        MoeConfig larger = Harness.config().worldSize(2).numExperts(8).topK(2).hidden(128).maxTokensPerRank(9).build();
        MoeConfig manyExperts = Harness.config().worldSize(1).numExperts(MoeKernels.ORDERED_EXPERTS + 1).topK(2)
                .hidden(128).maxTokensPerRank(1).build();
        assertEquals(List.of(true, true), orderedOnEachRank(decode), "M = 8: slots in source order");
        assertEquals(List.of(false, false), orderedOnEachRank(larger), "M = 9: counted slots");
        assertEquals(List.of(false), orderedOnEachRank(manyExperts),
                "more local experts than the kernel's shared counters");
    }

    /**
     * The source-order receive has a power of two of blocks per source group, about 2 of the
     * group's pairs each on average ({@code M*K/W}), at most 8.
     */
    @Test
    void theSourceOrderReceiveSplitsAGroupsPairsOverItsParts() {
        assertEquals(List.of(1, 1, 1, 1), partsOnEachRank(4, 16, 2, 4), "2 pairs per group");
        assertEquals(List.of(2, 2, 2, 2), partsOnEachRank(4, 16, 4, 4), "4 pairs per group");
        assertEquals(List.of(4, 4), partsOnEachRank(2, 8, 2, 8), "8 pairs per group");
        assertEquals(List.of(8, 8), partsOnEachRank(2, 8, 3, 8), "12 pairs per group");
        assertEquals(List.of(8, 8), partsOnEachRank(2, 16, 8, 8), "32 pairs per group");
        assertEquals(List.of(8), partsOnEachRank(1, 32, 16, 8), "128 pairs: at most 8 parts");
    }

    private static List<Integer> partsOnEachRank(int world, int experts, int topK, int maxTokens) {
        MoeConfig config = Harness.config().worldSize(world).numExperts(experts).topK(topK).hidden(128)
                .maxTokensPerRank(maxTokens).build();
        return Harness.onAllRanks(config, (h, b) -> ((AllToAllProtocol) h).slotsInSourceOrder()
                ? ((AllToAllProtocol) h).receiveBlocksPerSourceGroup() : -1);
    }

    private static List<Boolean> orderedOnEachRank(MoeConfig config) {
        return Harness.onAllRanks(config, (h, b) -> ((AllToAllProtocol) h).slotsInSourceOrder());
    }

    /**
     * The source group of every row of every local expert, looked up by the row's bytes among the
     * reference's rows of that expert (a group's tokens are random, so distinct), must not decrease
     * from slot to slot.
     */
    private static List<String> sourceOrderProblems(MoeAllToAll h, RankBuffers b, Reference ref, String round) {
        MoeConfig c = h.config();
        int l = c.expertsPerRank();
        int xb = c.hidden() * c.expertInType().bytes();
        long cap = c.expertCapacity();
        int[] counts = b.dispatchOutput().expertNumTokens().toInts(h.memory());
        List<List<Reference.ExpertRow>> expected = ref.dispatch(h.rank());
        List<String> problems = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(Math.max(1, cap * xb), 16);
            for (int i = 0; i < l; i++) {
                Map<ByteBuffer, Integer> groupOf = new HashMap<>();
                for (Reference.ExpertRow r : expected.get(i)) {
                    groupOf.put(ByteBuffer.wrap(r.tokenBytes()), r.group());
                }
                int n = counts[i];
                h.memory().copyToHost(b.dispatchOutput().expertX().buf(), i * cap * xb, rows.asSlice(0, (long) n * xb));
                int last = -1;
                for (int slot = 0; slot < n; slot++) {
                    byte[] token = rows.asSlice((long) slot * xb, xb).toArray(ValueLayout.JAVA_BYTE);
                    Integer g = groupOf.get(ByteBuffer.wrap(token));
                    if (g == null) {
                        problems.add(round + ", rank " + h.rank() + ", local expert " + i + ", slot " + slot
                                + ": no such row in the reference");
                    } else if (g < last) {
                        problems.add(round + ", rank " + h.rank() + ", local expert " + i + ", slot " + slot
                                + ": group " + g + " after group " + last);
                    } else {
                        last = g;
                    }
                }
            }
        }
        return problems;
    }
}
