#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root (no bundle needed: C++ and the driver only): what
# a replayed CUDA graph costs W processes sharing the GPU under MPS, with no library in the way
# (benchmarks/src/main/cuda/graph_start.cu: a kernel that stamps %globaltimer, or an exchange of
# nothing that waits for every process's blocks, timed with events around each replay as
# `moecomm bench` times a replayed half, the processes met at a spin barrier before each round):
# the floor under a replayed half (docs/benchmarks.md, "The floor under a W = 4 round").
# Writes one JSON line per launch mode, world size and kernel shape to $OUT/graph-start.json and
# prints them.
# Environment: GRAPH_START_WORLDS (default "1 2 4"), GRAPH_START_ROUNDS (default 2000),
# GRAPH_START_SHAPES (BLOCKSxTHREADS, with :join for the exchange kernel that waits for every
# process's blocks, :wide for the stamp with 40 more parameters, :shared for the stamp in a block
# with 44 KB of shared memory; default "1x1 8x256 8x256:join": one thread, the one-launch
# dispatch's grid at W = 4, 1 token, deepseek-v3, and that grid as an exchange of nothing),
# GRAPH_START_LAUNCHES (default "graph"; "graph plain" adds every shape launched with cuLaunchKernel
# each round, as the benchmark's plain mode), GRAPH_START_PERCENT (each process's
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, default 100 / W as the benchmark's ranks), OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
command -v nvcc >/dev/null 2>&1 || { echo "graph start: no nvcc"; exit 2; }
bin=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-graph-start.XXXXXX")
trap 'rm -rf "$bin"' EXIT
nvcc -O2 -o "$bin/graph_start" benchmarks/src/main/cuda/graph_start.cu -lcuda || { echo "graph start: build failed"; exit 5; }
# shellcheck source=scripts/mps.sh
source scripts/mps.sh
export MPS_LOG="$out/mps.log"
mps_start && mps_recover "before the graph-start runs"
rc=0
: > "$out/graph-start.json"
for launch in ${GRAPH_START_LAUNCHES:-graph}; do
  for w in ${GRAPH_START_WORLDS:-1 2 4}; do
    for shape in ${GRAPH_START_SHAPES:-1x1 8x256 8x256:join}; do
      grid=${shape%:*}
      kernel=()
      [ "$grid" != "$shape" ] && kernel=("${shape#*:}")
      if line=$(GRAPH_START_LAUNCH=$launch "$bin/graph_start" "$w" "${GRAPH_START_ROUNDS:-2000}" "${grid%x*}" \
          "${grid#*x}" "${kernel[@]}"); then
        echo "$line" | tee -a "$out/graph-start.json"
      else
        echo "graph start: $launch, W = $w, $shape failed"
        rc=1
      fi
    done
  done
done
mps_stop
exit $rc
