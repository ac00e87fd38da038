package org.moecomm.kernels.testkernels;

import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.KernelContext;

/**
 * Compiler test kernels: memory access of every width, 16-byte vector copies, slices. Grid-stride
 * loops with {@code long} indices, so any 1-D grid works.
 */
public final class CopyKernels {
    private CopyKernels() {
    }

    /**
     * Copies {@code chunks} 16-byte chunks with {@code Buf.copy16} (one 128-bit load and store
     * each). Args: {@code dst}, {@code src} of {@code chunks * 16} bytes (16-byte aligned);
     * {@code chunks}. Grid: any. Expect {@code dst == src}.
     */
    public static void copy16(KernelContext ctx, Buf dst, Buf src, long chunks) {
        long stride = ctx.globalGroupSizeX();
        for (long c = ctx.globalIdx(); c < chunks; c += stride) {
            dst.copy16(c, src, c);
        }
    }

    /**
     * Copies {@code bytes} bytes one at a time. Args: {@code dst}, {@code src} of {@code bytes}
     * bytes; {@code bytes}. Grid: any. Expect {@code dst == src}.
     */
    public static void copyBytes(KernelContext ctx, Buf dst, Buf src, long bytes) {
        long stride = ctx.globalGroupSizeX();
        for (long i = ctx.globalIdx(); i < bytes; i += stride) {
            dst.setByte(i, src.getByte(i));
        }
    }

    /**
     * Reads element {@code i} at every width and writes a function of each. Args: {@code src} of
     * {@code n * 8} bytes; {@code dst} of {@code n * 8 * 7} bytes, laid out as 7 regions of
     * {@code n * 8} bytes (byte, short, int, long, float, double, then a mix); {@code n}. Grid:
     * any. In region {@code r}, thread {@code i} writes element {@code i} of that width: byte+1,
     * short*3, int^0x5A5A5A5A, long-7, float*2, double/4 (-1 for a NaN input, since NaN payloads
     * differ between the JVM and the GPU); region 6 holds the long
     * {@code byte + short + int + (long)float}. Random bytes are fine as input.
     */
    public static void widths(KernelContext ctx, Buf src, Buf dst, int n) {
        long region = n * 8L;
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            byte b = src.getByte(i);
            short s = src.getShort(i);
            int v = src.getInt(i);
            long l = src.getLong(i);
            float f = src.getFloat(i);
            double d = src.getDouble(i);
            dst.setByte(i, (byte) (b + 1));
            dst.setShort(region / 2 + i, (short) (s * 3));
            dst.setInt(2 * region / 4 + i, v ^ 0x5A5A5A5A);
            dst.setLong(3 * region / 8 + i, l - 7);
            dst.setFloat(4 * region / 4 + i, f != f ? -1f : f * 2f);
            dst.setDouble(5 * region / 8 + i, d != d ? -1.0 : d / 4);
            dst.setLong(6 * region / 8 + i, b + s + v + (long) f);
        }
    }

    /**
     * Copies ints from {@code src} into a slice of {@code dst} starting at byte
     * {@code offsetBytes}, through {@code Buf.slice}. Args: {@code dst} of
     * {@code offsetBytes + n * 4} bytes; {@code src} int[n]; {@code offsetBytes} (multiple of 4);
     * {@code n}. Grid: any.
     */
    public static void sliceCopy(KernelContext ctx, Buf dst, Buf src, long offsetBytes, int n) {
        Buf view = dst.slice(offsetBytes, n * 4L);
        for (int i = ctx.globalIdx(); i < n; i += ctx.globalGroupSizeX()) {
            view.setInt(i, src.getInt(i));
        }
    }
}
