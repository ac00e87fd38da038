package org.moecomm.core;

/**
 * Element types of the tensors the library reads and writes. {@link #kernelCode()} is the
 * integer the kernels take for a dtype parameter (see {@code MoeKernels}).
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

    /** Lower-case name used in presets, logs and JSON ("bf16", "fp8_e4m3"). */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
