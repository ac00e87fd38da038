package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.check.Workload;
import org.moecomm.core.testing.Harness;

/**
 * Which combine recv kernel a handle launches: a decode handle's grid (one token, its hidden
 * dimension split over a few blocks) is resident at once, so it runs {@code combineRecvResident},
 * the kernel with the larger register budget, and its rounds match the reference.
 */
@Timeout(120)
class CombineRecvKernelTest {
    @Test
    void aDecodeHandleRunsTheResidentKernelAndMatchesTheReference() {
        MoeConfig config = Harness.config().worldSize(4).groupSize(1).numExperts(16).topK(4).hidden(2048)
                .maxTokensPerRank(1).build();
        List<String> kernels = Harness.onAllRanks(config,
                (h, b) -> ((AllToAllProtocol) h).combineRecvKernel().name());
        assertEquals(List.of("combineRecvResident", "combineRecvResident", "combineRecvResident",
                "combineRecvResident"), kernels);
        Harness.checkedRounds(config, 3, round -> Workload.generate(config, 1500 + round), false);
    }
}
