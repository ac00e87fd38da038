#!/usr/bin/env bash
# Runs the JMH suite of the CPU backend and writes its JSON into a new file under
# benchmarks/results/ (named by date and machine, never over an existing one), with this command
# recorded in it. Extra arguments go to JMH (for example -p tokens=1). The JVM (and JMH's forks,
# which take its options) runs with the Vector API, which the CPU runner's weighted sums use in
# the steady state that JMH measures (docs/kernels-in-java.md, "Vector sums").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar="$root/benchmarks/target/moecomm-benchmarks.jar"
[ -f "$jar" ] || "$root/scripts/install.sh"
java_home=$("$root/scripts/java-home.sh")
cd "$root"
cmd="scripts/bench-jmh.sh $*"
exec "$java_home/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -jar "$jar" \
  jmh --results-dir benchmarks/results --command "${cmd% }" CpuBackendBenchmark "$@"
