package org.moecomm.kernels.ptx;

/**
 * How {@link Lowering} divides by a divisor the analysis knows (a literal, a specialised
 * parameter, arithmetic on those): as the JVM does ({@code idiv}, {@code irem}, {@code ldiv},
 * {@code lrem}: the quotient rounded toward zero, the remainder with the dividend's sign), without
 * PTX's {@code div} or {@code rem}. ptxas expands a {@code div.s32} whose divisor sits in a register
 * into its generic sequence (a float reciprocal, about 20 dependent instructions) before it
 * propagates the constant, even a divisor of 1 (Nsight Compute counted 233 such sequences in one
 * 1-token dispatch of specialised kernels, docs/benchmarks.md).
 *
 * <ul>
 *   <li>{@code 1} and {@code -1}: a move or a negation ({@code MIN_VALUE / -1 == MIN_VALUE}, as
 *       {@code neg} wraps); the remainder is 0.</li>
 *   <li>plus or minus a power of two {@code 2^k}: the dividend plus {@code 2^k - 1} where it is
 *       negative, shifted right arithmetically by {@code k} (negated for a negative divisor); the
 *       remainder is the dividend less that sum with its low {@code k} bits cleared.</li>
 *   <li>any other int divisor: the high half of the product with its magic number, corrected and
 *       shifted (H. S. Warren, <i>Hacker's Delight</i>, 2nd ed., section 10-1); the remainder is
 *       the dividend less quotient times divisor.</li>
 * </ul>
 * Returns no plan (the generic division stays) for 0, the width's {@code MIN_VALUE}, and long
 * divisors that are not plus or minus a power of two.
 *
 * <p>{@link #quotient(int)} and {@link #quotient(long)} (and the remainders) run a plan's steps in
 * Java: the tests compare them with the JVM's division, and the GPU check the emitted PTX
 * ({@code CompiledKernelsGpuTest}, {@code ArithmeticKernels}' constant divisions).
 *
 * @param form which of the three above
 * @param divisor the constant
 * @param wide a long division
 * @param shift {@code k} of a power of two, or the magic number's post-shift
 * @param magic the magic number (int plans of {@link Form#MAGIC} only)
 */
record ConstantDivision(Form form, long divisor, boolean wide, int shift, int magic) {
    enum Form {
        /** Divisor 1 or -1. */
        UNIT,
        /** Divisor plus or minus {@code 2^shift}, {@code shift >= 1}. */
        POWER_OF_TWO,
        /** Any other int divisor: {@code magic} and {@code shift}. */
        MAGIC
    }

    /** The plan for dividing by {@code divisor} (an int's value when not {@code wide}), or null. */
    static ConstantDivision of(long divisor, boolean wide) {
        long min = wide ? Long.MIN_VALUE : Integer.MIN_VALUE;
        if (divisor == 0 || divisor == min) {
            return null;
        }
        if (divisor == 1 || divisor == -1) {
            return new ConstantDivision(Form.UNIT, divisor, wide, 0, 0);
        }
        long magnitude = Math.abs(divisor);
        if (Long.bitCount(magnitude) == 1) {
            return new ConstantDivision(Form.POWER_OF_TWO, divisor, wide, Long.numberOfTrailingZeros(magnitude), 0);
        }
        if (wide) {
            return null;
        }
        return magic((int) divisor);
    }

    /** Hacker's Delight's signed magic number of {@code d} ({@code |d| >= 2}, not a power of two). */
    private static ConstantDivision magic(int d) {
        final long two31 = 0x8000_0000L;
        final long mask = 0xFFFF_FFFFL;
        long ad = Math.abs((long) d);
        long t = two31 + (d < 0 ? 1 : 0);
        long anc = t - 1 - t % ad; // |nc|
        int p = 31;
        long q1 = two31 / anc;
        long r1 = two31 - q1 * anc;
        long q2 = two31 / ad;
        long r2 = two31 - q2 * ad;
        long delta;
        do {
            p++;
            q1 = (2 * q1) & mask;
            r1 = (2 * r1) & mask;
            if (r1 >= anc) {
                q1 = (q1 + 1) & mask;
                r1 = (r1 - anc) & mask;
            }
            q2 = (2 * q2) & mask;
            r2 = (2 * r2) & mask;
            if (r2 >= ad) {
                q2 = (q2 + 1) & mask;
                r2 = (r2 - ad) & mask;
            }
            delta = ad - r2;
        } while (q1 < delta || (q1 == delta && r1 == 0));
        int m = (int) (q2 + 1);
        return new ConstantDivision(Form.MAGIC, d, false, p - 32, d < 0 ? -m : m);
    }

    /**
     * Appends the PTX that writes {@code dividend / divisor} (or {@code %} with {@code remainder})
     * to {@code result}.
     */
    void emit(PtxFunction f, String dividend, String result, boolean remainder) {
        String s = wide ? "s64" : "s32";
        String b = wide ? "b64" : "b32";
        int bits = wide ? 64 : 32;
        switch (form) {
            case UNIT -> {
                if (remainder) {
                    f.op("mov." + b + " " + result + ", 0");
                } else if (divisor == 1) {
                    f.op("mov." + b + " " + result + ", " + dividend);
                } else {
                    f.op("neg." + s + " " + result + ", " + dividend);
                }
            }
            case POWER_OF_TWO -> {
                // the dividend rounded toward zero to a multiple of 2^k: plus 2^k - 1 where negative
                String sign = f.tmp(b);
                String biased = f.tmp(b);
                f.op("shr.s" + bits + " " + sign + ", " + dividend + ", " + (bits - 1));
                f.op("shr.u" + bits + " " + sign + ", " + sign + ", " + (bits - shift));
                f.op("add.s" + bits + " " + biased + ", " + dividend + ", " + sign);
                if (remainder) {
                    String multiple = f.tmp(b);
                    f.op("and.b" + bits + " " + multiple + ", " + biased + ", " + (-(1L << shift)));
                    f.op("sub.s" + bits + " " + result + ", " + dividend + ", " + multiple);
                } else if (divisor > 0) {
                    f.op("shr.s" + bits + " " + result + ", " + biased + ", " + shift);
                } else {
                    String q = f.tmp(b);
                    f.op("shr.s" + bits + " " + q + ", " + biased + ", " + shift);
                    f.op("neg.s" + bits + " " + result + ", " + q);
                }
            }
            case MAGIC -> {
                String q = f.tmp("b32");
                String negative = f.tmp("b32");
                f.op("mul.hi.s32 " + q + ", " + dividend + ", " + magic);
                if (divisor > 0 && magic < 0) {
                    f.op("add.s32 " + q + ", " + q + ", " + dividend);
                } else if (divisor < 0 && magic > 0) {
                    f.op("sub.s32 " + q + ", " + q + ", " + dividend);
                }
                f.op("shr.s32 " + q + ", " + q + ", " + shift);
                f.op("shr.u32 " + negative + ", " + q + ", 31");
                if (remainder) {
                    f.op("add.s32 " + q + ", " + q + ", " + negative);
                    String product = f.tmp("b32");
                    f.op("mul.lo.s32 " + product + ", " + q + ", " + divisor);
                    f.op("sub.s32 " + result + ", " + dividend + ", " + product);
                } else {
                    f.op("add.s32 " + result + ", " + q + ", " + negative);
                }
            }
            default -> throw new IllegalStateException(form.toString());
        }
    }

    /**
     * {@code n / divisor} by this int plan's steps. A move, a negation or a power of two computes
     * as the long plan does on the sign-extended dividend (the same value; the emitted PTX does it
     * in 32 bits); a magic number as its PTX does.
     */
    int quotient(int n) {
        if (form != Form.MAGIC) {
            return (int) quotient((long) n);
        }
        int q = (int) (((long) n * magic) >> 32);
        if (divisor > 0 && magic < 0) {
            q += n;
        } else if (divisor < 0 && magic > 0) {
            q -= n;
        }
        q >>= shift;
        return q + (q >>> 31);
    }

    /** {@code n % divisor} by this int plan's steps. */
    int remainder(int n) {
        return form != Form.MAGIC ? (int) remainder((long) n) : n - quotient(n) * (int) divisor;
    }

    /** {@code n / divisor} by this plan's steps, in 64 bits (not for a magic number). */
    long quotient(long n) {
        return switch (form) {
            case UNIT -> divisor == 1 ? n : -n;
            case POWER_OF_TWO -> {
                long q = biased(n) >> shift;
                yield divisor > 0 ? q : -q;
            }
            case MAGIC -> throw new IllegalStateException("an int plan");
        };
    }

    /** {@code n % divisor} by this plan's steps, in 64 bits (not for a magic number). */
    long remainder(long n) {
        return switch (form) {
            case UNIT -> 0;
            case POWER_OF_TWO -> n - (biased(n) & -(1L << shift));
            case MAGIC -> throw new IllegalStateException("an int plan");
        };
    }

    /** {@code n} plus {@code 2^shift - 1} where it is negative: rounds the shift toward zero. */
    private long biased(long n) {
        return n + ((n >> 63) >>> (64 - shift));
    }
}
