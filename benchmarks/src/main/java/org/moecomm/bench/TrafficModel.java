package org.moecomm.bench;

import java.util.HashSet;
import java.util.Set;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.Workload;
import org.moecomm.core.protocol.BufferLayout;
import org.moecomm.core.reference.RankInputs;

/**
 * Bytes a round moves, from the routing alone. "Logical" bytes follow BENCHMARKS.md (every
 * (token, expert) pair counted, as other libraries report), for the whole world; "wire" bytes are
 * what this protocol puts: one row per (token, destination rank) for dispatch, and each pair's
 * expert output to every member of the token's group for combine; {@code device} what each
 * phase's kernels read and write in device memory ({@link DeviceBytes}).
 */
record TrafficModel(long pairs, long dispatchRows, long logicalDispatchBytes, long logicalCombineBytes,
                    long wireDispatchBytes, long wireCombineBytes, DeviceBytes device) {

    static TrafficModel of(Workload workload, BufferLayout layout) {
        MoeConfig c = workload.config();
        long pairs = 0;
        long rows = 0;
        long tokens = 0;
        for (int g = 0; g < c.numGroups(); g++) {
            RankInputs in = workload.rank(g * c.groupSize());
            tokens += (long) in.m() * c.groupSize();
            for (int t = 0; t < in.m(); t++) {
                Set<Integer> destinations = new HashSet<>();
                for (int k = 0; k < c.topK(); k++) {
                    int e = in.indices()[t * c.topK() + k];
                    if (e >= 0) {
                        pairs++;
                        destinations.add(c.rankOfExpert(e));
                    }
                }
                rows += destinations.size();
            }
        }
        // the tokens as dispatch moves them: fp8 codes and scales when it quantises
        long tokenBytes = (long) c.hidden() * c.expertInType().bytes() + 4L * c.scalesPerToken();
        long yBytes = (long) c.hidden() * c.expertOutType().bytes();
        return new TrafficModel(pairs, rows, pairs * tokenBytes, pairs * c.hidden() * 2L, rows * layout.rowBytes(),
                pairs * yBytes * c.groupSize(), DeviceBytes.of(c, layout, tokens, pairs, rows));
    }
}
