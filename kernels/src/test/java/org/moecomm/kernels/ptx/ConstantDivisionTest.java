package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.testkernels.ArithmeticKernels;

/**
 * Division by a divisor the compiler knows ({@link ConstantDivision}): each plan's steps give the
 * JVM's quotient and remainder for every dividend tried, and the compiled kernels divide by
 * constants without PTX's {@code div} and {@code rem} (the GPU check runs the same kernels on the
 * device against the JVM: {@code CompiledKernelsGpuTest}).
 */
class ConstantDivisionTest {
    private static final int[] INT_DIVIDENDS = IntStream.concat(IntStream.of(0, 1, -1, 2, -2, 3, -3, 7, -7,
            Integer.MIN_VALUE, Integer.MIN_VALUE + 1, Integer.MAX_VALUE, Integer.MAX_VALUE - 1, 1 << 30, -(1 << 30),
            1023, 1024, 1025, -1023, -1024, -1025), new SplittableRandom(5).ints(4000)).toArray();
    private static final long[] LONG_DIVIDENDS = LongStream.concat(LongStream.of(0, 1, -1, 2, -2, 3, -3,
            Long.MIN_VALUE, Long.MIN_VALUE + 1, Long.MAX_VALUE, Long.MAX_VALUE - 1, 1L << 62, -(1L << 62),
            Integer.MIN_VALUE, Integer.MAX_VALUE), new SplittableRandom(6).longs(4000)).toArray();

    @TempDir
    Path tmp;

    @Test
    void everyIntPlanDividesAsTheJvm() {
        int[] divisors = IntStream.concat(IntStream.concat(IntStream.rangeClosed(-3000, 3000),
                IntStream.rangeClosed(1, 30).flatMap(k -> IntStream.of(1 << k, -(1 << k), (1 << k) + 1, (1 << k) - 1))),
                IntStream.concat(IntStream.of(Integer.MAX_VALUE, -Integer.MAX_VALUE, 7440, 1_000_000_007, 641, 6700417),
                        new SplittableRandom(7).ints(2000))).toArray();
        for (int d : divisors) {
            ConstantDivision plan = ConstantDivision.of(d, false);
            if (d == 0 || d == Integer.MIN_VALUE) {
                assertNull(plan, "divisor " + d + " keeps the generic division");
                continue;
            }
            assertNotNull(plan, "divisor " + d);
            for (int n : INT_DIVIDENDS) {
                assertEquals(n / d, plan.quotient(n), n + " / " + d + " by " + plan);
                assertEquals(n % d, plan.remainder(n), n + " % " + d + " by " + plan);
            }
        }
    }

    @Test
    void everyLongPlanDividesAsTheJvm() {
        for (int k = 0; k < 63; k++) {
            for (long d : new long[] {1L << k, -(1L << k)}) {
                ConstantDivision plan = ConstantDivision.of(d, true);
                assertNotNull(plan, "divisor " + d);
                for (long n : LONG_DIVIDENDS) {
                    assertEquals(n / d, plan.quotient(n), n + " / " + d + " by " + plan);
                    assertEquals(n % d, plan.remainder(n), n + " % " + d + " by " + plan);
                }
            }
        }
        assertNull(ConstantDivision.of(3, true), "a long divisor other than a power of two keeps the generic division");
        assertNull(ConstantDivision.of(Long.MIN_VALUE, true));
        assertNull(ConstantDivision.of(0, true));
    }

    @Test
    void kernelsDivideByConstantsWithoutDiv() throws Exception {
        PtxKernel k = PtxCompiler.hopper().compile(new Kernel(ArithmeticKernels.class, "constantDivisions"));
        // of its 19 int and 5 long divisors only the int MIN_VALUE and the long 3 keep div and rem
        for (String type : new String[] {"s32", "s64"}) {
            assertEquals(1, count(k.ptx(), "div." + type), () -> k.ptx());
            assertEquals(1, count(k.ptx(), "rem." + type), () -> k.ptx());
        }
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), r::output);
    }

    private static int count(String ptx, String instruction) {
        Matcher m = Pattern.compile("\\s" + Pattern.quote(instruction) + "\\s").matcher(ptx);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }
}
