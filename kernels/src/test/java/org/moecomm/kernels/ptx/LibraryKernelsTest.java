package org.moecomm.kernels.ptx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.moecomm.kernels.api.Kernel;

/**
 * Every kernel of the library ({@code org.moecomm.kernels.moe.MoeKernels} and the round kernels
 * of {@code AllToAllKernels}, generic and specialised as the protocol launches them) compiles and
 * {@code ptxas -arch=sm_90a} accepts it. The class is looked up by name so this test does not
 * tie the compiler's tests to the library's source.
 */
class LibraryKernelsTest {
    static final String LIBRARY = "org.moecomm.kernels.moe.MoeKernels";
    static final String ROUND_KERNELS = "org.moecomm.kernels.moe.AllToAllKernels";

    /*
     * The values a DeepSeek-V3 handle (hidden 7168 in fp8 with 56 block scales, top-8 of 256
     * experts, W = 4, M = 128) gives each round kernel's @Specialize parameters, in their order:
     * the handle's shapes and choices, never a value that changes between rounds.
     */
    private static final int ROW_BYTES = 7168 + 224 + 48; // token, scales, meta (16-byte aligned each)
    private static final int PAIRS_PER_REGION = 128 * 8;
    /**
     * dispatch send: xBytes, scalesPerToken, topK, expertsPerRank, groupSize, rowBytes, maxTokens,
     * pairsPerRegion, checkIds, quantizeFrom, pairNotes.
     */
    private static final int[] DISPATCH_SEND = {7168, 56, 8, 64, 1, ROW_BYTES, 128, PAIRS_PER_REGION, 1, -1, 0};
    private static final int SEND_QUANTIZE_FROM = 9;
    /**
     * dispatch recv: groupSize, expertsPerRank, xBytes, scalesPerToken, topK, rowBytes, maxTokens,
     * numGroups, pairsPerRegion, orderedSlots.
     */
    private static final int[] DISPATCH_RECV = {1, 64, 7168, 56, 8, ROW_BYTES, 128, 4, PAIRS_PER_REGION, 0};
    /** combine recv: worldSize, numGroups, hidden, maxTokens, topK, yDtype, outDtype (bf16 both). */
    private static final int[] COMBINE_RECV = {4, 4, 7168, 128, 8, 0, 0};

    /** {@code kernel} specialised for {@code values}, one per @Specialize parameter in order. */
    private static Kernel specialised(Kernel kernel, int... values) {
        return kernel.specializedFor(kernel.specializedPositions(), kernel.argumentsFor(values));
    }

    /** {@code kernel} as the GPU runner compiles it for a launch of blocks of {@code threads} with {@code values}. */
    private static Kernel launched(Kernel kernel, int threads, int... values) {
        return kernel.specializedFor(kernel.specializedPositions(), kernel.argumentsFor(values), threads);
    }

    @TempDir
    Path tmp;

    static Stream<Kernel> library() {
        return Stream.concat(kernelsOf(LIBRARY), kernelsOf(ROUND_KERNELS));
    }

    private static Stream<Kernel> kernelsOf(String className) {
        try {
            return TestKernelSuiteTest.kernelsOf(Class.forName(className)).stream();
        } catch (ClassNotFoundException e) {
            throw new AssertionError(className + " is part of this module and must load", e);
        }
    }

    @Test
    void roundKernelsCompileSpecialisedAsTheProtocolLaunchesThem() throws Exception {
        Kernel recv = library().filter(k -> k.name().equals("combineRecv")).findFirst().orElse(null);
        assertTrue(recv != null, "no such kernel in " + ROUND_KERNELS);
        PtxKernel k = PtxCompiler.hopper().compile(specialised(recv, COMBINE_RECV));
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), () -> "ptxas rejected the specialised combineRecv:\n" + r.output());
        assertFalse(k.ptx().contains("e4m3"), "the dtype branches fold away");
    }

    /**
     * The one-launch dispatch compiled for its handle: every @Specialize parameter is a constant
     * in the PTX (its divisions and loop bounds fold; a 1-token round's path is instruction-bound,
     * docs/benchmarks.md), the values that change between rounds or ranks stay parameters, and it
     * still fits two blocks per SM.
     */
    @Test
    void dispatchCompilesItsHandleShapesIn() throws Exception {
        Kernel dispatch = library().filter(k -> k.name().equals("dispatch")).findFirst().orElse(null);
        assertTrue(dispatch != null, "no such kernel in " + ROUND_KERNELS);
        // dispatch send's values, then the receive's numGroups 4 and partShift 0
        int[] values = java.util.Arrays.copyOf(DISPATCH_SEND, DISPATCH_SEND.length + 2);
        values[SEND_QUANTIZE_FROM + 1] = 1; // pairNotes: the one-launch dispatch takes its slots in source order
        values[DISPATCH_SEND.length] = 4;
        // as the GPU runner compiles it: for the protocol's blocks of 256 threads too
        Kernel special = launched(dispatch, 256, values);
        PtxKernel k = PtxCompiler.hopper().compile(special);
        assertTrue(k.ptx().contains(".maxntid 256, 1, 1\n.minnctapersm 2\n"), "its launch bounds, as before");
        assertFalse(k.ptx().contains("%ntid.x"), "the block size is a constant");
        // what is divided by a size the handle or the block fixes is divided by a constant, without
        // div (ConstantDivision), and a row team's width is a power of two (MoeKernels.teamShift): the
        // divisions left are splitPoint's by the grid's height, which a decode grid (height 1) skips
        long divisions = k.ptx().lines().filter(l -> l.contains("\tdiv.s") || l.contains("\trem.s")).count();
        assertTrue(divisions <= 4, divisions + " div and rem instructions");
        for (int position : dispatch.specializedPositions()) {
            assertFalse(k.ptx().contains("[AllToAllKernels_dispatch_param_" + position + "]"),
                    () -> "specialised parameter " + position + " must not be loaded");
        }
        int rank = 17; // the rank's and the round's m (fixedTokens: 21) are no handle's constants
        int fixedTokens = 21;
        assertTrue(k.ptx().contains("[AllToAllKernels_dispatch_param_" + rank + "]"), "rank stays a parameter");
        assertTrue(k.ptx().contains("[AllToAllKernels_dispatch_param_" + fixedTokens + "]"),
                "fixedTokens stays a parameter");
        int used = registers(k);
        assertTrue(used <= 128, k.entryName() + ": " + used + " registers");
    }

    /** The registers ptxas (sm_90a) gives a compiled kernel's threads. */
    private int registers(PtxKernel k) throws Exception {
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName(), List.of("-v"));
        assertTrue(r.ok(), r::output);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("Used (\\d+) registers").matcher(r.output());
        assertTrue(m.find(), r::output);
        return Integer.parseInt(m.group(1));
    }

    /**
     * Combine recv's resident variant, compiled as the protocol launches it for a decode handle
     * (its grid all resident): its launch bounds give ptxas a budget for fewer blocks per
     * multiprocessor than combineRecv's, which ptxas uses (more registers, more row reads in
     * flight per thread), and the kernel still fits that many blocks. Both as the GPU runner compiles
     * them: the resident kernel for its block size, combineRecv for any ({@code @AnyBlockSize}).
     */
    @Test
    void combineRecvResidentHasTheLargerRegisterBudget() throws Exception {
        Kernel lean = library().filter(k -> k.name().equals("combineRecv")).findFirst().orElse(null);
        Kernel rich = library().filter(k -> k.name().equals("combineRecvResident")).findFirst().orElse(null);
        assertTrue(lean != null && rich != null, "no such kernel in " + ROUND_KERNELS);
        int blocks = Class.forName(ROUND_KERNELS).getField("COMBINE_RECV_RESIDENT_BLOCKS").getInt(null);
        Kernel richLaunched = launched(rich, 256, COMBINE_RECV);
        Kernel leanLaunched = launched(lean, 256, COMBINE_RECV);
        assertEquals(256, richLaunched.blockThreads(), "the resident kernel is compiled for its block size");
        assertEquals(0, leanLaunched.blockThreads(), "combineRecv is compiled for any block size");
        PtxKernel r = PtxCompiler.hopper().compile(richLaunched);
        PtxKernel l = PtxCompiler.hopper().compile(leanLaunched);
        assertTrue(l.ptx().contains("%ntid.x"), "combineRecv reads its block size");
        assertTrue(r.ptx().contains(".maxntid 256, 1, 1\n.minnctapersm " + blocks + "\n"), "its launch bounds");
        int richRegisters = registers(r);
        int leanRegisters = registers(l);
        assertTrue(richRegisters > leanRegisters, richRegisters + " registers against combineRecv's " + leanRegisters);
        assertTrue(richRegisters * 256 * blocks <= 65536, richRegisters + " registers do not fit " + blocks + " blocks");
    }

    /**
     * pack and dispatch send are launched two blocks of 256 threads per SM ({@code @LaunchBounds}):
     * their deep row copies must leave them within 128 registers, or a second wave of blocks
     * starts only when the first ends (a grid of two blocks per SM then takes about twice as long).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"pack", "dispatchSend"})
    void packAndDispatchSendFitTwoBlocksPerMultiprocessor(String name) throws Exception {
        Kernel kernel = library().filter(k -> k.name().equals(name)).findFirst().orElse(null);
        assertTrue(kernel != null, "no kernel named " + name);
        // pack specialises nothing; dispatch send as a DeepSeek-V3 handle launches it, without quantisation
        PtxKernel k = PtxCompiler.hopper().compile(name.equals("pack") ? kernel : specialised(kernel, DISPATCH_SEND));
        assertTrue(k.ptx().contains(".maxntid 256, 1, 1\n.minnctapersm 2\n"), "the kernel carries its launch bounds");
        int used = registers(k);
        assertTrue(used <= 128, k.entryName() + ": " + used + " registers");
    }

    /**
     * Dispatch send as the protocol launches it: without quantisation (-1) the quantising copy folds
     * away (no division, no fp8 conversion); quantising bf16 or fp16 tokens, ptxas accepts it.
     */
    @ParameterizedTest(name = "quantizeFrom={0}")
    @ValueSource(ints = {-1, 0, 1})
    void dispatchSendCompilesSpecialisedForEachQuantisation(int quantizeFrom) throws Exception {
        Kernel send = library().filter(k -> k.name().equals("dispatchSend")).findFirst().orElse(null);
        assertTrue(send != null, "no such kernel in " + ROUND_KERNELS);
        int[] values = DISPATCH_SEND.clone(); // topK 8: the routing loops unroll
        values[SEND_QUANTIZE_FROM] = quantizeFrom;
        PtxKernel k = PtxCompiler.hopper().compile(specialised(send, values));
        // a round's m from the host (fixedTokens) changes from call to call: never compiled in
        assertTrue(k.ptx().contains("[AllToAllKernels_dispatchSend_param_21]"), "fixedTokens stays a parameter");
        boolean quantizes = k.ptx().contains("div.rn.f32") && k.ptx().contains("cvt.rn.satfinite.e4m3x2.f32");
        assertEquals(quantizeFrom >= 0, quantizes, "the quantising copy is compiled in exactly when asked for");
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), () -> "ptxas rejected dispatchSend for quantizeFrom " + quantizeFrom + ":\n" + r.output());
    }

    /**
     * Dispatch recv as the protocol launches it, with counted slots (0) and with slots in source
     * order (1): ptxas accepts both, and each keeps only its own path's shared memory (the other
     * path's tables fold away with its branch; both together would take the counted path's
     * prefill grid from eight resident blocks per SM to five).
     */
    @ParameterizedTest(name = "orderedSlots={0}")
    @ValueSource(ints = {0, 1})
    void dispatchRecvCompilesSpecialisedForEachSlotOrder(int orderedSlots) throws Exception {
        Kernel recv = library().filter(k -> k.name().equals("dispatchRecv")).findFirst().orElse(null);
        assertTrue(recv != null, "no such kernel in " + ROUND_KERNELS);
        int[] values = DISPATCH_RECV.clone();
        values[values.length - 1] = orderedSlots;
        PtxKernel k = PtxCompiler.hopper().compile(specialised(recv, values));
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), () -> "ptxas rejected dispatchRecv for orderedSlots " + orderedSlots + ":\n" + r.output());
        // the module's static shared arrays, as the PTX declares them
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\.shared \\.align 16 \\.b(32|64) \\S+\\[(\\d+)\\]")
                .matcher(k.ptx());
        long smem = 0;
        while (m.find()) {
            smem += Long.parseLong(m.group(2)) * Integer.parseInt(m.group(1)) / 8;
        }
        // counted: three lists of 2048 ints, two list counters and the block's rows; ordered: four
        // lists of 1024 ints, 1024 expert counts, 256 groups' counts and how each came, one list counter
        long expected = orderedSlots == 0 ? 3 * 2048 * 4 + 2 * 4 + 4 : 4 * 1024 * 4 + 1024 * 4 + 2 * 256 * 4 + 4;
        long bytes = smem;
        assertEquals(expected, bytes, () -> "shared arrays of dispatchRecv for orderedSlots " + orderedSlots + ":\n"
                + k.ptx().lines().filter(l -> l.startsWith(".shared")).collect(java.util.stream.Collectors.joining("\n")));
    }

    @Test
    void libraryHasTheRoundKernels() {
        List<String> names = library().map(Kernel::name).toList();
        assertFalse(names.isEmpty(), "no kernels found in " + LIBRARY);
        assertTrue(names.containsAll(List.of("pack", "scatter", "gather", "reduce", "dispatchSend", "dispatchRecv",
                "combineSend", "combineRecv", "combineRecvResident", "dispatch")), names.toString());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("library")
    void compilesAndAssembles(Kernel kernel) throws Exception {
        PtxKernel k = PtxCompiler.hopper().compile(kernel);
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), () -> "ptxas rejected " + kernel + ":\n" + r.output() + "\n" + TestKernelSuiteTest.numbered(k.ptx()));
    }

    @Test
    void specialisedReduceCompilesItsConstantsIn() throws Exception {
        Kernel generic = library().filter(k -> k.name().equals("reduce")).findFirst().orElse(null);
        assertTrue(generic != null, "no such kernel in " + LIBRARY);
        int[] positions = generic.specializedPositions();
        assertEquals(List.of(6, 7, 8), java.util.Arrays.stream(positions).boxed().toList(),
                "topK, yDtype and outDtype are the specialised parameters of reduce");
        Object[] args = {null, null, null, null, null, 7168, 8, 0, 1};
        Kernel special = generic.specializedFor(positions, args);
        assertEquals(java.util.Map.of(6, 8, 7, 0, 8, 1), special.constants());
        PtxKernel k = PtxCompiler.hopper().compile(special);
        assertTrue(k.ptx().contains("mov.u32 %iL7, 8;"), k.ptx());
        assertFalse(k.ptx().contains("[MoeKernels_reduce_param_6]"), "topK must not be loaded from its parameter");
        assertTrue(k.ptx().contains("[MoeKernels_reduce_param_5]"), "hidden stays a runtime parameter");
        assertFalse(k.ptx().contains("MoeKernels_reduce_param_6"), "a specialised parameter leaves the entry's parameters");
        assertTrue(k.ptx().contains(".param .u32 MoeKernels_reduce_param_5"), "the others keep their names");
        // The branches on the dtypes are resolved at compile time: only the fp16 store and the bf16 load remain.
        assertTrue(k.ptx().contains("cvt.rn.f16.f32"), "fp16 output conversion");
        assertFalse(k.ptx().contains("cvt.rn.bf16.f32"), "no bf16 output path");
        assertFalse(k.ptx().contains("e4m3"), "no fp8 paths");
        // float32 loads are the 8 weights only (no fp32 row path); the bf16 rows come in 8-byte quads
        assertEquals(8, k.ptx().split("ld\\.global\\.f32", -1).length - 1, "no fp32 input path");
        assertTrue(k.ptx().contains("ld.global.u64"), "quad loads of the bf16 rows");
        assertNotEquals(PtxCompiler.compileCached(generic), PtxCompiler.compileCached(special),
                "the cache keeps one compiled kernel per set of constants");
        Ptxas.Result r = Ptxas.assemble(k.ptx(), "sm_90a", tmp, k.entryName());
        assertTrue(r.ok(), () -> "ptxas rejected the specialised reduce:\n" + r.output());
    }

    @Test
    void specialisingANonIntegerArgumentIsRefused() {
        Kernel generic = library().filter(k -> k.name().equals("reduce")).findFirst().orElse(null);
        assertTrue(generic != null, "no such kernel in " + LIBRARY);
        Object[] args = {null, null, null, null, null, 7168, 8L, 0, 1};
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> generic.specializedFor(generic.specializedPositions(), args));
        assertTrue(e.getMessage().contains("must be an Integer"), e.getMessage());
    }
}
