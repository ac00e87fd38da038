#!/usr/bin/env bash
# Installs what the project needs on a fresh machine of its kind and builds it:
# checks for a JDK 25 and Maven (installing Maven from Debian if missing), then builds all
# modules without running the tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v mvn >/dev/null; then
  echo "installing maven" >&2
  apt-get update -q && apt-get install -y -q maven
fi
"$root/scripts/java-home.sh" >/dev/null
"$root/scripts/mvn.sh" -q -DskipTests install
