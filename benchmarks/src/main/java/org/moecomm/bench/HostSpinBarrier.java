package org.moecomm.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A spin barrier of the rank processes of one machine, in a file that every one of them maps: a
 * rank writes the number of the barrier it has reached into its own cache line, then spins until
 * every rank's line holds at least that number, so the ranks leave within a few hundred
 * nanoseconds of one another. The bridge's barrier with a stream synchronisation releases the
 * hosts 1-3 us apart (each wakes from its own synchronisation), and a plain launch's kernel starts
 * when its host gets to it; {@code pplx_baseline.cu} meets at the same kind of barrier before its
 * launches, so both libraries are timed from hosts that start together.
 *
 * <p>The launcher makes the file ({@link #create}) before it starts the ranks; each rank opens it
 * ({@link #open}). A rank that does not arrive within the bound fails the others' wait with an
 * exception naming it and the barrier it is at.
 */
final class HostSpinBarrier implements AutoCloseable {
    /** Bytes between two ranks' words: a cache line apart (two, against the adjacent-line prefetch). */
    static final int STRIDE = 128;
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();
    /** Spins between two reads of the clock. */
    private static final int SPINS_PER_CLOCK = 1024;

    private final Arena arena;
    private final MemorySegment words;
    private final int rank;
    private final int world;
    private final long boundNanos;
    private long reached;

    private HostSpinBarrier(Arena arena, MemorySegment words, int rank, int world, long boundNanos) {
        this.arena = arena;
        this.words = words;
        this.rank = rank;
        this.world = world;
        this.boundNanos = boundNanos;
    }

    /** Makes the zeroed file of a barrier of {@code world} ranks at {@code file} (replacing one there). */
    static Path create(Path file, int world) {
        checkWorld(world);
        try {
            Files.write(file, new byte[world * STRIDE]);
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make the host barrier's file " + file, e);
        }
    }

    /** Rank {@code rank}'s side of the barrier in {@code file} (made by {@link #create}). */
    static HostSpinBarrier open(Path file, int rank, int world, Duration bound) {
        checkWorld(world);
        if (rank < 0 || rank >= world) {
            throw new IllegalArgumentException("rank " + rank + " is not in a world of " + world);
        }
        if (bound.isNegative() || bound.isZero()) {
            throw new IllegalArgumentException("the bound must be positive, got " + bound);
        }
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long size = (long) world * STRIDE;
            if (ch.size() != size) {
                throw new IllegalArgumentException("the host barrier's file " + file + " holds " + ch.size()
                        + " bytes, not the " + size + " of a world of " + world);
            }
            MemorySegment words = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            return new HostSpinBarrier(arena, words, rank, world, bound.toNanos());
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot map the host barrier's file " + file, e);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private static void checkWorld(int world) {
        if (world < 1) {
            throw new IllegalArgumentException("a world has at least one rank, got " + world);
        }
    }

    /** Arrives at the next barrier and returns when every rank has arrived at it. */
    void await() {
        long n = ++reached;
        WORD.setVolatile(words, (long) rank * STRIDE, n);
        long start = System.nanoTime();
        for (int r = 0; r < world; r++) {
            int spins = 0;
            while ((long) WORD.getVolatile(words, (long) r * STRIDE) < n) {
                Thread.onSpinWait();
                if (++spins == SPINS_PER_CLOCK) {
                    spins = 0;
                    long waited = System.nanoTime() - start;
                    if (waited > boundNanos) {
                        throw timedOut(n, waited);
                    }
                }
            }
        }
    }

    private IllegalStateException timedOut(long n, long waitedNanos) {
        List<String> behind = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            long at = (long) WORD.getVolatile(words, (long) r * STRIDE);
            if (at < n) {
                behind.add("rank " + r + " (at #" + at + ")");
            }
        }
        return new IllegalStateException("rank " + rank + ": host start barrier #" + n + " not reached within "
                + Duration.ofNanos(waitedNanos).toMillis() + " ms by " + String.join(", ", behind));
    }

    @Override
    public void close() {
        arena.close();
    }
}
