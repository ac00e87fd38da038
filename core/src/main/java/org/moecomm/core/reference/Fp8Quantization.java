package org.moecomm.core.reference;

import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.kernels.api.Numerics;

/**
 * A quantising dispatch's conversion of tokens, as plain loops (docs/contract.md, "Quantising
 * dispatch"): each block of 128 consecutive values of a bf16 or fp16 token becomes 128 fp8-e4m3
 * codes and one float32 scale. The rule itself ({@link Numerics#maxMagnitude},
 * {@link Numerics#fp8e4m3Scale}, {@link Numerics#quantizeFp8e4m3}) is the one the kernels apply;
 * here it runs over the whole block at once, where the kernels split a block over threads.
 */
public final class Fp8Quantization {
    private Fp8Quantization() {
    }

    /** Tokens as the experts receive them: fp8 codes {@code [n][H]} and scales {@code [n][H/128]}. */
    public record Tokens(byte[] codes, float[] scales) {
    }

    /**
     * Quantises {@code tokens} tokens of {@code hidden} values of dtype {@code from} (little-endian
     * bytes, {@code x.length == tokens * hidden * from.bytes()}).
     *
     * @throws IllegalArgumentException for a dtype other than bf16 or fp16, or hidden not a multiple of 128
     */
    public static Tokens of(DType from, byte[] x, int tokens, int hidden) {
        if (from != DType.BF16 && from != DType.FP16) {
            throw new IllegalArgumentException("only bf16 and fp16 tokens are quantised, got " + from);
        }
        if (hidden % MoeConfig.SCALE_BLOCK != 0) {
            throw new IllegalArgumentException("hidden " + hidden + " is not a multiple of " + MoeConfig.SCALE_BLOCK);
        }
        int n = tokens * hidden;
        float[] values = Reference.decodeAll(from, x, n);
        byte[] codes = new byte[n];
        float[] scales = new float[n / MoeConfig.SCALE_BLOCK];
        for (int b = 0; b < scales.length; b++) {
            int first = b * MoeConfig.SCALE_BLOCK;
            float amax = 0f;
            for (int i = first; i < first + MoeConfig.SCALE_BLOCK; i++) {
                amax = Numerics.maxMagnitude(amax, values[i]);
            }
            float scale = Numerics.fp8e4m3Scale(amax);
            scales[b] = scale;
            for (int i = first; i < first + MoeConfig.SCALE_BLOCK; i++) {
                codes[i] = Numerics.quantizeFp8e4m3(values[i], scale);
            }
        }
        return new Tokens(codes, scales);
    }
}
