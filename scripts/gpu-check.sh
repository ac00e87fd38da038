#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root, from the bundle that
# scripts/make-gpu-bundle.sh made here (.gpu-carry/, sent with the device tool's `carry`):
#   1. unpacks the Java runtime, prints the machine (nvidia-smi) and the bundle;
#   2. runs the JUnit tests tagged `gpu` with the JUnit console launcher (XML reports);
#   3. runs the GPU benchmarks, where they exist (the hook below);
#   4. writes logs and results into $OUT (at most 8 files come back): gpu-check.log,
#      summary.txt, junit-reports.tgz, bench-results.tgz when benchmarks ran, and sanitizers.tgz
#      when GPU_SANITIZE asked for compute-sanitizer runs.
# Exits non-zero when a test failed or could not run. No Java, Maven or network is needed there.
#
# Environment:
#   OUT                 where results go (set by the device tool; default ./gpu-out)
#   GPU_CARRY           the bundle folder (default .gpu-carry)
#   GPU_TEST_TAGS       JUnit tag expression to run (default gpu)
#   GPU_TEST_SELECT     extra console-launcher selector arguments, e.g. "--select-class org.x.FooTest"
#                       (replaces the scan of all test jars)
#   GPU_BENCH           0 skips the benchmark section (default 1)
#   GPU_TEST_TIMEOUT_S, GPU_BENCH_TIMEOUT_S   limits for the two launcher runs (default 1800 s each);
#                       the per-case lines printed while tests run stay in the log if one is hit
#   GPU_JAVA_OPTS       extra JVM options
#   GPU_CHECK_ALLOW_NO_GPU=1  do not fail when every GPU test skipped (trying the script without a GPU)
#   GPU_SANITIZE        compute-sanitizer tools to run the single-process GPU tests under after the
#                       tests, e.g. "memcheck racecheck synccheck" (default: none). Each tool runs the
#                       JUnit console launcher over GPU_SANITIZE_SELECT (default: the compiler's kernel
#                       cases, the library kernels and the CUDA driver binding with its graph capture:
#                       CompiledKernelsGpuTest, MoeKernelsGpuTest, CudaDriverGpuTest) with
#                       --target-processes all and CUDA API errors not reported (some tests make
#                       them on purpose); its log is sanitizer-<tool>.log in sanitizers.tgz, its
#                       ERROR SUMMARY line goes into summary.txt, and errors fail the check.
#   GPU_SANITIZE_TIMEOUT_S  limit for each tool's run (default 900 s)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
carry="${GPU_CARRY:-$root/.gpu-carry}"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-gpu-check.XXXXXX")

exec > >(tee -a "$out/gpu-check.log") 2>&1
tee_pid=$!
finish() {
  rm -rf "$work"
  exec 1>&- 2>&-
  wait "$tee_pid" 2>/dev/null
  exit "$1"
}

# Never use NVLink multicast (NVLS): it can take shared GPUs out of service.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

section() { echo; echo "======== $* ========"; }
# shellcheck source=scripts/mps.sh
source "$root/scripts/mps.sh"
# shellcheck source=scripts/bundle.sh
source "$root/scripts/bundle.sh"

section "machine"
date -u +%Y-%m-%dT%H:%M:%SZ
uname -a
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi || echo "nvidia-smi failed (rc $?)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,compute_cap --format=csv || true
else
  echo "nvidia-smi not found: this is not a GPU machine (the GPU tests will skip and say why)"
fi
echo "CUDA_HOME=${CUDA_HOME:-}  nvcc: $(command -v nvcc || echo none)"
echo "NVSHMEM_DISABLE_NVLS=$NVSHMEM_DISABLE_NVLS NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"

section "bundle"
if ! java=$(bundle_java "$carry" "$work"); then
  echo "FAILED: no bundle" > "$out/summary.txt"
  finish 3
fi
head -n 8 "$carry/BUNDLE.txt" 2>/dev/null || true
"$java" -version 2>&1

cp_entries=()
for j in "$carry"/lib/*.jar "$carry"/tests/*.jar; do
  cp_entries+=("$j")
done
classpath=$(IFS=:; echo "${cp_entries[*]}")
console=$(ls "$carry"/tools/junit-platform-console-standalone-*.jar | head -n1)
# JavaCPP unpacks JNI libraries into a cache folder: keep it in the scratch folder.
java_opts=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Xss4m
  "-Dorg.bytedeco.javacpp.cachedir=$work/javacpp-cache" "-Djava.io.tmpdir=$work")
# shellcheck disable=SC2206
java_opts+=(${GPU_JAVA_OPTS:-})

section "GPU tests (tags: ${GPU_TEST_TAGS:-gpu})"
selectors=()
if [ -n "${GPU_TEST_SELECT:-}" ]; then
  # shellcheck disable=SC2206
  selectors=(${GPU_TEST_SELECT})
else
  for j in "$carry"/tests/*.jar; do
    selectors+=(--scan-classpath "$j")
  done
fi
reports="$work/junit-reports"
timeout -k 10 "${GPU_TEST_TIMEOUT_S:-1800}" "$java" "${java_opts[@]}" -jar "$console" execute \
  --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii \
  --class-path "$classpath" "${selectors[@]}" \
  --include-tag "${GPU_TEST_TAGS:-gpu}" \
  --fail-if-no-tests \
  --reports-dir "$reports"
test_rc=$?
echo "JUnit console launcher exit status: $test_rc$([ "$test_rc" -ge 124 ] && echo ' (timed out or killed: see GPU_TEST_TIMEOUT_S)')"
tar -C "$work" -czf "$out/junit-reports.tgz" junit-reports 2>/dev/null || true

# Counts from the launcher's legacy XML report (one <testsuite> per engine).
count() { grep -ho "<testsuite [^>]*" "$reports"/*.xml 2>/dev/null | grep -o " $1=\"[0-9]*\"" | grep -o '[0-9][0-9]*' | awk '{s += $1} END {print s + 0}'; }
n_tests=$(count tests); n_failures=$(count failures); n_errors=$(count errors); n_skipped=$(count skipped)
n_passed=$((n_tests - n_failures - n_errors - n_skipped))
{
  echo "gpu tests: launcher exit status $test_rc; tests=$n_tests passed=$n_passed failures=$n_failures errors=$n_errors skipped=$n_skipped"
} > "$out/summary.txt"
# A GPU check in which no GPU test ran proves nothing: fail it, unless asked not to (to try the
# script on a machine without a GPU).
if [ "$test_rc" -eq 0 ] && [ "$n_passed" -le 0 ] && [ "${GPU_CHECK_ALLOW_NO_GPU:-0}" != 1 ]; then
  echo "no GPU test passed (all skipped: see the reasons above); set GPU_CHECK_ALLOW_NO_GPU=1 to accept that" \
    | tee -a "$out/summary.txt"
  test_rc=4
fi

# a test that fails or times out leaves killed rank processes behind it: a faulted MPS server
# would fail the next section at context creation (scripts/mps.sh; only when the caller started MPS)
mps_between "after the GPU tests"

sanitize_rc=0
if [ -n "${GPU_SANITIZE:-}" ]; then
  mps_between "before compute-sanitizer"
  section "compute-sanitizer (${GPU_SANITIZE})"
  sanitizer=$(command -v compute-sanitizer || ls "${CUDA_HOME:-/usr/local/cuda}"/bin/compute-sanitizer 2>/dev/null | head -n1)
  # shellcheck disable=SC2206
  sanitize_select=(${GPU_SANITIZE_SELECT:---select-class org.moecomm.bridge.cuda.CompiledKernelsGpuTest
    --select-class org.moecomm.bridge.cuda.MoeKernelsGpuTest --select-class org.moecomm.bridge.cuda.CudaDriverGpuTest})
  mkdir -p "$work/sanitizers"
  for tool in ${GPU_SANITIZE}; do
    log="$work/sanitizers/sanitizer-$tool.log"
    if [ -z "$sanitizer" ]; then
      echo "sanitizer $tool: compute-sanitizer not found" | tee -a "$out/summary.txt"
      sanitize_rc=1
      continue
    fi
    timeout -k 10 "${GPU_SANITIZE_TIMEOUT_S:-900}" "$sanitizer" --tool "$tool" --target-processes all \
      --report-api-errors no --print-limit 50 --error-exitcode 86 \
      "$java" "${java_opts[@]}" -jar "$console" execute --disable-banner --disable-ansi-colors \
      --details=summary --class-path "$classpath" "${sanitize_select[@]}" --include-tag "${GPU_TEST_TAGS:-gpu}" \
      --fail-if-no-tests > "$log" 2>&1
    r=$?
    summary_line=$(grep -hE "(ERROR|RACECHECK) SUMMARY" "$log" | tail -n1)
    tests_line=$(grep -hE "tests (successful|failed)" "$log" | tr -s ' ' | tr '\n' ' ')
    echo "sanitizer $tool: exit status $r; ${summary_line:-no ERROR SUMMARY line}; ${tests_line}" | tee -a "$out/summary.txt"
    grep -hE "^========= (Invalid|Race|Barrier|Error|Uninitialized)" "$log" | sort | uniq -c | head -n 20
    if [ "$r" -ne 0 ]; then sanitize_rc=$r; fi
    mps_between "after compute-sanitizer $tool"
  done
  tar -C "$work" -czf "$out/sanitizers.tgz" sanitizers 2>/dev/null || true
fi

# ======================================================================================
# GPU BENCHMARKS HOOK
# Runs after the tests, with the same runtime and classpath. Two ways in, both optional:
#   - JUnit tests tagged `gpu-bench` (kernel timings through GpuKernelTimer), whose output
#     lands in the log;
#   - scripts/gpu-bench.sh, if it exists, called as
#       scripts/gpu-bench.sh <java> <classpath> <results-dir>  (with JAVA_OPTS exported)
#     and expected to write JSON/CSV results into <results-dir>.
# Results are returned as bench-results.tgz. Set GPU_BENCH=0 to skip.
# ======================================================================================
bench_rc=0
if [ "${GPU_BENCH:-1}" != 0 ]; then
  mps_between "before the benchmarks"
  section "GPU benchmarks"
  bench_dir="$work/bench-results"
  mkdir -p "$bench_dir"
  timeout -k 10 "${GPU_BENCH_TIMEOUT_S:-1800}" "$java" "${java_opts[@]}" "-Dmoecomm.bench.dir=$bench_dir" -jar "$console" execute \
    --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii \
    --class-path "$classpath" "${selectors[@]}" \
    --include-tag gpu-bench \
    --reports-dir "$bench_dir/junit"
  r=$?
  if [ "$r" -ne 0 ]; then bench_rc=$r; fi
  if [ -f "$root/scripts/gpu-bench.sh" ]; then
    JAVA_OPTS="${java_opts[*]}" bash "$root/scripts/gpu-bench.sh" "$java" "$classpath" "$bench_dir"
    r=$?
    if [ "$r" -ne 0 ]; then bench_rc=$r; fi
  else
    echo "no scripts/gpu-bench.sh yet: nothing more to run"
  fi
  tar -C "$work" -czf "$out/bench-results.tgz" bench-results 2>/dev/null || true
  echo "benchmarks exit status: $bench_rc" | tee -a "$out/summary.txt"
fi

section "summary"
cat "$out/summary.txt"
if [ "$test_rc" -ne 0 ]; then
  echo "GPU CHECK FAILED (tests)"
  finish 1
fi
if [ "$sanitize_rc" -ne 0 ]; then
  echo "GPU CHECK FAILED (compute-sanitizer)"
  finish 6
fi
if [ "$bench_rc" -ne 0 ]; then
  echo "GPU CHECK: tests passed, benchmarks failed"
  finish 2
fi
echo "GPU CHECK PASSED"
finish 0
