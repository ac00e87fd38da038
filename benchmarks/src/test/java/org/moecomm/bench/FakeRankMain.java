package org.moecomm.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.moecomm.bench.gpu.CopyBandwidth;
import org.moecomm.core.launch.LaunchEnv;

/**
 * Stands in for {@link GpuRankMain} without a GPU: takes the same arguments, reads its rank from
 * the launcher's environment and writes a copy baseline of {@link #COPY_BYTES} (host copies) and
 * samples (rank r, config i, phase p, round k: 1000 * (r + 1)
 * * (i + 1) + p + k nanoseconds; for a graph spec none for the send/recv phases). With {@code MOECOMM_FAKE_FAIL_RANK} = r, that rank fails instead.
 */
public final class FakeRankMain {
    static final long COPY_BYTES = 1L << 20;

    private FakeRankMain() {
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(System.getenv(LaunchEnv.RANK));
        if (Integer.toString(rank).equals(System.getenv("MOECOMM_FAKE_FAIL_RANK"))) {
            throw new IllegalStateException("fake rank " + rank + " failing on purpose");
        }
        Path dir = Path.of(args[0]);
        RoundPlan plan = RoundPlan.decode(args[1]);
        Path file = RankSamples.file(dir, rank);
        // the copy baseline as GpuRankMain records it, with the host's copy (separate processes: no barrier)
        RankSamples.append(file, List.of(RankSamples.deviceLine("Fake GPU"), RankSamples.copyLine(CopyBandwidth.HOST_COPY,
                COPY_BYTES, CopyBandwidth.onHost(COPY_BYTES, 0, 0, 3, () -> { }))));
        for (int i = 2; i < args.length; i++) {
            int cfg = i - 2;
            RunSpec spec = RunSpec.decode(args[i]);
            long[][] s = new long[Phases.COUNT][];
            for (int p = 0; p < Phases.COUNT; p++) {
                // like GpuRankMain: a graph replay times only the whole halves
                boolean measured = spec.launch().timesSendAndRecv() || !Phases.isSendOrRecv(p);
                s[p] = new long[measured ? plan.rounds() : 0];
                for (int k = 0; k < s[p].length; k++) {
                    s[p][k] = 1000L * (rank + 1) * (cfg + 1) + p + k;
                }
            }
            RankSamples.append(file, RankSamples.lines(cfg, spec, new ArrayList<>(), s));
        }
        System.out.println("fake rank " + rank + " wrote " + file.getFileName());
    }
}
