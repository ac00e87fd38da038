package org.moecomm.bench;

import org.moecomm.core.launch.LocalLauncher.GpuPolicy;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code --gpus}: where the GPU backend's rank processes run ({@link GpuPolicy}), shared by the
 * commands that start them. {@code per-rank} by default: one GPU per rank on a node that has W,
 * the ranks round the visible GPUs where it has fewer, all of them on the one GPU of a machine
 * that has one (which is what {@code shared} does on any machine).
 */
final class GpusOption {
    @Option(names = "--gpus", defaultValue = "per-rank", converter = Converter.class, paramLabel = "POLICY",
            description = "GPU backend: where the rank processes run: per-rank (rank r on visible GPU r mod n,"
                    + " the GPUs of CUDA_VISIBLE_DEVICES, else all; several ranks of one GPU share it under MPS)"
                    + " or shared (every rank on the first visible GPU) (default: ${DEFAULT-VALUE}).")
    GpuPolicy policy = GpuPolicy.PER_RANK;

    /** {@code shared} or {@code per-rank}: a rank process of these commands needs its GPU placed. */
    static final class Converter implements CommandLine.ITypeConverter<GpuPolicy> {
        @Override
        public GpuPolicy convert(String value) {
            GpuPolicy p;
            try {
                p = GpuPolicy.byLabel(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
            if (p == GpuPolicy.NONE) {
                throw new CommandLine.TypeConversionException(
                        "'" + value + "' leaves the ranks' GPUs to the caller; give shared or per-rank");
            }
            return p;
        }
    }
}
