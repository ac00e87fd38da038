#!/usr/bin/env bash
# Runs the JMH suite of the CPU backend and writes its JSON under benchmarks/results/
# (file named by date and machine). Extra arguments go to JMH (for example -p tokens=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar="$root/benchmarks/target/moecomm-benchmarks.jar"
[ -f "$jar" ] || "$root/scripts/install.sh"
java_home=$("$root/scripts/java-home.sh")
mkdir -p "$root/benchmarks/results"
stem="$root/benchmarks/results/$(date -u +%Y-%m-%d)-$(uname -m)-$(nproc)cpu-jmh-cpu-backend"
# never overwrite an earlier result: a later run of the same day gets -2, -3, ... (as ResultFiles does)
out="$stem.json"
for ((i = 2; ; i++)); do [ -e "$out" ] || break; out="$stem-$i.json"; done
"$java_home/bin/java" --enable-native-access=ALL-UNNAMED -jar "$jar" jmh CpuBackendBenchmark -rf json -rff "$out" "$@"
# Record the command in the results and keep machine paths out of them.
cmd="scripts/bench-jmh.sh $*"
# the command goes into a sed replacement: escape what sed would read there (\, |, &)
cmd=$(printf '%s' "$cmd" | sed -e 's/[\\|&]/\\&/g')
sed -i -e "s|\"jvm\" : \"[^\"]*\"|\"jvm\" : \"java from scripts/java-home.sh\"|" \
       -e "s|\"jmhVersion\" : |\"command\" : \"${cmd% }\",\n        \"jmhVersion\" : |" "$out"
echo "results: ${out#"$root"/}"
