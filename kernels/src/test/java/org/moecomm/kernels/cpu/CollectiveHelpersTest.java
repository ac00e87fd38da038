package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.MethodModel;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.moecomm.kernels.api.Buf;
import org.moecomm.kernels.api.Grid;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.cpu.CpuKernelRunner.Execution;
import org.moecomm.kernels.moe.CollectiveCallKernels;
import org.moecomm.kernels.moe.MoeKernels;

/**
 * The loop form's CPU versions of MoeKernels' team-collective helpers ({@link Substitutions},
 * {@link CollectiveHelpers}) write the bits the helpers write: each kernel of
 * {@link CollectiveCallKernels} runs on random buffers with a virtual thread per kernel thread
 * (the helpers' own code) and as loops (the substitutes), and every buffer must come out equal.
 */
class CollectiveHelpersTest {
    private static final CpuKernelRunner THREADS = new CpuKernelRunner(2, null, Execution.THREADS);
    private static final CpuKernelRunner LOOPS = new CpuKernelRunner(2, null, Execution.LOOPS);

    @Test
    void substitutedHelpersAreTheCodeTheyWereCheckedAgainst() throws IOException {
        ClassModel moe;
        try (InputStream in = MoeKernels.class.getResourceAsStream("MoeKernels.class")) {
            moe = ClassFile.of().parse(in.readAllBytes());
        }
        for (Substitutions.Entry e : Substitutions.ENTRIES) {
            MethodModel m = moe.methods().stream().filter(x -> x.methodName().equalsString(e.name())
                    && x.methodType().equalsString(e.descriptor())).findFirst().orElseThrow(() ->
                    new AssertionError(e.key() + " is gone: remove its substitution or point it at the new helper"));
            assertEquals(e.fingerprint(), Substitutions.fingerprint(m), e.key() + " has changed: check that its"
                    + " CPU version in CollectiveHelpers still does what it does, then update the fingerprint");
            assertTrue(Substitutions.of(e.owner(), e.name(), e.descriptor(), m).isPresent(), e.key());
        }
    }

    @Test
    void libraryKernelsStillHaveLoopForms() {
        for (Kernel k : List.of(new Kernel(MoeKernels.class, "gather"), new Kernel(MoeKernels.class, "reduce"),
                new Kernel(MoeKernels.class, "pack"), new Kernel(MoeKernels.class, "scatter"),
                new Kernel(CollectiveCallKernels.class, "teamCopy"))) {
            assertEquals(Optional.empty(), CpuKernelRunner.loopFormRefusal(k), k.toString());
        }
    }

    @ParameterizedTest(name = "{0} blocks of {1} threads, teams of {2}, {3} rows of {4} pieces")
    @CsvSource({"1, 32, 32, 5, 7", "2, 64, 32, 9, 3", "1, 256, 256, 1, 900", "3, 96, 32, 40, 1", "2, 100, 32, 7, 12",
            "1, 64, 1, 5, 6", "2, 1, 1, 4, 9", "2, 128, 64, 0, 4", "1, 32, 8, 6, 0"})
    void teamCopiesGiveTheHelpersBits(int blocks, int threads, int width, int rows, int pieces) {
        for (long seed = 1; seed <= 3; seed++) {
            long bytes = Math.max(16, 16L * rows * pieces * 2);
            Kernel k = new Kernel(CollectiveCallKernels.class, "teamCopy");
            for (int deep = 0; deep <= 1; deep++) { // copyPieces, then copyPiecesDeep
                compare(k, Grid.of(blocks, threads), seed, new long[]{bytes, bytes}, rows, pieces,
                        Integer.numberOfTrailingZeros(width), deep);
            }
        }
    }

    @ParameterizedTest(name = "yDtype {0}, outDtype {1}, hidden {2}, topK {3}, grid {4} x {5} x {6}")
    @CsvSource({"0, 0, 256, 6, 3, 1, 64", "0, 2, 128, 8, 2, 2, 16", "1, 1, 96, 3, 1, 1, 32", "2, 0, 64, 5, 2, 1, 8",
            "2, 2, 36, 4, 1, 3, 4", "3, 0, 512, 8, 2, 1, 64", "0, 3, 64, 2, 1, 1, 16", "1, 2, 40, 7, 3, 2, 3",
            "5, 5, 32, 4, 1, 1, 8", "0, 0, 30, 4, 2, 1, 4"})
    void reductionsGiveTheHelpersBits(int yDtype, int outDtype, int hidden, int topK, int blocksX, int blocksY,
                                      int threads) {
        int m = 5;
        int rowsOfY = 12;
        long[] sizes = {(long) rowsOfY * hidden * 4 + 16, 4L * m * topK, 4L * m * topK, (long) m * hidden * 4 + 16};
        for (long seed = 1; seed <= 3; seed++) {
            compare(new Kernel(CollectiveCallKernels.class, "reduceTokens"), Grid.of(blocksX, blocksY, threads), seed,
                    sizes, locations(seed, m * topK, rowsOfY), m, hidden, topK, yDtype, outDtype);
            compare(new Kernel(CollectiveCallKernels.class, "reduceStrided"), Grid.of(m, threads), seed, sizes,
                    locations(seed, m * topK, rowsOfY), hidden, topK, yDtype, outDtype);
        }
    }

    /** A block's kept sums end at its barriers: the rows change between two equal calls. */
    @ParameterizedTest(name = "outDtype {0}")
    @ValueSource(ints = {0, 2})
    void sumsKeptForABlockDoNotOutliveItsBarrier(int outDtype) {
        int m = 3;
        int rows = 6;
        int hidden = 64;
        int topK = 4;
        long[] sizes = {4L * rows * hidden, 4L * m * topK, 4L * m * topK, 4L * m * hidden};
        for (long seed = 1; seed <= 3; seed++) {
            compare(new Kernel(CollectiveCallKernels.class, "reduceChangeReduce"), Grid.of(1, 16), seed, sizes,
                    locations(seed, m * topK, rows), m, rows, hidden, topK, outDtype);
        }
    }

    /**
     * More tokens in a block than its kept sums hold ({@code BlockSums.CAPACITY}): the tokens
     * beyond are summed per thread, with the same bits.
     */
    @Test
    void tokensBeyondTheKeptSumsGiveTheHelpersBitsToo() {
        int hidden = 4096;
        int m = BlockSums.CAPACITY / hidden + 3;
        int rowsOfY = 8;
        int topK = 2;
        long[] sizes = {(long) rowsOfY * hidden * 2, 4L * m * topK, 4L * m * topK, (long) m * hidden * 2};
        compare(new Kernel(CollectiveCallKernels.class, "reduceTokens"), Grid.of(1, 1, 32), 7, sizes,
                locations(7, m * topK, rowsOfY), m, hidden, topK, 0, 0);
    }

    @Test
    void aTeamWhoseMembersDoNotAllCallFailsTheLaunchOnLoops() {
        Kernel k = new Kernel(CollectiveCallKernels.class, "laneZeroCopy");
        try (Arena arena = Arena.ofShared()) {
            Buf dst = Buf.allocate(arena, 64 * 16 * 4);
            Buf src = Buf.allocate(arena, 64 * 16 * 4);
            THREADS.launch(k, Grid.of(1, 64), dst, src, 4, 5); // teams of 32: lane 0 copies its own pieces only
            KernelExecutionException e = assertThrows(KernelExecutionException.class,
                    () -> LOOPS.launch(k, Grid.of(1, 64), dst, src, 4, 5));
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("every member of a team"), e.getCause().getMessage());
        }
    }

    /** Random ints in [-1, rows): a pair's location, -1 for a skipped one. */
    private static int[] locations(long seed, int n, int rows) {
        SplittableRandom r = new SplittableRandom(seed * 31);
        int[] l = new int[n];
        for (int i = 0; i < n; i++) {
            l[i] = r.nextInt(-1, rows);
        }
        return l;
    }

    /**
     * Runs {@code kernel} both ways on random buffers of {@code sizes} bytes (the second buffer
     * holding {@code ints} when given) and the scalars after them; the buffers must be equal.
     */
    private static void compare(Kernel kernel, Grid grid, long seed, long[] sizes, Object... rest) {
        int[] ints = rest.length > 0 && rest[0] instanceof int[] a ? a : null;
        Object[] scalars = ints == null ? rest : java.util.Arrays.copyOfRange(rest, 1, rest.length);
        byte[][] reference = run(THREADS, kernel, grid, seed, sizes, ints, scalars);
        byte[][] looped = run(LOOPS, kernel, grid, seed, sizes, ints, scalars);
        for (int b = 0; b < sizes.length; b++) {
            assertArrayEquals(reference[b], looped[b], kernel + " on " + grid + ", seed " + seed + ": buffer " + b);
        }
    }

    private static byte[][] run(CpuKernelRunner runner, Kernel kernel, Grid grid, long seed, long[] sizes, int[] ints,
                                Object[] scalars) {
        try (Arena arena = Arena.ofShared()) {
            SplittableRandom r = new SplittableRandom(seed);
            List<Object> args = new ArrayList<>();
            List<Buf> bufs = new ArrayList<>();
            for (int b = 0; b < sizes.length; b++) {
                Buf buf = Buf.allocate(arena, sizes[b]);
                for (long i = 0; i < sizes[b]; i++) {
                    buf.segment().set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
                }
                if (b == 1 && ints != null) {
                    for (int i = 0; i < ints.length; i++) {
                        buf.setInt(i, ints[i]);
                    }
                }
                if (b == 2 && ints != null) { // weights: finite floats of both signs
                    for (int i = 0; i < ints.length; i++) {
                        buf.setFloat(i, (float) r.nextDouble(-2, 2));
                    }
                }
                bufs.add(buf);
                args.add(buf);
            }
            args.addAll(List.of(scalars));
            runner.launch(kernel, grid, args.toArray());
            byte[][] out = new byte[sizes.length][];
            for (int b = 0; b < sizes.length; b++) {
                out[b] = bufs.get(b).segment().toArray(ValueLayout.JAVA_BYTE);
            }
            return out;
        }
    }
}
