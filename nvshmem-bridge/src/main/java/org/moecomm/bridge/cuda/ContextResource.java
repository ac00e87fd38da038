package org.moecomm.bridge.cuda;

/**
 * A driver object made in a {@link CudaContext}. The first {@link #close()} releases it; later
 * closes do nothing, and use after close throws {@link IllegalStateException}.
 */
abstract class ContextResource implements AutoCloseable {
    final CudaContext context;
    private final String closedMessage;
    private boolean closed;

    ContextResource(CudaContext context, String closedMessage) {
        this.context = context;
        this.closedMessage = closedMessage;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(closedMessage);
        }
    }

    /** Releases the driver resource; runs once, from the first {@link #close()}. */
    abstract void release();

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        release();
    }
}
