package org.moecomm.kernels.ptx;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.moecomm.kernels.api.Kernel;

/**
 * The PTX module being written for one kernel: the entry's parameters, its virtual registers
 * (declared on first use), its body, the module's static shared arrays and source files. Renders
 * the module text at the end.
 *
 * <p>Register names carry their kind and origin so the PTX stays readable: {@code %iL3} is local
 * slot 3 as an int, {@code %fS1} operand-stack entry 1 as a float, {@code %lL2_4} local slot 2
 * as a long in inlined copy 4 of some method, {@code %tr7} a temporary {@code .b32}.
 */
final class PtxFunction {
    final Kernel kernel;
    final PtxTarget target;
    final String entryName;
    private final Map<String, String> registers = new LinkedHashMap<>();
    private final List<String> params = new ArrayList<>();
    private final List<String> body = new ArrayList<>();
    private final List<SharedArray> shared = new ArrayList<>();
    private final Map<String, Integer> files = new LinkedHashMap<>();
    /** Device functions the body calls, by name: their {@code .extern .func} declarations. */
    private final Map<String, String> externs = new LinkedHashMap<>();
    /** Performance directives after the parameter list ({@code .maxntid}, {@code .minnctapersm}), or empty. */
    private String directives = "";
    private int temps;
    private int frames;
    private int lastFile = -1;
    private int lastLine = -1;

    PtxFunction(Kernel kernel, PtxTarget target, String entryName) {
        this.kernel = kernel;
        this.target = target;
        this.entryName = entryName;
    }

    /** The entry's launch bounds (LaunchBounds): at most {@code maxThreads} per block, {@code minBlocks} resident per SM. */
    void launchBounds(int maxThreads, int minBlocks) {
        directives = ".maxntid " + maxThreads + ", 1, 1\n.minnctapersm " + minBlocks + "\n";
    }

    /** A new number for an inlined copy of a method (0 is the kernel itself). */
    int newFrame() {
        return frames++;
    }

    /** The register of local slot or stack entry {@code index} ({@code space} 'L' or 'S') of {@code kind}. */
    String reg(Kind kind, char space, int index, int frame) {
        if (!kind.hasRegister()) {
            return null;
        }
        String name = "%" + kind.letter + space + index + (frame == 0 ? "" : "_" + frame);
        registers.putIfAbsent(name, kind.ptxType);
        return name;
    }

    /** A fresh temporary register of PTX type {@code type} ({@code b16, b32, b64, f32, f64, pred}). */
    String tmp(String type) {
        String prefix = switch (type) {
            case "b16" -> "h";
            case "b32" -> "r";
            case "b64" -> "rd";
            case "f32" -> "f";
            case "f64" -> "fd";
            case "pred" -> "p";
            default -> throw new IllegalArgumentException(type);
        };
        String name = "%t" + prefix + (temps++);
        registers.put(name, type);
        return name;
    }

    String tmp(Kind kind) {
        return tmp(kind.ptxType);
    }

    String pred() {
        return tmp("pred");
    }

    /**
     * Adds a kernel parameter of PTX type {@code type} for the kernel's argument at
     * {@code position} (0: the first after the context); returns its name, which names the
     * position, so that it stays the same where a specialised kernel leaves earlier arguments out.
     */
    String param(String type, int position) {
        String name = entryName + "_param_" + position;
        params.add(".param ." + type + " " + name);
        return name;
    }

    /** Declares a shared array (once) and returns its PTX name. */
    String shared(SharedArray a) {
        if (a.name == null) {
            a.name = entryName + "_smem" + shared.size();
            shared.add(a);
        }
        return a.name;
    }

    /** Emits one instruction (without the semicolon). */
    void op(String instruction) {
        body.add("\t" + instruction + ";");
    }

    /** Emits a line as it is (scope braces). */
    void raw(String line) {
        body.add(line);
    }

    /** Declares (once) an external device function the body calls. */
    void declareExtern(String name, String declaration) {
        externs.putIfAbsent(name, declaration);
    }

    /** Names of the external device functions the module calls, in order of first use. */
    List<String> externNames() {
        return List.copyOf(externs.keySet());
    }

    void label(String label) {
        body.add(label + ":");
    }

    void comment(String text) {
        body.add("\t// " + text);
    }

    /** Emits a {@code .loc} when the source position changes. */
    void loc(String sourceFile, int line) {
        if (sourceFile == null || line < 0) {
            return;
        }
        int file = files.computeIfAbsent(sourceFile, f -> files.size() + 1);
        if (file != lastFile || line != lastLine) {
            body.add("\t.loc\t" + file + " " + line + " 0");
            lastFile = file;
            lastLine = line;
        }
    }

    long sharedBytes() {
        long total = 0;
        for (SharedArray a : shared) {
            total += (a.bytes() + 15) & ~15L;
        }
        return total;
    }

    String render() {
        StringBuilder sb = new StringBuilder(body.size() * 24 + 1024);
        sb.append("//\n// Generated by the moecomm bytecode-to-PTX compiler\n// kernel: ")
                .append(kernel.owner().getName()).append('.').append(kernel.name()).append("\n//\n\n");
        sb.append(".version ").append(target.ptxVersion()).append('\n');
        sb.append(".target ").append(target.sm()).append('\n');
        sb.append(".address_size 64\n\n");
        for (Map.Entry<String, Integer> f : files.entrySet()) {
            sb.append(".file\t").append(f.getValue()).append(" \"").append(f.getKey()).append("\"\n");
        }
        if (!files.isEmpty()) {
            sb.append('\n');
        }
        for (SharedArray a : shared) {
            String type = a.arrayKind == Kind.LONG_ARRAY ? "b64" : a.arrayKind == Kind.FLOAT_ARRAY ? "f32" : "b32";
            sb.append(".shared .align 16 .").append(type).append(' ').append(a.name)
                    .append('[').append(Math.max(1, a.length)).append("];\t// ").append(a.origin).append('\n');
        }
        if (!shared.isEmpty()) {
            sb.append('\n');
        }
        for (String decl : externs.values()) {
            sb.append(decl).append('\n');
        }
        if (!externs.isEmpty()) {
            sb.append('\n');
        }
        sb.append(".visible .entry ").append(entryName).append("(");
        for (int i = 0; i < params.size(); i++) {
            sb.append(i == 0 ? "\n\t" : ",\n\t").append(params.get(i));
        }
        sb.append(params.isEmpty() ? ")\n" : "\n)\n").append(directives).append("{\n");
        for (Map.Entry<String, String> r : registers.entrySet()) {
            sb.append("\t.reg .").append(r.getValue()).append(' ').append(r.getKey()).append(";\n");
        }
        sb.append('\n');
        for (String line : body) {
            sb.append(line).append('\n');
        }
        sb.append("}\n");
        return sb.toString();
    }
}
