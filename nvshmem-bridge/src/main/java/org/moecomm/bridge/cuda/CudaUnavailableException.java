package org.moecomm.bridge.cuda;

/**
 * CUDA cannot be used in this process: the bridge's JNI library is not in this build, the
 * driver library {@code libcuda.so.1} is absent, or the driver found no device.
 * {@link Cuda#availability()} gives the same reason without throwing.
 */
public final class CudaUnavailableException extends CudaException {
    private static final long serialVersionUID = 1L;

    CudaUnavailableException(Cuda.Availability availability) {
        super("CUDA", availability.code(), availability.errorName(), availability.reason(), "");
    }
}
