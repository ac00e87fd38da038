package org.moecomm.core;

import org.moecomm.kernels.api.Numerics;

/**
 * Element types of the tensors the library reads and writes. {@link #kernelCode()} is the
 * integer the kernels take for a dtype parameter (see {@code MoeKernels}). {@link #fromFloat} and
 * {@link #toFloat} convert single elements the way the kernels do ({@code Numerics}).
 */
public enum DType {
    BF16(2, 0),
    FP16(2, 1),
    FP32(4, 2),
    FP8_E4M3(1, 3),
    INT32(4, 4);

    private final int bytes;
    private final int kernelCode;

    DType(int bytes, int kernelCode) {
        this.bytes = bytes;
        this.kernelCode = kernelCode;
    }

    /** Bytes per element. */
    public int bytes() {
        return bytes;
    }

    /** The code kernels use for this dtype. */
    public int kernelCode() {
        return kernelCode;
    }

    /** Whether elements are floating point (all but {@link #INT32}). */
    public boolean isFloat() {
        return this != INT32;
    }

    /**
     * The bits of {@code value} in this dtype, in the low {@link #bytes()} bytes: rounded to
     * nearest even (bf16, fp16, fp8_e4m3; fp8 saturates to its largest finite value, NaN stays
     * NaN), as the kernels and the GPU convert; fp32 unchanged.
     *
     * @throws IllegalArgumentException for {@link #INT32}
     */
    public int fromFloat(float value) {
        return switch (this) {
            case BF16 -> Numerics.floatToBf16(value) & 0xffff;
            case FP16 -> Numerics.floatToFp16(value) & 0xffff;
            case FP32 -> Float.floatToRawIntBits(value);
            case FP8_E4M3 -> Numerics.floatToFp8e4m3(value) & 0xff;
            case INT32 -> throw new IllegalArgumentException("int32 holds no floats");
        };
    }

    /**
     * The float an element of this dtype holds, from its bits in the low {@link #bytes()} bytes
     * of {@code bits} (the inverse of {@link #fromFloat}: exact, every value is a float).
     *
     * @throws IllegalArgumentException for {@link #INT32}
     */
    public float toFloat(int bits) {
        return switch (this) {
            case BF16 -> Numerics.bf16ToFloat((short) bits);
            case FP16 -> Numerics.fp16ToFloat((short) bits);
            case FP32 -> Float.intBitsToFloat(bits);
            case FP8_E4M3 -> Numerics.fp8e4m3ToFloat((byte) bits);
            case INT32 -> throw new IllegalArgumentException("int32 holds no floats");
        };
    }

    /** {@code value} rounded to this dtype and back: the float the tensor will hold. */
    public float round(float value) {
        return toFloat(fromFloat(value));
    }

    /** Lower-case name used in presets, logs and JSON ("bf16", "fp8_e4m3"). */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
