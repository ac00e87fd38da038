package org.moecomm.kernels.ptx;

import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the compiler emits PTX for: a GPU architecture ({@code .target}) and a PTX ISA version
 * ({@code .version}).
 *
 * <p>The default, {@link #HOPPER}, is {@code sm_90a} with PTX ISA 8.0: the lowest ISA version
 * that knows {@code sm_90a}, so the emitted PTX loads on every driver that can run Hopper code
 * (CUDA 12.0 and later) and assembles with {@code ptxas} from CUDA 12 and 13. The narrow-float
 * conversions (fp8) need {@code sm_89} or newer; the compiler refuses them for older targets.
 *
 * @param sm         the architecture name, such as {@code "sm_90a"} or {@code "sm_90"}
 * @param ptxVersion the PTX ISA version, such as {@code "8.0"}
 */
public record PtxTarget(String sm, String ptxVersion) {
    private static final Pattern SM = Pattern.compile("sm_(\\d+)[a-z]?");
    private static final Pattern VERSION = Pattern.compile("\\d+\\.\\d+");

    /** Hopper (H100, H200) with the architecture-specific features: {@code sm_90a}, PTX ISA 8.0. */
    public static final PtxTarget HOPPER = new PtxTarget("sm_90a", "8.0");

    public PtxTarget {
        Objects.requireNonNull(sm, "sm");
        Objects.requireNonNull(ptxVersion, "ptxVersion");
        if (!SM.matcher(sm).matches()) {
            throw new IllegalArgumentException("not an architecture name (sm_NN or sm_NNa): " + sm);
        }
        if (!VERSION.matcher(ptxVersion).matches()) {
            throw new IllegalArgumentException("not a PTX ISA version (major.minor): " + ptxVersion);
        }
    }

    /** The numeric compute capability, {@code 90} for {@code sm_90a}. */
    public int smVersion() {
        Matcher m = SM.matcher(sm);
        if (!m.matches()) {
            throw new IllegalStateException(sm);
        }
        return Integer.parseInt(m.group(1));
    }

    @Override
    public String toString() {
        return sm + "/PTX " + ptxVersion;
    }
}
