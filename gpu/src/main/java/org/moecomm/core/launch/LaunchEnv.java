package org.moecomm.core.launch;

import java.util.Map;
import java.util.OptionalInt;

/**
 * The environment variables a launcher gives each rank process, and how a rank reads its
 * place in the job from them (or from {@code mpirun}/{@code srun} variables when started that way).
 */
public final class LaunchEnv {
    /** This process's rank in [0, world). */
    public static final String RANK = "MOECOMM_RANK";
    /** Number of ranks. */
    public static final String WORLD_SIZE = "MOECOMM_WORLD_SIZE";
    /** Rank among the ranks of this node. */
    public static final String LOCAL_RANK = "MOECOMM_LOCAL_RANK";
    /** Ranks on this node. */
    public static final String LOCAL_WORLD_SIZE = "MOECOMM_LOCAL_WORLD_SIZE";
    /** Ranks that share this process's GPU (NVSHMEM PEs on one device, under MPS). */
    public static final String PES_PER_GPU = "MOECOMM_PES_PER_GPU";
    /** {@code 127.0.0.1:port} of the launcher's rendezvous (where rank 0 leaves the NVSHMEM unique id). */
    public static final String RENDEZVOUS = "MOECOMM_RENDEZVOUS";
    /** Secret every rendezvous request must carry. */
    public static final String RENDEZVOUS_TOKEN = "MOECOMM_RENDEZVOUS_TOKEN";
    /** Optional CUDA device ordinal (as this process sees them) to use. */
    public static final String DEVICE = "MOECOMM_DEVICE";
    /**
     * Read by {@link LocalLauncher}, not by the ranks: words put before every rank's {@code java}
     * command (separated by white space, no quoting), for example
     * {@code compute-sanitizer --tool memcheck --error-exitcode 86}. Unset or blank: none.
     */
    public static final String RANK_WRAPPER = "MOECOMM_RANK_WRAPPER";

    private LaunchEnv() {
    }

    /** This process's place in a job, as far as the environment says. */
    public record Place(int rank, int worldSize, int localRank, int localWorldSize, int pesPerGpu, String source) {
    }

    /**
     * Reads the place from the launcher's variables, else from those of MPI launchers and Slurm
     * ({@code OMPI_COMM_WORLD_*}, {@code PMI_RANK}/{@code PMI_SIZE}, {@code PMIX_RANK},
     * {@code SLURM_PROCID}/{@code SLURM_NTASKS}/{@code SLURM_LOCALID}), else a single process.
     */
    public static Place place(Map<String, String> env) {
        OptionalInt rank = integer(env, RANK);
        OptionalInt world = integer(env, WORLD_SIZE);
        String source;
        if (rank.isPresent() && world.isPresent()) {
            source = "launcher";
        } else if (integer(env, "OMPI_COMM_WORLD_RANK").isPresent()) {
            rank = integer(env, "OMPI_COMM_WORLD_RANK");
            world = integer(env, "OMPI_COMM_WORLD_SIZE");
            source = "Open MPI";
        } else if (integer(env, "SLURM_PROCID").isPresent() && integer(env, "SLURM_NTASKS").isPresent()) {
            rank = integer(env, "SLURM_PROCID");
            world = integer(env, "SLURM_NTASKS");
            source = "Slurm";
        } else if (integer(env, "PMI_RANK").isPresent()) {
            rank = integer(env, "PMI_RANK");
            world = integer(env, "PMI_SIZE");
            source = "PMI";
        } else if (integer(env, "PMIX_RANK").isPresent()) {
            rank = integer(env, "PMIX_RANK");
            world = OptionalInt.empty();
            source = "PMIx";
        } else {
            return new Place(0, 1, 0, 1, 1, "single process");
        }
        int r = rank.orElse(0);
        int w = world.orElse(-1);
        int localRank = first(env, LOCAL_RANK, "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
                "PMI_LOCAL_RANK").orElse(0);
        int localWorld = first(env, LOCAL_WORLD_SIZE, "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE",
                "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE").orElse(1);
        int pesPerGpu = integer(env, PES_PER_GPU).orElse(1);
        return new Place(r, w, localRank, localWorld, pesPerGpu, source);
    }

    private static OptionalInt first(Map<String, String> env, String... names) {
        for (String n : names) {
            OptionalInt v = integer(env, n);
            if (v.isPresent()) {
                return v;
            }
        }
        return OptionalInt.empty();
    }

    static OptionalInt integer(Map<String, String> env, String name) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            return OptionalInt.empty();
        }
        try {
            return OptionalInt.of(Integer.parseInt(v.strip()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("environment variable " + name + "=" + v + " is not an integer", e);
        }
    }
}
