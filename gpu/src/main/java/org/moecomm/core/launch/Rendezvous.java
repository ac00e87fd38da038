package org.moecomm.core.launch;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;

/**
 * A rank's side of the {@link RendezvousServer}: {@link #put} and a blocking {@link #get} of
 * small byte values by key. Only loopback addresses are accepted.
 */
public final class Rendezvous {
    private final InetSocketAddress address;
    private final String token;

    public Rendezvous(String hostPort, String token) {
        Objects.requireNonNull(hostPort, "hostPort");
        this.token = Objects.requireNonNull(token, "token");
        int colon = hostPort.lastIndexOf(':');
        if (colon < 1) {
            throw new IllegalArgumentException("rendezvous address must be host:port, got " + hostPort);
        }
        String host = hostPort.substring(0, colon);
        int port;
        try {
            port = Integer.parseInt(hostPort.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("rendezvous address must be host:port, got " + hostPort, e);
        }
        InetAddress a;
        try {
            a = InetAddress.getByName(host);
        } catch (IOException e) {
            throw new IllegalArgumentException("bad rendezvous host " + host, e);
        }
        if (!a.isLoopbackAddress()) {
            throw new IllegalArgumentException("the rendezvous must be on the loopback interface, got " + hostPort);
        }
        this.address = new InetSocketAddress(a, port);
    }

    /** The rendezvous named by {@link LaunchEnv#RENDEZVOUS} and {@link LaunchEnv#RENDEZVOUS_TOKEN}, or null when not set. */
    public static Rendezvous fromEnvironment(Map<String, String> env) {
        String a = env.get(LaunchEnv.RENDEZVOUS);
        if (a == null || a.isBlank()) {
            return null;
        }
        String t = env.get(LaunchEnv.RENDEZVOUS_TOKEN);
        if (t == null || t.isBlank()) {
            throw new IllegalArgumentException(LaunchEnv.RENDEZVOUS + " is set but " + LaunchEnv.RENDEZVOUS_TOKEN + " is not");
        }
        return new Rendezvous(a, t);
    }

    public void put(String key, byte[] value) {
        checkKey(key);
        String reply = request(token + " PUT " + key + " " + HexFormat.of().formatHex(value), 10_000);
        if (!reply.equals("OK")) {
            throw new LaunchException("rendezvous PUT " + key + " failed: " + reply);
        }
    }

    /** Waits up to {@code timeout} for {@code key}; throws {@link LaunchException} when it does not appear. */
    public byte[] get(String key, Duration timeout) {
        checkKey(key);
        long ms = Math.max(1, timeout.toMillis());
        String reply = request(token + " GET " + key + " " + ms, ms + 10_000);
        if (reply.startsWith("VAL ")) {
            return HexFormat.of().parseHex(reply.substring(4));
        }
        if (reply.equals("ERR timeout")) {
            throw new LaunchException("rendezvous: no value for '" + key + "' after " + ms
                    + " ms (did rank 0 start and publish it?)");
        }
        throw new LaunchException("rendezvous GET " + key + " failed: " + reply);
    }

    private static void checkKey(String key) {
        if (key == null || key.isEmpty() || key.chars().anyMatch(c -> c <= ' ')) {
            throw new IllegalArgumentException("rendezvous keys are non-empty and contain no spaces: '" + key + "'");
        }
    }

    private String request(String line, long readTimeoutMillis) {
        try (Socket s = new Socket()) {
            s.connect(address, 10_000);
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, readTimeoutMillis));
            Writer out = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8);
            out.write(line);
            out.write('\n');
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            String reply = in.readLine();
            if (reply == null) {
                throw new LaunchException("rendezvous at " + address + " closed the connection without answering");
            }
            return reply;
        } catch (IOException e) {
            throw new LaunchException("rendezvous at " + address + " unreachable: " + e, e);
        }
    }
}
