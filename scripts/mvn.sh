#!/usr/bin/env bash
# Runs Maven with a JDK 25 (found by scripts/java-home.sh), in batch mode, from the repo root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
JAVA_HOME=$("$root/scripts/java-home.sh")
export JAVA_HOME
export PATH="$JAVA_HOME/bin:$PATH"
cd "$root"
exec mvn -B -ntp "$@"
