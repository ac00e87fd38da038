package org.moecomm.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import org.junit.jupiter.api.Test;
import org.moecomm.core.cpu.CpuDeviceMemory;

/** Tensors from and to Java arrays, the dtype conversions, a token count in a tensor. */
class TensorArraysTest {
    @Test
    void floatsRoundToNearestEvenInEveryDtype() {
        try (CpuDeviceMemory mem = new CpuDeviceMemory()) {
            // 1 + 2^-8 lies halfway between two bf16 values: ties go to the even one (1.0)
            float halfway = 1f + 0x1p-8f;
            float above = 1f + 0x1p-8f + 0x1p-12f;
            Tensor bf16 = Tensor.fromFloats(mem, DType.BF16, new float[] {halfway, above, -2.5f, 0f, 1f, 3f}, 2, 3);
            assertArrayEquals(new long[] {2, 3}, bf16.shape());
            assertArrayEquals(new float[] {1f, 1f + 0x1p-7f, -2.5f, 0f, 1f, 3f}, bf16.toFloats(mem));
            assertEquals(0x3f80, bf16.buf().getShort(0) & 0xffff);

            Tensor fp16 = Tensor.fromFloats(mem, DType.FP16, new float[] {1f + 0x1p-11f, 65504f, 1e6f});
            assertArrayEquals(new float[] {1f, 65504f, Float.POSITIVE_INFINITY}, fp16.toFloats(mem));

            // fp8 e4m3 saturates to 448; 0.3 rounds to 0.3125 (e4m3 has 3 mantissa bits)
            Tensor fp8 = Tensor.fromFloats(mem, DType.FP8_E4M3, new float[] {1000f, 0.3f, -1f});
            assertArrayEquals(new float[] {448f, 0.3125f, -1f}, fp8.toFloats(mem));
            assertArrayEquals(new byte[] {0x7e, 0x2a, (byte) 0xb8}, fp8.toBytes(mem));

            Tensor fp32 = Tensor.fromFloats(mem, DType.FP32, new float[] {0.1f, -7f});
            assertArrayEquals(new float[] {0.1f, -7f}, fp32.toFloats(mem));
        }
    }

    @Test
    void intsAndBytesAsTheyAre() {
        try (CpuDeviceMemory mem = new CpuDeviceMemory()) {
            Tensor ids = Tensor.fromInts(mem, new int[] {3, -1, 7, 0}, 2, 2);
            assertArrayEquals(new int[] {3, -1, 7, 0}, ids.toInts(mem));
            assertEquals(7, ids.buf().getInt(2));
            Tensor raw = Tensor.fromBytes(mem, DType.BF16, new byte[] {(byte) 0x80, 0x3f});
            assertArrayEquals(new long[] {1}, raw.shape());
            assertArrayEquals(new float[] {1f}, raw.toFloats(mem));
            assertArrayEquals(new int[0], Tensor.fromInts(mem, new int[0]).toInts(mem));
        }
    }

    @Test
    void mismatchesAreRefused() {
        try (CpuDeviceMemory mem = new CpuDeviceMemory()) {
            assertRefused(IllegalArgumentException.class, () -> Tensor.fromFloats(mem, DType.BF16, new float[3], 2, 2),
                    "3 values do not fill the shape [2, 2]");
            assertRefused(IllegalArgumentException.class, () -> Tensor.fromFloats(mem, DType.INT32, new float[1]),
                    "int32 holds no floats");
            assertRefused(IllegalArgumentException.class, () -> Tensor.fromBytes(mem, DType.FP32, new byte[3]),
                    "3 bytes are no whole number of fp32 elements");
            Tensor ids = Tensor.fromInts(mem, new int[] {1, 2});
            assertRefused(IllegalArgumentException.class, () -> ids.toFloats(mem), "int32 holds no floats");
            assertThrows(IllegalArgumentException.class, () -> Tensor.fromFloats(mem, DType.FP32, new float[1])
                    .toInts(mem));
        }
    }

    @Test
    void dtypeConversionsArePublicAndInverse() {
        assertEquals(0x3f80, DType.BF16.fromFloat(1f));
        assertEquals(1f, DType.BF16.toFloat(0x3f80));
        assertEquals(0x3c00, DType.FP16.fromFloat(1f));
        assertEquals(0x38, DType.FP8_E4M3.fromFloat(1f));
        assertEquals(448f, DType.FP8_E4M3.round(500f));
        assertEquals(Float.floatToRawIntBits(0.1f), DType.FP32.fromFloat(0.1f));
        for (DType d : new DType[] {DType.BF16, DType.FP16, DType.FP8_E4M3}) {
            int all = 1 << (8 * d.bytes());
            for (int bits = 0; bits < all; bits += 7) {
                float f = d.toFloat(bits);
                if (!Float.isNaN(f)) {
                    assertEquals(f, d.round(f), d + " " + bits);
                }
            }
        }
        assertRefused(IllegalArgumentException.class, () -> DType.INT32.fromFloat(1f), "int32 holds no floats");
    }

    @Test
    void tokenCountInATensor() {
        try (CpuDeviceMemory mem = new CpuDeviceMemory()) {
            Tensor counts = Tensor.fromInts(mem, new int[] {5, 9});
            TokenCount.InBuffer c = (TokenCount.InBuffer) TokenCount.inBuffer(counts, 1);
            assertEquals(counts.buf(), c.buf());
            assertEquals(1, c.index());
            assertRefused(IllegalArgumentException.class, () -> TokenCount.inBuffer(counts, 2),
                    "token count index 2 is outside the int32[2] tensor");
            assertThrows(IllegalArgumentException.class,
                    () -> TokenCount.inBuffer(Tensor.fromFloats(mem, DType.FP32, new float[1]), 0));
        }
    }
}
