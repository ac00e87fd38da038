package org.moecomm.core.gpu;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.moecomm.bridge.cuda.CudaContext;
import org.moecomm.bridge.cuda.CudaException;
import org.moecomm.bridge.cuda.CudaStream;
import org.moecomm.bridge.cuda.DeviceBuffer;
import org.moecomm.bridge.nvshmem.DeviceError;
import org.moecomm.bridge.nvshmem.ErrorBuffer;
import org.moecomm.core.AbortReason;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.kernels.api.Buf;

/**
 * What one handle's GPU work shares: the CUDA context, the stream every launch and copy of the
 * handle is enqueued on (so the GPU executes them in issue order), the error buffer the kernels'
 * bounded waits and the bridge's barrier report to, and the names of the signals waited for.
 *
 * <p>Errors are found without synchronising: {@link #check()} reads the host-mapped error record
 * (a few nanoseconds) and throws; every transport call, launch and synchronising copy calls it.
 * The first failure is sticky: after it, every check throws again (the handle is unusable).
 */
final class GpuExecution implements AutoCloseable {
    private static final int NAME_SLOTS = 1 << 16;
    private static final long ERROR_CONTEXT_BYTES = 24;

    private final CudaContext context;
    private final CudaStream stream;
    private final ErrorBuffer errors;
    private final int rank;
    private final long timeoutNanos;
    private final Consumer<String> onFailure;
    private final String[] names = new String[NAME_SLOTS];
    private final int[] nameTags = new int[NAME_SLOTS];
    private int nextTag = 1;
    private DeviceError failure;
    private String failureName;
    private boolean cudaFailureNoted;
    private boolean closed;

    /**
     * {@code onFailure} is told, with a reason, when a recorded failure is first seen, when this
     * rank raises an abort and when a CUDA call on the stream fails (the backend then skips the
     * collective teardown: {@link Teardown}).
     */
    GpuExecution(CudaContext context, CudaStream stream, ErrorBuffer errors, int rank, long timeoutNanos,
                 Consumer<String> onFailure) {
        this.context = context;
        this.stream = stream;
        this.errors = errors;
        this.rank = rank;
        this.timeoutNanos = timeoutNanos;
        this.onFailure = onFailure;
    }

    CudaContext context() {
        return context;
    }

    CudaStream stream() {
        return stream;
    }

    long streamHandle() {
        return stream.handle();
    }

    ErrorBuffer errors() {
        return errors;
    }

    int rank() {
        return rank;
    }

    /** The device error context as a kernel argument (the {@code mnv_error_ctx} of the bridge: 24 bytes). */
    Buf errorContext() {
        return DeviceBuffer.wrapBuf(errors.context(), ERROR_CONTEXT_BYTES);
    }

    long timeoutNanos() {
        return timeoutNanos;
    }

    /** Makes the context current on the calling thread and throws a recorded failure, if any. */
    void enter() {
        ensureOpen();
        context.bind();
        check();
    }

    /** A tag for the device to report with: remembers what the operation was for error messages. */
    synchronized int register(String what) {
        int tag = nextTag;
        nextTag = nextTag == Integer.MAX_VALUE ? 1 : nextTag + 1;
        int slot = tag & (NAME_SLOTS - 1);
        names[slot] = what;
        nameTags[slot] = tag;
        return tag;
    }

    /** Tags for {@code names} in order, consecutive (the first is returned); see {@link #register}. */
    synchronized int registerConsecutive(List<String> names) {
        if (names.size() >= NAME_SLOTS) {
            throw new IllegalArgumentException(names.size() + " names, more than the " + NAME_SLOTS + " kept");
        }
        if (nextTag > Integer.MAX_VALUE - names.size()) {
            nextTag = 1; // no wrap inside the range
        }
        int first = nextTag;
        for (String name : names) {
            register(name);
        }
        return first;
    }

    private synchronized String nameOf(int tag) {
        int slot = tag & (NAME_SLOTS - 1);
        return nameTags[slot] == tag && names[slot] != null ? names[slot] : "operation #" + tag;
    }

    /** Throws the failure a kernel recorded, if any. Cheap: one read of host memory. */
    void check() {
        if (poll() != null) {
            throw toException(failure, failureName);
        }
    }

    /** The recorded failure (read once from the error buffer, then kept), or null. */
    private DeviceError poll() {
        if (failure == null) {
            Optional<DeviceError> e = errors.poll();
            if (e.isEmpty()) {
                return null;
            }
            failure = e.get();
            failureName = nameOf(failure.tag());
            noteFailure("rank " + rank + ": " + failure.kind() + " in " + failureName);
        }
        return failure;
    }

    /** The recorded failure as the exception the caller sees, without throwing; empty when none. */
    Optional<RuntimeException> failure() {
        try {
            check();
            return Optional.empty();
        } catch (RuntimeException e) {
            return Optional.of(e);
        }
    }

    boolean failed() {
        return failure().isPresent();
    }

    /** This rank raised an abort: its backend skips the collective teardown, as after a recorded failure. */
    void noteAbortRaised() {
        noteFailure("rank " + rank + " raised its abort word");
    }

    /** A failure the device did not record (a failed CUDA or NVSHMEM call): no collective teardown either. */
    void noteFailure(String why) {
        if (onFailure != null) {
            onFailure.accept(why);
        }
    }

    /** A CUDA call on this stream failed: the context may be unusable, a peer may be gone (once per execution). */
    private void noteCudaFailure(CudaException e) {
        if (!cudaFailureNoted) {
            cudaFailureNoted = true;
            noteFailure("rank " + rank + ": " + e.getMessage());
        }
    }

    /** The abort word a wait of this execution found raised (0: none seen). */
    long abortWordSeen() {
        DeviceError e = poll();
        return e != null && e.kind() == DeviceError.Kind.PEER_ABORTED ? e.seen() : 0;
    }

    /**
     * Forgets a recorded failure after the stream drained: for a job whose ranks all saw the
     * failure and agree to go on (tests of the error paths). Returns whether there was one.
     */
    boolean clearFailure() {
        ensureOpen();
        context.bind();
        stream.synchronize();
        boolean had = failure != null; // seen by check(), so onFailure ran
        errors.clear();
        failure = null;
        failureName = null;
        return had;
    }

    /** Waits for everything enqueued on the stream, then reports a recorded failure. */
    void synchronize() {
        ensureOpen();
        context.bind();
        try {
            stream.synchronize();
        } catch (CudaException e) {
            noteCudaFailure(e);
            Optional<RuntimeException> recorded = failure();
            if (recorded.isPresent()) {
                recorded.get().addSuppressed(e);
                throw recorded.get();
            }
            throw new MoeCommException("rank " + rank + ": GPU work failed: " + e.getMessage(), e);
        }
        check();
    }

    private RuntimeException toException(DeviceError e, String name) {
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(e.waitedNanos());
        return switch (e.kind()) {
            case WAIT_TIMEOUT -> new WaitTimeoutException(e.rank(), e.peer(), name, e.expected(), e.seen(), waitedMs);
            case BARRIER_TIMEOUT -> new WaitTimeoutException(e.rank(), e.peer(), name + " (PE " + e.peer()
                    + " did not arrive)", e.expected(), e.seen(), waitedMs);
            case PEER_ABORTED -> new PeerAbortedException(e.rank(), AbortReason.rankOf(e.seen()),
                    AbortReason.of(e.seen()), "the wait for " + name);
            case UNKNOWN -> new MoeCommException("rank " + e.rank() + ": the NVSHMEM bridge recorded an unknown failure"
                    + " (" + e + ")");
        };
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("rank " + rank + ": GPU handle is closed");
        }
    }

    /** Waits for the stream (errors ignored: closing) and frees the stream and the error buffer. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        CloseFailures failures = new CloseFailures();
        failures.run(() -> {
            context.bind();
            try {
                stream.synchronize();
            } catch (CudaException e) {
                noteCudaFailure(e);
                throw e;
            }
        });
        failures.run(() -> stream.close());
        failures.run(() -> errors.close());
        failures.throwIfAny();
    }
}
