package org.moecomm.core.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.moecomm.core.DType;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Tensor;
import org.moecomm.core.protocol.BufferLayout;
import org.moecomm.core.testing.Harness;
import org.moecomm.kernels.api.Buf;

@Timeout(60)
class CpuClusterTest {
    private static final MoeConfig CONFIG = Harness.config().worldSize(2).numExperts(8).topK(2).hidden(256)
            .maxTokensPerRank(8).build();

    @Test
    void handlesReportTheirRankConfigAndSymmetricSize() {
        List<Long> sizes = Harness.onAllRanks(CONFIG, (h, b) -> {
            assertEquals(CONFIG, h.config());
            return h.symmetricBytesPerRank() * 10 + h.rank();
        });
        long expected = new BufferLayout(CONFIG).symmetricBytes() * 10;
        assertEquals(List.of(expected, expected + 1), sizes);
    }

    @Test
    void deviceMemoryAllocatesZeroedAlignedBuffersAndCopies() {
        try (CpuDeviceMemory mem = new CpuDeviceMemory(); Arena arena = Arena.ofConfined()) {
            Buf b = mem.allocate(100);
            assertEquals(0, b.address() % CpuDeviceMemory.ALIGNMENT);
            assertEquals(100, b.byteSize());
            for (int i = 0; i < 100; i++) {
                assertEquals(0, b.getByte(i));
            }
            MemorySegment host = arena.allocate(8);
            host.set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
            mem.copyFromHost(b, 16, host);
            assertEquals(0x1122334455667788L, b.getLong(2));
            MemorySegment back = arena.allocate(4);
            mem.copyToHost(b, 20, back);
            assertEquals(0x11223344, back.get(ValueLayout.JAVA_INT, 0));
            mem.fill(b, (byte) 0xFF);
            assertEquals(-1L, b.getLong(3));
            Tensor t = mem.allocate(DType.FP16, 3, 16);
            assertEquals(96, t.byteSize());
            assertEquals(96, t.buf().byteSize());
            assertEquals(1, mem.allocate(DType.INT32, 0).buf().byteSize());
        }
    }

    @Test
    void createHandleIsCollectiveAndBoundedByTheTimeout() {
        MoeConfig quick = CONFIG.toBuilder().waitTimeout(java.time.Duration.ofMillis(200)).build();
        try (CpuCluster cluster = CpuCluster.create(2)) {
            // only rank 0 arrives
            long start = System.nanoTime();
            MoeCommException e = assertThrows(MoeCommException.class, () -> cluster.createHandle(0, quick));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(e.getMessage().contains("rank 0: barrier timed out after 200"), e.getMessage());
            assertTrue(ms >= 200 && ms < 10_000, "took " + ms + " ms");
        }
    }

    @Test
    void closedClusterRefusesNewHandles() {
        CpuCluster cluster = CpuCluster.create(1);
        cluster.close();
        cluster.close();
        MoeConfig one = CONFIG.toBuilder().worldSize(1).build();
        assertRefused(IllegalStateException.class, () -> cluster.createHandle(0, one), "cluster is closed");
    }

    @Test
    void handleMemoryIsUsableForInputsAndFreedOnClose() {
        MoeConfig one = CONFIG.toBuilder().worldSize(1).build();
        try (CpuCluster cluster = CpuCluster.create(1)) {
            MoeAllToAll h = cluster.createHandle(0, one);
            Buf b = h.memory().allocate(64);
            b.setInt(0, 5);
            h.close();
            assertThrows(IllegalStateException.class, () -> b.getInt(0));
        }
    }
}
