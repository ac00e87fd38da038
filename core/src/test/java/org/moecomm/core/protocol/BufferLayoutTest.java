package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.moecomm.core.DType;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Preset;
import org.moecomm.kernels.moe.AllToAllKernels;

class BufferLayoutTest {
    @Test
    void deepseekV3RowsAndBuffers() {
        MoeConfig c = Preset.DEEPSEEK_V3.config(8, 1, 128).build();
        BufferLayout l = new BufferLayout(c);
        assertEquals(7168, l.xBytes());
        assertEquals(56 * 4, l.scaleBytes());
        assertEquals(7168, l.scaleOffset());
        assertEquals(7168 + 224, l.metaOffset());
        assertEquals(7168 + 224 + 48, l.rowBytes()); // meta: (2 + 8) int32 = 40, padded to 48
        assertEquals(7168 * 2, l.yBytes());
        assertEquals(128 * 8, l.pairsPerRegion()); // Kd = min(8, 32)
        assertEquals(8L * 128 * l.rowBytes(), l.dispatchRecvBytes());
        assertEquals(8L * 128 * 8 * 7168 * 2, l.combineRecvBytes());
        assertEquals(l.combineRecvBytes(), l.combineSendBytes()); // G = 1: NG = W
        assertEquals(8 * 3, l.signalCount());
        assertEquals(4L * 32 * 8 * 128, l.expertOriginBytes());
    }

    @Test
    void groupsShrinkSendAreasAndDispatchRegions() {
        MoeConfig c = MoeConfig.builder().worldSize(4).groupSize(2).numExperts(8).topK(6).hidden(256)
                .maxTokensPerRank(10).inType(DType.FP16).expertOutType(DType.FP32).build();
        BufferLayout l = new BufferLayout(c);
        assertEquals(512 + 0 + 32, l.rowBytes()); // meta: 8 ints, no scales
        assertEquals(10 * 2, l.pairsPerRegion()); // Kd = min(6, L=2)
        assertEquals(2L * 10 * l.rowBytes(), l.dispatchRecvBytes());
        assertEquals(4L * 20 * 1024, l.combineRecvBytes());
        assertEquals(2L * 20 * 1024, l.combineSendBytes());
        assertEquals(2, l.dispatchSignal(2) - l.dispatchSignal(0));
        assertEquals(2 + 3, l.combineSignal(3));
        assertEquals(2 + 4 + 1, l.combineDoneSignal(1));
        assertEquals(l.dispatchRecvBytes() * 2 + l.combineRecvBytes() + l.combineSendBytes() + 8L * 10,
                l.symmetricBytes());
        assertEquals(1024L * 20 * 3, l.combineRegionOffset(3));
        assertEquals(7L << 32 | 5, BufferLayout.signalValue(7, 5));
    }

    /** Up to M = 8 dispatchRecv carries the pair notes after its rows, where the kernels look for them. */
    @Test
    void decodeSizesHavePairNotesAfterTheRows() {
        MoeConfig c = Preset.DEEPSEEK_V3.config(4, 2, 8).build();
        BufferLayout l = new BufferLayout(c);
        int ng = 2;
        assertEquals(8 * 8, l.pairsPerRegion());
        assertEquals((long) ng * 8 * l.rowBytes(), l.dispatchRowBytes());
        assertEquals((long) ng * (1 + 64), l.pairNoteWords()); // a count note and M*Kd pair notes per group
        assertEquals(l.dispatchRowBytes() + 8 * l.pairNoteWords(), l.dispatchRecvBytes());
        assertEquals(l.dispatchRowBytes(), l.dispatchSendBytes()); // the notes are never staged
        for (int g = 0; g < ng; g++) {
            long first = AllToAllKernels.notesRegion(ng, 8, l.rowBytes(), g, l.pairsPerRegion());
            assertEquals(l.dispatchRowBytes() / 8 + g * 65L, first);
            assertTrue(8 * (first + 1 + l.pairsPerRegion()) <= l.dispatchRecvBytes());
        }
        assertEquals(0, new BufferLayout(Preset.DEEPSEEK_V3.config(4, 2, 9).build()).pairNoteWords(),
                "no notes above M = 8 (no source-order receive there)");
    }
}
