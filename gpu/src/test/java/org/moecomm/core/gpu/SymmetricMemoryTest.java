package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import org.junit.jupiter.api.Test;
import org.moecomm.core.DType;
import org.moecomm.core.MoeCommException;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.core.protocol.BufferLayout;

/** Sizing of the symmetric heap (no GPU needed). */
class SymmetricMemoryTest {

    @Test
    void parsesNvshmemSizeStrings() {
        assertEquals(1073741824L, SymmetricMemory.parseSize("1073741824"));
        assertEquals(20L << 20, SymmetricMemory.parseSize("20m"));
        assertEquals(2L << 30, SymmetricMemory.parseSize("2G"));
        assertEquals(512L << 10, SymmetricMemory.parseSize("512k"));
        assertEquals(3250586L, SymmetricMemory.parseSize("3.1M"));
        assertEquals(1L << 40, SymmetricMemory.parseSize("1T"));
        assertRefused(IllegalArgumentException.class, () -> SymmetricMemory.parseSize("lots"), "not a size: lots");
        assertRefused(IllegalArgumentException.class, () -> SymmetricMemory.parseSize("5x"), "not a size: 5x");
    }

    @Test
    void aHandleNeedsItsProtocolBuffersAndTheBarrierWords() {
        MoeConfig c = MoeConfig.builder().worldSize(4).groupSize(2).numExperts(16).topK(4).hidden(512)
                .maxTokensPerRank(64).inType(DType.FP8_E4M3).build();
        BufferLayout l = new BufferLayout(c);
        SymmetricMemory m = SymmetricMemory.of(c);
        long protocol = l.symmetricBytes();
        assertTrue(m.total() >= protocol + 8L * c.worldSize(), m.toString());
        assertTrue(m.total() <= protocol + 8L * c.worldSize() + 6 * 256, m.toString());
        assertEquals(m.total(), m.buffers().values().stream().mapToLong(Long::longValue).sum());
        assertEquals(SymmetricMemory.rounded(l.dispatchRecvBytes()), m.buffers().get("dispatchRecv"));
    }

    @Test
    void theHeapIsTheNeedPlusAMarginInWholeGranules() {
        long small = SymmetricMemory.heapSizeFor(10L << 20);
        assertEquals(0, small % SymmetricMemory.GRANULE);
        assertTrue(small >= (10L << 20) + SymmetricMemory.MIN_MARGIN);
        long big = SymmetricMemory.heapSizeFor(8L << 30);
        assertTrue(big >= (9L << 30), Long.toString(big));
        assertEquals(0, big % SymmetricMemory.GRANULE);
    }

    @Test
    void theDeepSeekShapeGetsAHeapLargerThanItsBuffers() {
        MoeConfig c = Preset.DEEPSEEK_V3.config(8, 1, 128).build();
        SymmetricMemory m = SymmetricMemory.of(c);
        assertTrue(SymmetricMemory.heapSizeFor(m.total()) > m.total());
        assertTrue(m.toString().startsWith("symmetric memory per rank: "), m.toString());
    }

    @Test
    void accountingRefusesWhatDoesNotFitAndNamesBothNumbers() {
        SymmetricAccounting a = new SymmetricAccounting(1L << 20, "test heap");
        a.reserve(600_000, 0);
        MoeCommException e = assertThrows(MoeCommException.class, () -> a.reserve(600_000, 0));
        assertTrue(e.getMessage().contains("600000 bytes does not fit"), e.getMessage());
        assertTrue(e.getMessage().contains("NVSHMEM_SYMMETRIC_SIZE"), e.getMessage());
        MoeCommException e2 = assertThrows(MoeCommException.class, () -> a.requireRoom(2L << 20, 3, "a handle"));
        assertTrue(e2.getMessage().contains("rank 3: a handle needs 2.0 MiB"), e2.getMessage());
        a.release(600_000);
        a.reserve(600_000, 0);
    }
}
