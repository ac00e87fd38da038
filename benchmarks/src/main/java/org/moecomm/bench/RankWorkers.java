package org.moecomm.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntConsumer;

/**
 * One long-lived platform thread per rank, so a benchmark's collective step costs a hand-off
 * rather than a thread start. {@link #run} gives every rank the same task and returns when all
 * are done, rethrowing the first failure.
 */
final class RankWorkers implements AutoCloseable {
    private final List<Thread> threads = new ArrayList<>();
    private final List<BlockingQueue<Runnable>> inboxes = new ArrayList<>();

    RankWorkers(int worldSize) {
        for (int r = 0; r < worldSize; r++) {
            BlockingQueue<Runnable> inbox = new ArrayBlockingQueue<>(1);
            inboxes.add(inbox);
            Thread t = Thread.ofPlatform().name("rank-" + r).daemon().start(() -> {
                try {
                    while (true) {
                        inbox.take().run();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            threads.add(t);
        }
    }

    int worldSize() {
        return threads.size();
    }

    void run(IntConsumer task) {
        List<CompletableFuture<Void>> done = new ArrayList<>();
        for (int r = 0; r < threads.size(); r++) {
            int rank = r;
            CompletableFuture<Void> f = new CompletableFuture<>();
            done.add(f);
            inboxes.get(r).add(() -> {
                try {
                    task.accept(rank);
                    f.complete(null);
                } catch (Throwable e) {
                    f.completeExceptionally(e);
                }
            });
        }
        RuntimeException first = null;
        for (CompletableFuture<Void> f : done) {
            try {
                f.join();
            } catch (RuntimeException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                if (first == null) {
                    first = cause instanceof RuntimeException re ? re : new RuntimeException(cause);
                } else {
                    first.addSuppressed(cause);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public void close() {
        threads.forEach(Thread::interrupt);
    }
}
