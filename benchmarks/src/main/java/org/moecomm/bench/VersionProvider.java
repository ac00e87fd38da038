package org.moecomm.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine;

/** What {@code -V} prints: the project's version (written into the jar by the build) and the Java runtime. */
public final class VersionProvider implements CommandLine.IVersionProvider {
    static final String RESOURCE = "/moecomm-version.properties";

    @Override
    public String[] getVersion() {
        return new String[] {"moecomm " + version(), "Java " + Runtime.version() + " (" + System.getProperty("java.vendor")
                + ")"};
    }

    /** The project's version, from {@value #RESOURCE}. */
    static String version() {
        try (InputStream in = VersionProvider.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                return "unknown (" + RESOURCE + " missing)";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
