package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.moecomm.kernels.testing.Refusals.assertRefused;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.moecomm.core.launch.LaunchEnv;
import org.moecomm.core.launch.LaunchException;
import org.moecomm.core.launch.Rendezvous;
import org.moecomm.core.launch.RendezvousServer;

/** The loopback rendezvous that carries the NVSHMEM unique id from rank 0 to the other ranks. */
@Timeout(60)
class RendezvousTest {

    @Test
    void aGetWaitsForTheMatchingPut() throws Exception {
        try (RendezvousServer server = RendezvousServer.start()) {
            assertTrue(server.address().startsWith("127.0.0.1:"), server.address());
            Rendezvous a = new Rendezvous(server.address(), server.token());
            Rendezvous b = new Rendezvous(server.address(), server.token());
            CompletableFuture<byte[]> later = CompletableFuture.supplyAsync(() -> b.get("uid", Duration.ofSeconds(30)));
            Thread.sleep(200);
            byte[] id = new byte[128];
            for (int i = 0; i < id.length; i++) {
                id[i] = (byte) (i * 7);
            }
            a.put("uid", id);
            assertArrayEquals(id, later.get(30, TimeUnit.SECONDS));
            assertArrayEquals(id, b.get("uid", Duration.ofSeconds(1)));
        }
    }

    @Test
    void aMissingKeyTimesOutWithAClearMessage() {
        try (RendezvousServer server = RendezvousServer.start()) {
            Rendezvous r = new Rendezvous(server.address(), server.token());
            LaunchException e = assertThrows(LaunchException.class, () -> r.get("nothing", Duration.ofMillis(300)));
            assertTrue(e.getMessage().contains("no value for 'nothing'"), e.getMessage());
        }
    }

    @Test
    void aWrongTokenIsRefused() {
        try (RendezvousServer server = RendezvousServer.start()) {
            Rendezvous r = new Rendezvous(server.address(), "not-the-token");
            LaunchException e = assertThrows(LaunchException.class, () -> r.put("k", new byte[] {1}));
            assertTrue(e.getMessage().contains("bad token"), e.getMessage());
        }
    }

    @Test
    void onlyLoopbackAddressesAreAccepted() {
        assertRefused(IllegalArgumentException.class, () -> new Rendezvous("192.0.2.1:1234", "t"),
                "must be on the loopback interface, got 192.0.2.1:1234");
        assertRefused(IllegalArgumentException.class, () -> new Rendezvous("nocolon", "t"),
                "rendezvous address must be host:port, got nocolon");
    }

    @Test
    void theStandaloneServerWritesTheRanksVariablesAndServes(@TempDir Path dir) throws Exception {
        Path env = dir.resolve("rendezvous.env");
        Thread server = new Thread(() -> {
            try {
                RendezvousServer.serve(env, Duration.ofSeconds(30));
            } catch (InterruptedException e) {
                // stopped by the test
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        server.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!Files.exists(env) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(Files.exists(env), "no env file written");
            assertTrue(Files.getPosixFilePermissions(env).equals(
                    java.util.Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)),
                    "the token is readable by others: " + Files.getPosixFilePermissions(env));
            Map<String, String> vars = new HashMap<>();
            List<String> lines = Files.readAllLines(env);
            for (String l : lines) {
                vars.put(l.substring(0, l.indexOf('=')), l.substring(l.indexOf('=') + 1));
            }
            Rendezvous r = Rendezvous.fromEnvironment(vars);
            assertTrue(vars.containsKey(LaunchEnv.RENDEZVOUS_TOKEN), lines.toString());
            r.put("k", new byte[] {1, 2, 3});
            assertArrayEquals(new byte[] {1, 2, 3}, Rendezvous.fromEnvironment(vars).get("k", Duration.ofSeconds(5)));
        } finally {
            server.interrupt();
            server.join(10_000);
        }
    }
}
