#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root: A/B runs of jar variants inside one device
# session (scripts/make-ab-variant.sh put them into .gpu-carry/variants/<dir>/ on the development
# machine). Builds the NVSHMEM bridge, starts MPS, and for each line of AB_SPECS puts that
# variant's jars in place of the bundle's moecomm jars and runs scripts/gpu-bench.sh with the line's
# options (a variant may have other modules than the bundle: a commit before a module split).
#
#   AB_SPECS='label|dir|java options|bench args|kernel-bench args' bash scripts/gpu-ab.sh
#
# One line per run, in order (repeat a label's dir under another label to see the drift):
#   label              names the results: $OUT/ab.tgz holds ab/ab-<label>-w<W>.json (phases),
#                      ab/ab-<label>-kernels.json and ab/ab-<label>.log
#   dir                the variant, .gpu-carry/variants/<dir>
#   java options       for every JVM of the run (JAVA_TOOL_OPTIONS), e.g. -Dmoecomm.gpu.checkPointers=true
#   bench args         the phase benchmark's options (PHASE_BENCH_ARGS), e.g. --presets deepseek-v3 --launch graph;
#                      or "launch-cost [JMH options]": the host's launch cost instead (the C++ floor and
#                      LaunchCostBenchmark with the W = 1 handle's calls, LAUNCH_BENCH_ARGS the JMH options,
#                      e.g. launch-cost -e Replay,PointerChecks,functionLaunch,streamQuery, its regexps):
#                      ab/ab-<label>-launch-cost.json and ab/ab-<label>-launch-floor.json
#   kernel-bench args  when given, the kernel benchmark runs with them instead of the phases
#                      (KERNEL_BENCH_ARGS), e.g. --tokens 1,128,4096
# A variant whose bridge sources (nvshmem-bridge/src/main/cpp/nvshmem, copied by make-ab-variant.sh)
# differ from the bundle's runs with its own device functions (scripts/gpu-nvshmem-build.sh devfns):
# a change to the device functions can be compared in one session like a change to the jars.
# Environment: AB_WORLDS (default 4) the worlds of the phase runs; AB_CHECK=1 first runs the whole
# GPU check (scripts/gpu-nvshmem-check.sh, tests included) with the bundle's own jars.
# Prints each run's phase rows (every launch mode) or kernel rows (scripts/ab-table.py tabulates the runs
# of a call from ab.tgz); exit status 0 unless the bridge did not build.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
carry="${GPU_CARRY:-$root/.gpu-carry}"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
if [ "${AB_CHECK:-0}" = 1 ]; then
  LAUNCH_BENCH=0 PHASE_DEMO=0 bash scripts/gpu-nvshmem-check.sh > "$out/check.log" 2>&1
  echo "GPU check exit status: $?"
  grep -E "tests (successful|failed)" "$out/gpu-check.log" | head -4
elif ! bash scripts/gpu-nvshmem-build.sh build > "$out/nvshmem-build.log" 2>&1; then
  echo "the NVSHMEM bridge did not build: see nvshmem-build.log"
  tail -20 "$out/nvshmem-build.log"
  exit 5
fi
# shellcheck disable=SC1091
source nvshmem-bridge/target/nvshmem-native/env.sh
# shellcheck source=scripts/mps.sh
source scripts/mps.sh   # start, probe, restart a faulted server between runs (docs/gpu.md)
export MPS_LOG="$out/mps.log"
mps_start && mps_recover "before the A/B runs"
ab=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-ab.XXXXXX")
mkdir -p "$ab/ab"
saved="$ab/bundle-lib"
mkdir -p "$saved" && cp "$carry"/lib/moecomm-*.jar "$saved"/
while IFS='|' read -r label dir opts args kargs; do
  [ -z "$label" ] && continue
  if [ ! -d "$carry/variants/$dir" ]; then
    echo "== $label: no variant $dir in $carry/variants (scripts/make-ab-variant.sh)"
    continue
  fi
  rm -f "$carry"/lib/moecomm-*.jar
  cp "$carry/variants/$dir"/moecomm-*.jar "$carry/lib/"
  run="$ab/run-$label"
  mkdir -p "$run"
  kernel=0; phases=1; launch=0; launch_args=
  case "$args" in launch-cost*) launch=1; phases=0; launch_args=${args#launch-cost} ;; esac
  [ -n "$kargs" ] && kernel=1 && phases=0
  # a variant whose device functions differ from the bundle's runs with its own fatbin
  devfns="$MOECOMM_NVSHMEM_DEVFNS"
  if [ -d "$carry/variants/$dir/cpp" ] && ! diff -rq "$carry/variants/$dir/cpp" nvshmem-bridge/src/main/cpp/nvshmem >/dev/null; then
    devfns="$ab/devfns-$label.fatbin"
    bash scripts/gpu-nvshmem-build.sh devfns "$carry/variants/$dir/cpp" "$devfns" > "$ab/ab/devfns-$label.log" 2>&1 \
      || { echo "== $label: its device functions did not build (devfns-$label.log)"; continue; }
  fi
  mps_between "before run $label"
  MOECOMM_NVSHMEM_DEVFNS="$devfns" JAVA_TOOL_OPTIONS="$opts" OUT="$run" KERNEL_BENCH=$kernel PHASE_BENCH=$phases KERNEL_BENCH_ARGS="$kargs" \
    LAUNCH_BENCH=$launch LAUNCH_BENCH_ARGS="$launch_args" PHASE_DEMO=0 PHASE_WORLDS="${AB_WORLDS:-4}" PHASE_BENCH_ARGS="$args" \
    PHASE_RECORDED_BY="bash scripts/gpu-ab.sh, AB_SPECS line $label (variant $dir${opts:+, JAVA_TOOL_OPTIONS $opts})" \
    bash scripts/gpu-bench.sh > "$ab/ab/ab-$label.log" 2>&1
  echo "== $label ($dir; ${opts:-no options}; ${kargs:-$args}; device functions ${devfns##*/}): exit status $?"
  for f in "$run"/*-gpu-phases*.json; do
    [ -f "$f" ] && cp "$f" "$ab/ab/ab-$label-$(basename "$f" | sed 's/.*-\(w[0-9]*\)-gpu-phases.*\.json/\1/').json"
  done
  for f in "$run"/*-gpu-kernels*.json; do
    [ -f "$f" ] && cp "$f" "$ab/ab/ab-$label-kernels.json"
  done
  for f in "$run"/*-gpu-launch-cost*.json; do
    [ -f "$f" ] && cp "$f" "$ab/ab/ab-$label-launch-cost.json"
  done
  [ -f "$run/launch-floor.json" ] && cp "$run/launch-floor.json" "$ab/ab/ab-$label-launch-floor.json"
  grep -E "^[a-z0-9.-]+ +[0-9]+ +(plain|whole|graph) \||^(pack|scatter|gather|reduce) |^== launch floor|^  [a-zA-Z]+ +[0-9.]+ ± " \
    "$ab/ab/ab-$label.log"
  # after every run, so that a run cut off by the caller's time limit keeps the ones before it
  tar -C "$ab" -czf "$out/ab.tgz" ab
done <<< "${AB_SPECS:-}"
rm -f "$carry"/lib/moecomm-*.jar
cp "$saved"/moecomm-*.jar "$carry/lib/"
mps_stop
tar -C "$ab" -czf "$out/ab.tgz" ab
rm -rf "$ab"
