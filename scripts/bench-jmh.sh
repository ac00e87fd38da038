#!/usr/bin/env bash
# Runs the JMH suite of the CPU backend and writes its JSON into a new file under
# benchmarks/results/ (named by date and machine, never over an existing one), with this command
# recorded in it. Extra arguments go to JMH (for example -p tokens=1). The JVM (and JMH's forks,
# which take its options) runs as a long-running JVM is advised to, for the steady state that JMH
# measures: with the Vector API, which the CPU runner's weighted sums use (docs/kernels-in-java.md,
# "Vector sums"), and with C2 compiling the loop forms ("Which JIT compiles the loop forms";
# MOECOMM_CPU_LOOP_FORMS_IN_C2=false measures the default of the library, C1 only).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar="$root/benchmarks/target/moecomm-benchmarks.jar"
[ -f "$jar" ] || "$root/scripts/install.sh"
java_home=$("$root/scripts/java-home.sh")
cd "$root"
cmd="scripts/bench-jmh.sh $*"
[ -z "${MOECOMM_CPU_LOOP_FORMS_IN_C2:-}" ] || cmd="MOECOMM_CPU_LOOP_FORMS_IN_C2=$MOECOMM_CPU_LOOP_FORMS_IN_C2 $cmd"
exec "$java_home/bin/java" --add-modules jdk.incubator.vector -Dmoecomm.cpu.loopFormsInC2="${MOECOMM_CPU_LOOP_FORMS_IN_C2:-true}" --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -jar "$jar" \
  jmh --results-dir benchmarks/results --command "${cmd% }" CpuBackendBenchmark "$@"
