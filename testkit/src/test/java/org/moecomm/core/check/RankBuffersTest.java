package org.moecomm.core.check;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.moecomm.core.DType;
import org.moecomm.core.DeviceMemory;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.testing.Harness;

/**
 * {@link RankBuffers#runExperts} (an expert's rows in bulk) gives, byte for byte, what
 * {@link Workload#fakeExpert} gives row by row (the function the reference check applies), for
 * every pair of expert input and output dtypes, and leaves rows beyond the counts alone.
 */
@Timeout(120)
class RankBuffersTest {
    private static final DType BF16 = DType.BF16;
    private static final DType FP16 = DType.FP16;
    private static final DType FP32 = DType.FP32;
    private static final DType FP8 = DType.FP8_E4M3;

    private static MoeConfig config(DType in, DType expertIn, DType expertOut, int hidden) {
        return Harness.config().worldSize(2).numExperts(8).topK(4).hidden(hidden).maxTokensPerRank(16).inType(in)
                .expertInType(expertIn).expertOutType(expertOut).outType(BF16).build();
    }

    static Stream<Arguments> dtypes() {
        List<Arguments> cases = new ArrayList<>();
        for (DType in : new DType[] {FP8, BF16, FP16}) {
            for (DType out : new DType[] {BF16, FP16, FP32}) {
                // 272: the last scale block of an fp8 row holds 16 values
                cases.add(Arguments.of(in + " -> " + out, config(in, in, out, 272)));
            }
        }
        // dispatch quantising to fp8-e4m3 with the block scales it computes (deepseek-v3-bf16-to-fp8)
        for (DType in : new DType[] {BF16, FP16}) {
            for (DType out : new DType[] {BF16, FP32}) {
                cases.add(Arguments.of(in + " quantised to fp8 -> " + out, config(in, FP8, out, 384)));
            }
        }
        return cases.stream();
    }

    /**
     * Two rounds (few tokens, then all, so that the host buffers grow between calls). Each
     * dispatches, then overwrites the dispatched rows with random bytes (every bit pattern: NaN,
     * infinities, subnormals) and the scales with random floats, plays the experts and compares
     * each output row with {@link Workload#fakeExpert} of the row read back.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("dtypes")
    void bulkExpertsEqualThePerRowFakeExpert(String name, MoeConfig c) {
        int[] tokens = {3, 16};
        List<Integer> rowsChecked = Harness.onAllRanks(c, (h, b) -> {
            int checked = 0;
            for (int round = 0; round < tokens.length; round++) {
                Workload w = Workload.generate(c, 40 + round, Workload.Options.defaults().tokens(tokens[round]));
                b.poisonOutputs();
                h.dispatch(b.upload(w.rank(h.rank()), false), b.dispatchOutput());
                randomiseRows(h, b, new SplittableRandom(1000L * round + h.rank()));
                b.runExperts();
                checked += compare(h, b);
                h.combine(b.combineInput(), b.out());
            }
            return checked;
        });
        assertTrue(rowsChecked.stream().mapToInt(Integer::intValue).sum() > 16 * 4, "rows checked: " + rowsChecked);
    }

    /** {@link RankBuffers#deviceBytes} is the sum of the tensors a rank's buffers allocate, for every dtype pair. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("dtypes")
    void deviceBytesAreTheAllocatedTensors(String name, MoeConfig c) {
        List<Long> allocated = Harness.onAllRanks(c, (h, b) -> {
            DispatchOutput d = b.dispatchOutput();
            long sum = 16 + b.x().byteSize() + b.indices().byteSize() + b.weights().byteSize()
                    + d.expertNumTokens().byteSize() + d.expertX().byteSize() + b.expertY().byteSize()
                    + b.out().byteSize();
            sum += b.xScale() != null ? b.xScale().byteSize() : 0;
            sum += d.expertXScale() != null ? d.expertXScale().byteSize() : 0;
            return sum;
        });
        for (long a : allocated) {
            assertEquals(a, RankBuffers.deviceBytes(c), name);
        }
    }

    private static int[] counts(MoeAllToAll h, DispatchOutput d) {
        return d.expertNumTokens().toInts(h.memory());
    }

    /** Random bytes in the dispatched rows, random floats (no NaN) in their scales. */
    private static void randomiseRows(MoeAllToAll h, RankBuffers b, SplittableRandom rnd) {
        MoeConfig c = h.config();
        DeviceMemory memory = h.memory();
        DispatchOutput d = b.dispatchOutput();
        int xb = c.hidden() * c.expertInType().bytes();
        int s = c.scalesPerToken();
        long cap = c.expertCapacity();
        int[] n = counts(h, d);
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < n.length; i++) {
                if (n[i] == 0) {
                    continue;
                }
                MemorySegment rows = arena.allocate((long) n[i] * xb);
                for (long j = 0; j < rows.byteSize(); j++) {
                    rows.set(ValueLayout.JAVA_BYTE, j, (byte) rnd.nextInt(256));
                }
                memory.copyFromHost(d.expertX().buf(), i * cap * xb, rows);
                if (s > 0) {
                    MemorySegment scales = arena.allocate(4L * n[i] * s, 4);
                    for (int j = 0; j < n[i] * s; j++) {
                        float f = Float.intBitsToFloat(rnd.nextInt());
                        scales.setAtIndex(ValueLayout.JAVA_FLOAT, j, Float.isNaN(f) ? 1f : f);
                    }
                    memory.copyFromHost(d.expertXScale().buf(), i * cap * s * 4, scales);
                }
            }
        }
    }

    /** Every expert's output rows against the per-row fake expert; the rows beyond the count still poison. */
    private static int compare(MoeAllToAll h, RankBuffers b) {
        MoeConfig c = h.config();
        DispatchOutput d = b.dispatchOutput();
        int xb = c.hidden() * c.expertInType().bytes();
        int yb = c.hidden() * c.expertOutType().bytes();
        int s = c.scalesPerToken();
        int cap = c.expertCapacity();
        int[] n = counts(h, d);
        byte[] x = d.expertX().toBytes(h.memory());
        float[] scales = s > 0 ? floats(d.expertXScale().toBytes(h.memory())) : new float[0];
        byte[] y = b.expertY().toBytes(h.memory());
        int checked = 0;
        for (int i = 0; i < n.length; i++) {
            int expert = h.rank() * c.expertsPerRank() + i;
            for (int r = 0; r < cap; r++) {
                int row = i * cap + r;
                byte[] got = Arrays.copyOfRange(y, row * yb, (row + 1) * yb);
                if (r >= n[i]) {
                    byte[] poison = new byte[yb];
                    Arrays.fill(poison, RankBuffers.POISON);
                    assertArrayEquals(poison, got, "expert " + expert + " row " + r + " beyond the count " + n[i]);
                    continue;
                }
                byte[] want = Workload.fakeExpert(c, expert, Arrays.copyOfRange(x, row * xb, (row + 1) * xb),
                        Arrays.copyOfRange(scales, row * s, (row + 1) * s));
                assertEquals(yb, want.length);
                assertArrayEquals(want, got, "expert " + expert + " row " + r);
                checked++;
            }
        }
        return checked;
    }

    /** Little-endian float32 elements, bit for bit. */
    private static float[] floats(byte[] bytes) {
        float[] f = new float[bytes.length / 4];
        MemorySegment.copy(MemorySegment.ofArray(bytes), ValueLayout.JAVA_FLOAT_UNALIGNED
                .withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0, f, 0, f.length);
        return f;
    }
}
