package org.moecomm.core;

/**
 * Where dispatch checks that the expert ids of its m tokens lie in {@code [-1, E)}.
 */
public enum ExpertIdCheck {
    /**
     * On the host where reading the ids there is cheap (the CPU backend), on the device where it
     * would wait for the device (a GPU: a synchronising copy on every dispatch). The default.
     */
    AUTO,
    /**
     * On the host, before any work: a bad id is an {@link IllegalArgumentException} from
     * {@code dispatchSend}, and the handle stays usable. On a GPU every dispatch then waits for the
     * device's queued work.
     */
    HOST,
    /**
     * On the device, in the dispatch's stream: no host synchronisation. The round runs to its end
     * with bad ids skipped, and the {@link IllegalArgumentException} naming the first bad id comes
     * from the handle's next call, which fails the handle.
     */
    DEVICE
}
