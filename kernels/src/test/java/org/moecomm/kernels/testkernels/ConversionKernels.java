package org.moecomm.kernels.testkernels;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;
import org.moecomm.kernels.api.Numerics;

/**
 * Compiler test kernels: the narrow float formats of {@link Numerics} in both directions
 * (bf16, fp16, fp8-e4m3). Results are bit-identical on the CPU runner and the GPU for every
 * non-NaN input (checked exhaustively over all 2^32 floats on an H200). For NaN inputs both give a
 * NaN of the format but not always the same bits: compare NaN outputs as "any NaN" (fp16:
 * the JVM keeps the payload and sign, e.g. {@code 0x7e00}, the GPU gives {@code 0x7fff}; fp16
 * and fp8 NaN patterns widened to float may also differ in payload). Elementwise with a
 * grid-stride loop: any 1-D grid works.
 */
public final class ConversionKernels {
    private ConversionKernels() {
    }

    /**
     * float to bf16, fp16 and fp8-e4m3. Args: {@code in} float[n]; {@code bf16} short[n];
     * {@code fp16} short[n]; {@code fp8} byte[n]; {@code n}.
     */
    public static void fromFloat(KernelContext ctx, Buf in, Buf bf16, Buf fp16, Buf fp8, int n) {
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            float f = in.getFloat(i);
            bf16.setShort(i, Numerics.floatToBf16(f));
            fp16.setShort(i, Numerics.floatToFp16(f));
            fp8.setByte(i, Numerics.floatToFp8e4m3(f));
        }
    }

    /**
     * bf16, fp16 and fp8-e4m3 to float. Args: {@code bf16} short[n]; {@code fp16} short[n];
     * {@code fp8} byte[n]; {@code out} float[3 * n] (bf16 results, then fp16, then fp8); {@code n}.
     * Feeding every 16-bit pattern ({@code n = 65536}, fp8 taking the low bytes) covers all inputs.
     */
    public static void toFloat(KernelContext ctx, Buf bf16, Buf fp16, Buf fp8, Buf out, int n) {
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            out.setFloat(i, Numerics.bf16ToFloat(bf16.getShort(i)));
            out.setFloat(n + (long) i, Numerics.fp16ToFloat(fp16.getShort(i)));
            out.setFloat(2L * n + i, Numerics.fp8e4m3ToFloat(fp8.getByte(i)));
        }
    }

    /**
     * Converts the floats whose bit patterns are {@code firstBits + i}, {@code i < n}, to all
     * three formats: an exhaustive sweep over float inputs needs no input buffer. Args:
     * {@code bf16} short[n]; {@code fp16} short[n]; {@code fp8} byte[n]; {@code firstBits};
     * {@code n}.
     */
    public static void sweep(KernelContext ctx, Buf bf16, Buf fp16, Buf fp8, int firstBits, int n) {
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            float f = Float.intBitsToFloat(firstBits + i);
            bf16.setShort(i, Numerics.floatToBf16(f));
            fp16.setShort(i, Numerics.floatToFp16(f));
            fp8.setByte(i, Numerics.floatToFp8e4m3(f));
        }
    }

    /**
     * Round trips, as a block-scaled fp8 quantizer would do them: {@code x / scale} to fp8 and
     * back times {@code scale}, and float to bf16 to float. Args: {@code in} float[n];
     * {@code out} float[2 * n]; {@code scale} (non-zero); {@code n}.
     */
    public static void roundTrip(KernelContext ctx, Buf in, Buf out, float scale, int n) {
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            float x = in.getFloat(i);
            byte q = Numerics.floatToFp8e4m3(x / scale);
            out.setFloat(i, Numerics.fp8e4m3ToFloat(q) * scale);
            out.setFloat((long) n + i, Numerics.bf16ToFloat(Numerics.floatToBf16(x)));
        }
    }
}
