package org.moecomm.core;

import java.util.Arrays;
import java.util.Locale;

/** The named workloads of the benchmarks (BENCHMARKS.md). */
public enum Preset {
    DEEPSEEK_V3("deepseek-v3", 256, 8, 7168, DType.FP8_E4M3, DType.BF16),
    DEEPSEEK_V2_LITE("deepseek-v2-lite", 64, 6, 2048, DType.FP8_E4M3, DType.BF16),
    QWEN3_30B_A3B("qwen3-30b-a3b", 128, 8, 2048, DType.BF16, DType.BF16),
    MIXTRAL_8X7B("mixtral-8x7b", 8, 2, 4096, DType.BF16, DType.BF16),
    /** DeepSeek-V3 with bf16 tokens that dispatch quantises to fp8 e4m3 (block scales computed in pack). */
    DEEPSEEK_V3_BF16_TO_FP8("deepseek-v3-bf16-to-fp8", 256, 8, 7168, DType.BF16, DType.FP8_E4M3, DType.BF16);

    private final String label;
    private final int experts;
    private final int topK;
    private final int hidden;
    private final DType dispatchType;
    private final DType expertInType;
    private final DType combineType;

    /** A preset whose experts get the dispatch dtype. */
    Preset(String label, int experts, int topK, int hidden, DType dispatchType, DType combineType) {
        this(label, experts, topK, hidden, dispatchType, dispatchType, combineType);
    }

    Preset(String label, int experts, int topK, int hidden, DType dispatchType, DType expertInType,
           DType combineType) {
        this.label = label;
        this.experts = experts;
        this.topK = topK;
        this.hidden = hidden;
        this.dispatchType = dispatchType;
        this.expertInType = expertInType;
        this.combineType = combineType;
    }

    public String label() {
        return label;
    }

    /** A builder with this preset's shape and dtypes for the given world. */
    public MoeConfig.Builder config(int worldSize, int groupSize, int maxTokensPerRank) {
        MoeConfig.Builder b = MoeConfig.builder().numExperts(experts).topK(topK).hidden(hidden).inType(dispatchType)
                .expertOutType(combineType).outType(combineType).worldSize(worldSize).groupSize(groupSize)
                .maxTokensPerRank(maxTokensPerRank);
        // set only where dispatch converts, so that a caller's inType(...) keeps the expert dtype following it
        return expertInType != dispatchType ? b.expertInType(expertInType) : b;
    }

    public static Preset byLabel(String label) {
        String key = label.toLowerCase(Locale.ROOT);
        return Arrays.stream(values()).filter(p -> p.label.equals(key)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown preset '" + label + "'; known: "
                        + Arrays.stream(values()).map(Preset::label).toList()));
    }
}
