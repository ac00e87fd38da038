package org.moecomm.core.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.Workload;
import org.moecomm.core.launch.LaunchEnv;

/**
 * A rank of the GPU test of the device-side expert id check (the default on a GPU: no host
 * synchronisation per dispatch): a checked round, then a dispatch with one id out of range,
 * which must run, and, once the device finished it (a barrier that waits for the stream), an
 * {@link IllegalArgumentException} naming token, slot and id from the next call, on every rank.
 * With the argument {@code repeated} the bad id is one the token names in an earlier slot.
 * Prints {@code CHECK bad-expert-id ok rank r}.
 */
public final class BadExpertIdMain {
    private BadExpertIdMain() {
    }

    public static void main(String[] args) {
        int world = Integer.parseInt(System.getenv(LaunchEnv.WORLD_SIZE));
        MoeConfig config = MoeConfig.builder().worldSize(world).numExperts(4 * world).topK(4).hidden(512)
                .maxTokensPerRank(32).waitTimeout(Duration.ofSeconds(30)).build();
        try (GpuBackend gpu = GpuBackend.start(config)) {
            int rank = gpu.rank();
            try (MoeAllToAll h = gpu.createHandle(config)) {
                RankBuffers buffers = RankBuffers.allocate(h);
                Workload good = Workload.generate(config, 7, Workload.Options.defaults());
                CheckedRound.run(buffers, good, false).assertOk();
                DispatchInput in = buffers.upload(Workload.generate(config, 8, Workload.Options.defaults()).rank(rank),
                        false);
                int token = 5 + rank;
                int slot = 2;
                boolean repeat = args.length > 0 && args[0].equals("repeated");
                int bad = repeat ? rank % config.numExperts() : config.numExperts() + rank;
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment s = a.allocate(4);
                    s.set(ValueLayout.JAVA_INT, 0, bad);
                    h.memory().copyFromHost(in.indices().buf(), 4L * (token * config.topK() + slot), s);
                    if (repeat) { // the same expert in an earlier slot of the token
                        h.memory().copyFromHost(in.indices().buf(), 4L * (token * config.topK()), s);
                    }
                }
                h.dispatchSend(in); // runs: the id is checked on the device
                gpu.deviceTiming(h).barrier().run(); // every rank's dispatch has run
                try {
                    h.dispatchRecv(buffers.dispatchOutput());
                    throw new IllegalStateException("rank " + rank + ": no exception for expert id " + bad);
                } catch (IllegalArgumentException e) {
                    String want = "expert id " + bad + " of token " + token + ", slot " + slot;
                    if (!e.getMessage().contains(want) || !e.getMessage().contains("found on the device")
                            || repeat != e.getMessage().contains("repeats")) {
                        throw new IllegalStateException("rank " + rank + ": unexpected message: " + e.getMessage(), e);
                    }
                    System.out.println("CHECK bad-expert-id ok rank " + rank + ": " + e.getMessage());
                }
            }
        }
    }
}
