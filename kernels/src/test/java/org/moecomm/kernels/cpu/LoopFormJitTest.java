package org.moecomm.kernels.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;
import org.moecomm.kernels.api.Kernel;
import org.moecomm.kernels.moe.MoeKernels;

/**
 * The directive that keeps the loop forms out of C2 ({@link LoopFormJit}): in place in this JVM
 * once a loop form is built, and its property read strictly.
 */
class LoopFormJitTest {
    @Test
    void buildingALoopFormKeepsTheLoopFormsInC1() throws Exception {
        assertTrue(CpuKernelRunner.loopFormRefusal(new Kernel(MoeKernels.class, "pack")).isEmpty());
        assertEquals(LoopFormJit.C1_ONLY, LoopFormJit.outcome(), "tests run without " + LoopFormJit.PROPERTY);
        assertTrue(CpuKernelRunner.loopFormsInC1Only());
        String directives = String.valueOf(ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerDirectivesPrint",
                new Object[] {new String[0]}, new String[] {String[].class.getName()}));
        assertTrue(directives.contains("matching: *$LoopForm$*.*"), directives);
    }

    @Test
    void thePropertyIsTrueOrFalse() {
        String before = System.getProperty(LoopFormJit.PROPERTY);
        try {
            System.setProperty(LoopFormJit.PROPERTY, " TRUE ");
            assertTrue(LoopFormJit.inC2());
            System.setProperty(LoopFormJit.PROPERTY, "false");
            assertFalse(LoopFormJit.inC2());
            System.setProperty(LoopFormJit.PROPERTY, "yes");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, LoopFormJit::inC2);
            assertTrue(e.getMessage().contains(LoopFormJit.PROPERTY) && e.getMessage().contains("'yes'"),
                    e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty(LoopFormJit.PROPERTY);
            } else {
                System.setProperty(LoopFormJit.PROPERTY, before);
            }
        }
        assertFalse(LoopFormJit.inC2());
    }
}
