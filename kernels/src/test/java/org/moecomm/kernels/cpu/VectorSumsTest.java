package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Numerics;

/**
 * The vector sums ({@link VectorSums}, which {@link RowReduction} uses for bf16 rows into a bf16
 * output where the JVM has the Vector API) give the bits of the scalar definition: per element a
 * float sum from 0, {@code acc + w * v} for each routed pair in k order, rounded to bf16 as
 * {@link Numerics#floatToBf16} rounds. Rows of random bits (NaNs, infinities, subnormals and
 * signed zeros among them) and of ordinary values, weights with the same mix, skipped pairs,
 * hidden sizes that leave a scalar tail, and quads that start past 0; the scalar sums of the same
 * elements (runs too short for a vector) are checked beside them.
 */
class VectorSumsTest {
    private static final byte POISON = (byte) 0xFF;
    private static final short POISON_BF16 = (short) 0xFFFF;
    private static final int BF16 = 0;

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        arena.close();
    }

    @Test
    void theTestJvmHasTheVectorApi() {
        assertTrue(RowReduction.VECTOR_SUMS, "the build's test JVMs run with --add-modules jdk.incubator.vector"
                + " (the root pom's argLine), so the vector sums are what the CPU runner's tests run");
    }

    @Test
    void vectorSumsMatchTheScalarDefinitionBitForBit() {
        SplittableRandom random = new SplittableRandom(42);
        int[] hiddens = {16, 20, 64, 2048, 2052, 7168};
        for (int hidden : hiddens) {
            for (boolean randomBits : new boolean[] {true, false}) {
                check(random, hidden, 8, 6, randomBits);
            }
        }
    }

    private void check(SplittableRandom random, int hidden, int rows, int topK, boolean randomBits) {
        int tokens = 3;
        Buf y = Buf.allocate(arena, 2L * rows * hidden);
        for (long i = 0; i < (long) rows * hidden; i++) {
            y.setShort(i, randomBits ? (short) random.nextInt() : Numerics.floatToBf16((float) random.nextGaussian()));
        }
        Buf locations = Buf.allocate(arena, 4L * tokens * topK);
        Buf weights = Buf.allocate(arena, 4L * tokens * topK);
        for (int i = 0; i < tokens * topK; i++) {
            locations.setInt(i, random.nextInt(5) == 0 ? -1 : random.nextInt(rows));
            weights.setFloat(i, randomBits && random.nextInt(4) == 0 ? Float.intBitsToFloat(random.nextInt())
                    : random.nextFloat());
        }
        Buf vector = Buf.allocate(arena, 2L * tokens * hidden);
        Buf scalar = Buf.allocate(arena, 2L * tokens * hidden);
        vector.segment().fill(POISON); // a NaN in bf16: an element never written shows
        scalar.segment().fill(POISON);
        int quads = hidden / 4;
        for (int t = 0; t < tokens; t++) {
            int firstQuad = t == 2 ? Math.min(3, quads - 1) : 0; // a run that starts past the first quad
            // every quad from firstQuad on in one run: the vector sums, then the scalar tail
            RowReduction.reduce(t, firstQuad, 1, 1, y, locations, weights, vector, hidden, topK, BF16, BF16);
            // runs of one quad a step of two apart: too short for a vector, so the scalar sums alone
            RowReduction.reduce(t, firstQuad, 2, 1, y, locations, weights, scalar, hidden, topK, BF16, BF16);
            RowReduction.reduce(t, firstQuad + 1, 2, 1, y, locations, weights, scalar, hidden, topK, BF16, BF16);
            for (int e = 0; e < 4 * firstQuad; e++) {
                for (Buf out : new Buf[] {vector, scalar}) {
                    assertEquals(POISON_BF16, out.getShort((long) t * hidden + e), "token " + t + " element " + e
                            + " lies before the run and stays poisoned");
                }
            }
            for (int e = 4 * firstQuad; e < hidden; e++) {
                float acc = 0f;
                for (int k = 0; k < topK; k++) {
                    int location = locations.getInt((long) t * topK + k);
                    if (location >= 0) {
                        acc = acc + weights.getFloat((long) t * topK + k)
                                * Numerics.bf16ToFloat(y.getShort((long) location * hidden + e));
                    }
                }
                short want = Numerics.floatToBf16(acc);
                for (Buf out : new Buf[] {vector, scalar}) {
                    short got = out.getShort((long) t * hidden + e);
                    if (want != got) {
                        assertEquals(want, got, (out == vector ? "vector" : "scalar") + " sums, hidden " + hidden
                                + (randomBits ? ", random bits" : "") + ", token " + t + ", element " + e);
                    }
                }
            }
        }
    }
}
