package org.moecomm.core;

import java.util.Objects;

/**
 * One rank's dispatch inputs: tokens {@code x [>= m][H]} (the config's inType), their block
 * scales {@code xScale [>= m][ceil(H/128)]} float32 (null without block scales), routing
 * {@code indices [>= m][K]} int32 expert ids (-1 skips), and the valid count m <= M.
 */
public record DispatchInput(Tensor x, Tensor xScale, Tensor indices, TokenCount count) {
    public DispatchInput {
        Objects.requireNonNull(x, "x");
        Objects.requireNonNull(indices, "indices");
        Objects.requireNonNull(count, "count");
    }
}
