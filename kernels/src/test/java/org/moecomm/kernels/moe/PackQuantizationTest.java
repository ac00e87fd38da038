package org.moecomm.kernels.moe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.Numerics;
import org.moecomm.kernels.cpu.CpuKernelRunner;

/**
 * pack's quantising copy ({@link MoeKernels#finishShare}, run through {@link QuantizingPack}) on the
 * CPU runner against the rule written here as a plain loop over each block of 128 values: the
 * largest magnitude (NaN ignored), scale = amax / 448 (1 for zeros), code = the fp8 conversion of
 * value / scale (0x7f for NaN). Block sizes that are not multiples of the 8 lanes of a block
 * (1, 7, 100), several blocks per destination, several chunks; outputs poisoned first.
 */
public class PackQuantizationTest {
    private static final Kernel PACK = new Kernel(QuantizingPack.class, "pack");
    private static final byte POISON = (byte) 0xff;

    private final Arena arena = Arena.ofShared();
    private final CpuKernelRunner runner = new CpuKernelRunner();

    @AfterEach
    void close() {
        arena.close();
    }

    /**
     * Random 16-bit tokens (fp16 or bf16), block by block: any bit pattern, values in [-1, 1],
     * zeros of both signs, a value far beyond fp8's range among values in [-1, 1].
     */
    public static short[] edgeTokens(int values, boolean fp16, SplittableRandom r) {
        short[] v = new short[values];
        for (int first = 0; first < values; first += MoeKernels.SCALE_BLOCK) {
            int kind = r.nextInt(4);
            int huge = first + r.nextInt(MoeKernels.SCALE_BLOCK);
            for (int i = first; i < first + MoeKernels.SCALE_BLOCK; i++) {
                float value = (float) (r.nextDouble() * 2 - 1);
                short ordinary = fp16 ? Numerics.floatToFp16(value) : Numerics.floatToBf16(value);
                v[i] = switch (kind) {
                    case 0 -> (short) r.nextInt();
                    case 1 -> ordinary;
                    case 2 -> (short) (r.nextBoolean() ? 0x8000 : 0);
                    default -> i != huge ? ordinary : fp16 ? Numerics.floatToFp16(60000f) : Numerics.floatToBf16(6e35f);
                };
            }
        }
        return v;
    }

    /** The rule as a plain loop: fp8 codes {@code [n][H]} and scales {@code [n][H/128]} of 16-bit tokens. */
    static MoeKernelsTest.Tokens quantized(short[] values, boolean fp16, int[] indices, int count) {
        byte[] codes = new byte[values.length];
        float[] scales = new float[values.length / MoeKernels.SCALE_BLOCK];
        for (int b = 0; b < scales.length; b++) {
            float[] f = new float[MoeKernels.SCALE_BLOCK];
            float amax = 0f;
            for (int i = 0; i < f.length; i++) {
                short s = values[b * f.length + i];
                f[i] = fp16 ? Numerics.fp16ToFloat(s) : Numerics.bf16ToFloat(s);
                if (!Float.isNaN(f[i])) {
                    amax = Math.max(amax, Math.abs(f[i]));
                }
            }
            float scale = amax == 0f ? 1f : amax / 448f;
            scales[b] = scale;
            for (int i = 0; i < f.length; i++) {
                float q = f[i] / scale;
                codes[b * f.length + i] = Float.isNaN(q) ? (byte) 0x7f : Numerics.floatToFp8e4m3(q);
            }
        }
        return new MoeKernelsTest.Tokens(codes, scales, indices, count);
    }

    private Buf bytes(MemorySegment s) {
        Buf b = Buf.allocate(arena, Math.max(16, s.byteSize()));
        MemorySegment.copy(s, 0, b.segment(), 0, s.byteSize());
        return b;
    }

    private Buf poisoned(long bytes) {
        Buf b = Buf.allocate(arena, bytes);
        b.segment().fill(POISON);
        return b;
    }

    @ParameterizedTest(name = "W={0} G={1} L={2} K={3} H={4} M={5} m={6} threads={7} blocksY={8} fp16={9}")
    @CsvSource({
            "4, 1, 3, 4, 128, 40, 40, 256, 1, false",
            "4, 2, 2, 3, 384, 30, 29, 100, 2, true", // three scales (padded to four), a partial warp
            "2, 1, 4, 2, 256, 20, 20, 7, 1, false", // fewer threads than the 8 lanes of a block
            "2, 1, 4, 2, 128, 12, 11, 1, 3, true", // one thread, three blocks per destination
            "4, 1, 8, 8, 7168, 6, 6, 256, 2, false", // DeepSeek-V3's hidden size
            "2, 1, 4, 4, 128, 300, 300, 256, 3, false", // two chunks of tokens
            "2, 1, 4, 2, 128, 16, 0, 256, 1, true", // m = 0
    })
    void quantisingPackMatchesTheRule(int w, int g, int l, int k, int h, int m, int count, int threads, int blocksY,
                                      boolean fp16) {
        MoeShape c = new MoeShape(w, g, l, k, h, m, true);
        SplittableRandom r = new SplittableRandom(h * 31L + m);
        short[] values = edgeTokens(m * h, fp16, r);
        MoeKernelsTest.Tokens routes = MoeKernelsTest.randomTokens(c, count, r);
        MoeKernelsTest.Tokens tk = quantized(values, fp16, routes.indices(), count);
        Buf x = bytes(MemorySegment.ofArray(values));
        Buf indices = bytes(MemorySegment.ofArray(routes.indices()));
        Integer[] location = MoeKernelsTest.referencePairLocation(c, tk);
        for (int member = 0; member < g; member++) {
            Buf send = poisoned((long) c.ng() * c.m() * c.rowBytes());
            Buf sendRows = poisoned(4L * c.ng());
            Buf pairLocation = Buf.allocate(arena, 4L * c.m() * c.k());
            pairLocation.segment().fill(MoeKernelsTest.LOCATION_POISON);
            Buf report = Buf.allocate(arena, 4L * MoeKernels.REPORT_INTS);
            runner.launch(PACK, Grid.of(c.w(), blocksY, threads), x, indices,
                    bytes(MemorySegment.ofArray(new int[] {count})), send, sendRows, pairLocation, report, h, k, l, g,
                    member, c.rowBytes(), m, c.maxPairs(), fp16 ? MoeKernels.DTYPE_FP16 : MoeKernels.DTYPE_BF16);
            for (int d = member; d < c.w(); d += g) {
                List<int[]> rows = MoeKernelsTest.referenceRows(c, tk, d);
                long regionByte = (long) (d / g) * c.m() * c.rowBytes();
                assertEquals(rows.size(), sendRows.getInt(d / g), "rows to destination " + d);
                for (int j = 0; j < rows.size(); j++) {
                    assertArrayEquals(MoeKernelsTest.referenceRowBytes(c, tk, rows.get(j)),
                            send.segment().asSlice(regionByte + (long) j * c.rowBytes(), c.rowBytes())
                                    .toArray(ValueLayout.JAVA_BYTE),
                            "destination " + d + " row " + j + " (token " + rows.get(j)[0] + ")");
                }
                MemorySegment rest = send.segment().asSlice(regionByte + (long) rows.size() * c.rowBytes(),
                        (long) (c.m() - rows.size()) * c.rowBytes());
                assertEquals(-1L, rest.mismatch(MemorySegment.ofArray(new byte[(int) rest.byteSize()]).fill(POISON)),
                        "rows past the count of destination " + d + " stay poisoned");
            }
            for (int i = 0; i < location.length; i++) {
                int expected = location[i] != null ? location[i] : 0x5a5a5a5a; // null: pack leaves it alone
                assertEquals(expected, pairLocation.getInt(i), "pairLocation[" + i + "]");
            }
            for (int i = 0; i < MoeKernels.REPORT_INTS; i++) {
                assertEquals(0, report.getInt(i), "inputReport[" + i + "]: every id and the count are good");
            }
        }
    }
}
