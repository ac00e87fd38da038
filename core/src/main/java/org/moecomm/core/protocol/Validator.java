package org.moecomm.core.protocol;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Objects;
import org.moecomm.core.DType;
import org.moecomm.core.DeviceMemory;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.InputCheck;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Tensor;
import org.moecomm.core.TokenCount;

/**
 * Checks a call's tensors against the config before any work starts; every failure is an
 * {@link IllegalArgumentException} whose message starts with the tensor's name.
 *
 * <p>Two checks concern device memory: the token count when it lives in a buffer
 * ({@link TokenCount.InBuffer}) and the expert ids of the first m tokens. The config's
 * {@link InputCheck} says where they are made: here, before any work (reading them with
 * {@link DeviceMemory#copyToHost}), or (by default where host reads would wait for the device,
 * see {@link DeviceMemory#hostReadsSynchronize()}) on the device by the protocol
 * ({@code MoeKernels.pack} with {@code checkIds}), which raises a bad input at its next call;
 * then a count in a buffer is not read here and the token tensors are checked against M rows.
 */
public final class Validator {
    /** Byte alignment every tensor's buffer must have. */
    public static final long TENSOR_ALIGNMENT = 16;

    private final MoeConfig config;
    private final DeviceMemory memory;

    public Validator(MoeConfig config, DeviceMemory memory) {
        this.config = config;
        this.memory = memory;
    }

    /**
     * Whether {@link #dispatchInput} checks the expert ids and reads a count given in a buffer
     * (else the device must check them): the config's {@link InputCheck}.
     */
    public boolean checksOnHost() {
        return switch (config.inputCheck()) {
            case HOST -> true;
            case DEVICE -> false;
            case AUTO -> !memory.hostReadsSynchronize();
        };
    }

    /**
     * Validates dispatch inputs and returns the rows the token tensors must have: m, or M when m
     * is in a buffer that only the device reads ({@link #checksOnHost()} false).
     */
    public int dispatchInput(DispatchInput in) {
        boolean countOnDevice = in.count() instanceof TokenCount.InBuffer && !checksOnHost();
        int m = countOnDevice ? config.maxTokensPerRank() : tokenCount(in.count());
        int h = config.hidden();
        int k = config.topK();
        matrix("x", in.x(), config.inType(), m, h, "H");
        matrix("indices", in.indices(), DType.INT32, m, k, "K");
        if (config.blockScales()) {
            if (in.xScale() == null) {
                throw new IllegalArgumentException("xScale: missing; " + config.inType().label()
                        + " tokens need float32 block scales [>=m][" + config.inputScalesPerToken() + "]");
            }
            matrix("xScale", in.xScale(), DType.FP32, m, config.inputScalesPerToken(), "ceil(H/128)");
        } else if (in.xScale() != null) {
            throw new IllegalArgumentException("xScale: unexpected; " + config.inType().label()
                    + " tokens carry no block scales");
        }
        if (checksOnHost()) {
            expertIds(in.indices(), m);
        }
        return m;
    }

    /** The exception for a token count outside {@code [0, M]}. */
    public IllegalArgumentException badCount(int m, String when) {
        return new IllegalArgumentException("count: m=" + m + " is outside [0, M=" + config.maxTokensPerRank() + "]"
                + when);
    }

    /** Validates dispatch outputs: {@code expertNumTokens [L]}, {@code expertX [L][NG*M][H]}, scales. */
    public void dispatchOutput(DispatchOutput out) {
        int l = config.expertsPerRank();
        int capacity = config.expertCapacity();
        exact("expertNumTokens", out.expertNumTokens(), DType.INT32, new long[] {l}, "[L]");
        exact("expertX", out.expertX(), config.expertInType(), new long[] {l, capacity, config.hidden()},
                "[L][NG*M][H]");
        if (config.scalesPerToken() > 0) {
            if (out.expertXScale() == null) {
                throw new IllegalArgumentException("expertXScale: missing; " + config.expertInType().label()
                        + " tokens need float32 block scales [L][NG*M][" + config.scalesPerToken() + "]");
            }
            exact("expertXScale", out.expertXScale(), DType.FP32,
                    new long[] {l, capacity, config.scalesPerToken()}, "[L][NG*M][ceil(H/128)]");
        } else if (out.expertXScale() != null) {
            throw new IllegalArgumentException("expertXScale: unexpected; " + config.expertInType().label()
                    + " tokens carry no block scales");
        }
    }

    /** Validates combine's expert outputs {@code expertY [L][NG*M][H]}. */
    public void expertY(Tensor expertY) {
        Objects.requireNonNull(expertY, "expertY");
        exact("expertY", expertY, config.expertOutType(),
                new long[] {config.expertsPerRank(), config.expertCapacity(), config.hidden()}, "[L][NG*M][H]");
    }

    /** Validates combine's {@code weights [>=m][K]} and {@code out [>=m][H]} for the dispatch's m. */
    public void combineOutput(Tensor weights, Tensor out, int m) {
        Objects.requireNonNull(weights, "weights");
        Objects.requireNonNull(out, "out");
        matrix("weights", weights, DType.FP32, m, config.topK(), "K");
        matrix("out", out, config.outType(), m, config.hidden(), "H");
    }

    /** The token count m, read from its buffer where it lives there; must be <= M. */
    public int tokenCount(TokenCount count) {
        int m = switch (count) {
            case TokenCount.Fixed f -> f.value();
            case TokenCount.InBuffer b -> readInt(b);
        };
        if (m < 0 || m > config.maxTokensPerRank()) {
            throw badCount(m, "");
        }
        return m;
    }

    private int readInt(TokenCount.InBuffer b) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(4);
            memory.copyToHost(b.buf(), b.index() * 4, host);
            return host.get(ValueLayout.JAVA_INT, 0);
        }
    }

    private void expertIds(Tensor indices, int m) {
        int k = config.topK();
        int e = config.numExperts();
        if (m == 0) {
            return;
        }
        // checked in an array: a loop over the segment's elements costs the JIT far more
        int[] ids;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(4L * m * k, 4);
            memory.copyToHost(indices.buf(), 0, host);
            ids = host.toArray(ValueLayout.JAVA_INT);
        }
        for (int t = 0; t < m; t++) {
            for (int j = 0; j < k; j++) {
                int id = ids[t * k + j];
                if (id < -1 || id >= e) {
                    throw badExpertId(id, t, j, "");
                }
                for (int i = 0; i < j && id >= 0; i++) {
                    if (ids[t * k + i] == id) {
                        throw repeatedExpertId(id, t, j, "");
                    }
                }
            }
        }
    }

    /** The exception for expert id {@code id} of token {@code token}, slot {@code slot}, named already by an earlier slot. */
    public IllegalArgumentException repeatedExpertId(int id, int token, int slot, String when) {
        return new IllegalArgumentException("indices: expert id " + id + " of token " + token + ", slot " + slot
                + " repeats an expert the token names in an earlier slot (each token names an expert at most once)"
                + when);
    }

    /** The exception for expert id {@code id} of token {@code token}, slot {@code slot}. */
    public IllegalArgumentException badExpertId(int id, int token, int slot, String when) {
        return new IllegalArgumentException("indices: expert id " + id + " of token " + token + ", slot " + slot
                + " is outside [-1, E=" + config.numExperts() + ")" + when);
    }

    /** A 2-d tensor with at least {@code minRows} rows of exactly {@code cols} columns. */
    private static void matrix(String name, Tensor t, DType dtype, int minRows, int cols, String colName) {
        Objects.requireNonNull(t, name);
        dtype(name, t, dtype);
        aligned(name, t);
        if (t.rank() != 2) {
            throw new IllegalArgumentException(name + ": expected 2 dimensions [>=m][" + colName + "], got shape "
                    + Arrays.toString(t.shape()));
        }
        if (t.dim(1) != cols) {
            throw new IllegalArgumentException(name + ": dimension 1 must be " + colName + "=" + cols + ", got shape "
                    + Arrays.toString(t.shape()));
        }
        if (t.dim(0) < minRows) {
            throw new IllegalArgumentException(name + ": has " + t.dim(0) + " rows, fewer than the " + minRows
                    + " the round needs (m, or M when m is in a buffer only the device reads)");
        }
    }

    private static void exact(String name, Tensor t, DType dtype, long[] shape, String expected) {
        Objects.requireNonNull(t, name);
        dtype(name, t, dtype);
        aligned(name, t);
        if (!Arrays.equals(t.shape(), shape)) {
            throw new IllegalArgumentException(name + ": expected shape " + expected + " = " + Arrays.toString(shape)
                    + ", got " + Arrays.toString(t.shape()));
        }
    }

    private static void dtype(String name, Tensor t, DType dtype) {
        if (t.dtype() != dtype) {
            throw new IllegalArgumentException(name + ": expected dtype " + dtype.label() + ", got "
                    + t.dtype().label());
        }
    }

    private static void aligned(String name, Tensor t) {
        if (t.buf().address() % TENSOR_ALIGNMENT != 0) {
            throw new IllegalArgumentException(name + ": buffer address " + t.buf().address() + " is not a multiple of "
                    + TENSOR_ALIGNMENT + " (the kernels move rows in 16-byte pieces; allocations are aligned, a"
                    + " slice must start at a multiple of 16 bytes)");
        }
    }
}
