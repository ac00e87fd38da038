package org.moecomm.core.cpu;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.moecomm.core.AbortReason;
import org.moecomm.core.PeerAbortedException;
import org.moecomm.core.WaitTimeoutException;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelRunner;
import org.moecomm.kernels.cpu.CpuKernelRunner;
import org.moecomm.kernels.cpu.KernelExecutionException;
import org.moecomm.kernels.cpu.PeerMemory;
import org.moecomm.kernels.cpu.PeerWaitAbortedException;
import org.moecomm.kernels.cpu.PeerWaitTimeoutException;

/**
 * One rank's kernel runner in a {@link CpuCluster}: a {@link CpuKernelRunner} whose kernels reach
 * the other ranks' symmetric memory (the cluster's heap as {@link PeerMemory}), and which reports a
 * kernel's bounded wait that ran out as the {@link WaitTimeoutException} the GPU backend raises,
 * naming the signal registered for the wait's tag ({@link #registerWaits}), and a wait that found
 * the abort word set as the {@link PeerAbortedException} naming the rank that raised it.
 */
final class CpuRankRunner implements KernelRunner {
    private final CpuKernelRunner runner;
    private final List<String> waitNames = new ArrayList<>();

    CpuRankRunner(SymmetricHeap heap, int rank, int worldSize, int maxBlockThreads) {
        PeerMemory peers = new PeerMemory() {
            @Override
            public int rank() {
                return rank;
            }

            @Override
            public int worldSize() {
                return worldSize;
            }

            /** The last answer: kernels ask for the same peer buffer for every row they store. */
            private volatile PeerView last;

            @Override
            public Buf onPeer(Buf local, int pe) {
                MemorySegment s = local.segment();
                PeerView v = last;
                if (v != null && v.pe() == pe && v.address() == s.address() && v.bytes() == s.byteSize()
                        && v.peer().segment().scope().isAlive()) {
                    return v.peer();
                }
                Buf peer = Buf.of(heap.onPeer(rank, s, pe));
                last = new PeerView(s.address(), s.byteSize(), pe, peer);
                return peer;
            }
        };
        this.runner = new CpuKernelRunner(Runtime.getRuntime().availableProcessors(), peers,
                CpuKernelRunner.Execution.byDefault(), maxBlockThreads);
    }

    /** Names waits of consecutive tags; returns the first tag ({@code names.get(i)} has tag + i). */
    synchronized int registerWaits(List<String> names) {
        int first = waitNames.size();
        waitNames.addAll(names);
        return first;
    }

    private synchronized String waitName(int tag) {
        return tag >= 0 && tag < waitNames.size() ? waitNames.get(tag) : "wait #" + tag;
    }

    @Override
    public void launch(Kernel kernel, Grid grid, Object... args) {
        try {
            runner.launch(kernel, grid, args);
        } catch (KernelExecutionException e) {
            if (e.getCause() instanceof PeerWaitTimeoutException w) {
                WaitTimeoutException timeout = new WaitTimeoutException(w.rank(), w.peer(), waitName(w.tag()),
                        w.expected(), w.seen(), TimeUnit.NANOSECONDS.toMillis(w.waitedNanos()));
                timeout.initCause(e);
                throw timeout;
            }
            if (e.getCause() instanceof PeerWaitAbortedException a) {
                PeerAbortedException aborted = new PeerAbortedException(a.rank(), AbortReason.rankOf(a.abortWord()),
                        AbortReason.of(a.abortWord()), "the wait for " + waitName(a.tag()));
                aborted.initCause(e);
                throw aborted;
            }
            throw e;
        }
    }

    @Override
    public void prepare(Kernel kernel, int threads, Object... args) {
        runner.prepare(kernel, threads, args);
    }

    @Override
    public int concurrentBlocks() {
        return runner.concurrentBlocks();
    }

    @Override
    public boolean blocksMayWaitForEachOther(Kernel kernel, Grid grid, Object... args) {
        return runner.blocksMayWaitForEachOther(kernel, grid, args);
    }

    @Override
    public int blockThreads(int deviceThreads) {
        return runner.blockThreads(deviceThreads);
    }

    @Override
    public void close() {
        runner.close();
    }

    @Override
    public String toString() {
        return "CpuRankRunner[rank " + runner.peerMemory().rank() + "]";
    }

    /** {@code pe}'s copy of the local bytes at {@code address} ({@code bytes} long). */
    private record PeerView(long address, long bytes, int pe, Buf peer) {
    }
}
