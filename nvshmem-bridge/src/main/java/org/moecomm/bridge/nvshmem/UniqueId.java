package org.moecomm.bridge.nvshmem;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * An NVSHMEM unique id ({@code nvshmemx_uniqueid_t}, {@value #BYTES} bytes): made by rank 0 with
 * {@link Nvshmem#uniqueId()}, handed to every other rank, and passed by all of them to
 * {@link Nvshmem#initWithUniqueId}. It names rank 0's bootstrap endpoint, so it is valid for one job.
 */
public final class UniqueId {
    /** Size of {@code nvshmemx_uniqueid_t} in NVSHMEM 3.x. */
    public static final int BYTES = 128;

    private final byte[] bytes;

    private UniqueId(byte[] bytes) {
        this.bytes = bytes;
    }

    public static UniqueId of(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("an NVSHMEM unique id has " + BYTES + " bytes, got " + bytes.length);
        }
        return new UniqueId(bytes.clone());
    }

    /** Parses {@link #toHex()}'s form. */
    public static UniqueId fromHex(String hex) {
        Objects.requireNonNull(hex, "hex");
        byte[] b;
        try {
            b = HexFormat.of().parseHex(hex.strip());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not a hex-encoded NVSHMEM unique id: " + e.getMessage(), e);
        }
        return of(b);
    }

    public byte[] bytes() {
        return bytes.clone();
    }

    public String toHex() {
        return HexFormat.of().formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof UniqueId u && Arrays.equals(u.bytes, bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return "UniqueId[" + toHex().substring(0, 16) + "...]";
    }
}
