package org.moecomm.core.cpu;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.Workload;
import org.moecomm.core.protocol.AllToAllProtocol;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelRunner;

/**
 * The host time of the protocol's own part of a whole dispatch and combine call (input checks,
 * round state, argument lists) with launches that do nothing: deepseek-v3, W = 1, 1 token, the
 * handle of the CPU backend with its runner's launch replaced. Not part of the build; see README.
 */
public class HostCallProbe {
    static final class NoLaunch implements KernelRunner {
        final CpuRankRunner r; long launches; long arguments;
        NoLaunch(CpuRankRunner r) { this.r = r; }
        public void launch(Kernel k, Grid g, Object... a) { launches++; arguments += a.length; }
        public void prepare(Kernel k, int t, Object... a) { }
        public int concurrentBlocks() { return r.concurrentBlocks(); }
        public int blockThreads(int d) { return r.blockThreads(d); }
        public int residentBlocks(Kernel k, int t, Object... a) { return r.residentBlocks(k, t, a); }
        public boolean blocksMayWaitForEachOther(Kernel k, Grid g, Object... a) { return true; }
        public void synchronize() { }
        public void close() { }
    }

    public static void main(String[] args) throws Exception {
        MoeConfig config = Preset.DEEPSEEK_V3.config(1, 1, 1).build();
        Workload w = Workload.generate(config, ThreadLocalRandom.current().nextLong(), Workload.Options.defaults().tokens(1));
        CpuCluster cluster = CpuCluster.create(1);
        CpuRankRunner rr = new CpuRankRunner(cluster.heap(), 0, 1, 64);
        NoLaunch nl = new NoLaunch(rr);
        CpuTransport t = new CpuTransport(cluster, 0, Duration.ofSeconds(5), rr);
        CpuDeviceMemory mem = new CpuDeviceMemory();
        AllToAllProtocol h = new AllToAllProtocol(config, t, nl, mem, mem::close);
        RankBuffers b = RankBuffers.allocate(h);
        DispatchInput in = b.upload(w.rank(0), false);
        for (int rep = 0; rep < 5; rep++) {
            int n = 2_000_000;
            long d = 0, c = 0;
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                h.dispatch(in, b.dispatchOutput());
                long t1 = System.nanoTime();
                h.combine(b.combineInput(), b.out());
                long t2 = System.nanoTime();
                d += t1 - t0; c += t2 - t1;
            }
            System.out.printf("dispatch %.0f ns, combine %.0f ns per call (%.1f launches a round, %.1f arguments a launch)%n",
                    (double) d / n, (double) c / n, (double) nl.launches / ((long) n * (rep + 1)), (double) nl.arguments / nl.launches);
        }
    }
}
