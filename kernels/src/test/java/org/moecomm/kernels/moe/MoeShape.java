package org.moecomm.kernels.moe;

/**
 * Sizes of one MoE configuration for the kernel tests, derived as {@code MoeConfig} and
 * {@code BufferLayout} derive them (names as in docs/protocol.md); shared by the JVM tests and the
 * GPU comparison cases.
 */
public record MoeShape(int w, int g, int l, int k, int h, int m, boolean fp8) {
    public int ng() { return w / g; }
    public int e() { return w * l; }
    public int kd() { return Math.min(k, l); }
    public int s() { return fp8 ? (h + 127) / 128 : 0; }
    public int xBytes() { return fp8 ? h : 2 * h; }
    public int rowBytes() { return align16(xBytes()) + align16(4 * s()) + align16(4 * (2 + k)); }
    public int maxPairs() { return m * kd(); }
    public int capacity() { return ng() * m; }

    /** {@code v} rounded up to a multiple of 16, as the kernels lay out rows. */
    public static int align16(int v) {
        return (v + 15) & -16;
    }
}
