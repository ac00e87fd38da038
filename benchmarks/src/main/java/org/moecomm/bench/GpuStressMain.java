package org.moecomm.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.StressRounds;
import org.moecomm.core.gpu.GpuBackend;

/**
 * One rank process of a GPU stress run ({@link StressCommand}), started through
 * {@link org.moecomm.core.launch.LocalLauncher}. Arguments: {@code RESULT_DIR SPEC}
 * ({@link StressSpec#encode()}). Runs {@link StressRounds} on one handle and writes the rank's
 * GPU's name and its result as JSON into {@code RESULT_DIR/rank-<r>.json} (two lines); an exception ends the process with a
 * non-zero status.
 */
public final class GpuStressMain {
    private GpuStressMain() {
    }

    static Path resultFile(Path dir, int rank) {
        return dir.resolve("rank-" + rank + ".json");
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: GpuStressMain RESULT_DIR SPEC");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        StressSpec spec = StressSpec.decode(args[1]);
        MoeConfig config = spec.config();
        try (GpuBackend gpu = GpuBackend.start(config); MoeAllToAll h = gpu.createHandle(config)) {
            // rank 0's output reaches the launcher's standard error, prefixed [rank 0]
            Progress progress = h.rank() == 0
                    ? new Progress(System.out, "stress", spec.options().rounds(), Progress.INTERVAL) : Progress.none();
            // a failure of this rank's own work (its tensors' allocation) releases the peers at once
            StressRounds.Result r = h.callOrAbort(
                    () -> StressRounds.run(RankBuffers.allocate(h), spec.options(), progress::roundsDone));
            Files.writeString(resultFile(dir, h.rank()), gpu.context().deviceName() + "\n" + StressResults.toJson(r) + "\n");
            if (h.rank() == 0) {
                System.out.printf("%s: rank 0 done in %.1f s, %d failed round(s)%n", spec, r.nanos() / 1e9,
                        r.failedRounds());
            }
        }
    }
}
