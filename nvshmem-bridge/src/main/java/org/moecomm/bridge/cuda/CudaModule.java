package org.moecomm.bridge.cuda;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A loaded module: code linked by the driver's JIT linker from PTX and other inputs (cubins,
 * fatbins, relocatable objects, static device libraries such as {@code libnvshmem_device.a}).
 */
public final class CudaModule extends ContextResource {
    /** {@code CUjitInputType}: what a linker input is. */
    public enum InputType {
        CUBIN(0), PTX(1), FATBINARY(2), OBJECT(3), LIBRARY(4);

        final int code;

        InputType(int code) {
            this.code = code;
        }
    }

    /**
     * One JIT link ({@code cuLinkCreate}, {@code cuLinkAddData}/{@code cuLinkAddFile},
     * {@code cuLinkComplete}, then {@code cuModuleLoadData} of the result). The driver's info and
     * error logs are kept: a failure throws a {@link CudaException} whose {@link CudaException#log()}
     * is the error log.
     */
    public static final class Linker extends ContextResource {
        private final long handle;
        private final StringBuilder inputs = new StringBuilder();

        Linker(CudaContext context, boolean verbose, int optimizationLevel) {
            super(context, "linker is closed");
            context.bind();
            long[] out = new long[1];
            Cuda.check(CudaNative.mcLinkCreate(out, verbose ? 1 : 0, optimizationLevel), "cuLinkCreate");
            this.handle = out[0];
        }

        /** Adds PTX text; {@code name} appears in the logs. */
        public Linker addPtx(String name, String ptx) {
            byte[] text = ptx.getBytes(StandardCharsets.UTF_8);
            byte[] data = new byte[text.length + 1];
            System.arraycopy(text, 0, data, 0, text.length);
            return addData(InputType.PTX, name, data);
        }

        /** Adds an input held in memory (PTX must end with a NUL byte). */
        public Linker addData(InputType type, String name, byte[] data) {
            ensureOpen();
            context.bind();
            note(name);
            int rc = CudaNative.mcLinkAddData(handle, type.code, data, data.length, name);
            Cuda.check(rc, "cuLinkAddData(" + type + " " + name + ")", errorLog());
            return this;
        }

        /** Adds an input file, such as a static device library. */
        public Linker addFile(InputType type, Path file) {
            ensureOpen();
            context.bind();
            String path = file.toAbsolutePath().toString();
            note(path);
            int rc = CudaNative.mcLinkAddFile(handle, type.code, path);
            Cuda.check(rc, "cuLinkAddFile(" + type + " " + path + ")", errorLog());
            return this;
        }

        private void note(String name) {
            inputs.append(inputs.isEmpty() ? "" : ", ").append(name);
        }

        /** Completes the link and loads the module into the context; this linker is closed afterwards. */
        public CudaModule link() {
            ensureOpen();
            context.bind();
            try {
                long[] module = new long[1];
                int rc = CudaNative.mcLinkCompleteAndLoad(handle, module);
                Cuda.check(rc, "cuLinkComplete/cuModuleLoadData(" + inputs + ")", errorLog());
                return new CudaModule(context, module[0], infoLog(), inputs.toString());
            } finally {
                close();
            }
        }

        /** The JIT's info log so far (registers, spills with a verbose link). */
        public String infoLog() {
            ensureOpen();
            return nonNull(CudaNative.mcLinkInfoLog(handle));
        }

        /** The JIT's error log so far. */
        public String errorLog() {
            ensureOpen();
            return nonNull(CudaNative.mcLinkErrorLog(handle));
        }

        @Override
        void release() {
            context.bind();
            Cuda.check(CudaNative.mcLinkDestroy(handle), "cuLinkDestroy");
        }
    }

    private final long handle;
    private final String infoLog;
    private final String name;
    private final Map<String, CudaFunction> functions = new HashMap<>();

    private CudaModule(CudaContext context, long handle, String infoLog, String name) {
        super(context, "module " + name + " is unloaded");
        this.handle = handle;
        this.infoLog = infoLog;
        this.name = name;
    }

    private static String nonNull(String s) {
        return s == null ? "" : s;
    }

    public CudaContext context() {
        return context;
    }

    public long handle() {
        ensureOpen();
        return handle;
    }

    /** The JIT linker's info log of this module. */
    public String infoLog() {
        return infoLog;
    }

    /** The kernel entry {@code entryName} (a {@code .entry} of the PTX); cached. */
    public CudaFunction function(String entryName) {
        ensureOpen();
        Objects.requireNonNull(entryName, "entryName");
        CudaFunction f = functions.get(entryName);
        if (f == null) {
            context.bind();
            long[] out = new long[1];
            Cuda.check(CudaNative.mcModuleGetFunction(out, handle, entryName), "cuModuleGetFunction(" + entryName + ")");
            f = new CudaFunction(this, entryName, out[0]);
            functions.put(entryName, f);
        }
        return f;
    }

    /** A module-scope {@code .global} variable, as device memory owned by the module. */
    public DeviceBuffer global(String symbol) {
        ensureOpen();
        context.bind();
        long[] ptr = new long[1];
        long[] bytes = new long[1];
        Cuda.check(CudaNative.mcModuleGetGlobal(ptr, bytes, handle, symbol), "cuModuleGetGlobal(" + symbol + ")");
        return DeviceBuffer.wrap(context, ptr[0], bytes[0]);
    }

    /** Unloads the module; its functions become invalid. */
    @Override
    void release() {
        functions.clear();
        context.bind();
        Cuda.check(CudaNative.mcModuleUnload(handle), "cuModuleUnload");
    }

    @Override
    public String toString() {
        return "CudaModule[" + name + "]";
    }
}
