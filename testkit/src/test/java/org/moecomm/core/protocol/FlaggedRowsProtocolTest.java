package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerWrites;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.ResultCheck;
import org.moecomm.core.check.Workload;
import org.moecomm.core.testing.Harness;
import org.moecomm.kernels.moe.MoeKernels;

/**
 * Flagged rows (docs/protocol.md, "Flagged rows"): a decode-size handle whose peers are mapped
 * sends them flagged and signals without a fence. Rounds match the reference on fresh inputs with
 * poisoned outputs, at one thread per block and at the GPU's block size, across flag epochs short
 * enough that their plain round (which clears the flagged slots) comes several times; the
 * handles that must not take flagged rows do not.
 */
@Timeout(120)
class FlaggedRowsProtocolTest {
    private static final String EPOCH = "moecomm.flaggedRows.epoch";
    private static final int ROUNDS = 8;

    @AfterEach
    void clearProperties() {
        System.clearProperty(EPOCH);
        System.clearProperty("moecomm.flaggedRows");
    }

    static Stream<Arguments> decodeConfigs() {
        MoeConfig one = Harness.config().worldSize(4).numExperts(16).topK(4).hidden(256).maxTokensPerRank(1).build();
        MoeConfig groups = Harness.config().worldSize(4).groupSize(2).numExperts(16).topK(4).hidden(256)
                .maxTokensPerRank(8).build();
        MoeConfig fp8 = Harness.config().worldSize(4).numExperts(32).topK(6).hidden(640).maxTokensPerRank(4)
                .inType(DType.FP8_E4M3).outType(DType.BF16).build();
        return Stream.of(1, MoeKernels.THREADS).flatMap(threads -> Stream.of(
                Arguments.of("one token", one, threads), Arguments.of("groups", groups, threads),
                Arguments.of("fp8 with scales", fp8, threads)));
    }

    /** Epoch 3: rounds 3 and 6 send plain rows while the receivers clear their flagged slots. */
    @ParameterizedTest(name = "{0}, {2} threads per block")
    @MethodSource("decodeConfigs")
    void decodeRoundsSendFlaggedRowsAndMatchTheReference(String name, MoeConfig config, int threads) {
        System.setProperty(EPOCH, "3");
        List<List<String>> problems = Harness.onAllRanks(config, threads, (h, b) -> {
            List<String> p = new ArrayList<>();
            if (!((AllToAllProtocol) h).flaggedRows()) {
                p.add("rank " + h.rank() + ": the handle sends plain rows");
            }
            for (int i = 0; i < ROUNDS; i++) {
                Workload.Options options = Workload.Options.defaults();
                if (i % 3 == 1) {
                    options = options.drop(0.2).randomTokens();
                } else if (i % 3 == 2) {
                    options = options.skewedTo(i % config.worldSize());
                }
                ResultCheck.Report report = CheckedRound.run(b, Workload.generate(config, 700 + i, options), i % 2 == 1);
                if (!report.ok()) {
                    p.add("round " + (i + 1) + ": " + report);
                }
            }
            return p;
        });
        List<String> all = problems.stream().flatMap(List::stream).toList();
        assertTrue(all.isEmpty(), name + ": " + String.join("\n", all));
    }

    @Test
    void handlesThatMustNotTakeFlaggedRowsDoNot() {
        MoeConfig decode = Harness.config().worldSize(2).numExperts(8).topK(2).hidden(128).maxTokensPerRank(8).build();
        assertEquals(List.of(true, true), flaggedOnEachRank(decode), "M = 8, 8 pairs per source group");
        MoeConfig larger = decode.toBuilder().maxTokensPerRank(9).build();
        assertEquals(List.of(false, false), flaggedOnEachRank(larger), "M = 9: several blocks per destination");
        MoeConfig quantising = Harness.config().worldSize(2).numExperts(8).topK(3).hidden(384).maxTokensPerRank(4)
                .inType(DType.BF16).expertInType(DType.FP8_E4M3).build();
        assertEquals(List.of(false, false), flaggedOnEachRank(quantising), "dispatch quantises its rows");
        MoeConfig puts = decode.toBuilder().peerWrites(PeerWrites.PUTS).build();
        assertEquals(List.of(false, false), flaggedOnEachRank(puts), "every peer reached by puts");
        System.setProperty("moecomm.flaggedRows", "false");
        assertEquals(List.of(false, false), flaggedOnEachRank(decode), "turned off for measurements");
        System.clearProperty("moecomm.flaggedRows");
        assertEquals(0, new BufferLayout(larger).dispatchFlaggedBytes(), "no flagged buffer where they do not fit");
        BufferLayout layout = new BufferLayout(decode);
        assertEquals(2 * layout.dispatchRecvBytes(), layout.dispatchFlaggedBytes());
    }

    @Test
    void anEpochShorterThanTwoRoundsIsRefused() {
        System.setProperty(EPOCH, "1");
        MoeConfig decode = Harness.config().worldSize(1).numExperts(4).topK(2).hidden(128).maxTokensPerRank(1).build();
        RuntimeException e = assertThrows(RuntimeException.class, () -> flaggedOnEachRank(decode));
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        assertTrue(root.getMessage().contains("moecomm.flaggedRows.epoch must be at least 2: 1"), root.getMessage());
    }

    private static List<Boolean> flaggedOnEachRank(MoeConfig config) {
        return Harness.onAllRanks(config, (h, b) -> ((AllToAllProtocol) h).flaggedRows());
    }
}
