#!/usr/bin/env bash
# Regenerates the results section of README.md (tables, and the PNG charts in docs/charts/) from the
# newest files in benchmarks/results/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar="$root/benchmarks/target/moecomm-benchmarks.jar"
[ -f "$jar" ] || "$root/scripts/install.sh"
cd "$root"
exec "$("$root/scripts/java-home.sh")/bin/java" -jar "$jar" report "$@"
