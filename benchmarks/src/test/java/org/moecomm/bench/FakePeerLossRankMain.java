package org.moecomm.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import org.moecomm.core.AbortReason;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.core.launch.LaunchEnv;
import org.moecomm.core.launch.Rendezvous;

/**
 * A stand-in for {@link PeerLossRankMain} without a GPU, for the dry run of
 * scripts/gpu-kill-rank.sh (KILL_RANK_DRY=1): same arguments, environment, files and report. The
 * ranks meet at the rendezvous, then "rounds" are heartbeats in DIR: a rank whose peer's
 * heartbeat is older than the wait timeout fails with a {@link WaitTimeoutException} and leaves an
 * abort file, which the others see as a {@link PeerAbortedException}, as on the GPU.
 * {@code FAKE_HANG_CLOSE_RANK=r} makes rank r hang in its backend's close (the script must say so).
 */
public final class FakePeerLossRankMain {
    private FakePeerLossRankMain() {
    }

    public static void main(String[] args) throws Exception {
        StressSpec spec = StressSpec.decode(args[0]);
        long waitMs = Long.parseLong(args[1]);
        Path dir = Path.of(args[2]);
        LaunchEnv.Place place = LaunchEnv.place(System.getenv());
        int rank = place.rank();
        int world = place.worldSize();
        Rendezvous rv = Rendezvous.fromEnvironment(System.getenv());
        if (rank == 0) {
            rv.put("fake-id", new byte[] {42});
        } else if (!Arrays.equals(rv.get("fake-id", Duration.ofSeconds(60)), new byte[] {42})) {
            throw new IllegalStateException("rank " + rank + ": wrong value at the rendezvous");
        }
        RuntimeException failure = PeerLossRankMain.runAndReport(rank, dir, done -> {
            for (int round = 1; round <= spec.options().rounds(); round++) {
                beat(dir, rank);
                Path abort = dir.resolve("abort");
                if (Files.exists(abort)) {
                    throw new PeerAbortedException(rank, Integer.parseInt(read(abort)), AbortReason.WAIT_TIMEOUT,
                            "the wait for fake[round " + round + "]");
                }
                for (int p = 0; p < world; p++) {
                    long age = round > 1 ? System.currentTimeMillis() - Long.parseLong(read(dir.resolve("hb-" + p))) : 0;
                    if (p != rank && age > waitMs) {
                        write(abort, Integer.toString(rank));
                        throw new WaitTimeoutException(rank, p, "fake[" + p + "]", round, round - 1, age);
                    }
                }
                done.accept(round);
                sleep(20);
            }
        }, () -> true, () -> sleep(5), () -> sleep(Integer.toString(rank).equals(System.getenv("FAKE_HANG_CLOSE_RANK"))
                ? 600_000 : 5));
        if (failure == null) {
            System.exit(PeerLossRankMain.NO_FAILURE);
        }
        throw failure;
    }

    private static void beat(Path dir, int rank) {
        write(dir.resolve("hb-" + rank), Long.toString(System.currentTimeMillis()));
    }

    private static String read(Path p) {
        for (int i = 0; ; i++) {
            try {
                String s = Files.readString(p).strip();
                if (!s.isEmpty()) {
                    return s;
                }
            } catch (java.io.IOException e) {
                if (i > 100) {
                    throw new IllegalStateException(e);
                }
            }
            sleep(5);
        }
    }

    private static void write(Path p, String s) {
        try {
            Path tmp = Files.createTempFile(p.getParent(), ".hb", ".tmp");
            Files.writeString(tmp, s);
            Files.move(tmp, p, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
