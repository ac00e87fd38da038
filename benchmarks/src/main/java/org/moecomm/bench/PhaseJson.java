package org.moecomm.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.List;
import org.moecomm.core.protocol.BufferLayout;

/**
 * The per-phase results as JSON lines, one line per configuration (preset x tokens x launch mode)
 * with every phase in it (BENCHMARKS.md "Record"): {@code preset, tokens, world, group, routing,
 * backend, launch, mode, gpu, date, commit, command, warmup, rounds, checked, verified}, per phase
 * {@code <phase>MedianUs} and {@code <phase>P90Us} for dispatchSend, dispatchRecv, combineSend,
 * combineRecv and the whole dispatch and combine (null where the phase was not measured: the
 * send/recv split of {@code launch} "graph"), the bytes ({@code pairs, dispatchRows,
 * dispatchLogicalBytes, combineLogicalBytes, dispatchWireBytes, combineWireBytes}) and the
 * logical rates {@code dispatchGBps, combineGBps} (logical bytes over the whole operation's median),
 * rank 0's own {@code rank0DispatchMedianUs, rank0DispatchP90Us, rank0CombineMedianUs,
 * rank0CombineP90Us} (what pplx-kernels' benchmark reports) and {@code start}, how the ranks were
 * brought together before each half ({@link RoundStart}: "host" unless asked), and the memory a
 * handle of the configuration holds per rank ({@code symmetricBytesPerRank, localBytesPerRank}).
 * The logical rates per rank, {@code dispatchGBpsPerRank, combineGBpsPerRank} (the world's rates
 * over W). Per phase the device memory it moves ({@link DeviceBytes}, described by
 * {@code deviceBytesModel}): {@code <phase>DeviceBytes}, {@code <phase>DeviceGBps} (those bytes
 * over the phase's median) and {@code <phase>CopyPercent} (that rate as a percentage of
 * {@code copyGBps}); the copy baseline of the same run ({@link CopyBaseline}: {@code copyGBps,
 * copyMedianUs, copyBytes} per rank, {@code copyMethod}; null where none was measured).
 * {@code launch} is "plain", "whole" or "graph" ({@link LaunchMode}); lines written before it existed have
 * none and are plain ({@link #launch(JsonNode)}); lines written before the device bytes lack
 * those fields and the per-rank rates.
 */
final class PhaseJson {
    static final String TIMING_GPU = "CUDA events on each rank's stream; per round the slowest rank;"
            + " all ranks aligned by a barrier before dispatch and before combine";
    static final String TIMING_GPU_GRAPH = "CUDA events on each rank's stream around the replay of the captured"
            + " dispatch graph and of the captured combine graph (send and recv not timed apart); per round the"
            + " slowest rank; all ranks aligned by a barrier before dispatch and before combine";
    static final String TIMING_GPU_WHOLE = "CUDA events on each rank's stream around the whole dispatch call and"
            + " the whole combine call, each launched from the host (send and recv not timed apart); per round the"
            + " slowest rank; all ranks aligned by a barrier before dispatch and before combine";
    static final String TIMING_CPU = "System.nanoTime around each call; per round the slowest rank;"
            + " all ranks aligned by a barrier before dispatch and before combine";

    private static final ObjectMapper JSON = new ObjectMapper();

    private PhaseJson() {
    }

    /** Run-wide fields of every line. */
    record Run(String backend, LocalDate date, String commit, String command) {
    }

    static String line(Measurement m, Run run) {
        ObjectNode o = JSON.createObjectNode();
        RunSpec s = m.spec();
        o.put("preset", s.preset());
        o.put("tokens", s.tokens());
        o.put("world", s.world());
        o.put("group", s.group());
        o.put("routing", s.skewed() ? "skewed to rank 0" : "uniform");
        o.put("seed", s.seed());
        o.put("backend", run.backend());
        o.put("launch", m.launch().label());
        o.put("mode", m.mode());
        o.put("gpu", m.device());
        o.put("date", run.date().toString());
        o.put("commit", run.commit());
        o.put("command", run.command());
        o.put("timing", !run.backend().equals("gpu") ? TIMING_CPU : switch (m.launch()) {
            case PLAIN -> TIMING_GPU;
            case WHOLE -> TIMING_GPU_WHOLE;
            case GRAPH -> TIMING_GPU_GRAPH;
        });
        o.put("start", m.plan().start().label());
        o.put("warmup", m.plan().warmup());
        o.put("rounds", m.plan().rounds());
        o.put("checked", m.plan().checkedDescription());
        o.put("verified", m.verified());
        for (int p = 0; p < Phases.COUNT; p++) {
            PhaseTimes t = m.phase(p);
            number(o, Phases.KEYS.get(p) + "MedianUs", t.medianMicros());
            number(o, Phases.KEYS.get(p) + "P90Us", t.p90Micros());
        }
        for (int p : new int[] {Phases.DISPATCH, Phases.COMBINE}) {
            PhaseTimes t = m.rankZero().get(p);
            number(o, "rank0" + capitalized(Phases.KEYS.get(p)) + "MedianUs", t.medianMicros());
            number(o, "rank0" + capitalized(Phases.KEYS.get(p)) + "P90Us", t.p90Micros());
        }
        BufferLayout layout = new BufferLayout(s.config());
        o.put("symmetricBytesPerRank", layout.symmetricBytes());
        o.put("localBytesPerRank", layout.localBytes());
        TrafficModel tr = m.traffic();
        o.put("pairs", tr.pairs());
        o.put("dispatchRows", tr.dispatchRows());
        o.put("dispatchLogicalBytes", tr.logicalDispatchBytes());
        o.put("combineLogicalBytes", tr.logicalCombineBytes());
        o.put("dispatchWireBytes", tr.wireDispatchBytes());
        o.put("combineWireBytes", tr.wireCombineBytes());
        number(o, "dispatchGBps", m.dispatchGBps());
        number(o, "combineGBps", m.combineGBps());
        number(o, "dispatchGBpsPerRank", m.dispatchGBpsPerRank());
        number(o, "combineGBpsPerRank", m.combineGBpsPerRank());
        o.put("deviceBytesModel", DeviceBytes.MODEL);
        for (int p = 0; p < Phases.COUNT; p++) {
            String key = Phases.KEYS.get(p);
            o.put(key + "DeviceBytes", tr.device().of(p));
            number(o, key + "DeviceGBps", m.deviceGBps(p));
            number(o, key + "CopyPercent", 100 * m.copyShare(p));
        }
        CopyBaseline copy = m.copy();
        number(o, "copyGBps", copy == null ? Double.NaN : copy.gbps());
        number(o, "copyMedianUs", copy == null ? Double.NaN : copy.medianMicros());
        if (copy == null) {
            o.putNull("copyBytes");
            o.putNull("copyMethod");
        } else {
            o.put("copyBytes", copy.bytesPerRank());
            o.put("copyMethod", copy.method());
        }
        if (!m.verified()) {
            o.put("problems", String.join("\n", m.problems().subList(0, Math.min(20, m.problems().size()))));
        }
        return o.toString();
    }

    static List<String> lines(List<Measurement> ms, Run run) {
        return ms.stream().map(m -> line(m, run)).toList();
    }

    /** The launch mode of a results line: its {@code launch} field, plain when it has none (older files). */
    static LaunchMode launch(JsonNode line) {
        JsonNode v = line.get("launch");
        return v == null || v.isNull() ? LaunchMode.PLAIN : LaunchMode.byLabel(v.asText());
    }

    /**
     * {@code <date>-<device>-gpu-phases.json} for the GPU backend (the GPU named in lower case,
     * without "NVIDIA"), {@code <date>-cpu-phases.json} for the CPU backend's dry run.
     */
    static String fileName(LocalDate date, String backend, String device) {
        if (!backend.equals("gpu")) {
            return date + "-cpu-phases.json";
        }
        return ResultFiles.name(date, device, "gpu-phases");
    }

    static Path write(Path file, List<String> lines) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.write(file, lines);
        return file;
    }

    /** Four decimals; null where there is no number (JSON has no NaN). */
    private static void number(ObjectNode o, String key, double v) {
        if (Double.isFinite(v)) {
            o.put(key, Math.round(v * 10000.0) / 10000.0);
        } else {
            o.putNull(key);
        }
    }

    private static String capitalized(String key) {
        return Character.toUpperCase(key.charAt(0)) + key.substring(1);
    }
}
