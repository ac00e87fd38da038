#!/usr/bin/env bash
# Runs the multi-rank dispatch/combine demo on the best backend present (arguments go to the
# demo; --help lists them): the GPU backend where scripts/install.sh built the NVSHMEM bridge
# (its environment, nvshmem-bridge/target/nvshmem-native/env.sh, is read here) and a GPU is
# usable, else the CPU backend. Builds first if the demo jar is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar="$root/benchmarks/target/moecomm-benchmarks.jar"
[ -f "$jar" ] || "$root/scripts/install.sh"
bridge_env="$root/nvshmem-bridge/target/nvshmem-native/env.sh"
if [ -z "${MOECOMM_NVSHMEM_LIB:-}" ] && [ -f "$bridge_env" ]; then
  # shellcheck disable=SC1090
  source "$bridge_env"
  export NVSHMEM_DISABLE_NVLS="${NVSHMEM_DISABLE_NVLS:-1}"
fi
java_home=$("$root/scripts/java-home.sh")
exec "$java_home/bin/java" --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -jar "$jar" demo "$@"
