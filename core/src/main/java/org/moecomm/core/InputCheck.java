package org.moecomm.core;

/**
 * Where dispatch checks the inputs that live in device memory: the expert ids of its m tokens
 * (in {@code [-1, E)}) and a token count passed in a buffer ({@link TokenCount#inBuffer}, in
 * {@code [0, M]}).
 */
public enum InputCheck {
    /**
     * On the host where reading them there is cheap (the CPU backend), on the device where it
     * would wait for the device (a GPU: a synchronising copy on every dispatch). The default.
     */
    AUTO,
    /**
     * On the host, before any work: a bad id or count is an {@link IllegalArgumentException} from
     * {@code dispatchSend}, and the handle stays usable. On a GPU every dispatch then waits for the
     * device's queued work.
     */
    HOST,
    /**
     * On the device, in the dispatch's stream ({@code pack}): no host synchronisation. The round
     * runs to its end with bad ids skipped and the count clamped to {@code [0, M]}; the
     * {@link IllegalArgumentException} naming the first bad id or the bad count comes from the
     * handle's next call, which fails the handle. A count in a buffer is then never read on the
     * host, so the token tensors ({@code x}, {@code xScale}, {@code indices}, {@code weights},
     * {@code out}) must have M rows.
     */
    DEVICE
}
