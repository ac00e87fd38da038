package org.moecomm.bridge.cuda;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Enumeration;
import java.util.List;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.api.KernelContext;

/** Finds every kernel (public static void method taking a KernelContext first) of a package on the class path. */
final class KernelCatalog {
    private KernelCatalog() {
    }

    static List<Kernel> kernelsIn(String packageName) {
        TreeSet<String> classNames = new TreeSet<>();
        String dir = packageName.replace('.', '/');
        try {
            Enumeration<URL> roots = KernelCatalog.class.getClassLoader().getResources(dir);
            while (roots.hasMoreElements()) {
                URL url = roots.nextElement();
                if (url.getProtocol().equals("jar")) {
                    JarURLConnection c = (JarURLConnection) url.openConnection();
                    c.setUseCaches(false);
                    try (JarFile jar = c.getJarFile()) {
                        Enumeration<JarEntry> entries = jar.entries();
                        while (entries.hasMoreElements()) {
                            String n = entries.nextElement().getName();
                            if (n.startsWith(dir + "/") && n.endsWith(".class") && n.indexOf('/', dir.length() + 1) < 0) {
                                classNames.add(n.substring(0, n.length() - 6).replace('/', '.'));
                            }
                        }
                    }
                } else if (url.getProtocol().equals("file")) {
                    try (Stream<Path> files = Files.list(Path.of(url.toURI()))) {
                        files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".class"))
                                .forEach(n -> classNames.add(packageName + "." + n.substring(0, n.length() - 6)));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        List<Kernel> kernels = new ArrayList<>();
        for (String name : classNames) {
            if (name.contains("$")) {
                continue;
            }
            Class<?> cls;
            try {
                cls = Class.forName(name, false, KernelCatalog.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            for (Method m : cls.getDeclaredMethods()) {
                if (Modifier.isPublic(m.getModifiers()) && Modifier.isStatic(m.getModifiers())
                        && m.getReturnType() == void.class && m.getParameterCount() > 0
                        && m.getParameterTypes()[0] == KernelContext.class) {
                    kernels.add(new Kernel(cls, m.getName()));
                }
            }
        }
        kernels.sort(Comparator.comparing(Kernel::toString));
        return kernels;
    }
}
