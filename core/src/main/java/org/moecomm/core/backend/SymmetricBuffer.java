package org.moecomm.core.backend;

import org.moecomm.kernels.api.Buf;

/** A buffer allocated at the same offset of every rank's symmetric heap; {@link #local()} is this rank's copy. */
public interface SymmetricBuffer {
    Buf local();

    default long byteSize() {
        return local().byteSize();
    }
}
