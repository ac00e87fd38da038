package org.moecomm.bench;

import java.util.List;

/** Runs configurations on one backend: warm-up and timed rounds, checked per the plan. */
interface Runner {
    /** One measurement per spec, in the given order; all specs have the same world size. */
    List<Measurement> run(List<RunSpec> specs, RoundPlan plan) throws Exception;
}
