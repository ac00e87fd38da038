package org.moecomm.kernels.ptx;

import java.lang.classfile.Instruction;
import java.lang.classfile.Opcode;
import java.lang.classfile.instruction.BranchInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Full unrolling of the loops whose trip count is known at compile time, such as
 * {@code for (int k = 0; k + 4 <= topK; k += 4)} with {@code topK} a literal, a constant field or a
 * specialised parameter.
 *
 * <p>Why: the compiler emits one register per local slot and no scheduling, so a loop stays a
 * loop in the PTX and {@code ptxas} only sees one iteration's loads at a time. Unrolled, the loads
 * of all iterations are straight-line code that {@code ptxas} can issue together, as {@code nvcc}
 * does for such loops.
 *
 * <p>How: the transformation works on the method's instruction list, before lowering, and leaves
 * the rest to the ordinary {@link Analysis}. A loop is a range of instructions {@code [head, end]}
 * entered only at {@code head}, with jumps back to {@code head} from inside it. Its trip count is
 * found by running the analysis' transfer function over one iteration at a time, starting from
 * the state on entry: while the iterations' states differ only in constants, each iteration's
 * branches resolve, and the loop has {@code n} trips if no jump back to {@code head} is reachable
 * in iteration {@code n}. The loop is then replaced by {@code n + 1} copies of its range, in which
 * the jumps back to {@code head} of copy {@code c} go to the head of copy {@code c + 1}, and those
 * of the last copy to its own head. This is loop peeling, correct whatever the analysis finds; the
 * re-run analysis then sees the induction variable as a constant in every copy, resolves each
 * copy's exit test, and finds the last copy's jump back unreachable, so no loop is left (and the
 * last copy keeps only its exit test). A loop whose induction variable is not a constant on
 * entry, or changes by a non-constant amount, or whose bound is not a constant, never gets
 * iteration states that resolve its exit test and is left alone.
 *
 * <p>Limits: at most {@link #MAX_TRIPS} trips, at most {@link #MAX_LOOP_SIZE} instructions for the
 * unrolled loop and {@link #MAX_GROWTH} added to one method, counting the bytecode instructions
 * of the methods called (they are inlined). Loops that allocate shared arrays (directly or in a
 * called method) are left alone: each copy of the allocation would be another array. Loops with
 * barriers are unrolled: the trip count is the same for every thread, so every thread passes the
 * copies' barriers in the same order. Nested loops are unrolled from the outside in, one level per
 * pass, so an inner loop whose bound is the outer loop's variable is unrolled too.
 *
 * <p>Setting the system property {@value #PROPERTY} to {@code false} turns unrolling off, to
 * compare the PTX with and without it.
 */
final class LoopUnrolling {
    /** System property that turns unrolling off when {@code false}. */
    static final String PROPERTY = "moecomm.ptx.unroll";
    /** Most trips of a loop that is unrolled. */
    static final int MAX_TRIPS = 16;
    /** Most instructions (bytecode, with the inlined callees') of an unrolled loop: trips times its body. */
    static final int MAX_LOOP_SIZE = 4096;
    /** Most instructions unrolling may add to one method (each inlined copy of a method counts apart). */
    static final int MAX_GROWTH = 8192;
    /** Most rounds of unrolling (one level of nesting each). */
    private static final int MAX_PASSES = 8;

    private static final Logger LOG = LogManager.getLogger(LoopUnrolling.class);

    /** A loop to unroll: the range {@code [head, end]} becomes {@code copies} copies. */
    private record Loop(int head, int end, int copies, int growth) {
        boolean overlaps(Loop o) {
            return head <= o.end && o.head <= end;
        }
    }

    /** What a range of code costs when inlined: instructions, and whether it allocates shared arrays. */
    private record Cost(int size, boolean allocates) {
    }

    private final ClassFiles classes;
    private final Frame entry;
    private final Map<String, Cost> callees = new HashMap<>();
    private final Set<String> visiting = new HashSet<>();

    private LoopUnrolling(ClassFiles classes, Frame entry) {
        this.classes = classes;
        this.entry = entry;
    }

    /**
     * Analyses the method of {@code scope} entered with {@code entry}, and unrolls its loops with a
     * compile-time trip count. Returns the analysis of the final code; where loops were unrolled,
     * its {@code scope} and {@code code} are those of the unrolled copy of the method (the same
     * method, owner and source lines, other instruction indices).
     */
    static Analysis analyse(Scope scope, ClassFiles classes, Frame entry) {
        Analysis an = new Analysis(scope, classes, entry);
        if (Boolean.parseBoolean(System.getProperty(PROPERTY, "true"))) {
            LoopUnrolling u = new LoopUnrolling(classes, entry);
            int budget = MAX_GROWTH;
            for (int pass = 0; pass < MAX_PASSES; pass++) {
                List<Loop> loops = u.choose(an, budget);
                if (loops.isEmpty()) {
                    break;
                }
                for (Loop l : loops) {
                    budget -= l.growth();
                    LOG.debug("kernel {}: unrolled the loop at {} ({} trips)", scope.kernel, an.code.where(l.head()),
                            l.copies() - 1);
                }
                MethodCode unrolled = unroll(an.code, loops);
                an = new Analysis(new Scope(scope.kernel, unrolled, scope.caller, scope.callIndex), classes, entry);
            }
        }
        return an;
    }

    // ---- finding loops ----

    /**
     * The loops to unroll in this pass: those with a known trip count that fit the limits,
     * outermost first, without overlaps (the copies of an inner loop are unrolled in the next pass).
     */
    private List<Loop> choose(Analysis an, int budget) {
        MethodCode code = an.code;
        int n = code.size();
        int[][] succ = new int[n][];
        for (int i = 0; i < n; i++) {
            if (an.before[i] != null) {
                succ[i] = an.successors(i, an.before[i]).stream().mapToInt(Integer::intValue).toArray();
            }
        }
        // A reachable jump from i back to h <= i makes h a loop head; the loop ends at the last such i.
        int[] end = new int[n];
        Arrays.fill(end, -1);
        for (int i = 0; i < n; i++) {
            if (succ[i] != null) {
                for (int s : succ[i]) {
                    if (s <= i) {
                        end[s] = Math.max(end[s], i);
                    }
                }
            }
        }
        List<Loop> found = new ArrayList<>();
        for (int h = 0; h < n; h++) {
            if (end[h] >= 0) {
                Loop l = measure(an, succ, h, end[h]);
                if (l != null) {
                    found.add(l);
                }
            }
        }
        found.sort(Comparator.comparingInt((Loop l) -> l.end() - l.head()).reversed());
        List<Loop> chosen = new ArrayList<>();
        for (Loop l : found) {
            if (l.growth() <= budget && chosen.stream().noneMatch(l::overlaps)) {
                chosen.add(l);
                budget -= l.growth();
            }
        }
        chosen.sort(Comparator.comparingInt(Loop::head));
        return chosen;
    }

    /** The loop {@code [head, end]} if it can and should be unrolled, else {@code null}. */
    private Loop measure(Analysis an, int[][] succ, int head, int end) {
        MethodCode code = an.code;
        Instruction last = code.insn(end);
        if (!MethodCode.isTerminal(last) && end + 1 >= code.size()) {
            return null;
        }
        // Entered only at its head: then the head dominates the range, and the range can be copied.
        for (int j = 0; j < code.size(); j++) {
            if (succ[j] != null && (j < head || j > end)) {
                for (int s : succ[j]) {
                    if (s > head && s <= end) {
                        return null;
                    }
                }
            }
        }
        Cost body = cost(code, head, end);
        if (body.allocates()) {
            return null;
        }
        int trips;
        try {
            trips = trips(an, succ, head, end);
        } catch (KernelCompileException e) {
            return null;   // not expected (the states are as precise as the analysis'); then leave the loop
        }
        if (trips < 1 || (long) trips * body.size() > MAX_LOOP_SIZE) {
            return null;
        }
        return new Loop(head, end, trips + 1, (trips - 1) * body.size());
    }

    /**
     * The trip count of loop {@code [head, end]}: the number of iterations after which no jump
     * back to {@code head} is reachable, found by analysing one iteration at a time from the
     * state on entry; {@code -1} if that does not happen within {@link #MAX_TRIPS} trips.
     */
    private int trips(Analysis an, int[][] succ, int head, int end) {
        Frame state = head == 0 ? entry : null;
        for (int j = 0; j < an.code.size(); j++) {
            if (succ[j] != null && (j < head || j > end)) {
                for (int s : succ[j]) {
                    if (s == head) {
                        state = merge(state, an.step(j, an.before[j]));
                        if (state == null) {
                            return -1;
                        }
                    }
                }
            }
        }
        if (state == null) {
            return -1;
        }
        for (int trip = 0; trip <= MAX_TRIPS; trip++) {
            Frame next = iterate(an, head, end, state);
            if (next == null) {
                return trip;
            }
            if (next == INCOMPATIBLE || next.equals(state)) {
                return -1;   // the same state again: the loop does not end on constants
            }
            state = next;
        }
        return -1;
    }

    /** Marks states that cannot be merged (operand stacks of different shapes). */
    private static final Frame INCOMPATIBLE = new Frame(new Value[0], new Value[0]);

    private static Frame merge(Frame a, Frame b) {
        return a == null ? b : a.merge(b);
    }

    /**
     * Analyses one iteration of loop {@code [head, end]} entered with {@code state}; returns the
     * state at the jumps back to {@code head} (merged), {@code null} if none is reachable.
     */
    private static Frame iterate(Analysis an, int head, int end, Frame state) {
        MethodCode code = an.code;
        Frame[] in = new Frame[end - head + 1];
        in[0] = state;
        Deque<Integer> work = new ArrayDeque<>();
        work.add(head);
        Frame back = null;
        while (!work.isEmpty()) {
            int b = work.poll();
            Frame f = in[b - head];
            for (int i = b; ; i++) {
                Frame out = an.step(i, f);
                if (MethodCode.endsBlock(code.insn(i)) || code.leader[i + 1]) {
                    for (int s : an.successors(i, f)) {
                        if (s == head) {
                            back = merge(back, out);
                            if (back == null) {
                                return INCOMPATIBLE;
                            }
                        } else if (s > head && s <= end) {
                            Frame old = in[s - head];
                            Frame merged = merge(old, out);
                            if (merged == null) {
                                return INCOMPATIBLE;
                            }
                            if (!merged.equals(old)) {
                                in[s - head] = merged;
                                if (!work.contains(s)) {
                                    work.add(s);
                                }
                            }
                        }
                    }
                    break;
                }
                f = out;
            }
        }
        return back;
    }

    // ---- size of code with its callees ----

    private Cost cost(MethodCode code, int from, int to) {
        int size = 0;
        boolean allocates = false;
        for (int i = from; i <= to; i++) {
            size++;
            if (code.insn(i) instanceof InvokeInstruction inv) {
                String owner = inv.owner().asInternalName();
                String name = inv.name().stringValue();
                String desc = inv.type().stringValue();
                Intrinsics.Intrinsic intrinsic = Intrinsics.find(owner, name, desc);
                if (intrinsic != null) {
                    allocates |= intrinsic.allocates() != null;
                } else if (inv.opcode() == Opcode.INVOKESTATIC) {
                    Cost c = calleeCost(owner, name, desc);
                    size += c.size();
                    allocates |= c.allocates();
                }
            }
        }
        return new Cost(size, allocates);
    }

    /** The cost of inlining a static method; recursion (rejected later, when inlining) counts as nothing. */
    private Cost calleeCost(String owner, String name, String desc) {
        String key = owner + "." + name + desc;
        Cost known = callees.get(key);
        if (known != null) {
            return known;
        }
        MethodCode m = classes.method(owner, name, desc);
        if (m == null || !m.hasCode || !visiting.add(key)) {
            return new Cost(0, false);
        }
        Cost c = m.size() == 0 ? new Cost(0, false) : cost(m, 0, m.size() - 1);
        visiting.remove(key);
        callees.put(key, c);
        return c;
    }

    // ---- rewriting ----

    /**
     * {@code code} with each of {@code loops} (disjoint, by head) replaced by its copies. A
     * copy's jumps inside the range stay in the copy, its jumps back to the head go to the next
     * copy's head (the last copy's to its own), and its jumps out of the range go where the
     * original's go. A loop whose last instruction can fall through (a conditional jump back, as
     * in {@code do ... while}) gets a {@code goto} to the instruction after the loop at the end of
     * each copy, since the next copy now follows it.
     */
    private static MethodCode unroll(MethodCode code, List<Loop> loops) {
        int n = code.size();
        Loop[] loopAt = new Loop[n];
        for (Loop l : loops) {
            for (int i = l.head(); i <= l.end(); i++) {
                loopAt[i] = l;
            }
        }
        // Layout: where each instruction outside the loops, and each loop's first copy, goes.
        Map<Loop, Integer> base = new HashMap<>();
        Map<Loop, Integer> length = new HashMap<>();
        int[] at = new int[n + 1];
        int pos = 0;
        for (int i = 0; i < n; i++) {
            Loop l = loopAt[i];
            if (l != null) {
                int len = l.end() - l.head() + 1 + (MethodCode.isTerminal(code.insn(l.end())) ? 0 : 1);
                base.put(l, pos);
                length.put(l, len);
                pos += l.copies() * len;
                i = l.end();
            } else {
                at[i] = pos++;
            }
        }
        at[n] = pos;
        List<Instruction> insns = new ArrayList<>(pos);
        int[] lines = new int[pos];
        int[][] targets = new int[pos][];
        String[] notes = new String[pos];
        for (int i = 0; i < n; i++) {
            Loop l = loopAt[i];
            if (l == null) {
                int[] t = code.targets(i);
                int[] mapped = new int[t.length];
                for (int k = 0; k < t.length; k++) {
                    mapped[k] = outside(t[k], loopAt, base, at);
                }
                lines[insns.size()] = code.line(i);
                targets[insns.size()] = mapped;
                notes[insns.size()] = code.note(i);
                insns.add(code.insn(i));
                continue;
            }
            int b = base.get(l);
            int len = length.get(l);
            String where = (code.sourceFile != null ? code.sourceFile : code.name) + ":" + code.line(l.head());
            int trips = l.copies() - 1;
            for (int c = 0; c < l.copies(); c++) {
                int copyBase = b + c * len;
                int nextHead = b + Math.min(c + 1, l.copies() - 1) * len;
                for (int j = l.head(); j <= l.end(); j++) {
                    int[] t = code.targets(j);
                    int[] mapped = new int[t.length];
                    for (int k = 0; k < t.length; k++) {
                        int tk = t[k];
                        mapped[k] = tk == l.head() ? nextHead
                                : tk > l.head() && tk <= l.end() ? copyBase + (tk - l.head())
                                : outside(tk, loopAt, base, at);
                    }
                    lines[insns.size()] = code.line(j);
                    targets[insns.size()] = mapped;
                    notes[insns.size()] = code.note(j);
                    insns.add(code.insn(j));
                }
                String note = c < trips ? "unrolled loop " + where + ": trip " + (c + 1) + " of " + trips
                        : "unrolled loop " + where + ": exit after " + trips + " trips";
                String old = notes[copyBase];
                notes[copyBase] = old == null ? note : note + "; " + old;
                if (len > l.end() - l.head() + 1) {
                    // The synthetic goto reuses the last instruction's label only to be a goto
                    // instruction; its target is the index given here.
                    lines[insns.size()] = code.line(l.end());
                    targets[insns.size()] = new int[] {outside(l.end() + 1, loopAt, base, at)};
                    insns.add(BranchInstruction.of(Opcode.GOTO, ((BranchInstruction) code.insn(l.end())).target()));
                }
            }
            i = l.end();
        }
        return new MethodCode(code, insns, lines, targets, notes);
    }

    /**
     * Where a jump to {@code target} from outside a loop's copies goes: into a loop, to its first
     * copy (a reachable jump can only enter at the head; unreachable code keeps a valid target).
     */
    private static int outside(int target, Loop[] loopAt, Map<Loop, Integer> base, int[] at) {
        Loop l = target < loopAt.length ? loopAt[target] : null;
        return l == null ? at[target] : base.get(l) + (target - l.head());
    }
}
