package org.moecomm.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.Workload;
import org.moecomm.core.cpu.CpuCluster;
import org.moecomm.core.protocol.BufferLayout;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The CPU backend (W = 4 ranks as threads of one JVM) per operation: {@code dispatch} (send +
 * receive on every rank), {@code combine}, and a whole {@code round}. One invocation is one
 * collective operation; the other operation a round needs (the handle alternates dispatch and
 * combine) runs in an untimed per-invocation setup or teardown, which is sound here because an
 * operation takes milliseconds.
 *
 * <p>Run: {@code scripts/bench-jmh.sh} (JSON into benchmarks/results/).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-Dmoecomm.log.level=WARN"})
public class CpuBackendBenchmark {
    private static final int WORLD = 4;

    @State(Scope.Benchmark)
    public static class World {
        @Param({"deepseek-v2-lite", "qwen3-30b-a3b", "deepseek-v3", "deepseek-v3-bf16-to-fp8"})
        public String preset;

        @Param({"1", "128"})
        public int tokens;

        RankWorkers workers;
        CpuCluster cluster;
        final List<MoeAllToAll> handles = new ArrayList<>();
        final List<RankBuffers> buffers = new ArrayList<>();
        final List<DispatchInput> inputs = new ArrayList<>();
        /** The baseline: a round's logical bytes (every rank's dispatch and combine) as one plain copy. */
        Arena copyArena;
        MemorySegment copySrc;
        MemorySegment copyDst;

        @Setup(Level.Trial)
        public void setUp() {
            MoeConfig config = Preset.byLabel(preset).config(WORLD, 1, tokens).build();
            Workload workload = Workload.generate(config, 7, Workload.Options.defaults().tokens(tokens));
            TrafficModel traffic = TrafficModel.of(workload, new BufferLayout(config));
            long roundBytes = traffic.logicalDispatchBytes() + traffic.logicalCombineBytes();
            copyArena = Arena.ofShared();
            copySrc = copyArena.allocate(roundBytes, 64).fill((byte) 1);
            copyDst = copyArena.allocate(roundBytes, 64).fill((byte) 0);
            cluster = CpuCluster.create(WORLD);
            workers = new RankWorkers(WORLD);
            for (int r = 0; r < WORLD; r++) {
                handles.add(null);
                buffers.add(null);
                inputs.add(null);
            }
            workers.run(rank -> {
                MoeAllToAll a2a = cluster.createHandle(rank, config);
                RankBuffers b = RankBuffers.allocate(a2a);
                DispatchInput in = b.upload(workload.rank(rank), false);
                synchronized (handles) {
                    handles.set(rank, a2a);
                    buffers.set(rank, b);
                    inputs.set(rank, in);
                }
            });
        }

        void dispatch() {
            workers.run(rank -> handles.get(rank).dispatch(inputs.get(rank), buffers.get(rank).dispatchOutput()));
        }

        /** The experts (host loops of the test workload): never timed. */
        void runExperts() {
            workers.run(rank -> buffers.get(rank).runExperts());
        }

        void combine() {
            workers.run(rank -> handles.get(rank).combine(buffers.get(rank).combineInput(), buffers.get(rank).out()));
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            workers.run(rank -> handles.get(rank).close());
            workers.close();
            cluster.close();
            copyArena.close();
        }
    }

    /** Per-invocation state for the dispatch benchmark: the combine that closes each round, untimed. */
    @State(Scope.Thread)
    public static class AfterDispatch {
        @TearDown(Level.Invocation)
        public void combine(World world) {
            world.runExperts();
            world.combine();
        }
    }

    /** Per-invocation state for the combine benchmark: the dispatch that opens each round, untimed. */
    @State(Scope.Thread)
    public static class BeforeCombine {
        @Setup(Level.Invocation)
        public void dispatch(World world) {
            world.dispatch();
            world.runExperts();
        }
    }

    @Benchmark
    public void dispatch(World world, AfterDispatch after) {
        world.dispatch();
    }

    @Benchmark
    public void combine(World world, BeforeCombine before) {
        world.combine();
    }

    /**
     * The baseline of {@link #round}: one {@code MemorySegment.copy} of the bytes a round moves
     * (the logical bytes of every rank's dispatch and combine), on one thread.
     */
    @Benchmark
    public void copy(World world) {
        MemorySegment.copy(world.copySrc, 0, world.copyDst, 0, world.copySrc.byteSize());
    }

    /** Dispatch then combine; the expert outputs are those of the setup's round (their values do not change the work). */
    @Benchmark
    public void round(World world) {
        world.dispatch();
        world.combine();
    }
}
