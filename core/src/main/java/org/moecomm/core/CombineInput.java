package org.moecomm.core;

import java.util.Objects;

/**
 * One rank's combine inputs: expert outputs {@code expertY [L][NG*M][H]} (expertOutType) in
 * dispatch's row order, and router weights {@code weights [>= m][K]} float32 for the tokens
 * (and the indices and count) of the preceding dispatch.
 */
public record CombineInput(Tensor expertY, Tensor weights) {
    public CombineInput {
        Objects.requireNonNull(expertY, "expertY");
        Objects.requireNonNull(weights, "weights");
    }
}
