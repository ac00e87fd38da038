package org.moecomm.core.protocol;

import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerWrites;
import org.moecomm.core.Preset;
import org.moecomm.core.check.Workload;
import org.moecomm.core.testing.Harness;

/**
 * A quantising dispatch (bf16 or fp16 tokens, fp8-e4m3 with block scales on the wire and to the
 * experts) on the CPU backend against the reference, which quantises the same way: every round
 * with fresh inputs whose blocks are drawn from the rule's edge cases (zeros of both signs,
 * saturation, subnormal codes, subnormal scales, NaN, infinity, ties), outputs poisoned (NaN)
 * before it, expertX, expertXScale and combine's out compared bit for bit.
 */
@Timeout(180)
class QuantizedDispatchTest {
    private static final DType BF16 = DType.BF16;
    private static final DType FP16 = DType.FP16;
    private static final DType FP32 = DType.FP32;

    private static MoeConfig c(int w, int g, int e, int k, int h, int m, DType in, DType expertOut) {
        return Harness.config().worldSize(w).groupSize(g).numExperts(e).topK(k).hidden(h).maxTokensPerRank(m)
                .inType(in).expertInType(DType.FP8_E4M3).expertOutType(expertOut).outType(BF16).build();
    }

    private static Workload.Options edges() {
        return Workload.Options.defaults().edgeValues(true);
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("W2 bf16 H=128 m=M", c(2, 1, 8, 2, 128, 24, BF16, BF16), edges().tokens(24)),
                Arguments.of("W2 fp16 H=384 (padded scales) m=0", c(2, 1, 8, 3, 384, 8, FP16, FP16), edges().tokens(0)),
                Arguments.of("W2 G2 bf16 H=640 drop", c(2, 2, 8, 4, 640, 12, BF16, FP32), edges().drop(0.2)),
                Arguments.of("W4 bf16 H=256 m=M skewed", c(4, 1, 16, 4, 256, 16, BF16, BF16),
                        edges().tokens(16).skewedTo(3)),
                Arguments.of("W4 G2 fp16 H=1024 m per group", c(4, 2, 16, 6, 1024, 10, FP16, BF16),
                        edges().tokensPerGroup(10, 0)),
                Arguments.of("W4 bf16 m=300 (two chunks, several blocks per destination)",
                        c(4, 1, 16, 4, 256, 300, BF16, BF16), edges().tokens(300)),
                Arguments.of("W4 deepseek-v3-bf16-to-fp8 m=M",
                        Preset.DEEPSEEK_V3_BF16_TO_FP8.config(4, 1, 4).waitTimeout(Harness.TEST_TIMEOUT).build(),
                        edges().tokens(4)),
                Arguments.of("W4 puts bf16 H=512", puts(c(4, 1, 16, 4, 512, 12, BF16, BF16)), edges()),
                Arguments.of("W2 puts G2 fp16 H=128 m=M", puts(c(2, 2, 4, 2, 128, 20, FP16, FP16)),
                        edges().tokens(20)));
    }

    private static MoeConfig puts(MoeConfig config) {
        return config.toBuilder().peerWrites(PeerWrites.PUTS).build();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesTheReference(String name, MoeConfig config, Workload.Options options) {
        long seed = name.hashCode();
        // m passed both ways across the cases: as a Java int, and in a device buffer
        Harness.checkedRounds(config, 2, round -> Workload.generate(config, seed + round, options), seed % 2 == 0);
    }
}
