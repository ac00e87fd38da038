#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root: builds the NVSHMEM bridge's native library
# (scripts/gpu-nvshmem-build.sh build), makes it visible to the tests, starts the MPS daemon for
# the multi-PE tests (when it is not running and MOECOMM_MPS is not 0; scripts/mps.sh, which also
# probes the server before and between the steps and restarts it when it faulted: $OUT/mps.log),
# runs scripts/gpu-check.sh with the arguments given, with GPU_KILL_RANK=1 then
# scripts/gpu-kill-rank.sh, and stops the daemon again if it started it.
#
# On the development machine first: scripts/make-gpu-bundle.sh (the bundle, with the bridge's JNI
# glue and jni.h in .gpu-carry/nvshmem-jni), then carry .gpu-carry and run
# `bash scripts/gpu-nvshmem-check.sh`.
#
# Exit status: gpu-check.sh's, or 5 when the native build failed (the GPU check still runs, so
# the other GPU tests report, but the NVSHMEM tests could not have passed), or 7 when only the
# kill-a-rank check failed (GPU_KILL_RANK=1: scripts/gpu-kill-rank.sh after the GPU check), or 6
# when only the rank sanitizers failed (GPU_SANITIZE_RANKS="memcheck ...": scripts/gpu-sanitize-ranks.sh,
# under MPS and, with GPU_SANITIZE_RANKS_NO_MPS=1, without it).
# Writes $OUT/nvshmem-build.log. MOECOMM_REQUIRE_NVSHMEM=1 is exported after a successful build:
# the NVSHMEM tests then fail, instead of skipping, when the bridge does not load.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
say() { echo "[gpu-nvshmem-check] $*"; }

export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0

build_rc=0
say "building the NVSHMEM bridge"
bash "$root/scripts/gpu-nvshmem-build.sh" build 2>&1 | tee "$out/nvshmem-build.log"
build_rc=${PIPESTATUS[0]}
native="${MOECOMM_NVSHMEM_OUT:-$root/nvshmem-bridge/target/nvshmem-native}"
if [ "$build_rc" -eq 0 ] && [ -f "$native/env.sh" ]; then
  # shellcheck disable=SC1091
  source "$native/env.sh"
  export MOECOMM_REQUIRE_NVSHMEM=1
  say "MOECOMM_NVSHMEM_LIB=$MOECOMM_NVSHMEM_LIB"
  nvshmem_lib_dir=$(dirname "$(readlink -f "${MOECOMM_NVSHMEM_DEVICE_LIB}")")
  if command -v readelf >/dev/null 2>&1; then
    say "libnvshmem_host.so.3 dynamic section (RUNPATH decides where its plugins are found):"
    readelf -d "$nvshmem_lib_dir/libnvshmem_host.so.3" | grep -E 'RUNPATH|RPATH|NEEDED' || true
  fi
  ls "$nvshmem_lib_dir" || true
else
  say "FAILED to build the NVSHMEM bridge (status $build_rc): its tests will skip; see $out/nvshmem-build.log"
  build_rc=${build_rc:-1}
  [ "$build_rc" -eq 0 ] && build_rc=1
fi

# MPS (scripts/mps.sh): started here unless running; its health is probed before the check and
# after every step that may kill GPU processes, and a faulted server is restarted (docs/gpu.md)
# shellcheck source=scripts/mps.sh
source "$root/scripts/mps.sh"
export MPS_LOG="$out/mps.log"
mps_start && mps_recover "before the GPU check"

bash "$root/scripts/gpu-check.sh" "$@"
check_rc=$?

# Optional: ranks started without a launcher, one killed mid-run (scripts/gpu-kill-rank.sh)
kill_rc=0
if [ "${GPU_KILL_RANK:-0}" = 1 ]; then
  mps_between "before the kill-a-rank check"
  bash "$root/scripts/gpu-kill-rank.sh"
  kill_rc=$?
  say "kill-a-rank check exit status: $kill_rc"
  echo "kill-a-rank check: exit status $kill_rc (kill-rank.json)" >> "$out/summary.txt"
fi
# Optional: W = 2 jobs with every rank process under compute-sanitizer (scripts/gpu-sanitize-ranks.sh),
# under MPS, then (GPU_SANITIZE_RANKS_NO_MPS=1, only when this script started the daemon) without it
sanitize_rc=0
if [ -n "${GPU_SANITIZE_RANKS:-}" ]; then
  mps_between "before the rank sanitizers"
  bash "$root/scripts/gpu-sanitize-ranks.sh" mps || sanitize_rc=$?
  if [ "${GPU_SANITIZE_RANKS_NO_MPS:-0}" = 1 ]; then
    if [ "${MPS_STARTED_HERE:-0}" = 1 ]; then
      mps_stop
      bash "$root/scripts/gpu-sanitize-ranks.sh" no-mps || sanitize_rc=$?
      mps_start && mps_recover "after the rank sanitizers without MPS"
    else
      echo "sanitize ranks (no-mps): not run (an MPS daemon this script did not start is running)" >> "$out/summary.txt"
    fi
  fi
  say "rank sanitizers exit status: $sanitize_rc"
fi
mps_between "at the end" || echo "mps: the server was left faulted (mps.log)" >> "$out/summary.txt"
mps_stop

if [ "$build_rc" -ne 0 ]; then
  say "GPU check status $check_rc, but the NVSHMEM bridge did not build: failing"
  exit 5
fi
if [ "$check_rc" -eq 0 ] && [ "$kill_rc" -ne 0 ]; then
  exit 7
fi
if [ "$check_rc" -eq 0 ] && [ "$sanitize_rc" -ne 0 ]; then
  exit 6
fi
exit "$check_rc"
