package org.moecomm.core;

/** Base of the library's runtime failures (not input validation, which throws IllegalArgumentException/IllegalStateException). */
public class MoeCommException extends RuntimeException {
    public MoeCommException(String message) {
        super(message);
    }

    public MoeCommException(String message, Throwable cause) {
        super(message, cause);
    }
}
