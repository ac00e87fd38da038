#!/usr/bin/env bash
# Runs the whole test suite (GPU-tagged tests are excluded here; scripts/gpu-check.sh runs them on a GPU machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/mvn.sh" install "$@"
