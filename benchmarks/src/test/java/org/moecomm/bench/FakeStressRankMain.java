package org.moecomm.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.moecomm.core.check.StressRounds;
import org.moecomm.core.launch.LaunchEnv;

/**
 * Stands in for {@link GpuStressMain} without a GPU: takes the same arguments, reads its rank
 * from the launcher's environment and writes what GpuStressMain writes (the device's name, then
 * a result: every round right, 10 * (rank + 1) rows per round).
 */
public final class FakeStressRankMain {
    private FakeStressRankMain() {
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(System.getenv(LaunchEnv.RANK));
        StressSpec spec = StressSpec.decode(args[1]);
        int rounds = spec.options().rounds();
        StressRounds.Result r = new StressRounds.Result(rank, rounds, 10L * (rank + 1) * rounds, 0, List.of(),
                1_000_000L * rounds);
        Files.writeString(GpuStressMain.resultFile(Path.of(args[0]), rank),
                "Fake GPU\n" + StressResults.toJson(r) + "\n");
    }
}
