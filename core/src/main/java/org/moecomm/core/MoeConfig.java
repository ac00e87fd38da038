package org.moecomm.core;

import org.moecomm.kernels.moe.AllToAllKernels;
import org.moecomm.kernels.moe.MoeKernels;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;

/**
 * Everything that sizes a dispatch/combine handle. Immutable; validated on construction, so a
 * config that exists is consistent. Build with {@link #builder()} or start from a {@link Preset}.
 *
 * @param maxTokensPerRank M: most tokens one rank passes to one dispatch (sizes the buffers)
 * @param numExperts       E: experts in all; rank r hosts experts [r*L, (r+1)*L) with L = E / W
 * @param topK             K: experts per token (an id of -1 skips that slot)
 * @param hidden           H: elements per token; a multiple of 16 so rows move in 16-byte pieces
 * @param worldSize        W: ranks
 * @param groupSize        G: ranks per token group, which hold identical tokens (1 = plain data parallelism)
 * @param inType           dispatch token dtype: BF16, FP16 or FP8_E4M3
 * @param expertInType     dtype of dispatch's output tokens (expertX), which the rows carry: inType, or FP8_E4M3
 *                         for BF16 and FP16 tokens, which dispatch then quantises with a float32 scale per 128
 *                         values (docs/contract.md, "Quantising dispatch"; H a multiple of 128)
 * @param blockScales      whether the input tokens carry float32 scales per 128 elements (required for, and only for,
 *                         inType FP8_E4M3)
 * @param expertOutType    dtype of the expert outputs given to combine: BF16, FP16 or FP32
 * @param outType          dtype of combine's output: BF16 or FP16
 * @param waitTimeout      bound of every wait for a peer; passing it raises {@link WaitTimeoutException}
 * @param inputCheck    where dispatch checks the expert ids (default {@link InputCheck#AUTO})
 * @param peerWrites    how rows reach a peer's buffers (default {@link PeerWrites#AUTO}: direct stores where mapped)
 */
public record MoeConfig(int maxTokensPerRank, int numExperts, int topK, int hidden, int worldSize, int groupSize,
                        DType inType, DType expertInType, boolean blockScales, DType expertOutType, DType outType,
                        Duration waitTimeout, InputCheck inputCheck, PeerWrites peerWrites) {

    /** Elements covered by one block scale. */
    public static final int SCALE_BLOCK = MoeKernels.SCALE_BLOCK;
    /** Default bound of a wait for a peer. */
    public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofSeconds(30);

    private static final Set<DType> IN_TYPES = Set.of(DType.BF16, DType.FP16, DType.FP8_E4M3);
    /** Input dtypes a dispatch can quantise to fp8_e4m3. */
    private static final Set<DType> QUANTIZED_IN_TYPES = Set.of(DType.BF16, DType.FP16);
    private static final Set<DType> EXPERT_OUT_TYPES = Set.of(DType.BF16, DType.FP16, DType.FP32);
    private static final Set<DType> OUT_TYPES = Set.of(DType.BF16, DType.FP16);

    public MoeConfig {
        Objects.requireNonNull(inType, "inType");
        Objects.requireNonNull(expertInType, "expertInType");
        Objects.requireNonNull(expertOutType, "expertOutType");
        Objects.requireNonNull(outType, "outType");
        Objects.requireNonNull(waitTimeout, "waitTimeout");
        Objects.requireNonNull(inputCheck, "inputCheck");
        Objects.requireNonNull(peerWrites, "peerWrites");
        positive("maxTokensPerRank", maxTokensPerRank);
        positive("numExperts", numExperts);
        positive("topK", topK);
        positive("hidden", hidden);
        positive("worldSize", worldSize);
        positive("groupSize", groupSize);
        if (hidden % 16 != 0) {
            throw new IllegalArgumentException("hidden must be a multiple of 16, got " + hidden);
        }
        if (worldSize % groupSize != 0) {
            throw new IllegalArgumentException("worldSize " + worldSize + " is not divisible by groupSize " + groupSize);
        }
        if (worldSize / groupSize > AllToAllKernels.MAX_GROUPS) {
            throw new IllegalArgumentException("worldSize / groupSize = " + worldSize / groupSize + " groups exceeds "
                    + AllToAllKernels.MAX_GROUPS + ", the most the combine kernel counts rows for");
        }
        if (numExperts % worldSize != 0) {
            throw new IllegalArgumentException("numExperts " + numExperts + " is not divisible by worldSize " + worldSize);
        }
        if (topK > numExperts) {
            throw new IllegalArgumentException("topK " + topK + " exceeds numExperts " + numExperts);
        }
        if (topK > MoeKernels.MAX_TOP_K) {
            throw new IllegalArgumentException("topK " + topK + " exceeds " + MoeKernels.MAX_TOP_K
                    + ", the most slots per token the kernels route");
        }
        if (!IN_TYPES.contains(inType)) {
            throw new IllegalArgumentException("dispatch dtype must be one of " + IN_TYPES + ", got " + inType);
        }
        if (expertInType != inType) {
            if (expertInType != DType.FP8_E4M3 || !QUANTIZED_IN_TYPES.contains(inType)) {
                throw new IllegalArgumentException("dispatch converts only bf16 and fp16 tokens, to fp8_e4m3 (inType "
                        + inType + ", expertInType " + expertInType + ")");
            }
            if (hidden % SCALE_BLOCK != 0) {
                throw new IllegalArgumentException("a quantising dispatch needs hidden to be a multiple of "
                        + SCALE_BLOCK + " (one scale per " + SCALE_BLOCK + " values), got " + hidden);
            }
        }
        if (blockScales != (inType == DType.FP8_E4M3)) {
            throw new IllegalArgumentException("block scales go with fp8_e4m3 tokens and only with them (inType "
                    + inType + ", blockScales " + blockScales + ")");
        }
        if (!EXPERT_OUT_TYPES.contains(expertOutType)) {
            throw new IllegalArgumentException("expert output dtype must be one of " + EXPERT_OUT_TYPES + ", got "
                    + expertOutType);
        }
        if (!OUT_TYPES.contains(outType)) {
            throw new IllegalArgumentException("combine output dtype must be one of " + OUT_TYPES + ", got " + outType);
        }
        if (waitTimeout.isNegative() || waitTimeout.isZero()) {
            throw new IllegalArgumentException("waitTimeout must be positive, got " + waitTimeout);
        }
        long rows = (long) worldSize / groupSize * maxTokensPerRank * Math.min(topK, numExperts / worldSize);
        if (rows > Integer.MAX_VALUE / 2) {
            throw new IllegalArgumentException("maxTokensPerRank " + maxTokensPerRank + " is too large for this world");
        }
    }

    private static void positive(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }

    /** NG: token groups. */
    public int numGroups() {
        return worldSize / groupSize;
    }

    /** L: experts per rank. */
    public int expertsPerRank() {
        return numExperts / worldSize;
    }

    /** Most (token, expert) pairs one token can send to one rank: min(K, L). */
    public int maxPairsPerRank() {
        return Math.min(topK, expertsPerRank());
    }

    /** Capacity of each local expert's rows in dispatch's output: NG * M. */
    public int expertCapacity() {
        return numGroups() * maxTokensPerRank;
    }

    /** Whether dispatch quantises the (bf16 or fp16) tokens to fp8_e4m3 with block scales: expertInType is not inType. */
    public boolean quantizes() {
        return expertInType != inType;
    }

    /**
     * Float32 scales per token of dispatch's rows and of {@code expertXScale}: ceil(H / 128) when the
     * experts get fp8_e4m3 tokens (the input's scales, or those a quantising dispatch computes), else 0.
     */
    public int scalesPerToken() {
        return expertInType == DType.FP8_E4M3 ? blocksPerToken() : 0;
    }

    /** Float32 scales per token of the input {@code xScale}: ceil(H / 128) with block scales, else 0. */
    public int inputScalesPerToken() {
        return blockScales ? blocksPerToken() : 0;
    }

    private int blocksPerToken() {
        return (hidden + SCALE_BLOCK - 1) / SCALE_BLOCK;
    }

    /** Token group of {@code rank}. */
    public int groupOf(int rank) {
        return rank / groupSize;
    }

    /** Rank hosting expert {@code expert}. */
    public int rankOfExpert(int expert) {
        return expert / expertsPerRank();
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder holding this config. Block scales are left to follow the dispatch dtype (they are
     * fixed by it), so {@code toBuilder().inType(DType.FP8_E4M3).build()} gets scales; so is the
     * expert input dtype unless dispatch quantises.
     */
    public Builder toBuilder() {
        Builder b = new Builder().maxTokensPerRank(maxTokensPerRank).numExperts(numExperts).topK(topK).hidden(hidden)
                .worldSize(worldSize).groupSize(groupSize).inType(inType)
                .expertOutType(expertOutType).outType(outType).waitTimeout(waitTimeout).inputCheck(inputCheck)
                .peerWrites(peerWrites);
        return quantizes() ? b.expertInType(expertInType) : b;
    }

    @Override
    public String toString() {
        return "M=" + maxTokensPerRank + " E=" + numExperts + " K=" + topK + " H=" + hidden + " W=" + worldSize
                + " G=" + groupSize + " in=" + inType.label() + (blockScales ? "+scales" : "")
                + (quantizes() ? " expertIn=" + expertInType.label() + "+scales" : "") + " expertOut="
                + expertOutType.label() + " out=" + outType.label() + " timeout=" + waitTimeout.toMillis() + "ms"
                + (inputCheck == InputCheck.AUTO ? "" : " idCheck=" + inputCheck)
                + (peerWrites == PeerWrites.AUTO ? "" : " peerWrites=" + peerWrites);
    }

    /** Builder with the defaults of a small bf16 configuration. */
    public static final class Builder {
        private int maxTokensPerRank = 128;
        private int numExperts = 8;
        private int topK = 2;
        private int hidden = 256;
        private int worldSize = 1;
        private int groupSize = 1;
        private DType inType = DType.BF16;
        private DType expertInType;
        private Boolean blockScales;
        private DType expertOutType = DType.BF16;
        private DType outType = DType.BF16;
        private Duration waitTimeout = DEFAULT_WAIT_TIMEOUT;
        private InputCheck inputCheck = InputCheck.AUTO;
        private PeerWrites peerWrites = PeerWrites.AUTO;

        public Builder maxTokensPerRank(int v) { maxTokensPerRank = v; return this; }
        public Builder numExperts(int v) { numExperts = v; return this; }
        public Builder topK(int v) { topK = v; return this; }
        public Builder hidden(int v) { hidden = v; return this; }
        public Builder worldSize(int v) { worldSize = v; return this; }
        public Builder groupSize(int v) { groupSize = v; return this; }
        /** Sets the dispatch dtype; block scales follow it (on for fp8) unless set explicitly. */
        public Builder inType(DType v) { inType = v; return this; }
        /** Sets the dtype the experts get; FP8_E4M3 with bf16 or fp16 tokens makes dispatch quantise. Unset: inType. */
        public Builder expertInType(DType v) { expertInType = v; return this; }
        public Builder blockScales(boolean v) { blockScales = v; return this; }
        public Builder expertOutType(DType v) { expertOutType = v; return this; }
        public Builder outType(DType v) { outType = v; return this; }
        public Builder waitTimeout(Duration v) { waitTimeout = v; return this; }
        public Builder inputCheck(InputCheck v) { inputCheck = v; return this; }
        public Builder peerWrites(PeerWrites v) { peerWrites = v; return this; }

        public MoeConfig build() {
            boolean scales = blockScales != null ? blockScales : inType == DType.FP8_E4M3;
            return new MoeConfig(maxTokensPerRank, numExperts, topK, hidden, worldSize, groupSize, inType,
                    expertInType != null ? expertInType : inType, scales, expertOutType, outType, waitTimeout,
                    inputCheck, peerWrites);
        }
    }
}
