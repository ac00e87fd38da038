package org.moecomm.kernels.api;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Names a kernel: a {@code public static void} method of {@code owner} called {@code name}
 * (kernel names are unique within their class), whose first parameter is a {@link KernelContext}.
 * Both runners and the compiler start from this.
 *
 * <p>{@code constants} maps argument positions (0 = the first parameter after the context) of
 * {@link Specialize}d parameters to the values a compiled kernel is specialised for; empty for
 * the generic kernel. {@code blockThreads}, when not 0, is the one block size the kernel is
 * compiled for ({@link #forBlockThreads}). Kernels with different constants or block sizes are
 * different compiled kernels.
 */
public record Kernel(Class<?> owner, String name, Map<Integer, Integer> constants, int blockThreads) {

    public Kernel {
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(name, "name");
        constants = java.util.Collections.unmodifiableMap(new TreeMap<>(constants));
        if (blockThreads < 0 || blockThreads > Grid.MAX_THREADS) {
            throw new IllegalArgumentException("kernel " + owner.getSimpleName() + "." + name
                    + ": block threads must be 0 (any) or 1.." + Grid.MAX_THREADS + ", not " + blockThreads);
        }
    }

    /** The kernel specialised for {@code constants}, for any block size. */
    public Kernel(Class<?> owner, String name, Map<Integer, Integer> constants) {
        this(owner, name, constants, 0);
    }

    /** The generic kernel (no specialisation constants). */
    public Kernel(Class<?> owner, String name) {
        this(owner, name, Map.of());
    }

    /**
     * This kernel compiled for blocks of exactly {@code threads} threads: on the GPU
     * {@link KernelContext#localGroupSizeX()} is that constant in it (what the kernel computes
     * from it folds: a division by it becomes a shift), and a launch with another block size is
     * refused ({@link #checkThreads}). GPU runners compile a kernel with {@link Specialize}d
     * parameters this way, for the block size of its launch. On the JVM it runs as the kernel does.
     */
    public Kernel forBlockThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("kernel " + this + ": block threads must be positive, not " + threads);
        }
        return new Kernel(owner, name, constants, threads);
    }

    /** Argument positions of this kernel's {@link Specialize}d parameters, in order. */
    public int[] specializedPositions() {
        Parameter[] p = method().getParameters();
        return java.util.stream.IntStream.range(1, p.length)
                .filter(i -> p[i].isAnnotationPresent(Specialize.class))
                .map(i -> i - 1)
                .toArray();
    }

    /**
     * This kernel specialised for the values {@code args} (launch arguments) give its
     * {@link Specialize}d parameters at {@code positions} (from {@link #specializedPositions()}).
     */
    public Kernel specializedFor(int[] positions, Object[] args) {
        if (positions.length == 0) {
            return this;
        }
        Map<Integer, Integer> values = new TreeMap<>();
        for (int pos : positions) {
            if (pos >= args.length || !(args[pos] instanceof Integer v)) {
                throw new IllegalArgumentException("kernel " + this + ": specialised argument " + (pos + 1)
                        + " must be an Integer");
            }
            values.put(pos, v);
        }
        return new Kernel(owner, name, values, blockThreads);
    }

    /**
     * This kernel as a GPU runner compiles it for a launch: specialised for the values {@code args}
     * give its {@link Specialize}d parameters at {@code positions} and, where there are such
     * parameters (a handle's kernels), for blocks of {@code threads} threads too, unless the kernel
     * is declared {@link AnyBlockSize}; a kernel without them stays generic, for any block size.
     */
    public Kernel specializedFor(int[] positions, Object[] args, int threads) {
        Kernel k = specializedFor(positions, args);
        boolean forItsBlockSize = positions.length > 0 && !method().isAnnotationPresent(AnyBlockSize.class);
        return forItsBlockSize ? k.forBlockThreads(threads) : k;
    }

    /**
     * Launch arguments in which this kernel's {@link Specialize}d parameters take {@code values}, in
     * their order (the other arguments null): what {@link #specializedFor} reads, for compiling a
     * handle's kernel without launching it ({@code moecomm ptx}, the compiler's tests).
     *
     * @throws IllegalArgumentException when {@code values} are not one per such parameter, naming them
     */
    public Object[] argumentsFor(int... values) {
        int[] positions = specializedPositions();
        if (values.length != positions.length) {
            String numbers = Arrays.stream(positions).mapToObj(i -> String.valueOf(i + 1))
                    .collect(Collectors.joining(", "));
            throw new IllegalArgumentException(this + " has " + positions.length + " @Specialize parameters"
                    + " (arguments " + numbers + " after the KernelContext), given " + values.length + " values");
        }
        Object[] args = new Object[positions.length == 0 ? 0 : positions[positions.length - 1] + 1];
        for (int i = 0; i < positions.length; i++) {
            args[positions[i]] = values[i];
        }
        return args;
    }

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
            if (t != int.class && m.getParameters()[i].isAnnotationPresent(Specialize.class)) {
                throw new IllegalArgumentException("kernel " + this + ": parameter " + i
                        + " is @Specialize but not an int");
            }
        }
        return m;
    }

    /** Most threads per block this kernel may be launched with: its {@link LaunchBounds}, else {@link Grid#MAX_THREADS}. */
    public int maxThreadsPerBlock() {
        LaunchBounds b = launchBounds();
        return b == null ? Grid.MAX_THREADS : b.maxThreads();
    }

    /** The kernel method's {@link LaunchBounds}, checked, or null when it has none. */
    public LaunchBounds launchBounds() {
        LaunchBounds b = method().getAnnotation(LaunchBounds.class);
        if (b != null && (b.maxThreads() < 1 || b.maxThreads() > Grid.MAX_THREADS
                || b.minBlocksPerMultiprocessor() < 1)) {
            throw new IllegalArgumentException("kernel " + this + ": @LaunchBounds needs 1 <= maxThreads <= "
                    + Grid.MAX_THREADS + " and minBlocksPerMultiprocessor >= 1, not " + b.maxThreads() + " and "
                    + b.minBlocksPerMultiprocessor());
        }
        return b;
    }

    /**
     * Throws when {@code grid}'s blocks have more threads than {@code maxThreadsPerBlock} (this
     * kernel's {@link #maxThreadsPerBlock()}, which runners look up once per kernel), or another
     * number than the kernel is compiled for ({@link #forBlockThreads}).
     */
    public void checkThreads(Grid grid, int maxThreadsPerBlock) {
        if (blockThreads != 0 && grid.threads() != blockThreads) {
            throw new IllegalArgumentException("kernel " + this + ": a launch of " + grid.threads()
                    + " threads per block, but it is compiled for blocks of " + blockThreads);
        }
        if (grid.threads() > maxThreadsPerBlock) {
            throw new IllegalArgumentException("kernel " + this + ": a launch of " + grid.threads()
                    + " threads per block, above the kernel's most (" + maxThreadsPerBlock
                    + (maxThreadsPerBlock < Grid.MAX_THREADS ? ", its @LaunchBounds)" : ")"));
        }
    }

    @Override
    public String toString() {
        return owner.getSimpleName() + "." + name + (constants.isEmpty() ? "" : constants.toString())
                + (blockThreads == 0 ? "" : "x" + blockThreads);
    }
}
