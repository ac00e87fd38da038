package org.moecomm.core.launch;

import org.moecomm.core.MoeCommException;

/** A multi-process run failed: a rank exited with an error, the run timed out, or a process could not start. */
public final class LaunchException extends MoeCommException {
    private static final long serialVersionUID = 1L;

    private final int failedRank;
    private final int exitCode;

    public LaunchException(String message) {
        this(message, -1, 0, null);
    }

    public LaunchException(String message, Throwable cause) {
        this(message, -1, 0, cause);
    }

    public LaunchException(String message, int failedRank, int exitCode, Throwable cause) {
        super(message, cause);
        this.failedRank = failedRank;
        this.exitCode = exitCode;
    }

    /** The rank that failed first, or -1 when no single rank is to blame (timeout, start failure). */
    public int failedRank() {
        return failedRank;
    }

    /** Its exit code (0 when not applicable). */
    public int exitCode() {
        return exitCode;
    }
}
