package org.moecomm.core.check;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.reference.RankInputs;
import org.moecomm.core.reference.Reference;

/**
 * Seeded inputs of one round for every rank of a world, plus the deterministic "fake expert"
 * that tests, the demo and the benchmarks apply to dispatched rows.
 *
 * <p>Per token group (ranks of a group hold identical inputs): m (fixed, per group, or uniform
 * in [0, M]); tokens x with values in [-1, 1] (bf16/fp16), or fp8-e4m3 values in [-4, 4] with
 * positive block scales in [1/8, 8); K distinct experts per token, uniform or skewed (half of all
 * picks go to the experts of one rank), optionally some slots replaced by -1; weights in
 * [1/32, 1). With {@link Options#edgeValues(boolean)} bf16 and fp16 tokens are drawn block by block
 * (128 values) from the cases that test a quantising dispatch's rule ({@link EdgeValues}).
 */
public final class Workload {
    /** How tokens pick their experts. */
    public enum Routing {
        /** K distinct experts uniformly at random. */
        UNIFORM,
        /** Each pick goes with probability 1/2 to an expert of the hot rank, else to another expert. */
        SKEWED
    }

    /** Generation options; immutable, each setter returns a copy. */
    public record Options(int fixedTokens, int[] tokensPerGroup, Routing routing, int hotRank, double dropFraction,
                          boolean edgeValues) {
        public Options {
            Objects.requireNonNull(routing, "routing");
            tokensPerGroup = tokensPerGroup == null ? null : tokensPerGroup.clone();
            if (dropFraction < 0 || dropFraction > 1) {
                throw new IllegalArgumentException("dropFraction must be in [0, 1], got " + dropFraction);
            }
        }

        /** Defaults: m uniform in [0, M] per group, uniform routing, no -1 ids, values in [-1, 1]. */
        public static Options defaults() {
            return new Options(-1, null, Routing.UNIFORM, 0, 0, false);
        }

        /** Every group has m tokens. */
        public Options tokens(int m) {
            return new Options(m, null, routing, hotRank, dropFraction, edgeValues);
        }

        /** Group g has {@code m[g]} tokens. */
        public Options tokensPerGroup(int... m) {
            return new Options(-1, m, routing, hotRank, dropFraction, edgeValues);
        }

        /** m uniform in [0, M] per group (the default). */
        public Options randomTokens() {
            return new Options(-1, null, routing, hotRank, dropFraction, edgeValues);
        }

        public Options routing(Routing r) {
            return new Options(fixedTokens, tokensPerGroup, r, hotRank, dropFraction, edgeValues);
        }

        /** Skewed routing towards {@code rank}'s experts. */
        public Options skewedTo(int rank) {
            return new Options(fixedTokens, tokensPerGroup, Routing.SKEWED, rank, dropFraction, edgeValues);
        }

        /** Fraction of (token, slot) entries replaced by -1. */
        public Options drop(double fraction) {
            return new Options(fixedTokens, tokensPerGroup, routing, hotRank, fraction, edgeValues);
        }

        /** Whether bf16 and fp16 tokens are drawn block by block from quantisation's edge cases ({@link EdgeValues}). */
        public Options edgeValues(boolean on) {
            return new Options(fixedTokens, tokensPerGroup, routing, hotRank, dropFraction, on);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Options p && p.fixedTokens == fixedTokens && Arrays.equals(p.tokensPerGroup, tokensPerGroup)
                    && p.routing == routing && p.hotRank == hotRank && p.dropFraction == dropFraction
                    && p.edgeValues == edgeValues;
        }

        @Override
        public int hashCode() {
            return Objects.hash(fixedTokens, Arrays.hashCode(tokensPerGroup), routing, hotRank, dropFraction,
                    edgeValues);
        }

        @Override
        public String toString() {
            String m = fixedTokens >= 0 ? "m=" + fixedTokens
                    : tokensPerGroup != null ? "m=" + Arrays.toString(tokensPerGroup) : "m=random";
            return m + " " + routing.name().toLowerCase(java.util.Locale.ROOT)
                    + (routing == Routing.SKEWED ? "(rank " + hotRank + ")" : "")
                    + (dropFraction > 0 ? " drop=" + dropFraction : "") + (edgeValues ? " edge-values" : "");
        }
    }

    private final MoeConfig config;
    private final long seed;
    private final Options options;
    private final List<RankInputs> ranks;
    private Reference reference;

    private Workload(MoeConfig config, long seed, Options options, List<RankInputs> ranks) {
        this.config = config;
        this.seed = seed;
        this.options = options;
        this.ranks = ranks;
    }

    public static Workload generate(MoeConfig config, long seed) {
        return generate(config, seed, Options.defaults());
    }

    public static Workload generate(MoeConfig config, long seed, Options options) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(options, "options");
        int ng = config.numGroups();
        if (options.tokensPerGroup() != null && options.tokensPerGroup().length != ng) {
            throw new IllegalArgumentException("tokensPerGroup needs " + ng + " values, got "
                    + options.tokensPerGroup().length);
        }
        if (options.hotRank() < 0 || options.hotRank() >= config.worldSize()) {
            throw new IllegalArgumentException("hot rank " + options.hotRank() + " is outside the world");
        }
        List<RankInputs> ranks = new ArrayList<>(config.worldSize());
        for (int g = 0; g < ng; g++) {
            SplittableRandom rnd = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + g);
            int m = options.fixedTokens() >= 0 ? options.fixedTokens()
                    : options.tokensPerGroup() != null ? options.tokensPerGroup()[g]
                    : rnd.nextInt(config.maxTokensPerRank() + 1);
            if (m > config.maxTokensPerRank()) {
                throw new IllegalArgumentException("m=" + m + " exceeds M=" + config.maxTokensPerRank());
            }
            RankInputs in = group(config, options, m, rnd);
            for (int i = 0; i < config.groupSize(); i++) {
                ranks.add(in);
            }
        }
        return new Workload(config, seed, options, List.copyOf(ranks));
    }

    private static RankInputs group(MoeConfig c, Options o, int m, SplittableRandom rnd) {
        int h = c.hidden();
        int k = c.topK();
        int s = c.inputScalesPerToken();
        byte[] x = new byte[m * h * c.inType().bytes()];
        boolean edges = o.edgeValues() && (c.inType() == DType.BF16 || c.inType() == DType.FP16);
        for (int i = 0; i < m * h; i += edges ? MoeConfig.SCALE_BLOCK : 1) {
            if (edges) {
                EdgeValues.block(c.inType(), rnd, x, i, Math.min(MoeConfig.SCALE_BLOCK, m * h - i));
                continue;
            }
            float v = (float) (rnd.nextDouble() * 2 - 1);
            if (c.inType() == DType.FP8_E4M3) {
                v *= 4;
            }
            Reference.encode(c.inType(), v, x, i);
        }
        float[] scales = new float[m * s];
        for (int i = 0; i < scales.length; i++) {
            scales[i] = (float) Math.pow(2, rnd.nextDouble() * 6 - 3);
        }
        int[] indices = new int[m * k];
        float[] weights = new float[m * k];
        for (int t = 0; t < m; t++) {
            int[] picks = pick(c, o, rnd);
            for (int j = 0; j < k; j++) {
                indices[t * k + j] = rnd.nextDouble() < o.dropFraction() ? -1 : picks[j];
                weights[t * k + j] = (float) (1.0 / 32 + rnd.nextDouble() * (1 - 1.0 / 32));
            }
        }
        return new RankInputs(m, x, scales, indices, weights);
    }

    /** K distinct experts. */
    private static int[] pick(MoeConfig c, Options o, SplittableRandom rnd) {
        int e = c.numExperts();
        int k = c.topK();
        int l = c.expertsPerRank();
        boolean[] used = new boolean[e];
        int[] picks = new int[k];
        int hotFirst = o.hotRank() * l;
        int hotUsed = 0;
        for (int j = 0; j < k; j++) {
            int id;
            boolean hot = o.routing() == Routing.SKEWED && hotUsed < l && (rnd.nextBoolean() || j - hotUsed >= e - l);
            if (o.routing() == Routing.SKEWED) {
                // hot: an unused expert of the hot rank; cold: an unused expert elsewhere
                do {
                    id = hot ? hotFirst + rnd.nextInt(l) : rnd.nextInt(e);
                } while (used[id] || (!hot && id >= hotFirst && id < hotFirst + l));
                if (hot) {
                    hotUsed++;
                }
            } else {
                do {
                    id = rnd.nextInt(e);
                } while (used[id]);
            }
            used[id] = true;
            picks[j] = id;
        }
        return picks;
    }

    public MoeConfig config() {
        return config;
    }

    public long seed() {
        return seed;
    }

    public Options options() {
        return options;
    }

    /** Inputs of every rank, by rank. */
    public List<RankInputs> ranks() {
        return ranks;
    }

    public RankInputs rank(int rank) {
        return ranks.get(rank);
    }

    /** The reference over these inputs (built once). */
    public synchronized Reference reference() {
        if (reference == null) {
            reference = new Reference(config, ranks);
        }
        return reference;
    }

    /** The fake expert applied to the tokens of this workload, for {@link Reference#combine}. */
    public Reference.ExpertFunction expertFunction() {
        Reference ref = reference();
        return (expert, group, token) -> fakeExpert(config, expert, ref.tokenBytes(group, token),
                ref.tokenScales(group, token));
    }

    /** (token, expert) pairs of all ranks (each group counted once). */
    public long totalPairs() {
        long n = 0;
        for (int g = 0; g < config.numGroups(); g++) {
            for (int id : ranks.get(g * config.groupSize()).indices()) {
                if (id >= 0) {
                    n++;
                }
            }
        }
        return n;
    }

    /**
     * The fake expert {@code e}: {@code y[h] = v[h] * (1 + e/E) + e/(16E)} in float32, where
     * {@code v} is the token as the expert receives it, dequantised (fp8 values times their block's
     * scale), stored as expertOutType. Needs only the row and the expert id, so it can be applied
     * to dispatch's output rows. One row at a time through {@link #fakeExpertRow}, as
     * {@link RankBuffers#runExperts} applies it to an expert's rows in bulk.
     */
    public static byte[] fakeExpert(MoeConfig c, int expert, byte[] tokenBytes, float[] scales) {
        int h = c.hidden();
        byte[] y = new byte[h * c.expertOutType().bytes()];
        fakeExpertRow(c, expert, tokenBytes, 0, scales, 0, new float[MoeConfig.SCALE_BLOCK], y, 0);
        return y;
    }

    /**
     * {@link #fakeExpert} on one row held inside larger arrays, without allocating: reads the H
     * elements (expertInType) of {@code x} from element {@code xFirst} on and, when the experts
     * get block scales, the row's scales from {@code scales[sFirst]} on; writes the H output
     * elements (expertOutType) into {@code y} from element {@code yFirst} on. {@code work} is
     * scratch of at least {@link MoeConfig#SCALE_BLOCK} floats.
     */
    public static void fakeExpertRow(MoeConfig c, int expert, byte[] x, int xFirst, float[] scales, int sFirst,
                                     float[] work, byte[] y, int yFirst) {
        int h = c.hidden();
        float a = 1f + (float) expert / c.numExperts();
        float b = (float) expert / (16f * c.numExperts());
        boolean scaled = c.scalesPerToken() > 0;
        DType in = c.expertInType();
        DType out = c.expertOutType();
        // block by block (one scale's elements), so that the floats stay in the first level cache
        for (int start = 0, blk = 0; start < h; start += MoeConfig.SCALE_BLOCK, blk++) {
            int len = Math.min(MoeConfig.SCALE_BLOCK, h - start);
            Reference.decodeRange(in, x, xFirst + start, work, len);
            if (scaled) {
                float scale = scales[sFirst + blk];
                for (int i = 0; i < len; i++) {
                    float product = (work[i] * scale) * a;
                    work[i] = product + b;
                }
            } else {
                for (int i = 0; i < len; i++) {
                    float product = work[i] * a;
                    work[i] = product + b;
                }
            }
            Reference.encodeRange(out, work, len, y, yFirst + start);
        }
    }

    @Override
    public String toString() {
        return "Workload[seed=" + seed + ", " + options + ", " + config + "]";
    }
}
