package org.moecomm.core.launch;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.CodeSource;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.moecomm.bridge.cuda.Cuda;

/**
 * Starts the {@code W} rank processes of a job on this node: the same {@code java} binary and
 * class path as this JVM, a given main class, one process per rank.
 *
 * <p>Each rank gets {@link LaunchEnv}'s variables (rank, world size, local rank, the loopback
 * rendezvous where rank 0 leaves the NVSHMEM unique id for the others), a
 * {@code CUDA_VISIBLE_DEVICES} chosen by the {@link GpuPolicy} and, where several ranks share
 * a GPU, {@code CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / ranksPerGpu} (NVSHMEM then runs in its
 * full multi-process-per-GPU mode under MPS). NVSHMEM defaults for one node are set unless the
 * caller's environment sets them: {@code NVSHMEM_REMOTE_TRANSPORT=none},
 * {@code NVSHMEM_DISABLE_NVLS=1}.
 *
 * <p>A rank wrapper ({@link Builder#rankWrapper}, by default the words of
 * {@link LaunchEnv#RANK_WRAPPER}) runs every rank's {@code java} under another program, such as
 * {@code compute-sanitizer}: the wrapper is the rank's process, its exit code the rank's, and
 * stopping a rank stops the wrapper's descendants too.
 *
 * <p>Every line a rank prints is copied to the launcher's output prefixed {@code [rank r]}. When a
 * rank exits with a non-zero code the others are stopped and {@link #run()} throws a
 * {@link LaunchException} naming the rank, its exit code and its last lines; so does a run that
 * passes its timeout.
 *
 * <p>Several nodes are not this class's job: start one process per rank with {@code mpirun} or
 * {@code srun} and let NVSHMEM bootstrap through PMI or MPI ({@code NVSHMEM_BOOTSTRAP}); see
 * docs/nvshmem.md.
 */
public final class LocalLauncher {
    /** Where each rank's GPU is. */
    public enum GpuPolicy {
        /** Every rank on one GPU (several NVSHMEM PEs per GPU; run the MPS daemon for speed). */
        SHARED,
        /** Rank r on GPU {@code devices[r % devices.length]}. */
        PER_RANK,
        /** Leave {@code CUDA_VISIBLE_DEVICES} alone (CPU-only jobs, or a caller that sets it). */
        NONE;

        /** The policy's name on a command line: lower case with dashes ({@code per-rank}). */
        public String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        /** The policy named {@code label} ({@link #label()}; case and surrounding spaces aside). */
        public static GpuPolicy byLabel(String label) {
            String l = label.strip().toLowerCase(Locale.ROOT);
            for (GpuPolicy p : values()) {
                if (p.label().equals(l)) {
                    return p;
                }
            }
            throw new IllegalArgumentException("'" + label + "' is not one of "
                    + String.join(", ", Arrays.stream(values()).map(GpuPolicy::label).toList()));
        }
    }

    /** Exit codes by rank and the wall time of a successful run. */
    public record Result(int[] exitCodes, Duration elapsed) {
        public Result {
            exitCodes = exitCodes.clone();
        }

        @Override
        public int[] exitCodes() {
            return exitCodes.clone();
        }
    }

    private static final int TAIL_LINES = 40;
    private static final List<String> PROPAGATED_PROPERTIES = List.of("moecomm.nvshmem.library", "moecomm.log.level",
            "log4j2.configurationFile", "log4j.configurationFile", "java.library.path",
            "org.bytedeco.javacpp.pathsFirst", "org.bytedeco.javacpp.logger.debug", "org.bytedeco.javacpp.cachedir",
            "java.io.tmpdir", "moecomm.gpu.checkPointers");

    private final int worldSize;
    private final String mainClass;
    private final List<String> args;
    private final List<String> jvmOptions;
    private final String classPath;
    private final Map<String, String> env;
    private final GpuPolicy gpuPolicy;
    private final List<String> devices;
    private final Duration timeout;
    private final Duration killGrace;
    private final PrintStream output;
    private final boolean nvshmemDefaults;
    private final List<String> rankWrapper;

    private LocalLauncher(Builder b) {
        this.worldSize = b.worldSize;
        this.mainClass = Objects.requireNonNull(b.mainClass, "mainClass");
        this.args = List.copyOf(b.args);
        this.jvmOptions = List.copyOf(b.jvmOptions);
        this.classPath = b.classPath != null ? b.classPath : defaultClassPath();
        this.env = new LinkedHashMap<>(b.env);
        this.gpuPolicy = b.gpuPolicy;
        this.devices = b.devices == null ? null : List.copyOf(b.devices);
        this.timeout = b.timeout;
        this.killGrace = b.killGrace;
        this.output = b.output;
        this.nvshmemDefaults = b.nvshmemDefaults;
        this.rankWrapper = b.rankWrapper != null ? List.copyOf(b.rankWrapper) : wrapperWords(System.getenv(LaunchEnv.RANK_WRAPPER));
    }

    /** The words of a wrapper given as one string (white space separates them; null or blank: none). */
    static List<String> wrapperWords(String line) {
        if (line == null || line.isBlank()) {
            return List.of();
        }
        return List.of(line.strip().split("\\s+"));
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Runs the job to its end. Returns when every rank exited with 0; throws
     * {@link LaunchException} when a rank fails (the others are stopped), on timeout, or when a
     * process cannot start.
     */
    public Result run() {
        long start = System.nanoTime();
        List<Map<String, String>> rankEnvs = new ArrayList<>();
        List<Process> processes = new ArrayList<>();
        List<Deque<String>> tails = new ArrayList<>();
        List<Thread> pumps = new ArrayList<>();
        Thread hook = new Thread(() -> processes.forEach(p -> stop(p, Duration.ZERO)), "moecomm-launcher-shutdown");
        try (RendezvousServer rendezvous = RendezvousServer.start()) {
            GpuPlacement placement = placement(gpuPolicy, worldSize, devices);
            for (int r = 0; r < worldSize; r++) {
                rankEnvs.add(rankEnvironment(r, rendezvous, placement));
            }
            Runtime.getRuntime().addShutdownHook(hook);
            for (int r = 0; r < worldSize; r++) {
                ProcessBuilder pb = new ProcessBuilder(command());
                pb.redirectErrorStream(true);
                pb.environment().putAll(rankEnvs.get(r));
                Process p;
                try {
                    p = pb.start();
                } catch (IOException e) {
                    processes.forEach(q -> stop(q, killGrace));
                    throw new LaunchException("cannot start rank " + r + " (" + String.join(" ", command()) + "): " + e,
                            r, 0, e);
                }
                processes.add(p);
                Deque<String> tail = new ArrayDeque<>();
                tails.add(tail);
                pumps.add(pump(r, p, tail));
            }
            return monitor(processes, tails, pumps, start);
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException | IllegalArgumentException e) {
                // shutting down, or never added
            }
            stopAll(processes, killGrace);
        }
    }

    private Result monitor(List<Process> processes, List<Deque<String>> tails, List<Thread> pumps, long start) {
        // Ranks in the order they exit, so that the first failure in time is the one reported
        // (a rank that dies because another one died usually exits a little later).
        LinkedBlockingQueue<Integer> exits = new LinkedBlockingQueue<>();
        for (int r = 0; r < worldSize; r++) {
            int rank = r;
            processes.get(r).onExit().thenRun(() -> exits.add(rank));
        }
        int[] codes = new int[worldSize];
        boolean[] done = new boolean[worldSize];
        long deadline = timeout == null ? Long.MAX_VALUE : start + timeout.toNanos();
        int finished = 0;
        while (finished < worldSize) {
            Integer r;
            try {
                r = exits.poll(50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopAll(processes, Duration.ZERO);
                throw new LaunchException("interrupted while waiting for the ranks", e);
            }
            if (r != null && !done[r]) {
                done[r] = true;
                finished++;
                codes[r] = processes.get(r).exitValue();
                if (codes[r] != 0) {
                    stopAll(processes, killGrace);
                    join(pumps, Duration.ofSeconds(5));
                    throw failure(r, codes[r], tails.get(r));
                }
                continue;
            }
            if (System.nanoTime() > deadline) {
                List<Integer> running = new ArrayList<>();
                for (int o = 0; o < worldSize; o++) {
                    if (!done[o]) {
                        running.add(o);
                    }
                }
                stopAll(processes, killGrace);
                join(pumps, Duration.ofSeconds(5));
                StringBuilder m = new StringBuilder("the job timed out after " + timeout.toSeconds() + " s; ranks still"
                        + " running: " + running);
                for (int o : running) {
                    m.append("\n--- last lines of rank ").append(o).append(" ---\n").append(tailText(tails.get(o)));
                }
                throw new LaunchException(m.toString());
            }
        }
        join(pumps, Duration.ofSeconds(10));
        return new Result(codes, Duration.ofNanos(System.nanoTime() - start));
    }

    private static LaunchException failure(int rank, int code, Deque<String> tail) {
        List<String> lines;
        synchronized (tail) {
            lines = new ArrayList<>(tail);
        }
        String headline = null;
        for (String l : lines) {
            if (l.startsWith("Exception in thread") || l.contains("Exception:") || l.contains("Error:")) {
                headline = l.strip();
                break;
            }
        }
        if (headline == null) {
            for (int i = lines.size() - 1; i >= 0; i--) {
                if (!lines.get(i).isBlank()) {
                    headline = lines.get(i).strip();
                    break;
                }
            }
        }
        String signal = code > 128 && code < 160 ? " (killed by signal " + (code - 128) + ")" : "";
        return new LaunchException("rank " + rank + " failed with exit code " + code + signal
                + (headline != null ? ": " + headline : "") + "\n--- last lines of rank " + rank + " ---\n"
                + tailText(tail), rank, code, null);
    }

    private static String tailText(Deque<String> tail) {
        synchronized (tail) {
            return String.join("\n", tail);
        }
    }

    private Thread pump(int rank, Process p, Deque<String> tail) {
        String prefix = "[rank " + rank + "] ";
        Thread t = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    synchronized (tail) {
                        tail.addLast(line);
                        if (tail.size() > TAIL_LINES) {
                            tail.removeFirst();
                        }
                    }
                    if (output != null) {
                        synchronized (output) {
                            output.println(prefix + line);
                        }
                    }
                }
            } catch (IOException e) {
                // process gone
            }
        }, "moecomm-launcher-output-" + rank);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void join(List<Thread> threads, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return;
            }
            try {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Stops every live process: a polite signal to all, then a kill of those still alive after {@code grace}. */
    private static void stopAll(List<Process> processes, Duration grace) {
        for (Process p : processes) {
            if (p.isAlive()) {
                p.descendants().forEach(ProcessHandle::destroy);
                p.destroy();
            }
        }
        long deadline = System.nanoTime() + grace.toNanos();
        for (Process p : processes) {
            long left = deadline - System.nanoTime();
            try {
                if (left > 0) {
                    p.waitFor(left, TimeUnit.NANOSECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (Process p : processes) {
            if (p.isAlive()) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
        }
    }

    /** Stops a rank process and its children: a polite signal, then a kill after {@code grace}. */
    private static void stop(Process p, Duration grace) {
        if (!p.isAlive()) {
            return;
        }
        p.descendants().forEach(ProcessHandle::destroy);
        p.destroy();
        try {
            if (!grace.isZero() && p.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
    }

    // ---- command and environment ----

    /** The command line of every rank (the rank wrapper's words first). */
    public List<String> command() {
        List<String> cmd = new ArrayList<>(rankWrapper);
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        for (String arg : inheritedJvmOptions()) {
            String key = arg.contains("=") ? arg.substring(0, arg.indexOf('=')) : arg.substring(0, Math.min(arg.length(), 4));
            if (jvmOptions.stream().noneMatch(o -> o.startsWith(key))) {
                cmd.add(arg);
            }
        }
        for (String prop : PROPAGATED_PROPERTIES) {
            String v = System.getProperty(prop);
            if (v != null && jvmOptions.stream().noneMatch(o -> o.startsWith("-D" + prop + "="))) {
                cmd.add("-D" + prop + "=" + v);
            }
        }
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(classPath);
        cmd.add(mainClass);
        cmd.addAll(args);
        return cmd;
    }

    /** Options of this JVM the ranks get too: the Unsafe access switch and the thread stack size. */
    private static List<String> inheritedJvmOptions() {
        List<String> inherited = new ArrayList<>();
        try {
            for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
                if (a.startsWith("--sun-misc-unsafe-memory-access=") || a.startsWith("-Xss")) {
                    inherited.add(a);
                }
            }
        } catch (RuntimeException | LinkageError e) {
            // no management module in this runtime: nothing inherited
        }
        return inherited;
    }

    /** The environment changes of rank {@code r} (on top of this process's environment), placed by {@code placement}. */
    private Map<String, String> rankEnvironment(int r, RendezvousServer rendezvous, GpuPlacement placement) {
        Map<String, String> parent = System.getenv();
        Map<String, String> e = new LinkedHashMap<>();
        e.put(LaunchEnv.RANK, Integer.toString(r));
        e.put(LaunchEnv.WORLD_SIZE, Integer.toString(worldSize));
        e.put(LaunchEnv.LOCAL_RANK, Integer.toString(r));
        e.put(LaunchEnv.LOCAL_WORLD_SIZE, Integer.toString(worldSize));
        e.put(LaunchEnv.RENDEZVOUS, rendezvous.address());
        e.put(LaunchEnv.RENDEZVOUS_TOKEN, rendezvous.token());
        int perGpu = 1;
        if (!placement.rankDevices().isEmpty()) {
            String mine = placement.rankDevices().get(r);
            e.put("CUDA_VISIBLE_DEVICES", mine);
            perGpu = placement.ranksOn(mine);
        }
        e.put(LaunchEnv.PES_PER_GPU, Integer.toString(perGpu));
        if (perGpu > 1 && !parent.containsKey("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")) {
            e.put("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", Integer.toString(Math.max(1, 100 / perGpu)));
        }
        if (nvshmemDefaults) {
            putIfAbsent(e, parent, "NVSHMEM_REMOTE_TRANSPORT", "none");
            putIfAbsent(e, parent, "NVSHMEM_DISABLE_NVLS", "1");
            putIfAbsent(e, parent, "NCCL_NVLS_ENABLE", "0");
        }
        e.putAll(env);
        return e;
    }

    private static void putIfAbsent(Map<String, String> e, Map<String, String> parent, String k, String v) {
        if (!parent.containsKey(k)) {
            e.put(k, v);
        }
    }

    /**
     * Where the ranks of a job run: rank r's GPU as a {@code CUDA_VISIBLE_DEVICES} entry, for every
     * rank (empty under {@link GpuPolicy#NONE}, which leaves the variable alone).
     */
    public record GpuPlacement(List<String> rankDevices) {
        public GpuPlacement {
            rankDevices = List.copyOf(rankDevices);
        }

        /** The GPUs used (0 under {@link GpuPolicy#NONE}). */
        public int gpus() {
            return (int) rankDevices.stream().distinct().count();
        }

        /** The ranks that run on {@code device}. */
        public int ranksOn(String device) {
            return (int) rankDevices.stream().filter(device::equals).count();
        }

        /** The most ranks that share one GPU (1 where each has its own, or none is placed). */
        public int ranksPerGpu() {
            return rankDevices.stream().mapToInt(this::ranksOn).max().orElse(1);
        }
    }

    /**
     * Where {@code policy} puts {@code worldSize} ranks started from this process: over
     * {@code devices} when given, else this process's {@code CUDA_VISIBLE_DEVICES} entries, else
     * every GPU the driver sees ({@code SHARED}: the first of them for all).
     */
    public static GpuPlacement placement(GpuPolicy policy, int worldSize, List<String> devices) {
        List<String> ranks = new ArrayList<>();
        if (policy != GpuPolicy.NONE) {
            List<String> d = deviceList(policy, devices, System.getenv());
            for (int r = 0; r < worldSize; r++) {
                ranks.add(policy == GpuPolicy.SHARED ? d.getFirst() : d.get(r % d.size()));
            }
        }
        return new GpuPlacement(ranks);
    }

    /** The GPUs the policy distributes ranks over, as CUDA_VISIBLE_DEVICES entries. */
    private static List<String> deviceList(GpuPolicy policy, List<String> devices, Map<String, String> parent) {
        if (devices != null && !devices.isEmpty()) {
            return devices;
        }
        String visible = parent.get("CUDA_VISIBLE_DEVICES");
        if (visible != null && !visible.isBlank()) {
            List<String> d = Arrays.stream(visible.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
            if (!d.isEmpty()) {
                return d;
            }
        }
        int count = 1;
        if (policy == GpuPolicy.PER_RANK) {
            Cuda.Availability a = Cuda.availability();
            count = a.available() ? Math.max(1, a.deviceCount()) : 1;
        }
        List<String> d = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            d.add(Integer.toString(i));
        }
        return d;
    }

    // ---- class path ----

    /**
     * This JVM's class path ({@code java.class.path}), plus the code locations of this class and
     * of the context class loader's URLs, so that a child sees what a test runner's own class
     * loader sees.
     */
    public static String defaultClassPath() {
        return classPathWith();
    }

    /** {@link #defaultClassPath()} plus the code locations of {@code classes}. */
    public static String classPathWith(Class<?>... classes) {
        Set<String> entries = new LinkedHashSet<>();
        String cp = System.getProperty("java.class.path", "");
        for (String s : cp.split(File.pathSeparator)) {
            if (!s.isBlank()) {
                entries.add(s);
            }
        }
        List<Class<?>> all = new ArrayList<>(Arrays.asList(classes));
        all.add(LocalLauncher.class);
        for (Class<?> c : all) {
            String loc = location(c);
            if (loc != null) {
                entries.add(loc);
            }
        }
        if (Thread.currentThread().getContextClassLoader() instanceof URLClassLoader u) {
            for (URL url : u.getURLs()) {
                String loc = fileOf(url);
                if (loc != null) {
                    entries.add(loc);
                }
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    private static String location(Class<?> c) {
        CodeSource cs = c.getProtectionDomain().getCodeSource();
        return cs == null || cs.getLocation() == null ? null : fileOf(cs.getLocation());
    }

    private static String fileOf(URL url) {
        if (!"file".equals(url.getProtocol())) {
            return null;
        }
        try {
            return Path.of(url.toURI()).toString();
        } catch (URISyntaxException | IllegalArgumentException e) {
            return null;
        }
    }

    // ---- builder and command line ----

    public static final class Builder {
        private int worldSize = 1;
        private String mainClass;
        private final List<String> args = new ArrayList<>();
        private final List<String> jvmOptions = new ArrayList<>();
        private String classPath;
        private final Map<String, String> env = new LinkedHashMap<>();
        private GpuPolicy gpuPolicy = GpuPolicy.SHARED;
        private List<String> devices;
        private Duration timeout = Duration.ofMinutes(10);
        private Duration killGrace = Duration.ofSeconds(5);
        private PrintStream output = System.out;
        private boolean nvshmemDefaults = true;
        private List<String> rankWrapper;

        public Builder worldSize(int w) {
            if (w < 1) {
                throw new IllegalArgumentException("worldSize must be positive, got " + w);
            }
            this.worldSize = w;
            return this;
        }

        public Builder mainClass(String name) {
            this.mainClass = Objects.requireNonNull(name, "name");
            return this;
        }

        public Builder mainClass(Class<?> c) {
            return mainClass(c.getName());
        }

        public Builder args(String... a) {
            this.args.addAll(Arrays.asList(a));
            return this;
        }

        public Builder args(List<String> a) {
            this.args.addAll(a);
            return this;
        }

        /** Extra JVM options of every rank (after {@code --enable-native-access=ALL-UNNAMED}). */
        public Builder jvmOption(String option) {
            this.jvmOptions.add(Objects.requireNonNull(option));
            return this;
        }

        /** Class path of the ranks (default {@link LocalLauncher#defaultClassPath()}). */
        public Builder classPath(String cp) {
            this.classPath = cp;
            return this;
        }

        /** An environment variable of every rank (applied last: overrides the launcher's own). */
        public Builder env(String name, String value) {
            this.env.put(Objects.requireNonNull(name), Objects.requireNonNull(value));
            return this;
        }

        public Builder gpuPolicy(GpuPolicy p) {
            this.gpuPolicy = Objects.requireNonNull(p);
            return this;
        }

        /** GPUs (CUDA_VISIBLE_DEVICES entries) the policy uses; default: this process's CUDA_VISIBLE_DEVICES, else all. */
        public Builder devices(List<String> d) {
            this.devices = List.copyOf(d);
            return this;
        }

        /** Bound of the whole run (null: none); default 10 minutes. */
        public Builder timeout(Duration t) {
            this.timeout = t;
            return this;
        }

        /** Time a stopped rank gets between SIGTERM and SIGKILL; default 5 s. */
        public Builder killGrace(Duration g) {
            this.killGrace = Objects.requireNonNull(g);
            return this;
        }

        /** Where the ranks' prefixed output goes (null: nowhere; their last lines still reach failure messages). */
        public Builder output(PrintStream out) {
            this.output = out;
            return this;
        }

        /** Whether to set NVSHMEM's one-node defaults (default true). */
        public Builder nvshmemDefaults(boolean on) {
            this.nvshmemDefaults = on;
            return this;
        }

        /**
         * Words put before every rank's {@code java} command, e.g. {@code compute-sanitizer --tool
         * memcheck}; an empty list runs {@code java} directly. Default: the words of the
         * {@link LaunchEnv#RANK_WRAPPER} environment variable.
         */
        public Builder rankWrapper(List<String> words) {
            for (String w : words) {
                if (w == null || w.isBlank()) {
                    throw new IllegalArgumentException("rank wrapper words must not be blank: " + words);
                }
            }
            this.rankWrapper = List.copyOf(words);
            return this;
        }

        public LocalLauncher build() {
            return new LocalLauncher(this);
        }
    }

    /**
     * The command line ({@link LauncherCommand}): {@code LocalLauncher [-n W] [--gpus shared|per-rank|none]
     * [--devices 0,1,..] [--timeout SECONDS] [--jvm OPTION]... [--env NAME=VALUE]... [--rank-wrapper WORDS]
     * MAIN_CLASS [ARGS...]}.
     * Exits with 0 when every rank succeeded, 2 for a bad option, else with the failing rank's exit
     * code (1 if none).
     */
    public static void main(String[] argv) {
        System.exit(LauncherCommand.execute(argv));
    }
}
