package org.moecomm.kernels.cpu;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.IntConsumer;
import org.moecomm.kernels.api.Buf;

/**
 * Symmetric memory of {@code world} ranks in one JVM, for tests: {@link #allocate} gives every
 * rank a buffer of the same size; {@link #rank(int)} is one rank's view.
 */
final class TestPeerMemory {
    /** The waits' error context on the JVM is the abort word they watch: this one is never raised. */
    static final Buf NO_ABORT = Buf.of(java.lang.foreign.MemorySegment.ofArray(new long[1]));

    private final int world;
    private final Arena arena;
    /** buffers.get(i)[r]: rank r's copy of symmetric buffer i. */
    private final List<Buf[]> buffers = new ArrayList<>();

    TestPeerMemory(int world, Arena arena) {
        this.world = world;
        this.arena = arena;
    }

    /** Collective allocation: one zeroed buffer of {@code bytes} per rank; returns them by rank. */
    Buf[] allocate(long bytes) {
        Buf[] copies = new Buf[world];
        for (int r = 0; r < world; r++) {
            copies[r] = Buf.allocate(arena, bytes);
        }
        buffers.add(copies);
        return copies;
    }

    PeerMemory rank(int rank) {
        return new PeerMemory() {
            @Override
            public int rank() {
                return rank;
            }

            @Override
            public int worldSize() {
                return world;
            }

            @Override
            public Buf onPeer(Buf local, int pe) {
                if (pe < 0 || pe >= world) {
                    throw new IllegalArgumentException("pe " + pe + " is outside [0, " + world + ")");
                }
                for (Buf[] copies : buffers) {
                    Buf mine = copies[rank];
                    long offset = local.address() - mine.address();
                    if (offset >= 0 && offset + local.byteSize() <= mine.byteSize()) {
                        return copies[pe].slice(offset, local.byteSize());
                    }
                }
                throw new IllegalArgumentException(local + " is not symmetric memory of rank " + rank);
            }
        };
    }

    /** Runs {@code rank} for every rank at once, each on its own thread; rethrows the first failure. */
    static void allRanks(int world, IntConsumer rank) {
        List<CompletableFuture<Void>> ranks = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            int me = r;
            ranks.add(CompletableFuture.runAsync(() -> rank.accept(me), command -> Thread.ofPlatform().start(command)));
        }
        for (CompletableFuture<Void> f : ranks) {
            try {
                f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
            }
        }
    }
}
