package org.moecomm.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The PNG charts of the results (JFreeChart, drawn without a display): per world size, dispatch
 * and combine latency against tokens per rank, ours (plain launches and graph replay) against
 * the reference library's figures, and the device memory GB/s of each half against the copy
 * bandwidth of the same run; the kernels' GB/s against the device's copy bandwidth; the CPU
 * backend's JMH means.
 */
final class ResultCharts {
    static final int WIDTH = 900;
    static final int HEIGHT = 520;
    private static final String PRESET = "deepseek-v3";

    private ResultCharts() {
    }

    /** {@code phase-latency-w<W>.png}: ours (from {@code ours}' lines of W and the preset) and the reference's. */
    static Path phaseLatency(Path dir, int world, List<JsonNode> ours, List<JsonNode> reference, String referenceName)
            throws IOException {
        XYSeriesCollection data = new XYSeriesCollection();
        // the GPUs in the legend: the reference's figures may be of another card than ours
        String ourGpu = gpuOf(ours);
        String referenceGpu = gpuOf(reference);
        for (String half : List.of("dispatch", "combine")) {
            for (LaunchMode mode : LaunchMode.values()) {
                XYSeries s = new XYSeries("ours " + half + " (" + mode.label()
                        + (ourGpu.isEmpty() ? "" : ", " + ourGpu) + ")");
                for (JsonNode r : ours) {
                    if (r.path("world").asInt() == world && PRESET.equals(r.path("preset").asText())
                            && PhaseJson.launch(r) == mode && r.hasNonNull(half + "MedianUs")) {
                        s.add(r.path("tokens").asInt(), r.get(half + "MedianUs").asDouble());
                    }
                }
                if (!s.isEmpty()) {
                    data.addSeries(s);
                }
            }
            XYSeries ref = new XYSeries(referenceName + " " + half
                    + (referenceGpu.isEmpty() ? "" : " (" + referenceGpu + ")"));
            for (JsonNode r : reference) {
                if (r.path("world").asInt() == world && PRESET.equals(r.path("preset").asText())) {
                    ref.add(r.path("tokens").asInt(), r.get(half + "MedianUs").asDouble());
                }
            }
            if (!ref.isEmpty()) {
                data.addSeries(ref);
            }
        }
        JFreeChart chart = ChartFactory.createXYLineChart(String.format(Locale.ROOT,
                "%s, %s: median latency per half", PRESET, placementOf(ours, world)), "tokens per rank", "us", data,
                PlotOrientation.VERTICAL, true, false, false);
        XYPlot plot = chart.getXYPlot();
        logAxes(plot, "median us (log scale)");
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        for (int i = 0; i < data.getSeriesCount(); i++) {
            String key = data.getSeriesKey(i).toString();
            renderer.setSeriesPaint(i, key.contains("dispatch") ? new Color(0x1f77b4) : new Color(0xd62728));
            renderer.setSeriesStroke(i, key.startsWith("ours") ? new BasicStroke(key.contains("graph") ? 2.5f : 1.5f)
                    : new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 1f, new float[] {6f, 4f}, 0f));
        }
        plot.setRenderer(renderer);
        return write(chart, dir.resolve("phase-latency-w" + world + ".png"));
    }

    /** Where the ranks of W ran, from the lines' {@code mode} ("4 processes on 1 GPU under MPS"), else "W = 4". */
    static String placementOf(List<JsonNode> lines, int world) {
        String modes = lines.stream().filter(r -> r.path("world").asInt() == world).map(r -> r.path("mode").asText(""))
                .filter(m -> !m.isBlank()).distinct().collect(Collectors.joining("/"));
        return modes.isEmpty() ? "W = " + world : modes;
    }

    /**
     * The short name of the GPU the lines were measured on ({@code "NVIDIA H100 80GB HBM3"}: H100;
     * several: joined by "/"); empty when no line names one.
     */
    static String gpuOf(List<JsonNode> lines) {
        return lines.stream().map(r -> r.path("gpu").asText("")).filter(g -> !g.isBlank())
                .map(ResultCharts::shortGpuName).distinct().collect(Collectors.joining("/"));
    }

    /** The model in a GPU's name: its first word of letters then digits (H100, A100, B200), else the whole name. */
    static String shortGpuName(String name) {
        for (String word : name.split("\\s+")) {
            if (word.matches("[A-Za-z]+[0-9]+[A-Za-z0-9]*")) {
                return word;
            }
        }
        return name.strip();
    }

    /**
     * {@code phase-bandwidth-w<W>.png}: the device GB/s of each half (plain launches) of the preset
     * against tokens per rank, with the copy bandwidth measured in the same runs; null when no line
     * of W carries the device fields (files written before them).
     */
    static Path phaseBandwidth(Path dir, int world, List<JsonNode> ours) throws IOException {
        List<JsonNode> lines = ours.stream().filter(r -> r.path("world").asInt() == world
                && PRESET.equals(r.path("preset").asText()) && PhaseJson.launch(r) == LaunchMode.PLAIN).toList();
        XYSeriesCollection data = new XYSeriesCollection();
        for (int p = 0; p < Phases.COUNT; p++) {
            XYSeries s = series(Phases.NAMES.get(p), lines, Phases.KEYS.get(p) + "DeviceGBps");
            if (Phases.isSendOrRecv(p) && !s.isEmpty()) {
                data.addSeries(s);
            }
        }
        if (data.getSeriesCount() == 0) {
            return null;
        }
        XYSeries copy = series("copy bandwidth (same run)", lines, "copyGBps");
        if (!copy.isEmpty()) {
            data.addSeries(copy);
        }
        JFreeChart chart = ChartFactory.createXYLineChart(String.format(Locale.ROOT,
                "%s, %s: device memory GB/s per half (plain launches)", PRESET, placementOf(lines, world)),
                "tokens per rank", "GB/s", data, PlotOrientation.VERTICAL, true, false, false);
        XYPlot plot = chart.getXYPlot();
        logAxes(plot, "GB/s read + written, all ranks (log scale)");
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        for (int i = 0; i < data.getSeriesCount(); i++) {
            if (data.getSeries(i) == copy) {
                renderer.setSeriesPaint(i, Color.DARK_GRAY);
                renderer.setSeriesStroke(i, new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 1f,
                        new float[] {6f, 4f}, 0f));
            }
        }
        plot.setRenderer(renderer);
        return write(chart, dir.resolve("phase-bandwidth-w" + world + ".png"));
    }

    /** Field {@code key} against tokens per rank, of the lines that have it. */
    private static XYSeries series(String name, List<JsonNode> lines, String key) {
        XYSeries s = new XYSeries(name);
        lines.stream().filter(r -> r.hasNonNull(key)).forEach(r -> s.add(r.path("tokens").asInt(), r.get(key).asDouble()));
        return s;
    }

    /** Tokens per rank (log 2) across, {@code range} (log 10) up: the axes of the per-phase charts. */
    private static void logAxes(XYPlot plot, String range) {
        LogAxis tokens = new LogAxis("tokens per rank");
        tokens.setBase(2);
        tokens.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
        tokens.setNumberFormatOverride(new DecimalFormat("0"));
        plot.setDomainAxis(tokens);
        LogAxis values = new LogAxis(range);
        values.setNumberFormatOverride(new DecimalFormat("0"));
        plot.setRangeAxis(values);
    }

    /** {@code kernel-bandwidth.png}: each kernel's GB/s (Java-compiled, CUDA C++ twin) and the copy bandwidth. */
    static Path kernelBandwidth(Path dir, List<JsonNode> kernels) throws IOException {
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (JsonNode r : kernels) {
            String column = r.path("kernel").asText() + " @ " + r.path("tokens").asInt();
            data.addValue(r.path("javaGBps").asDouble(), "Java-compiled", column);
            if (r.hasNonNull("twinGBps")) {
                data.addValue(r.get("twinGBps").asDouble(), "CUDA C++ twin", column);
            }
            data.addValue(r.path("copyGBps").asDouble(), "device copy", column);
        }
        JFreeChart chart = ChartFactory.createBarChart("Kernels on one GPU: GB/s (bytes read + written / median)",
                "kernel @ tokens per rank", "GB/s", data, PlotOrientation.VERTICAL, true, false, false);
        return write(chart, dir.resolve("kernel-bandwidth.png"));
    }

    /** {@code cpu-backend-jmh.png}: the CPU backend's JMH mean per operation, preset and tokens, in ms. */
    static Path cpuBackend(Path dir, JsonNode jmh) throws IOException {
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (JsonNode run : jmh) {
            String name = run.path("benchmark").asText();
            JsonNode params = run.path("params");
            data.addValue(run.path("primaryMetric").path("score").asDouble() / 1e3, name.substring(name.lastIndexOf('.') + 1),
                    params.path("preset").asText() + " @ " + params.path("tokens").asText());
        }
        JFreeChart chart = ChartFactory.createBarChart("CPU backend, W = 4 ranks as threads of one JVM (JMH mean)",
                "preset @ tokens per rank", "ms per operation", data, PlotOrientation.VERTICAL, true, false, false);
        ((CategoryPlot) chart.getPlot()).getRangeAxis().setLowerBound(0);
        return write(chart, dir.resolve("cpu-backend-jmh.png"));
    }

    /** Every chart the results allow, into {@code dir}; returns the files written. */
    static List<Path> writeAll(Path dir, JsonNode jmh, List<JsonNode> kernels, Map<Integer, List<JsonNode>> phasesPerWorld,
            List<JsonNode> reference, String referenceName) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Files.createDirectories(dir);
        List<Path> written = new ArrayList<>();
        for (Map.Entry<Integer, List<JsonNode>> e : phasesPerWorld.entrySet()) {
            written.add(phaseLatency(dir, e.getKey(), e.getValue(), reference, referenceName));
            Path bandwidth = phaseBandwidth(dir, e.getKey(), e.getValue());
            if (bandwidth != null) {
                written.add(bandwidth);
            }
        }
        if (!kernels.isEmpty()) {
            written.add(kernelBandwidth(dir, kernels));
        }
        if (jmh != null) {
            written.add(cpuBackend(dir, jmh));
        }
        return written;
    }

    private static Path write(JFreeChart chart, Path file) throws IOException {
        chart.setBackgroundPaint(Color.WHITE);
        chart.getPlot().setBackgroundPaint(Color.WHITE);
        ChartUtils.saveChartAsPNG(file.toFile(), chart, WIDTH, HEIGHT);
        return file;
    }
}
