#!/usr/bin/env bash
# Kernel benchmark on the GPU machine: MoeKernels pack, scatter, gather, reduce compiled from Java,
# against the CUDA C++ twins of pack and reduce (org.moecomm.bench.gpu.KernelBenchmark), from the
# bundle that scripts/make-gpu-bundle.sh made (.gpu-carry: runtime, jars, twins/twins.ptx).
#
# Two ways in:
#   scripts/gpu-bench.sh <java> <classpath> <results-dir>   as scripts/gpu-check.sh's benchmark hook
#                                                             calls it (JAVA_OPTS exported);
#   bash scripts/gpu-bench.sh                                 alone, in the repository root: unpacks
#                                                             the runtime itself, results into $OUT.
# Writes <results-dir>/<date>-<gpu>-gpu-kernels.json (JSON lines, one per kernel and tokens) and
# prints a table (also kept in <results-dir>/kernel-bench.log); the JSON file is also copied into $OUT when that is another folder (so it comes
# back as a plain file next to gpu-check's archives).
#
# Environment:
#   OUT                    where results go when run alone (default ./gpu-out)
#   GPU_CARRY              the bundle folder (default .gpu-carry)
#   KERNEL_BENCH_ARGS      more benchmark options, e.g. "--tokens 128 --grid-y 1 --reps 200"
#                          (java ... KernelBenchmark --help lists them)
#   KERNEL_BENCH_TIMEOUT_S limit for the benchmark (default 900 s)
# Then the launch-cost JMH benchmark (<date>-<gpu>-gpu-launch-cost.json) and the per-phase benchmark
# (below).
# Exit status: the kernel benchmark's (0 all checks passed and every twin ran; 1 a check failed or a
# twin is missing; 3 no GPU), 2 when the bundle lacks the benchmark; else the later steps'.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/mps.sh
source "$root/scripts/mps.sh"   # mps_between: a probe (and restart) between launches, when a caller started MPS
# shellcheck source=scripts/bundle.sh
source "$root/scripts/bundle.sh"
carry="${GPU_CARRY:-$root/.gpu-carry}"

if [ $# -ge 3 ]; then
  java=$1
  classpath=$2
  results=$3
  # shellcheck disable=SC2206
  java_opts=(${JAVA_OPTS:-})
else
  export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
  work=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-gpu-bench.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  java=$(bundle_java "$carry" "$work") || exit 2
  classpath=$(ls "$carry"/lib/*.jar | paste -sd: -)
  results="${OUT:-$root/gpu-out}"
  java_opts=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Xss4m
    "-Dorg.bytedeco.javacpp.cachedir=$work/javacpp-cache" "-Djava.io.tmpdir=$work")
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
fi
mkdir -p "$results"

if ! tr ':' '\n' <<< "$classpath" | grep -q 'moecomm-benchmarks-[^/]*\.jar$'; then
  echo "the bundle has no moecomm-benchmarks jar: make it again with scripts/make-gpu-bundle.sh"
  exit 2
fi
commit=$(sed -n 's/^commit: //p' "$carry/BUNDLE.txt" 2>/dev/null | head -n1)
twin_ptx="$carry/twins/twins.ptx"
[ -f "$carry/twins/twins.txt" ] && sed 's/^/twins: /' "$carry/twins/twins.txt"

# shellcheck disable=SC2206
extra=(${KERNEL_BENCH_ARGS:-})
recorded="bash scripts/gpu-bench.sh${KERNEL_BENCH_ARGS:+ (KERNEL_BENCH_ARGS=\"$KERNEL_BENCH_ARGS\")}"
rc=0
if [ "${KERNEL_BENCH:-1}" = 0 ]; then
  echo "== kernel benchmark: skipped (KERNEL_BENCH=0)"
else
  echo "== kernel benchmark: $recorded"
  timeout -k 10 "${KERNEL_BENCH_TIMEOUT_S:-900}" "$java" "${java_opts[@]}" -cp "$classpath" \
    org.moecomm.bench.gpu.KernelBenchmark \
    --out-dir "$results" --twin-ptx "$twin_ptx" --require-twins \
    --commit "${commit:-unknown}" --command "$recorded" "${extra[@]}" 2>&1 | tee -a "$results/kernel-bench.log"
  rc=${PIPESTATUS[0]}
  echo "kernel benchmark exit status: $rc$([ "$rc" -ge 124 ] && echo ' (timed out or killed: see KERNEL_BENCH_TIMEOUT_S)')"
fi

if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ "$(cd "$results" && pwd)" != "$(cd "$OUT" && pwd)" ]; then
  cp "$results"/*-gpu-kernels.json "$OUT"/ 2>/dev/null || true
fi
kernel_rc=$rc

# ======================================================================================
# Launch cost (org.moecomm.bench.gpu.LaunchCostBenchmark): JMH, host time of one kernel launch
# from Java (GpuKernelRunner.launch of a 12-argument kernel and of one with the decode dispatch's 35;
# with pointer checks; CudaFunction.launch; cuStreamQuery for reference) and, where the NVSHMEM bridge
# is there (MOECOMM_NVSHMEM_LIB: scripts/gpu-nvshmem-check.sh), of a W = 1 GPU handle's dispatch and
# combine calls, whole and replayed; 3 x 1 s warm-up and 5 x 1 s measurement in one forked JVM per
# benchmark (about 60 s, 140 s with the handle cases). The fork is JMH's default: this java,
# classpath and options (JAVA_OPTS: --enable-native-access, the JavaCPP cache folder).
# Writes <results-dir>/<date>-<gpu>-gpu-launch-cost.json (JMH's JSON, never over an existing file)
# and launch-cost.log; the JSON file is also copied into $OUT.
#   LAUNCH_BENCH=0            skip this step
#   LAUNCH_BENCH_ARGS         more options, passed to JMH (e.g. "-i 10")
#   LAUNCH_BENCH_TIMEOUT_S    limit (default 300 s)
# Its exit status (0; 1 a benchmark failed; 3 no GPU) counts when the kernel benchmark passed.
# Before it, the driver's own floor: benchmarks/src/main/cuda/launch_floor.cu (cuLaunchKernel and
# cuStreamQuery from C++, no JVM), built here with nvcc, its JSON line written to
# <results-dir>/launch-floor.json and printed (skipped with a note when nvcc is missing).
# ======================================================================================
launch_rc=0
if [ "${LAUNCH_BENCH:-1}" != 0 ]; then
  if command -v nvcc >/dev/null 2>&1 && floor_dir=$(mktemp -d) \
      && nvcc -O2 -o "$floor_dir/launch_floor" "$root/benchmarks/src/main/cuda/launch_floor.cu" -lcuda; then
    echo "== launch floor (C++, driver only): $("$floor_dir/launch_floor" | tee "$results/launch-floor.json")"
    [ -n "${OUT:-}" ] && [ -d "$OUT" ] && cp "$results/launch-floor.json" "$OUT"/ 2>/dev/null
    rm -rf "$floor_dir"
  else
    echo "== launch floor: not measured (no nvcc, or it failed)"
  fi
fi
if [ "${LAUNCH_BENCH:-1}" = 0 ]; then
  echo "== launch-cost benchmark: skipped (LAUNCH_BENCH=0)"
else
  # shellcheck disable=SC2206
  launch_extra=(${LAUNCH_BENCH_ARGS:-})
  launch_recorded="bash scripts/gpu-bench.sh (LaunchCostBenchmark${LAUNCH_BENCH_ARGS:+ $LAUNCH_BENCH_ARGS})"
  echo "== launch-cost benchmark: $launch_recorded"
  timeout -k 10 "${LAUNCH_BENCH_TIMEOUT_S:-300}" "$java" "${java_opts[@]}" -cp "$classpath" \
    org.moecomm.bench.gpu.LaunchCostBenchmark --out-dir "$results" --commit "${commit:-unknown}" \
    --command "$launch_recorded" "${launch_extra[@]}" 2>&1 | tee -a "$results/launch-cost.log"
  launch_rc=${PIPESTATUS[0]}
  echo "launch-cost benchmark exit status: $launch_rc$([ "$launch_rc" -ge 124 ] && echo ' (timed out or killed: see LAUNCH_BENCH_TIMEOUT_S)')"
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ "$(cd "$results" && pwd)" != "$(cd "$OUT" && pwd)" ]; then
    cp "$results"/*-gpu-launch-cost*.json "$OUT"/ 2>/dev/null || true
  fi
fi

# ======================================================================================
# Per-phase dispatch/combine benchmark (org.moecomm.bench.BenchCommand, `moecomm bench`):
# W=4 NVSHMEM PEs as 4 processes on this GPU (under MPS when scripts/gpu-nvshmem-check.sh started
# it; that script also exports MOECOMM_NVSHMEM_LIB and LD_LIBRARY_PATH), presets deepseek-v3 and
# deepseek-v2-lite at 1, 8, 32, 128 (decode) and 512, 1024, 2048, 4096 (prefill) tokens per rank
# (`--sweep all`, the GPU backend's default; PHASE_BENCH_ARGS="--sweep decode" for the decode sizes
# alone), 200 warm-up + 100 timed rounds each (the
# host's code must be compiled by the JIT before the small configurations measure the device
# rather than the interpreter: with 20 warm-up rounds the first configuration's p90 was
# milliseconds), CUDA events per phase, the first round of every configuration checked against
# the reference. Each rank process first measures the copy bandwidth, every rank copying 256 MiB
# at once (the baseline of the device-memory columns). The symmetric heap of a rank process holds
# the largest configuration (deepseek-v3 at M = 4096: 3.73 GiB per rank at W = 4, 7.45 GiB at W = 8).
# Writes <results-dir>/<date>-<gpu>-gpu-phases.json (JSON lines, one per preset and tokens) and
# phase-bench.log; the JSON file is also copied into $OUT (one more file comes back).
# Skipped (status unchanged) when the NVSHMEM bridge was not built (MOECOMM_NVSHMEM_LIB unset and
# MOECOMM_REQUIRE_NVSHMEM not 1).
#   PHASE_BENCH=0            skip this step
#   PHASE_BENCH_ARGS         more options, e.g. "--tokens 128 --rounds 200" (moecomm bench --help)
#   PHASE_BENCH_TIMEOUT_S    limit for each world's sweep (default 900 s: the prefill sizes check and run
#                            the host's experts on up to 4096 x 8 rows per rank)
#   PHASE_LAUNCH_TIMEOUT_S   limit for each launch of the rank processes, one per preset (default 600 s)
#   PHASE_WORLDS             the worlds swept, one file each (default "4 2")
#   PHASE_WARMUP             untimed rounds per configuration (default 200)
#   PHASE_RECORDED_BY        what ran this step, for the files' "command" field (default: bash scripts/gpu-nvshmem-check.sh;
#                            scripts/gpu-ab.sh names itself and the A/B line)
#   KERNEL_BENCH=0           skip the kernel benchmark
#   PHASE_DEMO=0             skip the GPU demo run after the sweep (`moecomm demo --backend gpu`, 120 s limit)
# Exit status of the script: the kernel benchmark's when it failed, else the launch-cost step's when it
# failed, else this step's (0 every configuration verified, 1 a check or a rank failed, 2 the GPU backend
# could not run).
# ======================================================================================
phase_rc=0
if [ "${PHASE_BENCH:-1}" = 0 ]; then
  echo "== per-phase benchmark: skipped (PHASE_BENCH=0)"
elif [ -z "${MOECOMM_NVSHMEM_LIB:-}" ] && [ "${MOECOMM_REQUIRE_NVSHMEM:-0}" != 1 ]; then
  echo "== per-phase benchmark: skipped (no NVSHMEM bridge: MOECOMM_NVSHMEM_LIB is not set; run scripts/gpu-nvshmem-check.sh)"
else
  # shellcheck disable=SC2206
  # a --warmup in PHASE_BENCH_ARGS (an A/B line's own) replaces PHASE_WARMUP: the option is given once
  warmup_args=(--warmup "${PHASE_WARMUP:-200}")
  [[ " ${PHASE_BENCH_ARGS:-} " == *" --warmup "* ]] && warmup_args=()
  phase_extra=("${warmup_args[@]}" ${PHASE_BENCH_ARGS:-})
  gpu_label=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 | awk '{print tolower($NF)}')
  for w in ${PHASE_WORLDS:-4 2}; do
    mps_between "before the per-phase benchmark, W=$w"
    phase_recorded="${PHASE_RECORDED_BY:-bash scripts/gpu-nvshmem-check.sh} (gpu-bench.sh step: moecomm bench --backend gpu --world $w${warmup_args[*]:+ ${warmup_args[*]}}${PHASE_BENCH_ARGS:+ $PHASE_BENCH_ARGS})"
    echo "== per-phase benchmark: $phase_recorded"
    timeout -k 10 "${PHASE_BENCH_TIMEOUT_S:-900}" "$java" "${java_opts[@]}" -cp "$classpath" \
      org.moecomm.bench.Main bench --backend gpu --world "$w" --launch-timeout "${PHASE_LAUNCH_TIMEOUT_S:-600}" \
      --out "$results/$(date -u +%F)-${gpu_label:-gpu}-w$w-gpu-phases.json" \
      --commit "${commit:-unknown}" --command "$phase_recorded" "${phase_extra[@]}" \
      2>&1 | tee -a "$results/phase-bench.log"
    r=${PIPESTATUS[0]}
    echo "per-phase benchmark (W=$w) exit status: $r$([ "$r" -ge 124 ] && echo ' (timed out or killed: see PHASE_BENCH_TIMEOUT_S)')"
    if [ "$phase_rc" -eq 0 ]; then phase_rc=$r; fi
  done
  if [ "${PHASE_DEMO:-1}" != 0 ]; then
    # the demo on the GPU backend (`moecomm demo --backend gpu`): one short launch, output in the log only
    mps_between "before the GPU demo"
    echo "== demo on the GPU backend: moecomm demo --backend gpu --preset deepseek-v3 --tokens 128 --world 4"
    timeout -k 10 120 "$java" "${java_opts[@]}" -cp "$classpath" org.moecomm.bench.Main demo --backend gpu \
      --preset deepseek-v3 --tokens 128 --world 4 --launch-timeout 100 2>&1 | tee -a "$results/phase-bench.log"
    demo_rc=${PIPESTATUS[0]}
    echo "GPU demo exit status: $demo_rc"
    if [ "$phase_rc" -eq 0 ] && [ "$demo_rc" -ne 0 ]; then phase_rc=$demo_rc; fi
  fi
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ "$(cd "$results" && pwd)" != "$(cd "$OUT" && pwd)" ]; then
    cp "$results"/*-gpu-phases.json "$OUT"/ 2>/dev/null || true
  fi
fi

# ======================================================================================
# Stress run (org.moecomm.bench.StressCommand, `moecomm stress --backend gpu`): STRESS_ROUNDS fully
# checked rounds on one handle per rank, W=4 processes on this GPU (deepseek-v2-lite, M=16; random m,
# -1 ids, routing and arrival skew). Skipped unless STRESS_ROUNDS is set (e.g. 10000, about a
# minute or two). Writes <results-dir>/<date>-<gpu>-gpu-stress.json and stress.log; the JSON file
# is also copied into $OUT. Its exit status counts when the steps before it passed.
#   STRESS_ARGS        more options (moecomm stress --help)
#   STRESS_TIMEOUT_S   limit (default 600 s)
# ======================================================================================
stress_rc=0
if [ -n "${STRESS_ROUNDS:-}" ] && [ "${STRESS_ROUNDS}" != 0 ]; then
  # shellcheck disable=SC2206
  stress_extra=(${STRESS_ARGS:-})
  mps_between "before the stress run"
  echo "== stress run: moecomm stress --backend gpu --rounds $STRESS_ROUNDS ${STRESS_ARGS:-}"
  timeout -k 10 "${STRESS_TIMEOUT_S:-600}" "$java" "${java_opts[@]}" -cp "$classpath" \
    org.moecomm.bench.Main stress --backend gpu --rounds "$STRESS_ROUNDS" --out-dir "$results" \
    --commit "${commit:-unknown}" \
    --command "bash scripts/gpu-nvshmem-check.sh (gpu-bench.sh step: moecomm stress --backend gpu --rounds $STRESS_ROUNDS${STRESS_ARGS:+ $STRESS_ARGS})" \
    "${stress_extra[@]}" 2>&1 | tee -a "$results/stress.log" | grep -v '^\[rank [1-9]'
  stress_rc=${PIPESTATUS[0]}
  echo "stress run exit status: $stress_rc"
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ "$(cd "$results" && pwd)" != "$(cd "$OUT" && pwd)" ]; then
    cp "$results"/*-gpu-stress*.json "$OUT"/ 2>/dev/null || true
  fi
fi

if [ "$kernel_rc" -ne 0 ]; then
  exit "$kernel_rc"
fi
if [ "$launch_rc" -ne 0 ]; then
  exit "$launch_rc"
fi
if [ "$phase_rc" -ne 0 ]; then
  exit "$phase_rc"
fi
exit "$stress_rc"
