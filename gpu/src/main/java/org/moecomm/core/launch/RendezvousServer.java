package org.moecomm.core.launch;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A key-value meeting point for the ranks of one local job, on a loopback TCP socket
 * ({@code 127.0.0.1} only, ephemeral port, a random token required on every request). Rank 0
 * leaves the NVSHMEM unique id here and the other ranks pick it up ({@link Rendezvous}).
 *
 * <p>Protocol, one request per line, UTF-8: {@code <token> PUT <key> <hex>} answers {@code OK};
 * {@code <token> GET <key> <timeoutMillis>} answers {@code VAL <hex>} once the key is there, or
 * {@code ERR timeout}. Anything else answers {@code ERR ...} and closes the connection.
 *
 * <p>A launcher other than {@link LocalLauncher} (a script, a job system) runs it as a process of
 * its own: {@code java -cp CLASSPATH org.moecomm.core.launch.RendezvousServer --env-file FILE
 * [--max-seconds N]} writes {@code MOECOMM_RENDEZVOUS=...} and {@code MOECOMM_RENDEZVOUS_TOKEN=...}
 * (two lines, a file only its owner can read, complete once it exists) for the ranks'
 * environment, and serves until killed or for N seconds (default 3600), so that a forgotten
 * server ends by itself.
 */
public final class RendezvousServer implements AutoCloseable {
    private static final int MAX_LINE = 1 << 20;

    private final ServerSocket socket;
    private final String token;
    private final Map<String, String> values = new HashMap<>();
    private final ExecutorService connections;
    private final Thread acceptor;
    private volatile boolean closed;

    private RendezvousServer(ServerSocket socket, String token) {
        this.socket = socket;
        this.token = token;
        this.connections = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "moecomm-rendezvous");
            t.setDaemon(true);
            return t;
        });
        this.acceptor = new Thread(this::acceptLoop, "moecomm-rendezvous-accept");
        this.acceptor.setDaemon(true);
        this.acceptor.start();
    }

    /** Starts a server on {@code 127.0.0.1} at a free port, with a fresh random token. */
    public static RendezvousServer start() {
        byte[] secret = new byte[16];
        new SecureRandom().nextBytes(secret);
        try {
            ServerSocket s = new ServerSocket();
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
            return new RendezvousServer(s, HexFormat.of().formatHex(secret));
        } catch (IOException e) {
            throw new LaunchException("cannot open the rendezvous socket on the loopback interface: " + e, e);
        }
    }

    /** {@code 127.0.0.1:port}, the value of {@link LaunchEnv#RENDEZVOUS}. */
    public String address() {
        return socket.getInetAddress().getHostAddress() + ":" + socket.getLocalPort();
    }

    /** The value of {@link LaunchEnv#RENDEZVOUS_TOKEN}. */
    public String token() {
        return token;
    }

    /** Stores a value directly (the launcher itself may publish keys). */
    public void put(String key, byte[] value) {
        synchronized (values) {
            values.put(key, HexFormat.of().formatHex(value));
            values.notifyAll();
        }
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket c = socket.accept();
                if (!c.getInetAddress().isLoopbackAddress()) {
                    c.close();
                    continue;
                }
                connections.execute(() -> serve(c));
            } catch (IOException e) {
                if (!closed) {
                    System.err.println("[moecomm-rendezvous] accept failed: " + e);
                }
                return;
            } catch (RuntimeException e) {
                // executor shut down while closing
                return;
            }
        }
    }

    private void serve(Socket c) {
        try (c;
             BufferedReader in = new BufferedReader(new InputStreamReader(c.getInputStream(), StandardCharsets.UTF_8));
             Writer out = new OutputStreamWriter(c.getOutputStream(), StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.length() > MAX_LINE) {
                    out.write("ERR line too long\n");
                    out.flush();
                    return;
                }
                String reply = handle(line);
                out.write(reply);
                out.write('\n');
                out.flush();
                if (reply.startsWith("ERR") && !reply.equals("ERR timeout")) {
                    return;
                }
            }
        } catch (SocketException e) {
            // peer went away
        } catch (IOException e) {
            if (!closed) {
                System.err.println("[moecomm-rendezvous] connection failed: " + e);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private String handle(String line) throws InterruptedException {
        String[] p = line.strip().split(" ");
        if (p.length < 3 || !p[0].equals(token)) {
            return "ERR bad token or request";
        }
        switch (p[1]) {
            case "PUT" -> {
                if (p.length != 4) {
                    return "ERR PUT needs a key and a value";
                }
                synchronized (values) {
                    values.put(p[2], p[3]);
                    values.notifyAll();
                }
                return "OK";
            }
            case "GET" -> {
                if (p.length != 4) {
                    return "ERR GET needs a key and a timeout";
                }
                long timeout;
                try {
                    timeout = Long.parseLong(p[3]);
                } catch (NumberFormatException e) {
                    return "ERR bad timeout";
                }
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeout));
                synchronized (values) {
                    while (!values.containsKey(p[2])) {
                        long left = deadline - System.nanoTime();
                        if (left <= 0 || closed) {
                            return "ERR timeout";
                        }
                        TimeUnit.NANOSECONDS.timedWait(values, left);
                    }
                    return "VAL " + values.get(p[2]);
                }
            }
            default -> {
                return "ERR unknown command " + p[1];
            }
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            socket.close();
        } catch (IOException e) {
            // closing anyway
        }
        synchronized (values) {
            values.notifyAll();
        }
        connections.shutdownNow();
    }

    /**
     * The standalone server (see the class comment): writes the two variables into {@code envFile}
     * and serves for {@code life}, or until interrupted.
     */
    public static void serve(Path envFile, Duration life) throws IOException, InterruptedException {
        try (RendezvousServer server = start()) {
            String text = LaunchEnv.RENDEZVOUS + "=" + server.address() + "\n" + LaunchEnv.RENDEZVOUS_TOKEN + "="
                    + server.token() + "\n";
            Path dir = envFile.toAbsolutePath().getParent();
            Path tmp = Files.createTempFile(dir, ".rendezvous", ".tmp",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(tmp, text, StandardCharsets.UTF_8);
            // renamed into place: a reader never sees half a file
            Files.move(tmp, envFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            Thread.sleep(life.toMillis());
        }
    }

    /** {@code RendezvousServer --env-file FILE [--max-seconds N]}; exit status 2 for bad arguments. */
    public static void main(String[] args) throws Exception {
        Path envFile = null;
        long seconds = 3600;
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--env-file" -> envFile = Path.of(args[++i]);
                    case "--max-seconds" -> seconds = Long.parseLong(args[++i]);
                    default -> throw new IllegalArgumentException("unknown argument " + args[i]);
                }
            }
            if (envFile == null || seconds < 1) {
                throw new IllegalArgumentException("--env-file FILE is required, --max-seconds must be positive");
            }
        } catch (RuntimeException e) {
            System.err.println("RendezvousServer: " + e.getMessage()
                    + "\nusage: RendezvousServer --env-file FILE [--max-seconds N]");
            System.exit(2);
            return;
        }
        serve(envFile, Duration.ofSeconds(seconds));
    }
}
