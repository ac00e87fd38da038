#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root: pplx-kernels measured by its own method and by
# ours in the same call as our benchmark (benchmarks/src/main/cuda/pplx_baseline.cu; docs/benchmarks.md,
# "pplx-kernels by our method"). Needs pplx-kernels' public source, which is not part of this
# project: its csrc/ folder at commit 12cecfd (the commit of BENCHMARKS.md's reference figures) in
# the git-ignored folder .pplx-kernels/ (or $PPLX_KERNELS_SRC), made on a machine with network access:
#
#   git clone https://github.com/perplexityai/pplx-kernels .pplx-kernels/git && \
#     git -C .pplx-kernels/git archive 12cecfd csrc LICENSE | tar -x -C .pplx-kernels && \
#     echo 12cecfd > .pplx-kernels/COMMIT && rm -rf .pplx-kernels/git
#
# and carried with the run. Builds pplx-kernels' NVSHMEM all-to-all (AllToAllInterNode) with the
# program against the NVSHMEM wheel, starts MPS, and for each world size and token count runs W
# processes, placed on the GPUs as `moecomm bench --gpus` places its ranks (PPLX_GPUS: per-rank, the
# default, one GPU each on a machine of W GPUs and all on the GPU of a machine with one; or shared):
# one JSON line per way of timing (stream: pplx-kernels' loop; host-plain and
# host-graph: ours) with rank 0's and the slowest rank's medians and p90s, into
# $OUT/pplx-baseline.json, each run's output checked against the inputs first.
# Environment: PPLX_WORLDS (default "4 2"), PPLX_TOKENS (default "1 8 32 128"), PPLX_SAMPLES
# (default 200), PPLX_RUN_TIMEOUT_S (one world and token count, default 90), PPLX_KERNELS_SRC,
# CUDA_ARCH (default 90a), OUT, PPLX_BUILD_DIR (a folder that keeps the program for the next call,
# which then skips the build; scripts/gpu-pplx-same-run.sh runs it so).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
src="${PPLX_KERNELS_SRC:-$root/.pplx-kernels}/csrc"
arch="${CUDA_ARCH:-90a}"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
[ -f "$src/all_to_all/internode.h" ] || { echo "pplx baseline: no pplx-kernels source at $src (see this script's header)"; exit 2; }
command -v nvcc >/dev/null 2>&1 || { echo "pplx baseline: no nvcc"; exit 2; }
read -r inc lib _ < <(bash scripts/gpu-nvshmem-build.sh find) || { echo "pplx baseline: no NVSHMEM"; exit 2; }
if [ -n "${PPLX_BUILD_DIR:-}" ]; then
  bin=$PPLX_BUILD_DIR   # kept: a later call with the same folder runs the program built here
  mkdir -p "$bin"
else
  bin=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-pplx.XXXXXX")
  trap 'rm -rf "$bin"' EXIT
fi
# --expt-relaxed-constexpr: its kernels call std::min in device code (its CMake build gets the flag from PyTorch's)
flags=(-std=c++17 -O3 -rdc=true --expt-relaxed-constexpr -gencode "arch=compute_$arch,code=sm_$arch" -I"$src" -I"$inc" -Wno-deprecated-gpu-targets)
build() {
  local pids=() f rc=0
  for f in "$src/all_to_all/internode_dispatch.cu" "$src/all_to_all/internode_combine.cu" \
           "$src/all_to_all/internode.cpp" "$src/all_to_all/all_to_all.cpp" benchmarks/src/main/cuda/pplx_baseline.cu; do
    nvcc "${flags[@]}" -x cu -c "$f" -o "$bin/$(basename "${f%.*}").o" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc = 0 ] || return 1
  nvcc "${flags[@]}" "$bin"/*.o "$lib/libnvshmem_device.a" -o "$bin/pplx_baseline" \
    -L"$lib" -l:libnvshmem_host.so.3 -Xlinker -rpath,"$lib" -lcuda
}
PPLX_KERNELS_COMMIT=$(cat "${PPLX_KERNELS_SRC:-$root/.pplx-kernels}/COMMIT" 2>/dev/null || echo unknown)
export PPLX_KERNELS_COMMIT
echo "pplx baseline: building pplx-kernels $PPLX_KERNELS_COMMIT against $inc"
if [ -x "$bin/pplx_baseline" ]; then
  echo "pplx baseline: the program built before in $bin"
else
  build > "$out/pplx-build.log" 2>&1 || { echo "pplx baseline: build failed"; tail -30 "$out/pplx-build.log"; exit 5; }
fi
# shellcheck source=scripts/mps.sh
source scripts/mps.sh
export MPS_LOG="$out/mps.log"
mps_start && mps_recover "before the pplx-kernels runs"
rc=0
: > "$out/pplx-baseline.json"
# the first failure ends the runs (the next would most likely fail the same way, at the cost of its timeout)
for w in ${PPLX_WORLDS:-4 2}; do
  for t in ${PPLX_TOKENS:-1 8 32 128}; do
    timeout "${PPLX_RUN_TIMEOUT_S:-90}" "$bin/pplx_baseline" "$w" "$t" "${PPLX_SAMPLES:-200}" > "$bin/lines" 2> "$bin/err"
    status=$?
    cat "$bin/err" >> "$out/pplx-baseline.log"
    if [ $status = 0 ]; then
      tee -a "$out/pplx-baseline.json" < "$bin/lines"
      continue
    fi
    echo "pplx baseline: W = $w, $t tokens failed (exit status $status)"
    tail -20 "$bin/err"
    rc=1
    mps_recover "after a failed pplx-kernels run"
    break 2
  done
done
mps_stop
exit $rc
