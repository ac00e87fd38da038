package org.moecomm.core.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.DType;
import org.moecomm.core.DeviceMemory;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.Tensor;
import org.moecomm.core.TokenCount;

/**
 * The README's "Using it" example, as it stands there (keep the two in step): tensors from Java
 * arrays, a round on the CPU backend with identity experts, the result read back into an array.
 */
@Timeout(120)
class ReadmeExampleTest {
    @Test
    void theReadmeExampleRuns() {
        MoeConfig config = Preset.MIXTRAL_8X7B.config(/* W */ 2, /* G */ 1, /* M */ 4).build(); // bf16, E = 8, K = 2
        int m = 4, h = config.hidden(), k = config.topK(), l = config.expertsPerRank(), cap = config.expertCapacity();
        List<float[]> results;
        try (CpuCluster cluster = CpuCluster.create(2)) {
            results = cluster.runOnAllRanks(rank -> {
                try (MoeAllToAll a2a = cluster.createHandle(rank, config)) {
                    DeviceMemory mem = a2a.memory();
                    Tensor x = Tensor.fromFloats(mem, DType.BF16, tokens(rank, m, h), m, h); // rounded to nearest even
                    Tensor ids = Tensor.fromInts(mem, expertIds(rank, m, k), m, k);
                    Tensor weights = Tensor.fromFloats(mem, DType.FP32, routerWeights(m, k), m, k);
                    DispatchOutput got = new DispatchOutput(mem.allocate(DType.INT32, l),
                            mem.allocate(DType.BF16, l, cap, h), null);
                    a2a.dispatchSend(new DispatchInput(x, null, ids, TokenCount.of(m)));
                    a2a.dispatchRecv(got);
                    int[] perExpert = got.expertNumTokens().toInts(mem); // tokens each local expert received
                    assertArrayEquals(expectedCounts(rank, m, k, l), perExpert);
                    // ... the experts run on got.expertX() into expertY; here they are the identity ...
                    Tensor out = mem.allocate(DType.BF16, m, h);
                    a2a.combineSend(got.expertX());
                    a2a.combineRecv(weights, out);
                    return out.toFloats(mem); // per token, the weighted sum of its experts' outputs
                }
            });
        }
        // identity experts with weights summing to 1: every token comes back as it went
        for (int rank = 0; rank < 2; rank++) {
            float[] sent = tokens(rank, m, h);
            for (int i = 0; i < sent.length; i++) {
                sent[i] = DType.BF16.round(sent[i]);
            }
            assertArrayEquals(sent, results.get(rank), "rank " + rank);
        }
    }

    private static float[] tokens(int rank, int m, int h) {
        float[] x = new float[m * h];
        for (int i = 0; i < x.length; i++) {
            x[i] = (rank + 1) * 0.01f * (i % 97) - 0.3f;
        }
        return x;
    }

    /** Token t picks experts (t + rank) % 4 and 4 + t (one on each rank's half of the 8 experts). */
    private static int[] expertIds(int rank, int m, int k) {
        int[] ids = new int[m * k];
        for (int t = 0; t < m; t++) {
            ids[t * k] = (t + rank) % 4;
            ids[t * k + 1] = 4 + t;
        }
        return ids;
    }

    /** How many of both ranks' tokens picked each of {@code rank}'s local experts. */
    private static int[] expectedCounts(int rank, int m, int k, int l) {
        int[] counts = new int[l];
        for (int source = 0; source < 2; source++) {
            for (int id : expertIds(source, m, k)) {
                if (id / l == rank) {
                    counts[id % l]++;
                }
            }
        }
        return counts;
    }

    private static float[] routerWeights(int m, int k) {
        float[] w = new float[m * k];
        Arrays.fill(w, 0.5f);
        return w;
    }
}
