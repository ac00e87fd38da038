package org.moecomm.kernels.ptx;

import java.io.IOException;
import java.io.InputStream;
import java.lang.classfile.Attributes;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.FieldModel;
import java.lang.classfile.MethodModel;
import java.lang.classfile.attribute.ConstantValueAttribute;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.constant.ConstantDesc;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Reads class files (as resources of a class loader) and the methods in them; one instance per
 * compilation, so each class is parsed once.
 */
final class ClassFiles {
    private final ClassLoader loader;
    private final Map<String, Optional<ClassModel>> classes = new HashMap<>();
    private final Map<String, MethodCode> methods = new HashMap<>();

    ClassFiles(ClassLoader loader) {
        this.loader = loader != null ? loader : ClassLoader.getSystemClassLoader();
    }

    /** The parsed class with this internal name ({@code a/b/C}), if its bytes can be found. */
    Optional<ClassModel> classModel(String internalName) {
        return classes.computeIfAbsent(internalName, this::load);
    }

    private Optional<ClassModel> load(String internalName) {
        String resource = internalName + ".class";
        try (InputStream in = loader.getResourceAsStream(resource)) {
            InputStream s = in != null ? in : ClassLoader.getSystemResourceAsStream(resource);
            if (s == null) {
                return Optional.empty();
            }
            try (s) {
                return Optional.of(ClassFile.of().parse(s.readAllBytes()));
            }
        } catch (IOException e) {
            throw new KernelCompileException("cannot read the class file of " + internalName.replace('/', '.'), e);
        }
    }

    /**
     * The method {@code name}{@code descriptor} of {@code owner} or, for an inherited static
     * method, of its nearest superclass or superinterface that declares it; {@code null} if none.
     */
    MethodCode method(String owner, String name, String descriptor) {
        String key = owner + "." + name + descriptor;
        MethodCode cached = methods.get(key);
        if (cached != null) {
            return cached;
        }
        for (String c = owner; c != null; ) {
            Optional<ClassModel> cm = classModel(c);
            if (cm.isEmpty()) {
                return null;
            }
            for (MethodModel m : cm.get().methods()) {
                if (m.methodName().equalsString(name) && m.methodType().equalsString(descriptor)) {
                    MethodCode code = new MethodCode(cm.get(), m);
                    methods.put(key, code);
                    return code;
                }
            }
            for (ClassEntry itf : cm.get().interfaces()) {
                MethodCode inItf = method(itf.asInternalName(), name, descriptor);
                if (inItf != null) {
                    return inItf;
                }
            }
            c = cm.get().superclass().map(ClassEntry::asInternalName).orElse(null);
        }
        return null;
    }

    /** The method of {@code owner} called {@code name} (kernel names are unique in their class). */
    MethodCode uniqueMethod(String owner, String name) {
        ClassModel cm = classModel(owner).orElseThrow(() -> new KernelCompileException(
                "cannot find the class file of " + owner.replace('/', '.') + " (is it loaded from a jar or directory?)",
                null, null, -1, null));
        MethodModel found = null;
        for (MethodModel m : cm.methods()) {
            if (m.methodName().equalsString(name)) {
                if (found != null) {
                    throw new KernelCompileException("kernel method name '" + name + "' is not unique in "
                            + owner.replace('/', '.'), owner.replace('/', '.'), name, -1, "overloaded kernel method");
                }
                found = m;
            }
        }
        if (found == null) {
            throw new KernelCompileException("no method '" + name + "' in the class file of " + owner.replace('/', '.'),
                    owner.replace('/', '.'), name, -1, null);
        }
        return method(owner, name, found.methodType().stringValue());
    }

    /**
     * The compile-time constant of a {@code static final} field ({@code ConstantValue}
     * attribute), looked up in {@code owner} and its supertypes; empty if there is none.
     */
    Optional<ConstantDesc> constantField(String owner, String name, String descriptor) {
        for (String c = owner; c != null; ) {
            Optional<ClassModel> cm = classModel(c);
            if (cm.isEmpty()) {
                return Optional.empty();
            }
            for (FieldModel f : cm.get().fields()) {
                if (f.fieldName().equalsString(name) && f.fieldType().equalsString(descriptor)) {
                    return f.findAttribute(Attributes.constantValue())
                            .map(ConstantValueAttribute::constant)
                            .map(e -> e.constantValue());
                }
            }
            for (ClassEntry itf : cm.get().interfaces()) {
                Optional<ConstantDesc> inItf = constantField(itf.asInternalName(), name, descriptor);
                if (inItf.isPresent()) {
                    return inItf;
                }
            }
            c = cm.get().superclass().map(ClassEntry::asInternalName).orElse(null);
        }
        return Optional.empty();
    }
}
