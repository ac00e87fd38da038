#!/usr/bin/env bash
# Installs what the project needs on a fresh machine of its kind and builds it:
# checks for a JDK 25 and Maven (installing Maven from Debian if missing), builds all modules
# without running the tests, then the NVSHMEM bridge's native library where CUDA (nvcc) and
# NVSHMEM (NVSHMEM_HOME, the nvidia-nvshmem pip wheel, or the system's NVSHMEM packages) are
# found (scripts/gpu-nvshmem-build.sh local; scripts/demo.sh then uses it), saying what it found.
# Arguments go to Maven (for example -o, or -Dmaven.repo.local=DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v mvn >/dev/null; then
  echo "installing maven" >&2
  apt-get update -q && apt-get install -y -q maven
fi
"$root/scripts/java-home.sh" >/dev/null
"$root/scripts/mvn.sh" -q -DskipTests install "$@"

# The GPU backend: the bridge's native library, where this machine has CUDA and NVSHMEM.
native="$root/nvshmem-bridge/target/nvshmem-native"
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  echo "install: no CUDA (nvcc) found: CPU backend" >&2
  rm -f "$native/env.sh"
elif found=$("$root/scripts/gpu-nvshmem-build.sh" find 2>/dev/null); then
  echo "install: CUDA and NVSHMEM found ($found): building the NVSHMEM bridge" >&2
  JAVACPP_JAR="$root/benchmarks/target/moecomm-benchmarks.jar" "$root/scripts/gpu-nvshmem-build.sh" local >/dev/null
  echo "install: the GPU backend's bridge is in ${native#"$root"/} (scripts/demo.sh uses it)" >&2
else
  echo "install: CUDA found, but no NVSHMEM found (NVSHMEM_HOME, the nvidia-nvshmem pip wheel, the system's" \
       "NVSHMEM packages): CPU backend" >&2
  rm -f "$native/env.sh"
fi
