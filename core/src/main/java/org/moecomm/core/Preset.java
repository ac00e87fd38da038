package org.moecomm.core;

import java.util.Arrays;
import java.util.Locale;

/** The named workloads of the benchmarks (BENCHMARKS.md). */
public enum Preset {
    DEEPSEEK_V3("deepseek-v3", 256, 8, 7168, DType.FP8_E4M3, DType.BF16),
    DEEPSEEK_V2_LITE("deepseek-v2-lite", 64, 6, 2048, DType.FP8_E4M3, DType.BF16),
    QWEN3_30B_A3B("qwen3-30b-a3b", 128, 8, 2048, DType.BF16, DType.BF16),
    MIXTRAL_8X7B("mixtral-8x7b", 8, 2, 4096, DType.BF16, DType.BF16);

    private final String label;
    private final int experts;
    private final int topK;
    private final int hidden;
    private final DType dispatchType;
    private final DType combineType;

    Preset(String label, int experts, int topK, int hidden, DType dispatchType, DType combineType) {
        this.label = label;
        this.experts = experts;
        this.topK = topK;
        this.hidden = hidden;
        this.dispatchType = dispatchType;
        this.combineType = combineType;
    }

    public String label() {
        return label;
    }

    /** A builder with this preset's shape and dtypes for the given world. */
    public MoeConfig.Builder config(int worldSize, int groupSize, int maxTokensPerRank) {
        return MoeConfig.builder().numExperts(experts).topK(topK).hidden(hidden).inType(dispatchType)
                .expertOutType(combineType).outType(combineType).worldSize(worldSize).groupSize(groupSize)
                .maxTokensPerRank(maxTokensPerRank);
    }

    public static Preset byLabel(String label) {
        String key = label.toLowerCase(Locale.ROOT);
        return Arrays.stream(values()).filter(p -> p.label.equals(key)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown preset '" + label + "'; known: "
                        + Arrays.stream(values()).map(Preset::label).toList()));
    }
}
