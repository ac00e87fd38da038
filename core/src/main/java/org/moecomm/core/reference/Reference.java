package org.moecomm.core.reference;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.kernels.api.Numerics;

/**
 * The contract of dispatch and combine as plain loops over the inputs of all ranks: the oracle
 * every backend is tested against. No kernels, no buffers, no protocol.
 *
 * <p>Dispatch on rank r: for each local expert l (expert {@code e = r*L + l}), every pair
 * (token t of group g, slot k) with {@code indices[t][k] == e}, over all groups g and all
 * t < m_g. Row order is the backend's choice, so the result is a multiset. A row holds the token
 * as the experts receive it: its bytes and scales, or, when dispatch quantises, its fp8 codes and
 * block scales ({@link Fp8Quantization}).
 *
 * <p>Combine on rank r of group g: {@code out[t][h] = sum_k weights[t][k] * y(e_k, g, t)[h]}
 * for t < m_g, accumulated in float32 from 0 in increasing k (a float multiply, then a float
 * add: never fused), skipping id -1, converted to outType with round-to-nearest-even.
 */
public final class Reference {
    private final MoeConfig config;
    private final List<RankInputs> ranks;
    /** Per token group: the tokens as the experts receive them ([m][H] in expertInType) and their scales. */
    private final List<byte[]> expertX;
    private final List<float[]> expertXScale;

    /** Expert {@code expert} applied to token {@code token} of group {@code group}: H values in expertOutType, raw bytes. */
    @FunctionalInterface
    public interface ExpertFunction {
        byte[] apply(int expert, int group, int token);
    }

    /** One dispatched pair: the token's group and index, its slot k, its bytes and its scales. */
    public record ExpertRow(int group, int token, int slot, byte[] tokenBytes, float[] scales) {
        @Override
        public boolean equals(Object o) {
            return o instanceof ExpertRow r && r.group == group && r.token == token && r.slot == slot
                    && Arrays.equals(r.tokenBytes, tokenBytes) && Arrays.equals(r.scales, scales);
        }

        @Override
        public int hashCode() {
            return Objects.hash(group, token, slot, Arrays.hashCode(tokenBytes));
        }

        @Override
        public String toString() {
            return "(group " + group + ", token " + token + ", slot " + slot + ")";
        }
    }

    /**
     * @param ranks the inputs of every rank, by rank; ranks of one group must hold identical inputs
     * @throws IllegalArgumentException if sizes do not match the config, an id is out of range,
     *                                  or two ranks of a group differ
     */
    public Reference(MoeConfig config, List<RankInputs> ranks) {
        this.config = Objects.requireNonNull(config, "config");
        this.ranks = List.copyOf(ranks);
        if (this.ranks.size() != config.worldSize()) {
            throw new IllegalArgumentException("need inputs of " + config.worldSize() + " ranks, got " + ranks.size());
        }
        int h = config.hidden();
        int k = config.topK();
        int s = config.inputScalesPerToken();
        for (int r = 0; r < config.worldSize(); r++) {
            RankInputs in = this.ranks.get(r);
            int m = in.m();
            if (m > config.maxTokensPerRank()) {
                throw new IllegalArgumentException("rank " + r + ": m=" + m + " exceeds M=" + config.maxTokensPerRank());
            }
            if (in.x().length != m * h * config.inType().bytes() || in.xScale().length != m * s
                    || in.indices().length != m * k || in.weights().length != m * k) {
                throw new IllegalArgumentException("rank " + r + ": input sizes do not match m=" + m + " and " + config);
            }
            for (int id : in.indices()) {
                if (id < -1 || id >= config.numExperts()) {
                    throw new IllegalArgumentException("rank " + r + ": expert id " + id + " out of range");
                }
            }
            RankInputs first = this.ranks.get(config.groupOf(r) * config.groupSize());
            if (!in.sameAs(first)) {
                throw new IllegalArgumentException("rank " + r + " holds other inputs than rank "
                        + config.groupOf(r) * config.groupSize() + " of its token group");
            }
        }
        this.expertX = new ArrayList<>(config.numGroups());
        this.expertXScale = new ArrayList<>(config.numGroups());
        for (int g = 0; g < config.numGroups(); g++) {
            RankInputs in = groupInputs(g);
            if (config.quantizes()) {
                Fp8Quantization.Tokens q = Fp8Quantization.of(config.inType(), in.x(), in.m(), h);
                expertX.add(q.codes());
                expertXScale.add(q.scales());
            } else {
                expertX.add(in.x());
                expertXScale.add(in.xScale());
            }
        }
    }

    public MoeConfig config() {
        return config;
    }

    /** Inputs of rank {@code rank}. */
    public RankInputs inputs(int rank) {
        return ranks.get(rank);
    }

    /** Inputs of token group {@code group} (those of its first rank). */
    public RankInputs groupInputs(int group) {
        return ranks.get(group * config.groupSize());
    }

    /**
     * The token bytes as the experts receive them (H elements of expertInType: the input's bytes,
     * or their fp8 codes when dispatch quantises) of token {@code token} of group {@code group}.
     */
    public byte[] tokenBytes(int group, int token) {
        int xb = config.hidden() * config.expertInType().bytes();
        return Arrays.copyOfRange(expertX.get(group), token * xb, (token + 1) * xb);
    }

    /** The block scales the experts receive with token {@code token} of group {@code group} (empty without scales). */
    public float[] tokenScales(int group, int token) {
        int s = config.scalesPerToken();
        return Arrays.copyOfRange(expertXScale.get(group), token * s, (token + 1) * s);
    }

    /** Dispatch on {@code rank}: for each local expert, the pairs routed to it (a multiset). */
    public List<List<ExpertRow>> dispatch(int rank) {
        int l = config.expertsPerRank();
        int k = config.topK();
        List<List<ExpertRow>> perExpert = new ArrayList<>(l);
        for (int i = 0; i < l; i++) {
            perExpert.add(new ArrayList<>());
        }
        for (int g = 0; g < config.numGroups(); g++) {
            RankInputs in = groupInputs(g);
            for (int t = 0; t < in.m(); t++) {
                for (int j = 0; j < k; j++) {
                    int e = in.indices()[t * k + j];
                    if (e >= 0 && config.rankOfExpert(e) == rank) {
                        perExpert.get(e - rank * l).add(new ExpertRow(g, t, j, tokenBytes(g, t), tokenScales(g, t)));
                    }
                }
            }
        }
        return perExpert;
    }

    /** Expected {@code expertNumTokens} on {@code rank}: the sizes of {@link #dispatch}'s lists, without copying rows. */
    public int[] expertCounts(int rank) {
        int l = config.expertsPerRank();
        int k = config.topK();
        int[] counts = new int[l];
        for (int g = 0; g < config.numGroups(); g++) {
            RankInputs in = groupInputs(g);
            for (int i = 0; i < in.m() * k; i++) {
                int e = in.indices()[i];
                if (e >= 0 && config.rankOfExpert(e) == rank) {
                    counts[e - rank * l]++;
                }
            }
        }
        return counts;
    }

    /** Combine on {@code rank}: {@code out [m][H]} in outType, raw bytes. */
    public byte[] combine(int rank, ExpertFunction expert) {
        int g = config.groupOf(rank);
        RankInputs in = ranks.get(rank);
        int h = config.hidden();
        int k = config.topK();
        DType outType = config.outType();
        byte[] out = new byte[in.m() * h * outType.bytes()];
        float[] acc = new float[h];
        float[] y = new float[h];
        for (int t = 0; t < in.m(); t++) {
            Arrays.fill(acc, 0f);
            for (int j = 0; j < k; j++) {
                int e = in.indices()[t * k + j];
                if (e < 0) {
                    continue;
                }
                float w = in.weights()[t * k + j];
                decodeRange(config.expertOutType(), expert.apply(e, g, t), 0, y, h);
                for (int i = 0; i < h; i++) {
                    float product = w * y[i];
                    acc[i] = acc[i] + product;
                }
            }
            encodeAll(outType, acc, out, t * h);
        }
        return out;
    }

    /** Element {@code i} of a little-endian array of {@code dtype}, as float. */
    public static float decode(DType dtype, byte[] bytes, int i) {
        return switch (dtype) {
            case BF16 -> Numerics.bf16ToFloat(getShort(bytes, i));
            case FP16 -> Numerics.fp16ToFloat(getShort(bytes, i));
            case FP32 -> Float.intBitsToFloat(getInt(bytes, i));
            case FP8_E4M3 -> Numerics.fp8e4m3ToFloat(bytes[i]);
            case INT32 -> throw new IllegalArgumentException("int32 is not a float type");
        };
    }

    /**
     * Elements {@code [0, n)} of a little-endian array of {@code dtype}, as floats: what
     * {@link #decode} gives for each, with the dtype chosen once (host loops over whole rows).
     */
    public static float[] decodeAll(DType dtype, byte[] bytes, int n) {
        float[] v = new float[n];
        decodeRange(dtype, bytes, 0, v, n);
        return v;
    }

    /**
     * Elements {@code [first, first + n)} of a little-endian array of {@code dtype} into
     * {@code values[0, n)}: what {@link #decode} gives for each, without allocating (rows of a
     * larger array).
     */
    public static void decodeRange(DType dtype, byte[] bytes, int first, float[] values, int n) {
        // a loop per dtype, each its own method, so that the JIT compiles each once for the types
        // it meets (one loop under a switch is compiled again whenever a new dtype shows up)
        switch (dtype) {
            case BF16 -> decodeBf16(bytes, first, values, n);
            case FP16 -> decodeFp16(bytes, first, values, n);
            case FP32 -> decodeFp32(bytes, first, values, n);
            case FP8_E4M3 -> decodeFp8e4m3(bytes, first, values, n);
            case INT32 -> throw new IllegalArgumentException("int32 is not a float type");
        }
    }

    private static void decodeBf16(byte[] bytes, int first, float[] values, int n) {
        for (int i = 0; i < n; i++) {
            values[i] = Numerics.bf16ToFloat(getShort(bytes, first + i));
        }
    }

    private static void decodeFp16(byte[] bytes, int first, float[] values, int n) {
        for (int i = 0; i < n; i++) {
            values[i] = Numerics.fp16ToFloat(getShort(bytes, first + i));
        }
    }

    private static void decodeFp32(byte[] bytes, int first, float[] values, int n) {
        for (int i = 0; i < n; i++) {
            values[i] = Float.intBitsToFloat(getInt(bytes, first + i));
        }
    }

    private static void decodeFp8e4m3(byte[] bytes, int first, float[] values, int n) {
        for (int i = 0; i < n; i++) {
            values[i] = Numerics.fp8e4m3ToFloat(bytes[first + i]);
        }
    }

    /** Stores every value as elements {@code first, first + 1, ...} of a little-endian array of {@code dtype}, as {@link #encode} does. */
    public static void encodeAll(DType dtype, float[] values, byte[] bytes, int first) {
        encodeRange(dtype, values, values.length, bytes, first);
    }

    /** Stores {@code values[0, n)} as elements {@code first, ..., first + n - 1} of a little-endian array of {@code dtype}, as {@link #encode} does. */
    public static void encodeRange(DType dtype, float[] values, int n, byte[] bytes, int first) {
        // a loop per dtype, each its own method (see decodeRange)
        switch (dtype) {
            case BF16 -> encodeBf16(values, n, bytes, first);
            case FP16 -> encodeFp16(values, n, bytes, first);
            case FP32 -> encodeFp32(values, n, bytes, first);
            case FP8_E4M3 -> encodeFp8e4m3(values, n, bytes, first);
            case INT32 -> throw new IllegalArgumentException("int32 is not a float type");
        }
    }

    private static void encodeBf16(float[] values, int n, byte[] bytes, int first) {
        for (int i = 0; i < n; i++) {
            putShort(bytes, first + i, Numerics.floatToBf16(values[i]));
        }
    }

    private static void encodeFp16(float[] values, int n, byte[] bytes, int first) {
        for (int i = 0; i < n; i++) {
            putShort(bytes, first + i, Numerics.floatToFp16(values[i]));
        }
    }

    private static void encodeFp32(float[] values, int n, byte[] bytes, int first) {
        for (int i = 0; i < n; i++) {
            putInt(bytes, first + i, Float.floatToRawIntBits(values[i]));
        }
    }

    private static void encodeFp8e4m3(float[] values, int n, byte[] bytes, int first) {
        for (int i = 0; i < n; i++) {
            bytes[first + i] = Numerics.floatToFp8e4m3(values[i]);
        }
    }

    /** Stores {@code v} as element {@code i} of a little-endian array of {@code dtype}. */
    public static void encode(DType dtype, float v, byte[] bytes, int i) {
        switch (dtype) {
            case BF16 -> putShort(bytes, i, Numerics.floatToBf16(v));
            case FP16 -> putShort(bytes, i, Numerics.floatToFp16(v));
            case FP32 -> putInt(bytes, i, Float.floatToRawIntBits(v));
            case FP8_E4M3 -> bytes[i] = Numerics.floatToFp8e4m3(v);
            case INT32 -> throw new IllegalArgumentException("int32 is not a float type");
        }
    }

    /** Little-endian views of byte arrays (one load or store per element, whatever the host's byte order). */
    private static final VarHandle SHORTS = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INTS = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    private static short getShort(byte[] b, int i) {
        return (short) SHORTS.get(b, 2 * i);
    }

    private static int getInt(byte[] b, int i) {
        return (int) INTS.get(b, 4 * i);
    }

    private static void putShort(byte[] b, int i, short v) {
        SHORTS.set(b, 2 * i, v);
    }

    private static void putInt(byte[] b, int i, int v) {
        INTS.set(b, 4 * i, v);
    }
}
