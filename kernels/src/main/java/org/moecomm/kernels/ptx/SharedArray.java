package org.moecomm.kernels.ptx;

/**
 * One block-shared array: a static {@code .shared} variable of the module, made for one
 * {@code allocate*LocalArray} call site (per inlined copy of that site). Identity matters: the
 * analysis uses it to know which array a reference points to.
 */
final class SharedArray {
    final Kind arrayKind;
    final int length;
    /** Where it was allocated, for the comment in the PTX. */
    final String origin;
    /** PTX name, set when the lowering first declares it. */
    String name;

    SharedArray(Kind arrayKind, int length, String origin) {
        this.arrayKind = arrayKind;
        this.length = length;
        this.origin = origin;
    }

    long bytes() {
        return (long) length * arrayKind.elementBytes();
    }
}
