package org.moecomm.core.gpu;

import java.lang.foreign.Arena;
import java.time.Duration;
import org.moecomm.core.AbortReason;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.Workload;
import org.moecomm.core.launch.LaunchEnv;

/**
 * A rank of the GPU test of the abort word: after a checked round, the last rank aborts its
 * handle instead of dispatching; every other rank's dispatch must fail with a
 * {@link PeerAbortedException} naming that rank and {@link AbortReason#CALLER} within a few
 * seconds, although the wait bound is 60 s; then every handle and backend closes (skipping the
 * collective teardown) within the launcher's bound. Prints {@code CHECK abort ok rank r}.
 */
public final class AbortMain {
    private static final long RELEASED_WITHIN_MS = 5_000;

    private AbortMain() {
    }

    public static void main(String[] args) {
        int world = Integer.parseInt(System.getenv(LaunchEnv.WORLD_SIZE));
        MoeConfig config = MoeConfig.builder().worldSize(world).numExperts(2 * world).topK(2).hidden(256)
                .maxTokensPerRank(16).waitTimeout(Duration.ofSeconds(60)).build();
        int aborter = world - 1;
        try (GpuBackend gpu = GpuBackend.start(config)) {
            int rank = gpu.rank();
            try (MoeAllToAll h = gpu.createHandle(config)) {
                RankBuffers buffers = RankBuffers.allocate(h);
                CheckedRound.run(buffers, Workload.generate(config, 3), false).assertOk();
                gpu.deviceTiming(h).barrier().run();
                DispatchInput in = buffers.upload(Workload.generate(config, 4).rank(rank), false);
                if (rank == aborter) {
                    h.abort("the test aborts rank " + rank);
                    if (!h.isFailed()) {
                        throw new IllegalStateException("rank " + rank + ": not failed after abort");
                    }
                    System.out.println("CHECK abort ok rank " + rank + " (aborted)");
                    return;
                }
                long t0 = System.nanoTime();
                PeerAbortedException seen = null;
                try {
                    h.dispatch(in, buffers.dispatchOutput());
                    // the device-side wait reports at the next call that synchronises: read an output
                    try (Arena arena = Arena.ofConfined()) {
                        h.memory().copyToHost(buffers.dispatchOutput().expertNumTokens().buf(), 0, arena.allocate(4));
                    }
                } catch (PeerAbortedException e) {
                    seen = e;
                }
                long ms = (System.nanoTime() - t0) / 1_000_000;
                boolean ok = seen != null && seen.abortedBy() == aborter && seen.reason() == AbortReason.CALLER
                        && seen.rank() == rank && ms < RELEASED_WITHIN_MS && h.isFailed();
                System.out.println("CHECK abort " + (ok ? "ok" : "FAILED") + " rank " + rank + " after " + ms + " ms: "
                        + (seen != null ? seen.getMessage() : "no PeerAbortedException"));
                if (!ok) {
                    System.exit(1);
                }
            }
        }
    }
}
