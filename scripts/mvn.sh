#!/usr/bin/env bash
# Runs Maven with a JDK 25 (found by scripts/java-home.sh), in batch mode, from the repo root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
JAVA_HOME=$("$root/scripts/java-home.sh")
export JAVA_HOME
export PATH="$JAVA_HOME/bin:$PATH"
# Maven's own JVM is that JDK 25: keep its libraries' sun.misc.Unsafe warnings quiet (the flag is
# here, not in .mvn/jvm.config, where a plain `mvn` on an older JDK would refuse to start)
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
cd "$root"
exec mvn -B -ntp "$@"
