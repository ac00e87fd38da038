package org.moecomm.core.gpu;

import java.time.Duration;
import java.util.HexFormat;
import org.moecomm.core.launch.LaunchEnv;
import org.moecomm.core.launch.Rendezvous;

/**
 * A rank process for the launcher's own tests (no GPU): {@code ok} exchanges a value through
 * the rendezvous and prints its environment; {@code fail R} makes rank R throw while the others
 * hang; {@code hang} never ends.
 */
public final class LauncherTestMain {
    private LauncherTestMain() {
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(System.getenv(LaunchEnv.RANK));
        int world = Integer.parseInt(System.getenv(LaunchEnv.WORLD_SIZE));
        switch (args[0]) {
            case "ok" -> {
                Rendezvous rv = Rendezvous.fromEnvironment(System.getenv());
                byte[] secret = {(byte) 0xCA, (byte) 0xFE, (byte) world};
                if (rank == 0) {
                    rv.put("secret", secret);
                }
                byte[] got = rv.get("secret", Duration.ofSeconds(60));
                System.out.println("got " + HexFormat.of().formatHex(got));
                System.out.println("env CUDA_VISIBLE_DEVICES=" + System.getenv("CUDA_VISIBLE_DEVICES")
                        + " MPS=" + System.getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
                        + " PES_PER_GPU=" + System.getenv(LaunchEnv.PES_PER_GPU)
                        + " REMOTE=" + System.getenv("NVSHMEM_REMOTE_TRANSPORT")
                        + " EXTRA=" + System.getenv("MOECOMM_TEST_EXTRA"));
                System.err.println("stderr line of rank " + rank);
            }
            case "fail" -> {
                int failing = Integer.parseInt(args[1]);
                if (rank == failing) {
                    Thread.sleep(300);
                    throw new IllegalStateException("boom from rank " + rank);
                }
                Thread.sleep(120_000);
            }
            case "hang" -> Thread.sleep(120_000);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }
}
