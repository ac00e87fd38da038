package org.moecomm.core.gpu;

import java.util.Objects;
import org.moecomm.bridge.cuda.GpuKernelRunner;
import org.moecomm.bridge.nvshmem.NvshmemDeviceLibrary;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelRunner;
import org.moecomm.kernels.ptx.PtxCompiler;

/**
 * The handle's kernel runner: the CUDA binding's {@link GpuKernelRunner} on the handle's stream,
 * reporting a failure a kernel recorded (a bounded wait that ran out) before each launch and at
 * {@link #synchronize()}. Kernels calling the one-sided communication methods of
 * {@code KernelContext} are linked with the NVSHMEM bridge's device functions.
 *
 * <p>The runner's check that every buffer argument lies in one CUDA allocation costs two driver
 * queries per buffer and launch; it is off unless {@code -Dmoecomm.gpu.checkPointers=true}. With
 * {@code -Dmoecomm.gpu.sharedCarveout=P} every kernel asks for P percent of the L1/shared split as
 * shared memory ({@link GpuKernelRunner#sharedCarveout}); unset, the driver chooses.
 */
final class CheckedKernelRunner implements KernelRunner {
    private final GpuExecution exec;
    private final GpuKernelRunner runner;

    CheckedKernelRunner(GpuExecution exec) {
        this.exec = Objects.requireNonNull(exec, "exec");
        this.runner = new GpuKernelRunner(exec.context(), exec.stream(), PtxCompiler::compileCached)
                .checkPointers(Boolean.getBoolean("moecomm.gpu.checkPointers"))
                .sharedCarveout(Integer.getInteger("moecomm.gpu.sharedCarveout", -1))
                .withDeviceLibrary(new NvshmemDeviceLibrary());
    }

    GpuKernelRunner delegate() {
        return runner;
    }

    @Override
    public void launch(Kernel kernel, Grid grid, Object... args) {
        exec.enter();
        runner.launch(kernel, grid, args);
    }

    @Override
    public void prepare(Kernel kernel, int threads, Object... args) {
        exec.enter();
        runner.prepare(kernel, threads, args);
    }

    @Override
    public int concurrentBlocks() {
        return runner.concurrentBlocks();
    }

    @Override
    public int blockThreads(int deviceThreads) {
        return runner.blockThreads(deviceThreads);
    }

    @Override
    public int residentBlocks(Kernel kernel, int threads, Object... args) {
        return runner.residentBlocks(kernel, threads, args);
    }

    @Override
    public boolean blocksMayWaitForEachOther(Kernel kernel, Grid grid, Object... args) {
        return runner.blocksMayWaitForEachOther(kernel, grid, args);
    }

    @Override
    public void synchronize() {
        exec.synchronize();
    }

    @Override
    public void close() {
        runner.close();
    }
}
