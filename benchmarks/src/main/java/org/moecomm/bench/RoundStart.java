package org.moecomm.bench;

/**
 * How the ranks are brought together before each timed half of a GPU round.
 *
 * <ul>
 *   <li>{@link #HOST}: a barrier the host waits for, then the events and launches of the half.
 *       The time includes the host's launch latency and the ranks' skew as their hosts wake up:
 *       what an application that launches each round sees.</li>
 *   <li>{@link #ALIGNED}: the same barrier, then the rank processes meet at a spin barrier in
 *       shared memory ({@link HostSpinBarrier}) and leave it within a few hundred nanoseconds of one
 *       another before they record their events and launch. The launch latency stays, the hosts'
 *       skew goes: how {@code pplx_baseline.cu} times pplx-kernels' launches ({@code host-plain},
 *       {@code host-graph}), so that both libraries are timed alike.</li>
 *   <li>{@link #DEVICE}: a barrier kernel on the stream that the host does not wait for; the
 *       events and the half are enqueued behind it, so they start on the GPU as the barrier opens
 *       on every rank at about the same time (pplx-kernels' benchmark enqueues its samples so:
 *       {@code nvshmemx_barrier_all_on_stream} before each, ten samples before the host waits).
 *       The time is the GPU's alone, without launch latency or host skew: what a round inside a
 *       longer graph or behind other GPU work sees, and the floor the kernels set.</li>
 * </ul>
 */
enum RoundStart implements Labelled {
    HOST("host"),
    ALIGNED("aligned"),
    DEVICE("device");

    private final String label;

    RoundStart(String label) {
        this.label = label;
    }

    /** The word of the command line and the JSON field {@code start}. */
    @Override
    public String label() {
        return label;
    }

    static RoundStart byLabel(String s) {
        return Labelled.byLabel(RoundStart.class, s, "round start");
    }

    @Override
    public String toString() {
        return label;
    }
}
