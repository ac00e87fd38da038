#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root: ours and pplx-kernels side by side in one call,
# the comparison of docs/benchmarks.md, "pplx-kernels by our method". Alternates SAME_RUN_REPEATS
# (default 2) times our benchmark of the bundle's jars, graph replay and whole calls launched from
# the host (--launch graph,whole; scripts/gpu-ab.sh, variant
# SAME_RUN_VARIANT, default base: scripts/make-ab-variant.sh base HEAD) with pplx-kernels timed by
# scripts/gpu-pplx-baseline.sh (built once), so that a drift of the machine falls on both alike.
# Needs .gpu-carry (scripts/make-gpu-bundle.sh and the variant) and .pplx-kernels (the header of
# scripts/gpu-pplx-baseline.sh) carried.
#
#   bash scripts/gpu-pplx-same-run.sh        # SAME_RUN_CHECK=1: the whole GPU check first (gpu-ab.sh's AB_CHECK)
#
# Packs into $OUT/same-run.tgz (one archive to copy back, renewed after every run, so that a call
# cut off by its time limit keeps the runs before) the folder same-run/ with what
# scripts/pplx-table.py reads: ab-ours<i>-w<W>.json (ab-ours-w<W>.json for the first) and
# pplx-baseline-run<i>.json, each run's logs beside them, the GPU check's in check/. Prints the tables
# (slowest rank, rank 0 in brackets; our graph lines against pplx-kernels' host-graph, our whole
# lines against its host-plain) when python3 is there, also into $OUT/same-run-table.md.
# Then, unless SAME_RUN_LAUNCH_COST=0, the host's launch cost on the same machine (LaunchCostBenchmark
# with the W = 1 handle's calls, scripts/gpu-bench.sh's launch step, about 120 s) into
# same-run/launch-cost/ (its JSON, launch-floor.json, the output), its summary printed.
# Environment: SAME_RUN_WORLDS (default "4 2"), SAME_RUN_TOKENS (default 1,8,32,128), SAME_RUN_PRESET
# (default deepseek-v3), SAME_RUN_GPUS (default per-rank: both libraries' processes placed alike, one
# GPU each on a machine of W GPUs, all on the GPU of a machine with one; or shared: all on the
# first GPU; our --gpus and pplx-kernels' PPLX_GPUS), and those of the two scripts (PPLX_SAMPLES,
# ...). Exit status: 0 when the check (if asked for) passed and every run (and the launch cost)
# wrote its results, else 1.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
repeats="${SAME_RUN_REPEATS:-2}"
worlds="${SAME_RUN_WORLDS:-4 2}"
tokens="${SAME_RUN_TOKENS:-1,8,32,128}"
gpus="${SAME_RUN_GPUS:-per-rank}"
bench="--presets ${SAME_RUN_PRESET:-deepseek-v3} --launch graph,whole --tokens $tokens --gpus $gpus"
work=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-same-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest="$work/same-run"
mkdir -p "$dest"
export PPLX_BUILD_DIR="$work/pplx-bin" PPLX_WORLDS="$worlds" PPLX_TOKENS="${tokens//,/ }" PPLX_GPUS="$gpus"
rc=0
for i in $(seq 1 "$repeats"); do
  label=ours; [ "$i" = 1 ] || label="ours$i"
  check=0; [ "$i" = 1 ] && check="${SAME_RUN_CHECK:-0}"
  echo "== run $i of $repeats: ours ($label), then pplx-kernels"
  # the check's logs and reports stay in same-run/check/, beside that run's ab.tgz
  abdir="$work/ab$i"; [ "$check" = 1 ] && abdir="$dest/check"
  OUT="$abdir" AB_CHECK=$check GPU_BENCH=0 AB_WORLDS="$worlds" \
    AB_SPECS="$label|${SAME_RUN_VARIANT:-base}||$bench|" bash scripts/gpu-ab.sh | tee "$work/ab$i.out"
  if [ "$check" = 1 ] && ! grep -q "^GPU check exit status: 0$" "$work/ab$i.out"; then
    echo "the GPU check failed: see same-run/check/"; rc=1
  fi
  mkdir -p "$work/ab$i"
  tar -xzf "$abdir/ab.tgz" -C "$work/ab$i" 2>/dev/null
  for f in "$work/ab$i"/ab/ab-"$label"-w*.json "$work/ab$i/ab/ab-$label.log"; do
    [ -f "$f" ] && cp "$f" "$dest/"
  done
  ls "$dest"/ab-"$label"-w*.json >/dev/null 2>&1 || { echo "run $i: ours wrote no results (ab-$label.log)"; rc=1; }
  OUT="$work/pplx$i" bash scripts/gpu-pplx-baseline.sh > "$dest/pplx-baseline-run$i.log" 2>&1 \
    || { echo "run $i: pplx-kernels failed, see pplx-baseline-run$i.log"; tail -5 "$dest/pplx-baseline-run$i.log"; rc=1; }
  cp "$work/pplx$i/pplx-baseline.json" "$dest/pplx-baseline-run$i.json" 2>/dev/null
  cp "$work/pplx$i/pplx-baseline.log" "$dest/pplx-baseline-run$i.stderr.log" 2>/dev/null
  cp "$work/pplx$i/pplx-build.log" "$dest/" 2>/dev/null
  tar -C "$work" -czf "$out/same-run.tgz" same-run
done
if [ "${SAME_RUN_LAUNCH_COST:-1}" = 1 ]; then
  # the host's side of a half on this machine (LaunchCostBenchmark with the handle cases: the bridge
  # gpu-ab.sh built, under MPS as the runs were), into same-run/launch-cost/
  echo "== launch cost (KERNEL_BENCH=0 PHASE_BENCH=0 bash scripts/gpu-bench.sh, with the NVSHMEM bridge)"
  mkdir -p "$dest/launch-cost"
  (
    # shellcheck disable=SC1091
    source nvshmem-bridge/target/nvshmem-native/env.sh || exit 5
    # shellcheck source=scripts/mps.sh
    source scripts/mps.sh
    export MPS_LOG="$dest/launch-cost/mps.log"
    mps_start && mps_recover "before the launch cost"
    OUT="$dest/launch-cost" KERNEL_BENCH=0 PHASE_BENCH=0 bash scripts/gpu-bench.sh
    r=$?
    mps_stop
    exit $r
  ) > "$dest/launch-cost/launch-cost.out" 2>&1 || { echo "the launch cost failed: see same-run/launch-cost/"; rc=1; }
  grep -A12 "^launch cost (host time per call)" "$dest/launch-cost/launch-cost.out"
  tar -C "$work" -czf "$out/same-run.tgz" same-run
fi
if command -v python3 >/dev/null 2>&1; then
  for timing in host-graph host-plain; do
    python3 scripts/pplx-table.py "$dest" --preset "${SAME_RUN_PRESET:-deepseek-v3}" --timing $timing
    echo
  done | tee "$out/same-run-table.md"
fi
exit $rc
