package org.moecomm.kernels.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link Kernel#specializedFor(int[], Object[], int)}: a kernel as a GPU runner compiles it for a launch. */
class KernelTest {
    static void scaled(KernelContext ctx, Buf out, int n, @Specialize int factor) {
    }

    static void generic(KernelContext ctx, Buf out, int n) {
    }

    @AnyBlockSize
    static void scaledAnySize(KernelContext ctx, Buf out, int n, @Specialize int factor) {
    }

    @Test
    void aKernelWithSpecialisedParametersIsCompiledForItsValuesAndBlockSize() {
        Kernel k = new Kernel(KernelTest.class, "scaled");
        Kernel launched = k.specializedFor(k.specializedPositions(), new Object[] {null, 100, 3}, 128);
        assertEquals(Map.of(2, 3), launched.constants());
        assertEquals(128, launched.blockThreads());
        assertThrows(IllegalArgumentException.class,
                () -> k.specializedFor(k.specializedPositions(), new Object[] {null, 100, 3}, 0));
    }

    @Test
    void aKernelDeclaredForAnyBlockSizeIsCompiledForItsValuesOnly() {
        Kernel k = new Kernel(KernelTest.class, "scaledAnySize");
        Kernel launched = k.specializedFor(k.specializedPositions(), new Object[] {null, 100, 3}, 128);
        assertEquals(Map.of(2, 3), launched.constants());
        assertEquals(0, launched.blockThreads());
    }

    @Test
    void argumentsForPutTheValuesAtTheSpecialisedPositions() {
        Kernel k = new Kernel(KernelTest.class, "scaled");
        Object[] args = k.argumentsFor(3);
        assertEquals(Map.of(2, 3), k.specializedFor(k.specializedPositions(), args).constants());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> k.argumentsFor(3, 4));
        assertTrue(e.getMessage().contains("1 @Specialize parameters (arguments 3 after the KernelContext), given 2"),
                e.getMessage());
        assertEquals(0, new Kernel(KernelTest.class, "generic").argumentsFor().length);
    }

    @Test
    void aGenericKernelStaysGenericForAnyBlockSize() {
        Kernel k = new Kernel(KernelTest.class, "generic");
        Kernel launched = k.specializedFor(k.specializedPositions(), new Object[] {null, 100}, 128);
        assertSame(k, launched);
        assertEquals(0, launched.blockThreads());
    }
}
