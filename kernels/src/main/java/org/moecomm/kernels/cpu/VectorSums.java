package org.moecomm.kernels.cpu;

import java.nio.ByteOrder;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import org.moecomm.kernels.api.Buf;

/**
 * {@link RowReduction}'s weighted sum of bf16 rows into a bf16 output, {@value #LANES} elements at
 * a time with the JDK's Vector API (the incubating module {@code jdk.incubator.vector}). HotSpot
 * does not vectorise the scalar loop: the widening of a bf16, {@code Float.intBitsToFloat} of a
 * shifted short, keeps its loops scalar (docs/benchmarks.md, "One thread per block on the JVM").
 * Every lane does what the scalar code does to its element: the sum from 0, {@code acc + w * v}
 * for each routed pair in k order (a multiply, then an add, each rounded), and the bf16 rounding
 * of {@code Numerics.floatToBf16} (to nearest even, every NaN to {@code 0x7fff}); so the bits are
 * the same. Only called where the module is in the boot layer ({@link RowReduction}'s check): this
 * class names the module's types, so it cannot even be linked without it.
 */
final class VectorSums {
    private static final int LANES = 16;
    private static final VectorSpecies<Short> SHORTS = ShortVector.SPECIES_256;
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_512;
    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_512;

    private VectorSums() {
    }

    /**
     * Elements {@code [first, end)} of a token's bf16 sum over its {@code pairs} routed rows (bf16
     * element offsets {@code rows[p]}, weights {@code w[p]}) into bf16 {@code out} from element
     * {@code outFirst + first} on, {@value #LANES} at a time; returns the first element not done
     * (the caller sums the rest).
     */
    static int bf16(Buf y, long[] rows, float[] w, int pairs, Buf out, long outFirst, int first, int end) {
        int e = first;
        for (; e + LANES <= end; e += LANES) {
            FloatVector acc = FloatVector.zero(FLOATS);
            for (int p = 0; p < pairs; p++) {
                ShortVector s = ShortVector.fromMemorySegment(SHORTS, y.segment(), 2 * (rows[p] + e),
                        ByteOrder.LITTLE_ENDIAN);
                FloatVector v = ((IntVector) s.convertShape(VectorOperators.S2I, INTS, 0))
                        .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
                acc = acc.add(v.mul(w[p]));
            }
            IntVector bits = acc.reinterpretAsInts();
            IntVector rounded = bits.add(0x7fff).add(bits.lanewise(VectorOperators.LSHR, 16).and(1))
                    .lanewise(VectorOperators.LSHR, 16);
            VectorMask<Integer> nan = bits.and(0x7fffffff).compare(VectorOperators.GT, 0x7f800000);
            ((ShortVector) rounded.blend(0x7fff, nan).convertShape(VectorOperators.I2S, SHORTS, 0))
                    .intoMemorySegment(out.segment(), 2 * (outFirst + e), ByteOrder.LITTLE_ENDIAN);
        }
        return e;
    }
}
