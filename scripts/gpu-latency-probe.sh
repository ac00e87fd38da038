#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root (carry .gpu-carry, made as for
# scripts/gpu-nvshmem-check.sh): where the time of a small round goes. Builds the NVSHMEM bridge,
# then
#   1. the launch-cost JMH benchmark in one process with no MPS daemon (the host cost of a launch
#      as an application with one process per GPU sees it) -> $OUT/no-mps/;
#   2. under MPS, the per-phase benchmark for each world size in PROBE_WORLDS (default "4 2 1")
#      and each round start in PROBE_STARTS (default "host device": with and without the host's
#      launch latency and skew, see `moecomm bench --help`, --start) -> $OUT/mps-<start>/, with
#      the launch-cost benchmark again under MPS in mps-host/.
# With PROBE_NCU=1 instead: Nsight Compute over one rank's kernels ($OUT/ncu.log, the SASS lines
# with the most stall samples in $OUT/ncu-hot.txt; PROBE_NCU_NAME, PROBE_NCU_LAUNCH, PROBE_NCU_SKIP
# choose the kernel, the launch mode and how many launches to let pass first; PROBE_NCU_CACHE=none
# keeps the caches, instruction caches included, between the profiled launches instead of flushing
# them, as Nsight Compute does by default).
# With PROBE_NCU_KERNEL=NAME instead (pack, scatter, gather or reduce): Nsight Compute over that
# kernel of the kernel benchmark, the Java kernel and its CUDA twin, at PROBE_NCU_TOKENS (default
# 4096) tokens: $OUT/ncu-NAME.log (throughput, occupancy, warp states, memory) and
# $OUT/ncu-NAME-hot.txt (the SASS lines of the first kernel profiled, the Java one, with the most
# stall samples: scripts/ncu-hotspots.py).
# No tests run here: scripts/gpu-nvshmem-check.sh is the check.
# Environment: PROBE_PRESETS (default deepseek-v3), PROBE_TOKENS (default 1,8,32,128), OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

if ! bash scripts/gpu-nvshmem-build.sh build > "$out/nvshmem-build.log" 2>&1; then
  echo "the NVSHMEM bridge did not build: see $out/nvshmem-build.log"
  exit 5
fi
# shellcheck disable=SC1091
source "${MOECOMM_NVSHMEM_OUT:-$root/nvshmem-bridge/target/nvshmem-native}/env.sh"

# Nsight Compute modes: the bundle's Java in a scratch folder ($work, $java, $classpath).
probe_java() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-probe.XXXXXX")
  # shellcheck source=scripts/bundle.sh
  source "$root/scripts/bundle.sh"
  java=$(bundle_java .gpu-carry "$work") || exit 2
  classpath=$(ls .gpu-carry/lib/*.jar | paste -sd: -)
}

# The Nsight Compute report in $work: its details page into $1, the SASS lines of its first kernel
# with the most stall samples into $2, and every SASS line of every profiled launch with its
# executed instructions and stall samples into $2's name with .csv.gz for .txt (what a path
# executes, instruction by instruction: scripts/ncu-hotspots.py --executed reads it).
ncu_pages() {
  ncu -i "$work/report.ncu-rep" --page details > "$1" 2>&1
  ncu -i "$work/report.ncu-rep" --page source --print-source sass --csv > "$work/source.csv" 2>&1
  python3 scripts/ncu-hotspots.py "$work/source.csv" > "$2" 2>&1
  gzip -c "$work/source.csv" > "${2%.txt}.csv.gz"
}

if [ -n "${PROBE_NCU_KERNEL:-}" ]; then
  name=$PROBE_NCU_KERNEL
  probe_java
  echo "== Nsight Compute, kernel benchmark $name, ${PROBE_NCU_TOKENS:-4096} tokens ${PROBE_NCU_ARGS:-}"
  # shellcheck disable=SC2086
  ncu --clock-control none --kernel-name "regex:$name" --launch-skip 2 --launch-count 2 --set full \
    --import-source no -o "$work/report" -f \
    "$java" --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Xss4m \
    "-Djava.io.tmpdir=$work" -cp "$classpath" org.moecomm.bench.gpu.KernelBenchmark --kernels "$name" \
    --tokens "${PROBE_NCU_TOKENS:-4096}" --warmups 2 --reps 3 --twin-ptx .gpu-carry/twins/twins.ptx \
    --out-dir "$work" ${PROBE_NCU_ARGS:-} > "$out/ncu-$name-run.log" 2>&1
  echo "ncu exit status: $?"
  ncu_pages "$out/ncu-$name.log" "$out/ncu-$name-hot.txt"
  grep -E "^  [A-Za-z_].*\(|Duration|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Registers Per|Stall|Warp Cycles Per Issued" \
    "$out/ncu-$name.log" | head -60
  rm -rf "$work"
  exit 0
fi

if [ "${PROBE_NCU:-0}" = 1 ]; then
  # One rank (no peers, no MPS: Nsight Compute does not profile MPS clients): the kernels named
  # PROBE_NCU_NAME (default every AllToAllKernels kernel; AllToAllKernels_dispatch is the one-launch
  # dispatch, which only graph replay runs) of launches PROBE_NCU_SKIP + 1 to + 8 (default 80: rounds
  # 21-22 of the four plain launches) at PROBE_NCU_TOKENS tokens, PROBE_NCU_LAUNCH (plain or graph):
  # each kernel's duration, occupancy and warp states ($OUT/ncu.log), and the SASS lines of the
  # first kernel profiled with the most stall samples ($OUT/ncu-hot.txt).
  probe_java
  echo "== Nsight Compute, W=1, ${PROBE_NCU_TOKENS:-1} tokens, deepseek-v3, ${PROBE_NCU_LAUNCH:-plain}"
  ncu --clock-control none --target-processes all --kernel-name "${PROBE_NCU_NAME:-regex:AllToAllKernels}" \
    --launch-skip "${PROBE_NCU_SKIP:-80}" --launch-count 8 --set full --cache-control "${PROBE_NCU_CACHE:-all}" \
    --import-source no -o "$work/report" -f \
    "$java" --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Xss4m \
    "-Djava.io.tmpdir=$work" -cp "$classpath" org.moecomm.bench.Main bench --backend gpu --world 1 \
    --presets deepseek-v3 --tokens "${PROBE_NCU_TOKENS:-1}" --launch "${PROBE_NCU_LAUNCH:-plain}" --warmup 20 \
    --rounds 10 --out "$out/ncu-phases.json" > "$out/ncu-run.log" 2>&1
  echo "ncu exit status: $?"
  ncu_pages "$out/ncu.log" "$out/ncu-hot.txt"
  grep -E "^  [A-Za-z_].*\(|Duration|Registers Per|Warp Cycles Per Issued" "$out/ncu.log" | head -40
  rm -rf "$work"
  exit 0
fi

echo "== launch cost, one process, no MPS"
mkdir -p "$out/no-mps"
OUT="$out/no-mps" KERNEL_BENCH=0 PHASE_BENCH=0 bash scripts/gpu-bench.sh

# shellcheck source=scripts/mps.sh
source scripts/mps.sh   # start, probe, restart a faulted server between the runs (docs/gpu.md)
export MPS_LOG="$out/mps.log"
mps_start && mps_recover "before the runs under MPS"
rc=0
for start in ${PROBE_STARTS:-host device}; do
  echo "== under MPS, --start $start"
  mps_between "before --start $start"
  mkdir -p "$out/mps-$start"
  launch=0
  [ "$start" = host ] && launch=1
  OUT="$out/mps-$start" KERNEL_BENCH=0 LAUNCH_BENCH=$launch PHASE_DEMO=0 PHASE_WORLDS="${PROBE_WORLDS:-4 2 1}" \
    PHASE_BENCH_ARGS="--presets ${PROBE_PRESETS:-deepseek-v3} --tokens ${PROBE_TOKENS:-1,8,32,128} --start $start" \
    bash scripts/gpu-bench.sh
  r=$?
  [ "$rc" -eq 0 ] && rc=$r
done
mps_stop
exit "$rc"
