package org.moecomm.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.StressRounds;
import org.moecomm.core.gpu.GpuBackend;
import org.moecomm.core.launch.LaunchEnv;

/**
 * One rank of the kill-a-rank check (scripts/gpu-kill-rank.sh), started directly by that script
 * with {@link LaunchEnv}'s variables, as a launcher other than {@code LocalLauncher} would: no
 * supervisor stops it when a peer dies. Arguments: {@code SPEC WAIT_TIMEOUT_MS DIR}
 * ({@link StressSpec#encode()}; the handle's wait timeout; a folder shared by the ranks).
 *
 * <p>Runs checked rounds ({@link StressRounds}) on one handle until they fail (the script kills
 * one rank mid-run), then closes the handle and the backend and reports, each with the wall
 * clock (epoch milliseconds, the clock the script's {@code date} reads): one line
 * {@code PEERLOSS rank=r event=...} per step on standard output, and {@code DIR/rank-r.json}. It
 * touches {@code DIR/rank-r.running} after {@link #RUNNING_AFTER} rounds, so that the script kills
 * mid-run. Exit status: the failure is rethrown (status 1, its stack trace printed); 3 when every
 * round passed (no peer was lost: the check did not happen).
 */
public final class PeerLossRankMain {
    /** Rounds after which a rank says it is running. */
    static final int RUNNING_AFTER = 10;
    /** Exit status when the rounds ended without a failure. */
    static final int NO_FAILURE = 3;

    private PeerLossRankMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: PeerLossRankMain SPEC WAIT_TIMEOUT_MS DIR");
            System.exit(2);
        }
        StressSpec spec = StressSpec.decode(args[0]);
        long waitMs = Long.parseLong(args[1]);
        Path dir = Path.of(args[2]);
        MoeConfig config = spec.config().toBuilder().waitTimeout(Duration.ofMillis(waitMs)).build();
        int rank = LaunchEnv.place(System.getenv()).rank();
        GpuBackend gpu = GpuBackend.start(config);
        MoeAllToAll h = gpu.createHandle(config);
        RankBuffers buffers = RankBuffers.allocate(h);
        RuntimeException failure = runAndReport(rank, dir, done -> StressRounds.run(buffers, spec.options(), done),
                gpu::failed, h, gpu);
        if (failure == null) {
            System.exit(NO_FAILURE);
        }
        throw failure;
    }

    /**
     * Runs {@code rounds} (given a rounds-done callback), then closes {@code handle} and
     * {@code backend}, timing each and reporting as the class comment says. Returns the rounds'
     * failure, or null when they ended without one. {@code collectiveSkipped} is asked between the
     * two closes: whether the backend's close will skip the collective teardown.
     */
    static RuntimeException runAndReport(int rank, Path dir, Consumer<IntConsumer> rounds,
                                         BooleanSupplier collectiveSkipped, AutoCloseable handle,
                                         AutoCloseable backend) throws IOException {
        AtomicInteger done = new AtomicInteger();
        Path running = dir.resolve("rank-" + rank + ".running");
        long start = System.currentTimeMillis();
        RuntimeException failure = null;
        try {
            rounds.accept(n -> {
                done.set(n);
                if (n == RUNNING_AFTER) {
                    try {
                        Files.writeString(running, Long.toString(System.currentTimeMillis()));
                    } catch (IOException e) {
                        throw new IllegalStateException("cannot write " + running, e);
                    }
                }
            });
        } catch (RuntimeException e) {
            failure = e;
        }
        long failedAt = System.currentTimeMillis();
        String kind = failure == null ? "none" : kind(failure);
        event(rank, failure == null ? "completed" : "failed", failedAt, "rounds=" + done.get() + " kind=" + kind
                + (failure == null ? "" : " exception=" + failure.getClass().getName() + " message=" + oneLine(
                failure.getMessage())));
        String handleError = close(handle);
        long handleClosed = System.currentTimeMillis();
        event(rank, "handle_closed", handleClosed, "close_ms=" + (handleClosed - failedAt)
                + (handleError == null ? "" : " error=" + handleError));
        boolean skipped = collectiveSkipped.getAsBoolean();
        String backendError = close(backend);
        long backendClosed = System.currentTimeMillis();
        event(rank, "backend_closed", backendClosed, "close_ms=" + (backendClosed - handleClosed)
                + " collective_teardown_skipped=" + skipped + (backendError == null ? "" : " error=" + backendError));
        String json = String.format(Locale.ROOT, "{\"rank\":%d,\"started_epoch_ms\":%d,\"rounds_done\":%d,"
                        + "\"failed_epoch_ms\":%d,\"kind\":\"%s\",\"exception\":%s,\"message\":%s,"
                        + "\"handle_closed_epoch_ms\":%d,\"handle_close_ms\":%d,\"handle_close_error\":%s,"
                        + "\"collective_teardown_skipped\":%b,\"backend_closed_epoch_ms\":%d,\"backend_close_ms\":%d,"
                        + "\"backend_close_error\":%s}",
                rank, start, done.get(), failedAt, kind,
                failure == null ? "null" : quote(failure.getClass().getName()),
                failure == null ? "null" : quote(oneLine(failure.getMessage())), handleClosed, handleClosed - failedAt,
                handleError == null ? "null" : quote(handleError), skipped, backendClosed,
                backendClosed - handleClosed, backendError == null ? "null" : quote(backendError));
        Files.writeString(dir.resolve("rank-" + rank + ".json"), json + "\n");
        System.out.flush();
        return failure;
    }

    /** {@code timeout} or {@code aborted} when the failure is (or was caused by) a peer's timeout or abort, else {@code other}. */
    static String kind(Throwable failure) {
        for (Throwable c = failure; c != null; c = c.getCause()) {
            if (c instanceof WaitTimeoutException) {
                return "timeout";
            }
            if (c instanceof PeerAbortedException) {
                return "aborted";
            }
        }
        return "other";
    }

    private static String close(AutoCloseable c) {
        try {
            c.close();
            return null;
        } catch (Exception e) {
            return oneLine(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    private static void event(int rank, String event, long epochMs, String fields) {
        System.out.println("PEERLOSS rank=" + rank + " event=" + event + " epoch_ms=" + epochMs + " " + fields);
        System.out.flush();
    }

    static String oneLine(String s) {
        return s == null ? "" : s.replaceAll("\\s+", " ").strip();
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
