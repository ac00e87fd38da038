package org.moecomm.core.check;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.moecomm.core.CombineInput;
import org.moecomm.core.DType;
import org.moecomm.core.DeviceMemory;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Tensor;
import org.moecomm.core.TokenCount;
import org.moecomm.core.reference.RankInputs;
import org.moecomm.kernels.api.Buf;

/**
 * One rank's device tensors for rounds on a handle, allocated once at full size through the
 * handle's memory: inputs {@code x [M][H]}, {@code xScale [M][S]}, {@code indices [M][K]},
 * {@code weights [M][K]}, a count buffer; dispatch outputs; {@code expertY}; {@code out [M][H]}.
 * Used by tests, the demo and the benchmarks.
 */
public final class RankBuffers {
    /** Byte every output is filled with before a checked round: NaN in every float format, -1 as int32. */
    public static final byte POISON = (byte) 0xFF;
    /** Byte input rows beyond m are filled with: ids 0x7F7F7F7F are out of range, so reading them fails loudly. */
    public static final byte INPUT_PADDING = (byte) 0x7F;
    /** Bytes of the count buffer (the token count in device memory). */
    private static final long COUNT_BYTES = 16;

    private final MoeAllToAll handle;
    private final MoeConfig config;
    private final DeviceMemory memory;
    private final Tensor x;
    private final Tensor xScale;
    private final Tensor indices;
    private final Tensor weights;
    private final Buf countBuf;
    private final DispatchOutput dispatchOut;
    private final Tensor expertY;
    private final Tensor out;
    /** Host copy of the dispatch counts, for {@link #runExperts}. */
    private final MemorySegment counts;
    private final ExpertHostBuffers host = new ExpertHostBuffers();

    private RankBuffers(MoeAllToAll handle) {
        this.handle = handle;
        this.config = handle.config();
        this.memory = handle.memory();
        x = allocate(Shape.X);
        xScale = allocate(Shape.X_SCALE);
        indices = allocate(Shape.INDICES);
        weights = allocate(Shape.WEIGHTS);
        countBuf = memory.allocate(COUNT_BYTES);
        dispatchOut = new DispatchOutput(allocate(Shape.EXPERT_NUM_TOKENS), allocate(Shape.EXPERT_X),
                allocate(Shape.EXPERT_X_SCALE));
        expertY = allocate(Shape.EXPERT_Y);
        out = allocate(Shape.OUT);
        counts = Arena.ofAuto().allocate(4L * config.expertsPerRank(), 4);
    }

    /** The device tensors, each with its dtype and shape for a configuration: one description for allocating and sizing. */
    private enum Shape {
        X, X_SCALE, INDICES, WEIGHTS, EXPERT_NUM_TOKENS, EXPERT_X, EXPERT_X_SCALE, EXPERT_Y, OUT;

        DType dtype(MoeConfig c) {
            return switch (this) {
                case X -> c.inType();
                case X_SCALE, WEIGHTS, EXPERT_X_SCALE -> DType.FP32;
                case INDICES, EXPERT_NUM_TOKENS -> DType.INT32;
                case EXPERT_X -> c.expertInType();
                case EXPERT_Y -> c.expertOutType();
                case OUT -> c.outType();
            };
        }

        long[] dims(MoeConfig c) {
            long m = c.maxTokensPerRank();
            long l = c.expertsPerRank();
            long cap = c.expertCapacity();
            return switch (this) {
                case X, OUT -> new long[] {m, c.hidden()};
                case X_SCALE -> new long[] {m, c.inputScalesPerToken()};
                case INDICES, WEIGHTS -> new long[] {m, c.topK()};
                case EXPERT_NUM_TOKENS -> new long[] {l};
                case EXPERT_X, EXPERT_Y -> new long[] {l, cap, c.hidden()};
                case EXPERT_X_SCALE -> new long[] {l, cap, c.scalesPerToken()};
            };
        }

        /** Whether the configuration has this tensor. */
        boolean present(MoeConfig c) {
            return switch (this) {
                case X_SCALE -> c.blockScales();
                case EXPERT_X_SCALE -> c.scalesPerToken() > 0;
                default -> true;
            };
        }

        long bytes(MoeConfig c) {
            long n = dtype(c).bytes();
            for (long d : dims(c)) {
                n *= d;
            }
            return n;
        }
    }

    /** The tensor {@code s} of this configuration, or null where the configuration has none. */
    private Tensor allocate(Shape s) {
        return s.present(config) ? memory.allocate(s.dtype(config), s.dims(config)) : null;
    }

    /**
     * Device bytes one rank's buffers take for {@code config} (before the allocator's alignment):
     * dominated by the expert buffers, sized for the contract's capacity ({@code NG*M} rows per
     * local expert), e.g. 22.5 GB per rank for deepseek-v3 at W = 4 and M = 4096.
     */
    public static long deviceBytes(MoeConfig config) {
        long total = COUNT_BYTES;
        for (Shape s : Shape.values()) {
            if (s.present(config)) {
                total += s.bytes(config);
            }
        }
        return total;
    }

    public static RankBuffers allocate(MoeAllToAll handle) {
        return new RankBuffers(handle);
    }

    public MoeAllToAll handle() {
        return handle;
    }

    /**
     * Copies a rank's inputs into the input tensors (rows beyond m padded with
     * {@link #INPUT_PADDING}) and returns the dispatch input; the count is a Java int or, with
     * {@code countInBuffer}, element 1 of a small device buffer.
     */
    public DispatchInput upload(RankInputs in, boolean countInBuffer) {
        memory.fill(x.buf(), INPUT_PADDING);
        memory.fill(indices.buf(), INPUT_PADDING);
        memory.fill(weights.buf(), INPUT_PADDING);
        try (Arena arena = Arena.ofConfined()) {
            copy(arena, MemorySegment.ofArray(in.x()), x.buf());
            copy(arena, MemorySegment.ofArray(in.indices()), indices.buf());
            copy(arena, MemorySegment.ofArray(in.weights()), weights.buf());
            if (xScale != null) {
                memory.fill(xScale.buf(), INPUT_PADDING);
                copy(arena, MemorySegment.ofArray(in.xScale()), xScale.buf());
            }
            TokenCount count;
            if (countInBuffer) {
                MemorySegment c = arena.allocate(16, 4);
                c.setAtIndex(ValueLayout.JAVA_INT, 0, -7);
                c.setAtIndex(ValueLayout.JAVA_INT, 1, in.m());
                c.setAtIndex(ValueLayout.JAVA_INT, 2, -7);
                memory.copyFromHost(countBuf, 0, c);
                count = TokenCount.inBuffer(countBuf, 1);
            } else {
                count = TokenCount.of(in.m());
            }
            return new DispatchInput(x, xScale, indices, count);
        }
    }

    /** Heap arrays are copied through native memory (a GPU backend's copies need native memory). */
    private void copy(Arena arena, MemorySegment heap, Buf dst) {
        if (heap.byteSize() == 0) {
            return;
        }
        MemorySegment n = arena.allocate(heap.byteSize(), 16);
        n.copyFrom(heap);
        memory.copyFromHost(dst, 0, n);
    }

    /** Fills every output (dispatch outputs, expertY, out) with {@link #POISON}. */
    public void poisonOutputs() {
        outputs().values().forEach(t -> memory.fill(t.buf(), POISON));
    }

    /** Every output by name: the dispatch outputs, expertY and out. */
    private Map<String, Tensor> outputs() {
        Map<String, Tensor> outputs = new LinkedHashMap<>();
        outputs.put("expertNumTokens", dispatchOut.expertNumTokens());
        outputs.put("expertX", dispatchOut.expertX());
        if (dispatchOut.expertXScale() != null) {
            outputs.put("expertXScale", dispatchOut.expertXScale());
        }
        outputs.put("expertY", expertY);
        outputs.put("out", out);
        return outputs;
    }

    /** A copy of every output's bytes, by name, for {@link #restoreOutputs}. */
    public Map<String, byte[]> saveOutputs() {
        Map<String, byte[]> saved = new LinkedHashMap<>();
        outputs().forEach((name, t) -> saved.put(name, t.toBytes(memory)));
        return saved;
    }

    /** Writes back what {@link #saveOutputs} copied. */
    public void restoreOutputs(Map<String, byte[]> saved) {
        outputs().forEach((name, t) -> {
            try (Arena arena = Arena.ofConfined()) {
                memory.copyFromHost(t.buf(), 0, arena.allocateFrom(ValueLayout.JAVA_BYTE, saved.get(name)));
            }
        });
    }

    /** The outputs that hold a byte other than {@link #POISON} (after {@link #poisonOutputs}: those written since). */
    public List<String> writtenOutputs() {
        List<String> written = new ArrayList<>();
        outputs().forEach((name, t) -> {
            if (!ResultCheck.allPoison(t.toBytes(memory))) {
                written.add(name);
            }
        });
        return written;
    }

    /**
     * Plays the experts: applies {@link Workload#fakeExpert} to every dispatched row of this rank
     * (read back from the dispatch outputs) and writes the results, in the same row order, into
     * {@code expertY}. Rows beyond each expert's count are left as they are; an expert whose
     * count is out of range (a broken dispatch) is skipped.
     *
     * <p>Per expert one copy of its rows (and scales) to the host and one copy of its outputs
     * back; the rows are computed one by one ({@link Workload#fakeExpertRow}) in host buffers that
     * this object keeps and reuses from call to call (so one rank's thread calls it at a time).
     */
    public void runExperts() {
        MoeConfig c = config;
        int l = c.expertsPerRank();
        int h = c.hidden();
        int xb = h * c.expertInType().bytes();
        int yb = h * c.expertOutType().bytes();
        int s = c.scalesPerToken();
        long cap = c.expertCapacity();
        memory.copyToHost(dispatchOut.expertNumTokens().buf(), 0, counts);
        int most = mostRows(counts, l, cap);
        if (most == 0) {
            return;
        }
        host.reserve(most, (int) cap, xb, yb, s);
        for (int i = 0; i < l; i++) {
            int n = counts.getAtIndex(ValueLayout.JAVA_INT, i);
            if (n <= 0 || n > cap) {
                // nothing valid to play; a wrong count is reported by ResultCheck, and the round
                // must still go on so that the other ranks do not wait for this one
                continue;
            }
            memory.copyToHost(dispatchOut.expertX().buf(), i * cap * xb, host.xSegment.asSlice(0, (long) n * xb));
            if (s > 0) {
                memory.copyToHost(dispatchOut.expertXScale().buf(), i * cap * s * 4,
                        host.scalesSegment.asSlice(0, 4L * n * s));
            }
            host.play(c, handle.rank() * l + i, n);
            memory.copyFromHost(expertY.buf(), i * cap * yb, host.ySegment.asSlice(0, (long) n * yb));
        }
    }

    /** The most rows of one of the {@code experts} counts in {@code counts}, of those in range ({@code 1 .. cap}); 0 if none. */
    static int mostRows(MemorySegment counts, int experts, long cap) {
        int most = 0;
        for (int i = 0; i < experts; i++) {
            int n = counts.getAtIndex(ValueLayout.JAVA_INT, i);
            if (n > 0 && n <= cap) {
                most = Math.max(most, n);
            }
        }
        return most;
    }

    /**
     * Host buffers of {@link #runExperts}, grown to the most rows one expert had so far: a native
     * staging segment for the copies (a GPU backend copies from and to native memory) and arrays
     * for the rows, their scales and their outputs.
     */
    private static final class ExpertHostBuffers {
        private int rows;
        private byte[] x;
        private float[] scales;
        private byte[] y;
        private float[] work;
        /** The arrays as segments, which the copies take (a GPU backend stages heap segments itself). */
        private MemorySegment xSegment;
        private MemorySegment scalesSegment;
        private MemorySegment ySegment;

        /** {@link Workload#fakeExpertRow} of {@code expert} on the first {@code n} rows of {@link #x} into {@link #y}. */
        void play(MoeConfig c, int expert, int n) {
            int h = c.hidden();
            int s = c.scalesPerToken();
            for (int r = 0; r < n; r++) {
                Workload.fakeExpertRow(c, expert, x, r * h, scales, r * s, work, y, r * h);
            }
        }

        /** Room for {@code n} rows at least (twice the rows so far, up to {@code cap}, where that is more). */
        void reserve(int n, int cap, int xb, int yb, int s) {
            if (n <= rows) {
                return;
            }
            rows = Math.max(n, Math.min(2 * rows, cap));
            x = new byte[rows * xb];
            scales = new float[rows * s];
            y = new byte[rows * yb];
            work = new float[MoeConfig.SCALE_BLOCK];
            xSegment = MemorySegment.ofArray(x);
            scalesSegment = MemorySegment.ofArray(scales);
            ySegment = MemorySegment.ofArray(y);
        }
    }

    public Tensor x() {
        return x;
    }

    /** Null without block scales. */
    public Tensor xScale() {
        return xScale;
    }

    public Tensor indices() {
        return indices;
    }

    public Tensor weights() {
        return weights;
    }

    public DispatchOutput dispatchOutput() {
        return dispatchOut;
    }

    public Tensor expertY() {
        return expertY;
    }

    public Tensor out() {
        return out;
    }

    public CombineInput combineInput() {
        return new CombineInput(expertY, weights);
    }
}
