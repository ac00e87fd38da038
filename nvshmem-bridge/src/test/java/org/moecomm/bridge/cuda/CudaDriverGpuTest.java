package org.moecomm.bridge.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The CUDA driver binding on a real GPU: memory, a hand-written PTX module, events, graphs, errors. */
@Tag("gpu")
class CudaDriverGpuTest {
    private static CudaContext context;
    private static CudaModule module;

    @BeforeAll
    static void open() {
        GpuTestSupport.assumeGpu();
        context = CudaContext.open(0);
        System.out.println(context + "; " + Cuda.availability().reason());
        module = context.loadPtx("driver-test-kernels.ptx", resource("driver-test-kernels.ptx"));
    }

    @AfterAll
    static void close() {
        if (module != null) {
            module.close();
        }
        if (context != null) {
            context.close();
        }
    }

    static String resource(String name) {
        try (InputStream in = CudaDriverGpuTest.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing test resource " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static MemorySegment randomBytes(Arena arena, int n, long seed) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        MemorySegment s = arena.allocate(n, 16);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, n);
        return s;
    }

    @Test
    void deviceDescription() {
        assertTrue(context.multiprocessorCount() > 0);
        assertTrue(context.totalMemory() > 0);
        assertTrue(context.computeCapability() >= 50);
        CudaContext.MemoryInfo info = context.memoryInfo();
        assertTrue(info.freeBytes() > 0 && info.freeBytes() <= info.totalBytes());
    }

    @Test
    void allocateCopyMemsetRoundTrip() {
        int n = (1 << 20) + 13;
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer a = context.allocate(n);
             DeviceBuffer b = context.allocate(n)) {
            MemorySegment src = randomBytes(arena, n, 1);
            a.copyFromHost(src);
            MemorySegment back = arena.allocate(n);
            a.copyToHost(back);
            assertEquals(-1, src.mismatch(back), "host -> device -> host");

            b.copyFrom(a);
            MemorySegment back2 = arena.allocate(n);
            b.copyToHost(back2);
            assertEquals(-1, src.mismatch(back2), "device -> device");

            b.slice(100, 1000).fill((byte) 0xAB);
            b.copyToHost(back2);
            for (int i = 0; i < n; i++) {
                byte expected = i >= 100 && i < 1100 ? (byte) 0xAB : src.get(ValueLayout.JAVA_BYTE, i);
                if (back2.get(ValueLayout.JAVA_BYTE, i) != expected) {
                    throw new AssertionError("memset: byte " + i);
                }
            }

            byte[] heap = new byte[4096];
            new SplittableRandom(2).nextBytes(heap);
            a.copyFromHost(MemorySegment.ofArray(heap));
            byte[] heapBack = new byte[4096];
            a.copyToHost(MemorySegment.ofArray(heapBack));
            assertArrayEquals(heap, heapBack, "heap segments");
        }
    }

    @Test
    void asyncCopiesOnAStreamWithPinnedMemory() {
        int n = 8 << 20;
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = context.createStream();
             PinnedHostBuffer pin = context.allocatePinned(n);
             PinnedHostBuffer pinBack = context.allocatePinned(n);
             DeviceBuffer d = context.allocate(n)) {
            MemorySegment src = randomBytes(arena, n, 3);
            pin.segment().copyFrom(src);
            d.fill((byte) 0, stream);
            d.copyFromHost(pin.segment(), stream);
            d.copyToHost(pinBack.segment(), stream);
            stream.synchronize();
            assertTrue(stream.isIdle());
            assertEquals(-1, src.mismatch(pinBack.segment()));
        }
    }

    @Test
    void handWrittenPtxKernelLaunches() {
        int n = 100_003;
        float a = 1.7f;
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = context.createStream();
             DeviceBuffer in = context.allocate(4L * n);
             DeviceBuffer out = context.allocate(4L * n)) {
            MemorySegment host = arena.allocate(4L * n);
            SplittableRandom r = new SplittableRandom(4);
            for (int i = 0; i < n; i++) {
                host.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (r.nextDouble() * 200 - 100));
            }
            in.copyFromHost(host);
            out.fill((byte) 0xFF);
            CudaFunction scale = module.function("scale_f32");
            assertTrue(scale.numRegisters() > 0);
            int threads = 256;
            scale.launch(stream, (n + threads - 1) / threads, 1, threads,
                    CudaFunction.param(out.asBuf()), CudaFunction.param(in.asBuf()), CudaFunction.param(n),
                    CudaFunction.param(a));
            stream.synchronize();
            MemorySegment result = arena.allocate(4L * n);
            out.copyToHost(result);
            for (int i = 0; i < n; i++) {
                float expected = host.getAtIndex(ValueLayout.JAVA_FLOAT, i) * a;
                float got = result.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                if (Float.floatToRawIntBits(expected) != Float.floatToRawIntBits(got)) {
                    throw new AssertionError("scale_f32 element " + i + ": expected " + expected + " got " + got);
                }
            }
        }
    }

    @Test
    void eventsTimeGpuWork() {
        int n = 16 << 20;
        try (CudaStream stream = context.createStream();
             CudaEvent start = context.createEvent();
             CudaEvent end = context.createEvent();
             DeviceBuffer in = context.allocate(4L * n);
             DeviceBuffer out = context.allocate(4L * n)) {
            in.fill((byte) 0x3F);
            CudaFunction scale = module.function("scale_f32");
            start.record(stream);
            for (int i = 0; i < 20; i++) {
                scale.launch(stream, n / 256, 1, 256, out.address(), in.address(), CudaFunction.param(n),
                        CudaFunction.param(2f));
            }
            end.record(stream);
            end.synchronize();
            assertTrue(end.isComplete());
            float ms = end.elapsedMillisSince(start);
            double gbs = 20.0 * 8L * n / (ms * 1e-3) / 1e9;
            System.out.printf("events: 20 launches of scale_f32 over %d floats took %.3f ms (%.0f GB/s read+write)%n",
                    n, ms, gbs);
            assertTrue(ms > 0 && ms < 10_000, "elapsed " + ms + " ms");
        }
    }

    @Test
    void graphCaptureAndReplay() {
        int n = 4099;
        long delta = 0x1_0000_0003L;
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = context.createStream();
             DeviceBuffer buf = context.allocate(8L * n)) {
            MemorySegment host = arena.allocate(8L * n);
            for (int i = 0; i < n; i++) {
                host.setAtIndex(ValueLayout.JAVA_LONG, i, i * 7L);
            }
            buf.copyFromHost(host);
            CudaFunction add = module.function("add_u64");
            try (CudaGraph graph = CudaGraph.capture(stream, () -> {
                add.launch(stream, (n + 127) / 128, 1, 128, buf.address(), CudaFunction.param(n), delta);
                add.launch(stream, (n + 127) / 128, 1, 128, buf.address(), CudaFunction.param(n), delta);
            })) {
                stream.synchronize();
                buf.copyToHost(host);
                assertEquals(0L, host.getAtIndex(ValueLayout.JAVA_LONG, 0), "capture must not run the work");
                for (int rep = 0; rep < 10; rep++) {
                    graph.launch(stream);
                }
                stream.synchronize();
            }
            buf.copyToHost(host);
            for (int i = 0; i < n; i++) {
                assertEquals(i * 7L + 20 * delta, host.getAtIndex(ValueLayout.JAVA_LONG, i), "element " + i);
            }
        }
    }

    @Test
    void failedCaptureIsDiscarded() {
        try (CudaStream stream = context.createStream()) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> CudaGraph.capture(stream, () -> {
                        throw new IllegalStateException("boom");
                    }));
            assertEquals("boom", e.getMessage());
            stream.synchronize(); // the stream is usable again
        }
    }

    @Test
    void invalidLaunchMapsToCudaErrorName() {
        try (CudaStream stream = context.createStream();
             DeviceBuffer buf = context.allocate(1024)) {
            CudaFunction add = module.function("add_u64");
            CudaException e = assertThrows(CudaException.class,
                    () -> add.launch(stream, 1, 1, 1, 2048, 1, 1, 0, buf.address(), CudaFunction.param(1), 1L));
            assertEquals("CUDA_ERROR_INVALID_VALUE", e.errorName());
            assertTrue(e.call().startsWith("cuLaunchKernel(add_u64"), e.call());
            stream.synchronize(); // not a sticky error
        }
    }

    @Test
    void invalidPtxMapsToCudaErrorNameWithLog() {
        String bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry broken() { not_an_instruction; }\n";
        CudaException e = assertThrows(CudaException.class, () -> context.loadPtx("broken.ptx", bad));
        assertEquals("CUDA_ERROR_INVALID_PTX", e.errorName(), e.getMessage());
        assertFalse(e.log().isBlank(), "the JIT error log must be captured");
        System.out.println("JIT error log of a broken module: " + e.log().strip());
    }

    @Test
    void missingEntryMapsToCudaErrorName() {
        CudaException e = assertThrows(CudaException.class, () -> module.function("no_such_kernel"));
        assertEquals("CUDA_ERROR_NOT_FOUND", e.errorName());
    }

    @Test
    void hostBufferIsRejectedBeforeLaunch() {
        try (Arena arena = Arena.ofConfined();
             GpuKernelRunner runner = new GpuKernelRunner(context)) {
            org.moecomm.kernels.api.Buf host = org.moecomm.kernels.api.Buf.allocate(arena, 64);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> runner.launch(new org.moecomm.kernels.api.Kernel(BridgeTestKernels.class, "fill"),
                            org.moecomm.kernels.api.Grid.of(1, 32), host, 16, 7));
            assertTrue(e.getMessage().contains("not CUDA memory"), e.getMessage());
        }
    }

    /** The occupancy query against the limits a kernel's registers and threads set. */
    @Test
    void residentBlocksFollowTheKernelsRegistersAndThreads() {
        try (GpuKernelRunner runner = new GpuKernelRunner(context)) {
            org.moecomm.kernels.api.Kernel fill = new org.moecomm.kernels.api.Kernel(BridgeTestKernels.class, "fill");
            CudaFunction f = runner.function(fill);
            int sms = context.multiprocessorCount();
            for (int threads : new int[] {64, 256, 1024}) {
                int perSm = f.residentBlocksPerMultiprocessor(threads, 0);
                int byRegisters = 65536 / (Math.max(1, f.numRegisters()) * threads);
                assertTrue(perSm >= 1 && perSm <= Math.min(32, 2048 / threads) && perSm <= Math.max(1, byRegisters),
                        threads + " threads: " + perSm + " blocks per SM, " + f.numRegisters() + " registers");
                assertEquals(perSm * sms, runner.residentBlocks(fill, threads, null, 16, 7), threads + " threads");
            }
            assertThrows(IllegalArgumentException.class, () -> f.residentBlocksPerMultiprocessor(0, 0));
        }
    }
}
