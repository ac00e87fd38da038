package org.moecomm.core.gpu;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.moecomm.core.launch.LocalLauncher;

/** Shared pieces of the launcher and GPU tests. */
final class GpuTestSupport {
    private GpuTestSupport() {
    }

    /**
     * Skips the calling test, with the reason, unless CUDA and the NVSHMEM bridge are usable:
     * a GPU test must never pass without having run on a GPU. Where the bridge was built for
     * this run ({@code MOECOMM_REQUIRE_NVSHMEM=1}, set by scripts/gpu-nvshmem-check.sh) an
     * unusable bridge fails the test instead.
     */
    static void assumeGpu() {
        GpuBackend.Availability a = GpuBackend.availability();
        if (!a.available() && "1".equals(System.getenv("MOECOMM_REQUIRE_NVSHMEM"))) {
            fail("MOECOMM_REQUIRE_NVSHMEM=1 but the GPU backend is not usable: " + a.reason());
        }
        assumeTrue(a.available(), () -> "no GPU with NVSHMEM here: " + a.reason());
    }

    /** Output of a launched job: printed as it comes (prefixed by rank) and kept for assertions. */
    static final class CapturedOutput {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream stream;

        CapturedOutput(boolean echo) {
            OutputStream target = echo ? new Tee(bytes, System.out) : bytes;
            stream = new PrintStream(target, true, StandardCharsets.UTF_8);
        }

        String text() {
            synchronized (stream) {
                return bytes.toString(StandardCharsets.UTF_8);
            }
        }
    }

    private static final class Tee extends OutputStream {
        private final OutputStream a;
        private final OutputStream b;

        Tee(OutputStream a, OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public void write(int c) throws java.io.IOException {
            a.write(c);
            b.write(c);
        }

        @Override
        public void write(byte[] buf, int off, int len) throws java.io.IOException {
            a.write(buf, off, len);
            b.write(buf, off, len);
        }

        @Override
        public void flush() throws java.io.IOException {
            a.flush();
            b.flush();
        }
    }

    /** A launcher of {@code mainClass} with this test's class path, all ranks on one GPU. */
    static LocalLauncher.Builder launcher(int world, Class<?> mainClass, CapturedOutput out, Duration timeout) {
        return LocalLauncher.builder()
                .worldSize(world)
                .mainClass(mainClass)
                .classPath(LocalLauncher.classPathWith(mainClass, GpuBackend.class))
                .jvmOption("-Xss4m")
                .gpuPolicy(LocalLauncher.GpuPolicy.SHARED)
                .output(out.stream)
                .timeout(timeout);
    }
}
