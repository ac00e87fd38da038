package org.moecomm.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.moecomm.core.DType;
import org.moecomm.core.DeviceMemory;
import org.moecomm.core.DispatchInput;
import org.moecomm.core.DispatchOutput;
import org.moecomm.core.InputCheck;
import org.moecomm.kernels.api.Buf;
import org.moecomm.core.MoeAllToAll;
import org.moecomm.core.MoeConfig;
import org.moecomm.core.Tensor;
import org.moecomm.core.TokenCount;
import org.moecomm.core.check.CheckedRound;
import org.moecomm.core.check.RankBuffers;
import org.moecomm.core.check.Workload;
import org.moecomm.core.cpu.CpuCluster;
import org.moecomm.core.testing.Harness;

/**
 * Every invalid call throws before any work: on one rank (W=1) nothing can hang, the outputs
 * poisoned before it stay poisoned, and a correct round afterwards shows the handle was left
 * untouched.
 */
@Timeout(60)
class ValidationTest {
    private static final MoeConfig BF16 = Harness.config().worldSize(1).numExperts(8).topK(2).hidden(256)
            .maxTokensPerRank(8).build();
    private static final MoeConfig FP8 = BF16.toBuilder().inType(DType.FP8_E4M3).build();
    /** bf16 tokens that dispatch quantises: fp8 codes and two block scales per token to the experts. */
    private static final MoeConfig QUANTIZING = BF16.toBuilder().expertInType(DType.FP8_E4M3).build();

    /** Runs checks on a W=1 handle, then a checked round proving the handle still works. */
    private static void onHandle(MoeConfig config, Consumer<Ctx> checks) {
        Harness.onAllRanks(config, (h, b) -> {
            Workload w = Workload.generate(config, 1, Workload.Options.defaults().tokens(5));
            checks.accept(new Ctx(h, b, b.upload(w.rank(0), false)));
            CheckedRound.run(b, w, false).assertOk();
            return null;
        });
    }

    private record Ctx(MoeAllToAll h, RankBuffers b, DispatchInput in) {
        DeviceMemory mem() {
            return h.memory();
        }

        /**
         * Asserts that {@code call} is refused with a message naming {@code tensor}, before any
         * work: the outputs, poisoned just before, are still all poison after it (then they get
         * their bytes back, which a round in progress still needs).
         */
        String refused(String tensor, Executable call) {
            Map<String, byte[]> saved = b.saveOutputs();
            b.poisonOutputs();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
            assertTrue(e.getMessage().startsWith(tensor + ":"),
                    "message should name " + tensor + ": " + e.getMessage());
            assertEquals(List.of(), b.writtenOutputs(), "outputs written by a refused call: " + e.getMessage());
            b.restoreOutputs(saved);
            return e.getMessage();
        }

        DispatchInput withX(Tensor x) {
            return new DispatchInput(x, in.xScale(), in.indices(), in.count());
        }

        DispatchInput withIndices(Tensor indices) {
            return new DispatchInput(in.x(), in.xScale(), indices, in.count());
        }

        DispatchInput withCount(TokenCount c) {
            return new DispatchInput(in.x(), in.xScale(), in.indices(), c);
        }

        DispatchInput withScale(Tensor s) {
            return new DispatchInput(in.x(), s, in.indices(), in.count());
        }

        void setIndex(int token, int slot, int id) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment s = a.allocate(4);
                s.set(ValueLayout.JAVA_INT, 0, id);
                mem().copyFromHost(in.indices().buf(), 4L * (token * h.config().topK() + slot), s);
            }
        }
    }

    @Test
    void expertIdsOutOfRange() {
        onHandle(BF16, c -> {
            c.setIndex(4, 1, 8);
            String msg = c.refused("indices", () -> c.h().dispatchSend(c.in()));
            assertTrue(msg.contains("token 4") && msg.contains("slot 1") && msg.contains("[-1, E=8)"), msg);
            c.setIndex(4, 1, -2);
            c.refused("indices", () -> c.h().dispatchSend(c.in()));
            // ids beyond m are not looked at (row 5 holds padding)
            c.setIndex(4, 1, -1);
        });
    }

    /** A token names an expert at most once: a repeat is refused before any work, naming token, slot and id. */
    @Test
    void repeatedExpertIdsAreRefused() {
        onHandle(BF16, c -> {
            c.setIndex(4, 0, 3);
            c.setIndex(4, 1, 3);
            String msg = c.refused("indices", () -> c.h().dispatchSend(c.in()));
            assertTrue(msg.contains("expert id 3 of token 4, slot 1") && msg.contains("repeats"), msg);
        });
    }

    /** -1 may repeat (a token's unused slots): such a round is accepted and checked against the reference. */
    @Test
    void unusedSlotsMayRepeat() {
        Harness.onAllRanks(BF16, (h, b) -> {
            Workload w = Workload.generate(BF16, 3, Workload.Options.defaults().tokens(8).drop(0.6));
            int[] ids = w.rank(0).indices();
            int k = BF16.topK();
            int bothUnused = 0;
            for (int t = 0; t < w.rank(0).m(); t++) {
                bothUnused += ids[t * k] == -1 && ids[t * k + 1] == -1 ? 1 : 0;
            }
            assertTrue(bothUnused > 0, "the workload should hold a token whose two slots are -1");
            CheckedRound.run(b, w, false).assertOk();
            return null;
        });
    }

    /**
     * Checked on the device, a repeated id is skipped by the kernels (no buffer can be overrun,
     * the round runs to its end on every rank) and fails the next call, naming token, slot and id.
     */
    @Test
    void repeatedExpertIdsCheckedOnTheDeviceFailTheNextCall() {
        MoeConfig device = BF16.toBuilder().inputCheck(InputCheck.DEVICE).build();
        Harness.onAllRanks(device, (h, b) -> {
            Workload w = Workload.generate(device, 2, Workload.Options.defaults().tokens(6));
            Ctx c = new Ctx(h, b, b.upload(w.rank(0), false));
            c.setIndex(2, 0, 5);
            c.setIndex(2, 1, 5);
            c.h().dispatchSend(c.in());
            String msg = c.refused("indices", () -> c.h().dispatchRecv(c.b().dispatchOutput()));
            assertTrue(msg.contains("expert id 5 of token 2, slot 1") && msg.contains("repeats")
                    && msg.contains("found on the device"), msg);
            return null;
        });
    }

    /**
     * With the check on the device (as on a GPU, where reading the ids on the host waits for the
     * device) a good round passes, and a bad id lets dispatchSend run but fails the next call,
     * naming token, slot and id, and every call after it.
     */
    @Test
    void expertIdsCheckedOnTheDeviceFailTheNextCall() {
        MoeConfig device = BF16.toBuilder().inputCheck(InputCheck.DEVICE).build();
        Harness.onAllRanks(device, (h, b) -> {
            Workload w = Workload.generate(device, 1, Workload.Options.defaults().tokens(5));
            CheckedRound.run(b, w, false).assertOk();
            Ctx c = new Ctx(h, b, b.upload(w.rank(0), false));
            c.setIndex(3, 0, 8);
            c.h().dispatchSend(c.in());
            String msg = c.refused("indices", () -> c.h().dispatchRecv(c.b().dispatchOutput()));
            assertTrue(msg.contains("expert id 8 of token 3, slot 0") && msg.contains("found on the device"), msg);
            // the handle has failed: every later call says so, with the report as its cause
            assertTrue(c.h().isFailed());
            IllegalStateException later = assertThrows(IllegalStateException.class,
                    () -> c.h().dispatchRecv(c.b().dispatchOutput()));
            assertTrue(later.getMessage().contains("has failed") && later.getMessage().contains("expert id 8"),
                    later.getMessage());
            assertInstanceOf(IllegalArgumentException.class, later.getCause());
            for (Executable call : new Executable[] {() -> c.h().combineSend(c.b().expertY()),
                    () -> c.h().dispatchSend(c.in()), () -> c.h().dispatch(c.in(), c.b().dispatchOutput())}) {
                IllegalStateException e = assertThrows(IllegalStateException.class, call);
                assertTrue(e.getMessage().contains("has failed"), e.getMessage());
            }
            return null;
        });
    }

    /**
     * With the checks on the device a count in a buffer is never read on the host: the token
     * tensors need M rows, and a count above M fails the next call.
     */
    @Test
    void aCountInABufferCheckedOnTheDevice() {
        MoeConfig device = BF16.toBuilder().inputCheck(InputCheck.DEVICE).build();
        Harness.onAllRanks(device, (h, b) -> {
            Workload w = Workload.generate(device, 1, Workload.Options.defaults().tokens(5));
            CheckedRound.run(b, w, true).assertOk();
            Ctx c = new Ctx(h, b, b.upload(w.rank(0), false));
            Buf count = c.mem().allocate(4);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment s = a.allocate(4);
                s.set(ValueLayout.JAVA_INT, 0, 12);
                c.mem().copyFromHost(count, 0, s);
            }
            Tensor fiveRows = c.mem().allocate(DType.BF16, 5, 256);
            String rows = c.refused("x", () -> c.h().dispatchSend(new DispatchInput(fiveRows, null,
                    c.in().indices(), TokenCount.inBuffer(count, 0))));
            assertTrue(rows.contains("fewer than the 8"), rows);
            c.h().dispatchSend(c.withCount(TokenCount.inBuffer(count, 0)));
            String msg = c.refused("count", () -> c.h().dispatchRecv(c.b().dispatchOutput()));
            assertTrue(msg.contains("m=12") && msg.contains("found on the device"), msg);
            return null;
        });
    }

    @Test
    void tokenCountAboveM() {
        onHandle(BF16, c -> {
            Tensor bigX = c.mem().allocate(DType.BF16, 9, 256);
            Tensor bigIdx = c.mem().allocate(DType.INT32, 9, 2);
            DispatchInput nine = new DispatchInput(bigX, null, bigIdx, TokenCount.of(9));
            String msg = c.refused("count", () -> c.h().dispatchSend(nine));
            assertTrue(msg.contains("m=9") && msg.contains("M=8"), msg);
            var buf = c.mem().allocate(8);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment s = a.allocate(8);
                s.setAtIndex(ValueLayout.JAVA_INT, 1, 12);
                c.mem().copyFromHost(buf, 0, s);
            }
            c.refused("count", () -> c.h().dispatchSend(
                    new DispatchInput(bigX, null, bigIdx, TokenCount.inBuffer(buf, 1))));
            assertThrows(IllegalArgumentException.class, () -> TokenCount.of(-1));
            assertThrows(IllegalArgumentException.class, () -> TokenCount.inBuffer(buf, 2));
        });
    }

    @Test
    void wrongDtypes() {
        onHandle(BF16, c -> {
            c.refused("x", () -> c.h().dispatchSend(c.withX(c.mem().allocate(DType.FP16, 8, 256))));
            c.refused("indices", () -> c.h().dispatchSend(
                    c.withIndices(c.mem().allocate(DType.FP32, 8, 2))));
            DispatchOutput o = c.b().dispatchOutput();
            c.h().dispatchSend(c.in());
            c.refused("expertX", () -> c.h().dispatchRecv(new DispatchOutput(o.expertNumTokens(),
                    c.mem().allocate(DType.FP16, 8, 8, 256), null)));
            c.refused("expertNumTokens", () -> c.h().dispatchRecv(new DispatchOutput(
                    c.mem().allocate(DType.FP32, 8), o.expertX(), null)));
            c.h().dispatchRecv(o);
            c.refused("expertY", () -> c.h().combineSend(c.mem().allocate(DType.FP32, 8, 8, 256)));
            c.h().combineSend(c.b().expertY());
            c.refused("weights", () -> c.h().combineRecv(c.mem().allocate(DType.BF16, 8, 2), c.b().out()));
            c.refused("out", () -> c.h().combineRecv(c.b().weights(), c.mem().allocate(DType.FP32, 8, 256)));
            c.h().combineRecv(c.b().weights(), c.b().out());
        });
    }

    @Test
    void misalignedBuffersAreRefused() {
        onHandle(BF16, c -> {
            // a view 8 bytes into an allocation: the kernels' 16-byte row copies could not read it
            Tensor x = c.in().x();
            Tensor shifted = Tensor.of(c.mem().allocate(x.buf().byteSize() + 16).slice(8, x.buf().byteSize()),
                    x.dtype(), x.shape());
            String message = c.refused("x", () -> c.h().dispatchSend(c.withX(shifted)));
            assertTrue(message.contains("multiple of 16"), message);
            Tensor out = c.b().out();
            Tensor shiftedOut = Tensor.of(c.mem().allocate(out.buf().byteSize() + 16).slice(4, out.buf().byteSize()),
                    out.dtype(), out.shape());
            c.h().dispatchSend(c.in());
            c.h().dispatchRecv(c.b().dispatchOutput());
            c.h().combineSend(c.b().expertY());
            c.refused("out", () -> c.h().combineRecv(c.b().weights(), shiftedOut));
            c.h().combineRecv(c.b().weights(), out);
        });
    }

    @Test
    void wrongShapes() {
        onHandle(BF16, c -> {
            c.refused("x", () -> c.h().dispatchSend(c.withX(c.mem().allocate(DType.BF16, 8, 128))));
            c.refused("x", () -> c.h().dispatchSend(c.withX(c.mem().allocate(DType.BF16, 4, 256))));
            c.refused("x", () -> c.h().dispatchSend(c.withX(c.mem().allocate(DType.BF16, 8 * 256))));
            c.refused("indices", () -> c.h().dispatchSend(
                    c.withIndices(c.mem().allocate(DType.INT32, 8, 3))));
            // x and indices with exactly m rows are fine (ids -1: routed nowhere)
            Tensor fiveIds = c.mem().allocate(DType.INT32, 5, 2);
            c.mem().fill(fiveIds.buf(), (byte) 0xFF);
            c.h().dispatchSend(new DispatchInput(c.mem().allocate(DType.BF16, 5, 256), null, fiveIds,
                    TokenCount.of(5)));
            DispatchOutput o = c.b().dispatchOutput();
            c.refused("expertX", () -> c.h().dispatchRecv(new DispatchOutput(o.expertNumTokens(),
                    c.mem().allocate(DType.BF16, 8, 7, 256), null)));
            c.refused("expertNumTokens", () -> c.h().dispatchRecv(new DispatchOutput(
                    c.mem().allocate(DType.INT32, 9), o.expertX(), null)));
            c.h().dispatchRecv(o);
            c.refused("expertY", () -> c.h().combineSend(c.mem().allocate(DType.BF16, 8, 8, 128)));
            c.h().combineSend(c.b().expertY());
            c.refused("weights", () -> c.h().combineRecv(c.mem().allocate(DType.FP32, 4, 2), c.b().out()));
            c.refused("out", () -> c.h().combineRecv(c.b().weights(), c.mem().allocate(DType.BF16, 5, 240)));
            c.refused("out", () -> c.h().combineRecv(c.b().weights(), c.mem().allocate(DType.BF16, 4, 256)));
            c.h().combineRecv(c.b().weights(), c.b().out());
        });
    }

    @Test
    void tensorBufferTooSmallIsRejectedWhenTheTensorIsMade() {
        onHandle(BF16, c -> assertThrows(IllegalArgumentException.class,
                () -> Tensor.of(c.mem().allocate(100), DType.BF16, 8, 256)));
    }

    @Test
    void missingOrUnexpectedScales() {
        onHandle(FP8, c -> {
            c.refused("xScale", () -> c.h().dispatchSend(c.withScale(null)));
            c.refused("xScale", () -> c.h().dispatchSend(c.withScale(c.mem().allocate(DType.FP32, 8, 3))));
            c.h().dispatchSend(c.in());
            DispatchOutput o = c.b().dispatchOutput();
            c.refused("expertXScale", () -> c.h().dispatchRecv(
                    new DispatchOutput(o.expertNumTokens(), o.expertX(), null)));
            c.h().dispatchRecv(o);
            c.h().combineSend(c.b().expertY());
            c.h().combineRecv(c.b().weights(), c.b().out());
        });
        onHandle(BF16, c -> {
            c.refused("xScale", () -> c.h().dispatchSend(c.withScale(c.mem().allocate(DType.FP32, 8, 2))));
            c.h().dispatchSend(c.in());
            DispatchOutput o = c.b().dispatchOutput();
            c.refused("expertXScale", () -> c.h().dispatchRecv(new DispatchOutput(o.expertNumTokens(),
                    o.expertX(), c.mem().allocate(DType.FP32, 8, 8, 2))));
            c.h().dispatchRecv(o);
            c.h().combineSend(c.b().expertY());
            c.h().combineRecv(c.b().weights(), c.b().out());
        });
    }

    /** A quantising dispatch takes bf16 tokens without scales and gives fp8 tokens with scales. */
    @Test
    void quantisingDispatchTensors() {
        onHandle(QUANTIZING, c -> {
            c.refused("x", () -> c.h().dispatchSend(c.withX(c.mem().allocate(DType.FP8_E4M3, 8, 256))));
            String unexpected = c.refused("xScale",
                    () -> c.h().dispatchSend(c.withScale(c.mem().allocate(DType.FP32, 8, 2))));
            assertTrue(unexpected.contains("bf16 tokens carry no block scales"), unexpected);
            c.h().dispatchSend(c.in());
            DispatchOutput o = c.b().dispatchOutput();
            String bf16 = c.refused("expertX", () -> c.h().dispatchRecv(new DispatchOutput(
                    o.expertNumTokens(), c.mem().allocate(DType.BF16, 8, 8, 256), o.expertXScale())));
            assertTrue(bf16.contains("fp8_e4m3"), bf16);
            String missing = c.refused("expertXScale",
                    () -> c.h().dispatchRecv(new DispatchOutput(o.expertNumTokens(), o.expertX(), null)));
            assertTrue(missing.contains("[L][NG*M][2]"), missing);
            c.refused("expertXScale", () -> c.h().dispatchRecv(new DispatchOutput(o.expertNumTokens(),
                    o.expertX(), c.mem().allocate(DType.FP32, 8, 8, 3))));
            c.h().dispatchRecv(o);
            c.h().combineSend(c.b().expertY());
            c.h().combineRecv(c.b().weights(), c.b().out());
        });
    }

    @Test
    void callsOutOfOrder() {
        onHandle(BF16, c -> {
            MoeAllToAll h = c.h();
            assertOrder("dispatchRecv", () -> h.dispatchRecv(c.b().dispatchOutput()));
            assertOrder("combineSend", () -> h.combineSend(c.b().expertY()));
            assertOrder("combineRecv", () -> h.combineRecv(c.b().weights(), c.b().out()));
            h.dispatchSend(c.in());
            assertOrder("dispatchSend", () -> h.dispatchSend(c.in())); // second dispatch without combine
            assertOrder("combineSend", () -> h.combineSend(c.b().expertY()));
            h.dispatchRecv(c.b().dispatchOutput());
            assertOrder("dispatchSend", () -> h.dispatchSend(c.in()));
            assertOrder("dispatchRecv", () -> h.dispatchRecv(c.b().dispatchOutput()));
            h.combineSend(c.b().expertY());
            assertOrder("combineSend", () -> h.combineSend(c.b().expertY()));
            h.combineRecv(c.b().weights(), c.b().out());
            assertOrder("combineRecv", () -> h.combineRecv(c.b().weights(), c.b().out()));
            // state checks come before validation: a wrong-order call with bad inputs is still a state error
            assertOrder("combineSend", () -> h.combineSend(c.mem().allocate(DType.FP16, 1)));
        });
    }

    private static void assertOrder(String call, Executable e) {
        IllegalStateException ex = assertThrows(IllegalStateException.class, e);
        assertTrue(ex.getMessage().contains(call), ex.getMessage());
    }

    @Test
    void closedHandleRejectsCalls() {
        try (CpuCluster cluster = CpuCluster.create(1)) {
            MoeAllToAll h = cluster.createHandle(0, BF16);
            RankBuffers b = RankBuffers.allocate(h);
            DispatchInput in = b.upload(Workload.generate(BF16, 2).rank(0), false);
            h.close();
            h.close(); // idempotent
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> h.dispatchSend(in));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
    }

    @Test
    void configInvariants() {
        IllegalArgumentException g = assertThrows(IllegalArgumentException.class,
                () -> MoeConfig.builder().worldSize(6).groupSize(4).numExperts(12).build());
        assertTrue(g.getMessage().contains("groupSize"), g.getMessage());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MoeConfig.builder().worldSize(4).numExperts(6).build());
        assertTrue(e.getMessage().contains("numExperts"), e.getMessage());
        assertRefused(IllegalArgumentException.class, () -> MoeConfig.builder().hidden(100).build(),
                "hidden must be a multiple of 16, got 100");
        assertRefused(IllegalArgumentException.class, () -> MoeConfig.builder().topK(9).numExperts(8).build(),
                "topK 9 exceeds numExperts 8");
        IllegalArgumentException wide = assertThrows(IllegalArgumentException.class,
                () -> MoeConfig.builder().topK(65).numExperts(128).worldSize(2).build());
        assertTrue(wide.getMessage().contains("topK 65 exceeds 64"), wide.getMessage());
        MoeConfig.builder().topK(64).numExperts(128).worldSize(2).build(); // the most that is accepted
        IllegalArgumentException groups = assertThrows(IllegalArgumentException.class,
                () -> MoeConfig.builder().worldSize(1025).numExperts(1025).topK(1).build());
        assertTrue(groups.getMessage().contains("1025 groups exceeds 1024"), groups.getMessage());
        MoeConfig.builder().worldSize(2048).groupSize(2).numExperts(2048).topK(1).build(); // 1024 groups: accepted
        assertRefused(IllegalArgumentException.class, () -> MoeConfig.builder().inType(DType.FP32).build(),
                "dispatch dtype must be one of");
        assertRefused(IllegalArgumentException.class, () -> MoeConfig.builder().outType(DType.FP32).build(),
                "combine output dtype must be one of");
        assertRefused(IllegalArgumentException.class, () -> MoeConfig.builder().expertOutType(DType.FP8_E4M3).build(),
                "expert output dtype must be one of");
        assertRefused(IllegalArgumentException.class, () -> MoeConfig.builder().blockScales(true).build(),
                "block scales go with fp8_e4m3 tokens and only with them");
        assertRefused(IllegalArgumentException.class,
                () -> MoeConfig.builder().waitTimeout(java.time.Duration.ZERO).build(),
                "waitTimeout must be positive, got PT0S");
    }

    /** Dispatch converts only bf16 and fp16 tokens, only to fp8_e4m3, only in whole blocks of 128 values. */
    @Test
    void quantisingConfigInvariants() {
        MoeConfig.Builder b = MoeConfig.builder().hidden(256).expertInType(DType.FP8_E4M3);
        assertTrue(b.inType(DType.BF16).build().quantizes());
        assertTrue(b.inType(DType.FP16).build().quantizes());
        String fp8 = assertThrows(IllegalArgumentException.class, () -> b.inType(DType.FP8_E4M3).blockScales(true)
                .expertInType(DType.BF16).build()).getMessage();
        assertTrue(fp8.contains("dispatch converts only") && fp8.contains("expertInType BF16"), fp8);
        assertThrows(IllegalArgumentException.class,
                () -> MoeConfig.builder().inType(DType.FP16).expertInType(DType.BF16).build());
        assertThrows(IllegalArgumentException.class,
                () -> MoeConfig.builder().inType(DType.BF16).expertInType(DType.FP32).build());
        String hidden = assertThrows(IllegalArgumentException.class,
                () -> MoeConfig.builder().hidden(272).expertInType(DType.FP8_E4M3).build()).getMessage();
        assertTrue(hidden.contains("multiple of 128") && hidden.contains("272"), hidden);
        assertThrows(IllegalArgumentException.class,
                () -> MoeConfig.builder().expertInType(DType.FP8_E4M3).blockScales(true).build());
        MoeConfig q = MoeConfig.builder().hidden(384).expertInType(DType.FP8_E4M3).build();
        assertTrue(q.scalesPerToken() == 3 && q.inputScalesPerToken() == 0 && !q.blockScales(), q.toString());
        assertTrue(q.toString().contains("in=bf16 expertIn=fp8_e4m3+scales"), q.toString());
        assertTrue(q.toBuilder().build().equals(q), "toBuilder keeps the quantisation");
        assertTrue(!BF16.toBuilder().inType(DType.FP16).build().quantizes(), "unset, the expert dtype follows inType");
        assertTrue(!MoeConfig.builder().expertInType(DType.BF16).build().quantizes(), "the same dtype: no conversion");
    }

    @Test
    void clusterRejectsMismatchedWorldAndRank() {
        try (CpuCluster cluster = CpuCluster.create(2)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> cluster.createHandle(0, BF16));
            assertTrue(e.getMessage().contains("worldSize"), e.getMessage());
            MoeConfig two = BF16.toBuilder().worldSize(2).build();
            assertThrows(IllegalArgumentException.class, () -> cluster.createHandle(2, two));
        }
        assertThrows(IllegalArgumentException.class, () -> CpuCluster.create(0));
    }
}
