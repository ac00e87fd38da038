package org.moecomm.core.gpu;

import java.lang.foreign.Arena;
import java.time.Duration;
import org.moecomm.core.AbortReason;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.Workload;
import org.moecomm.core.launch.LaunchEnv;

/**
 * A rank of the GPU timeout test: the last rank never dispatches; every other rank must get a
 * {@link WaitTimeoutException} naming it within the bound (plus slack for the launch and the
 * report). Argument: the bound in milliseconds. Prints {@code CHECK timeout ok rank r}.
 */
public final class DispatchTimeoutMain {
    private DispatchTimeoutMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        int world = Integer.parseInt(System.getenv(LaunchEnv.WORLD_SIZE));
        long boundMs = Long.parseLong(args[0]);
        long slackMs = 10_000;
        MoeConfig config = MoeConfig.builder().worldSize(world).numExperts(2 * world).topK(2).hidden(256)
                .maxTokensPerRank(16).waitTimeout(Duration.ofMillis(boundMs)).build();
        int silent = world - 1;
        try (GpuBackend gpu = GpuBackend.start(config)) {
            int rank = gpu.rank();
            try (MoeAllToAll h = gpu.createHandle(config)) {
                RankBuffers buffers = RankBuffers.allocate(h);
                var in = buffers.upload(Workload.generate(config, 5).rank(rank), false);
                if (rank == silent) {
                    Thread.sleep(boundMs + slackMs);
                    System.out.println("CHECK timeout ok rank " + rank + " (stayed silent)");
                    System.out.flush();
                    // A peer that never arrives is a dead peer: it leaves without the collective
                    // shutdown (NVSHMEM's finalize would wait for ranks whose handles have failed).
                    Runtime.getRuntime().halt(0);
                }
                long t0 = System.nanoTime();
                WaitTimeoutException seen = null;
                PeerAbortedException released = null;
                try {
                    h.dispatch(in, buffers.dispatchOutput());
                    // The device-side wait reports at the next call that synchronises: read an output.
                    try (Arena arena = Arena.ofConfined()) {
                        h.memory().copyToHost(buffers.dispatchOutput().expertNumTokens().buf(), 0, arena.allocate(4));
                    }
                    h.combine(buffers.combineInput(), buffers.out());
                } catch (RuntimeException e) {
                    for (Throwable c = e; c != null; c = c.getCause()) {
                        if (c instanceof WaitTimeoutException w) {
                            seen = w;
                            break;
                        }
                        if (c instanceof PeerAbortedException a) {
                            released = a;
                            break;
                        }
                    }
                    if (seen == null && released == null) {
                        throw e;
                    }
                }
                long ms = (System.nanoTime() - t0) / 1_000_000;
                if (released != null) {
                    // a rank that timed out first raised the abort word, which ended this wait early
                    boolean ok = released.reason() == AbortReason.WAIT_TIMEOUT && released.abortedBy() != silent
                            && released.abortedBy() != rank && ms <= boundMs + slackMs;
                    System.out.println("CHECK timeout " + (ok ? "ok" : "FAILED") + " rank " + rank + " after " + ms
                            + " ms: " + released.getMessage());
                    if (!ok) {
                        System.exit(1);
                    }
                } else if (seen == null) {
                    System.out.println("CHECK timeout FAILED rank " + rank + ": no WaitTimeoutException");
                    System.exit(1);
                } else if (seen.peer() != silent || seen.rank() != rank
                        || !seen.signal().equals("dispatch[" + silent + "]")
                        || !seen.getMessage().contains("peer " + silent) || ms < boundMs || ms > boundMs + slackMs) {
                    System.out.println("CHECK timeout FAILED rank " + rank + ": " + seen.getMessage() + " after " + ms
                            + " ms (bound " + boundMs + " ms, silent peer " + silent + ")");
                    System.exit(1);
                } else {
                    System.out.println("CHECK timeout ok rank " + rank + " after " + ms + " ms: " + seen.getMessage());
                }
            }
        }
    }
}
