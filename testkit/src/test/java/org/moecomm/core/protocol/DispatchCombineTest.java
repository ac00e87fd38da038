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
 * The CPU backend (protocol + Java kernels on the JVM + Java transport) against the reference,
 * over world sizes, token groups, presets, dtypes and routing. Every case runs two rounds back
 * to back on one handle with fresh inputs, each checked bit for bit (outputs poisoned, NaN in
 * every float format, before each).
 *
 * <p>The quantising cases (bf16 or fp16 tokens, fp8-e4m3 with block scales on the wire and to the
 * experts; the reference quantises the same way) draw their tokens block by block from the
 * rule's edge cases: zeros of both signs, saturation, subnormal codes and scales, NaN, infinity,
 * ties ({@link Workload.Options#edgeValues(boolean)}).
 */
@Timeout(120)
class DispatchCombineTest {
    private static final DType BF16 = DType.BF16;
    private static final DType FP16 = DType.FP16;
    private static final DType FP32 = DType.FP32;
    private static final DType FP8 = DType.FP8_E4M3;

    private static MoeConfig c(int w, int g, int e, int k, int h, int m, DType in, DType expertOut, DType out) {
        return Harness.config().worldSize(w).groupSize(g).numExperts(e).topK(k).hidden(h).maxTokensPerRank(m)
                .inType(in).expertOutType(expertOut).outType(out).build();
    }

    private static MoeConfig preset(Preset p, int w, int g, int m) {
        return p.config(w, g, m).waitTimeout(Harness.TEST_TIMEOUT).build();
    }

    private static Workload.Options random() {
        return Workload.Options.defaults();
    }

    /** The config with dispatch quantising its (bf16 or fp16) tokens to fp8-e4m3. */
    private static MoeConfig quantizing(MoeConfig config) {
        return config.toBuilder().expertInType(FP8).build();
    }

    private static Workload.Options edges() {
        return Workload.Options.defaults().edgeValues(true);
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                // W = 1
                Arguments.of("W1 bf16 random m", c(1, 1, 8, 2, 256, 16, BF16, BF16, BF16), random()),
                Arguments.of("W1 fp16->fp32->fp16 K=L m=M", c(1, 1, 4, 4, 512, 8, FP16, FP32, FP16),
                        random().tokens(8)),
                // W = 2
                Arguments.of("W2 G1 bf16", c(2, 1, 8, 2, 256, 16, BF16, BF16, BF16), random()),
                Arguments.of("W2 G2 fp8 drop", c(2, 2, 16, 4, 768, 12, FP8, BF16, BF16), random().drop(0.2)),
                Arguments.of("W2 fp16 m=0", c(2, 1, 6, 3, 1024, 8, FP16, FP16, FP16), random().tokens(0)),
                Arguments.of("W2 m=320 (several 256-token chunks)", c(2, 1, 8, 4, 256, 320, BF16, BF16, BF16),
                        random().tokens(320).drop(0.05)),
                Arguments.of("W2 mixtral-like fp32 out skewed", c(2, 1, 8, 2, 4096, 8, BF16, FP32, BF16),
                        random().skewedTo(1)),
                // W = 4
                Arguments.of("W4 G1 qwen3-30b-a3b", preset(Preset.QWEN3_30B_A3B, 4, 1, 8), random()),
                Arguments.of("W4 G2 deepseek-v2-lite skewed", preset(Preset.DEEPSEEK_V2_LITE, 4, 2, 8),
                        random().skewedTo(2)),
                Arguments.of("W4 G1 fp16->fp32->bf16 drop, m per group",
                        c(4, 1, 16, 4, 256, 16, FP16, FP32, BF16), random().drop(0.3).tokensPerGroup(0, 16, 5, 1)),
                Arguments.of("W4 G2 fp8->fp16->fp16 m=M", c(4, 2, 8, 3, 512, 16, FP8, FP16, FP16), random().tokens(16)),
                // W = 8
                Arguments.of("W8 G1 deepseek-v3", preset(Preset.DEEPSEEK_V3, 8, 1, 4), random()),
                Arguments.of("W8 G2 bf16->fp16->fp16 skewed drop", c(8, 2, 32, 4, 256, 16, BF16, FP16, FP16),
                        random().skewedTo(5).drop(0.1)),
                Arguments.of("W8 G1 fp16 K>L", c(8, 1, 16, 8, 1024, 8, FP16, FP32, BF16), random()),
                Arguments.of("W8 G2 mixtral-8x7b L=1", preset(Preset.MIXTRAL_8X7B, 8, 2, 4), random()),
                // the put path (staged rows and non-blocking puts, as peers over a network get)
                Arguments.of("W2 puts m=320", puts(c(2, 1, 8, 4, 256, 320, BF16, BF16, BF16)),
                        random().tokens(320).drop(0.05)),
                Arguments.of("W4 G2 puts fp8 skewed", puts(c(4, 2, 16, 4, 512, 12, FP8, FP32, BF16)),
                        random().skewedTo(1).drop(0.1)),
                Arguments.of("W4 G1 puts deepseek-v2-lite m=0", puts(preset(Preset.DEEPSEEK_V2_LITE, 4, 1, 8)),
                        random().tokens(0)),
                // quantising dispatch
                Arguments.of("W2 quantising bf16 H=128 m=M", quantizing(c(2, 1, 8, 2, 128, 24, BF16, BF16, BF16)),
                        edges().tokens(24)),
                Arguments.of("W2 quantising fp16 H=384 (padded scales) m=0",
                        quantizing(c(2, 1, 8, 3, 384, 8, FP16, FP16, FP16)), edges().tokens(0)),
                Arguments.of("W2 G2 quantising bf16 H=640 drop", quantizing(c(2, 2, 8, 4, 640, 12, BF16, FP32, BF16)),
                        edges().drop(0.2)),
                Arguments.of("W4 quantising bf16 H=256 m=M skewed",
                        quantizing(c(4, 1, 16, 4, 256, 16, BF16, BF16, BF16)), edges().tokens(16).skewedTo(3)),
                Arguments.of("W4 G2 quantising fp16 H=1024 m per group",
                        quantizing(c(4, 2, 16, 6, 1024, 10, FP16, BF16, FP16)), edges().tokensPerGroup(10, 0)),
                Arguments.of("W4 quantising bf16 m=300 (two chunks, several blocks per destination)",
                        quantizing(c(4, 1, 16, 4, 256, 300, BF16, BF16, BF16)), edges().tokens(300)),
                Arguments.of("W4 deepseek-v3-bf16-to-fp8 m=M", preset(Preset.DEEPSEEK_V3_BF16_TO_FP8, 4, 1, 4),
                        edges().tokens(4)),
                Arguments.of("W4 puts quantising bf16 H=512", puts(quantizing(c(4, 1, 16, 4, 512, 12, BF16, BF16,
                        BF16))), edges()),
                Arguments.of("W2 G2 puts quantising fp16 H=128 m=M",
                        puts(quantizing(c(2, 2, 4, 2, 128, 20, FP16, FP16, BF16))), edges().tokens(20)));
    }

    private static MoeConfig puts(MoeConfig config) {
        return config.toBuilder().peerWrites(PeerWrites.PUTS).build();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesTheReference(String name, MoeConfig config, Workload.Options options) {
        long seed = name.hashCode();
        Harness.checkedRounds(config, 2, round -> Workload.generate(config, seed + round, options), false);
    }
}
