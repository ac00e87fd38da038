package org.moecomm.core.check;

import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;

/**
 * One full round on one rank, checked against the reference: poison the outputs, upload the
 * rank's inputs, dispatch, play the experts, combine, then check both operations' outputs
 * ({@link #outputs}; combine leaves dispatch's outputs as they were). Collective: every rank of
 * the world runs it with the same workload.
 */
public final class CheckedRound {
    private CheckedRound() {
    }

    /**
     * @param countInBuffer pass m as {@link org.moecomm.core.TokenCount#inBuffer} instead of a Java int
     * @return the dispatch and combine reports of this rank
     */
    public static ResultCheck.Report run(RankBuffers buffers, Workload workload, boolean countInBuffer) {
        return run(buffers, workload, countInBuffer, () -> { });
    }

    /**
     * Like {@link #run(RankBuffers, Workload, boolean)}, with each operation split into its send
     * and receive halves and {@code betweenHalves} run between them (other work overlapping the
     * transfer).
     */
    public static ResultCheck.Report run(RankBuffers buffers, Workload workload, boolean countInBuffer,
                                         Runnable betweenHalves) {
        return run(buffers, workload, countInBuffer, false, betweenHalves);
    }

    /**
     * Like {@link #run(RankBuffers, Workload, boolean)}, each operation called whole
     * ({@link MoeAllToAll#dispatch}, {@link MoeAllToAll#combine}): dispatch is then one launch
     * where the handle joins its halves (decode sizes).
     */
    public static ResultCheck.Report runWhole(RankBuffers buffers, Workload workload, boolean countInBuffer) {
        return run(buffers, workload, countInBuffer, true, () -> { });
    }

    /**
     * The dispatch and combine reports of the outputs in {@code buffers} as a round left them (the
     * caller ran the round, with its outputs poisoned before it): for rounds run another way than
     * {@link #run}, such as graph replays or a benchmark's timed rounds.
     */
    public static ResultCheck.Report outputs(RankBuffers buffers, Workload workload) {
        MoeAllToAll h = buffers.handle();
        int rank = h.rank();
        return ResultCheck.dispatch(workload.reference(), rank, h.memory(), buffers.dispatchOutput())
                .and(ResultCheck.combine(workload.reference(), rank, workload.expertFunction(), h.memory(),
                        buffers.out()));
    }

    private static ResultCheck.Report run(RankBuffers buffers, Workload workload, boolean countInBuffer, boolean whole,
                                          Runnable betweenHalves) {
        MoeAllToAll h = buffers.handle();
        int rank = h.rank();
        buffers.poisonOutputs();
        DispatchInput in = buffers.upload(workload.rank(rank), countInBuffer);
        if (whole) {
            h.dispatch(in, buffers.dispatchOutput());
        } else {
            h.dispatchSend(in);
            betweenHalves.run();
            h.dispatchRecv(buffers.dispatchOutput());
        }
        buffers.runExperts();
        if (whole) {
            h.combine(buffers.combineInput(), buffers.out());
        } else {
            h.combineSend(buffers.expertY());
            betweenHalves.run();
            h.combineRecv(buffers.weights(), buffers.out());
        }
        return outputs(buffers, workload);
    }
}
