package org.moecomm.kernels.api;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;

/**
 * Names a kernel: a {@code public static void} method of {@code owner} called {@code name}
 * (kernel names are unique within their class), whose first parameter is a {@link KernelContext}.
 * Both runners and the compiler start from this.
 */
public record Kernel(Class<?> owner, String name) {

    /** The kernel method, checked for the kernel shape. */
    public Method method() {
        List<Method> found = Arrays.stream(owner.getDeclaredMethods())
                .filter(m -> m.getName().equals(name))
                .toList();
        if (found.size() != 1) {
            throw new IllegalArgumentException("kernel " + this + ": expected exactly one method named '" + name
                    + "' in " + owner.getName() + ", found " + found.size());
        }
        Method m = found.getFirst();
        Class<?>[] p = m.getParameterTypes();
        if (!Modifier.isStatic(m.getModifiers()) || m.getReturnType() != void.class
                || p.length == 0 || p[0] != KernelContext.class) {
            throw new IllegalArgumentException("kernel " + this
                    + " must be a static void method whose first parameter is a KernelContext");
        }
        for (int i = 1; i < p.length; i++) {
            Class<?> t = p[i];
            if (t != Buf.class && t != int.class && t != long.class && t != float.class) {
                throw new IllegalArgumentException("kernel " + this + ": parameter " + i + " has type "
                        + t.getName() + "; kernels take Buf, int, long or float");
            }
        }
        return m;
    }

    @Override
    public String toString() {
        return owner.getSimpleName() + "." + name;
    }
}
