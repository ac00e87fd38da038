#!/usr/bin/env bash
# Runs the multi-rank dispatch/combine demo on the best backend present (arguments go to the
# demo; --help lists them). Builds first if the demo jar is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar="$root/benchmarks/target/moecomm-benchmarks.jar"
[ -f "$jar" ] || "$root/scripts/install.sh"
java_home=$("$root/scripts/java-home.sh")
exec "$java_home/bin/java" --enable-native-access=ALL-UNNAMED -jar "$jar" demo "$@"
