package org.moecomm.core;

import java.util.Objects;

/**
 * Where dispatch writes on rank r: {@code expertNumTokens [L]} int32, {@code expertX [L][NG*M][H]}
 * (inType) and {@code expertXScale [L][NG*M][ceil(H/128)]} float32 (null without block scales).
 * Rows of expert l beyond expertNumTokens[l] are left untouched.
 */
public record DispatchOutput(Tensor expertNumTokens, Tensor expertX, Tensor expertXScale) {
    public DispatchOutput {
        Objects.requireNonNull(expertNumTokens, "expertNumTokens");
        Objects.requireNonNull(expertX, "expertX");
    }
}
