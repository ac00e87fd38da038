#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root (carry .gpu-carry, made by
# scripts/make-gpu-bundle.sh), after the NVSHMEM bridge is built (scripts/gpu-nvshmem-check.sh
# calls it when GPU_SANITIZE_RANKS is set): W = 2 dispatch/combine jobs in which every rank
# process runs under compute-sanitizer.
#
# A sanitizer given to the JUnit JVM does not instrument the rank processes that LocalLauncher
# starts (benchmarks/results/2026-12-03-h200-gpu-sanitizers.txt: one ERROR SUMMARY, the JVM's).
# Here LocalLauncher's rank wrapper (--rank-wrapper, docs/gpu.md) puts compute-sanitizer before
# every rank's java, so each rank prints its own summary, prefixed [rank r]. A job passes when the
# launcher succeeded, every rank printed its CHECK line (the rounds matched the reference) and
# every rank printed a sanitizer summary with 0 errors (no summary: the rank was not instrumented,
# which fails the job too).
#
# usage: gpu-sanitize-ranks.sh LABEL     LABEL names how the GPU is shared (mps, no-mps) in the
#                                        log names and summary lines
# Environment (defaults in brackets):
#   GPU_SANITIZE_RANKS            compute-sanitizer tools [memcheck]
#   GPU_SANITIZE_RANKS_TIMEOUT_S  bound of one job [600]
# Writes $OUT/sanitize-ranks-LABEL.tgz (one log per tool and job) and one line per tool and job
# into $OUT/summary.txt. Exit status: 0 every job passed, 1 one failed, 2 it could not run.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
label=${1:-mps}
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
carry="${GPU_CARRY:-$root/.gpu-carry}"
# shellcheck source=scripts/bundle.sh
source "$root/scripts/bundle.sh"
say() { echo "[gpu-sanitize-ranks $label] $*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-sanitize-ranks.XXXXXX")
trap 'rm -rf "$work"' EXIT
java=$(bundle_java "$carry" "$work") || exit 2
# the library's jars and the test jars (the rank mains are test classes)
classpath=$(ls "$carry"/lib/*.jar "$carry"/tests/*.jar 2>/dev/null | paste -sd: -)
sanitizer=$(command -v compute-sanitizer || ls "${CUDA_HOME:-/usr/local/cuda}"/bin/compute-sanitizer 2>/dev/null | head -n1)
if [ -z "$sanitizer" ]; then
  echo "sanitize ranks ($label): compute-sanitizer not found" | tee -a "$out/summary.txt"
  exit 2
fi
java_opts=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Xss4m
  "-Dorg.bytedeco.javacpp.cachedir=$work/javacpp-cache" "-Djava.io.tmpdir=$work" -Dmoecomm.log.level=WARN)
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

# name | rank main | its arguments (see DispatchCombineGpuTest and GraphReplayMain for their meaning)
jobs=(
  "dispatch-combine-direct|org.moecomm.core.gpu.DispatchCombineMain|1 8 2 256 32 BF16 BF16 4 2001 BF16 plain"
  "dispatch-combine-halves-puts-quantised|org.moecomm.core.gpu.DispatchCombineMain|2 16 4 384 24 FP16->FP8_E4M3 FP32 4 2002 FP16 halves+puts"
  "graph-replay|org.moecomm.core.gpu.GraphReplayMain|16 4 512 24 FP8_E4M3 AUTO 10 154"
)
world=2
mkdir -p "$work/logs"
rc=0
for tool in ${GPU_SANITIZE_RANKS:-memcheck}; do
  case "$tool" in
    racecheck) summary_re='RACECHECK SUMMARY: 0 hazards displayed \(0 errors' ;;
    *) summary_re='ERROR SUMMARY: 0 errors' ;;
  esac
  for job in "${jobs[@]}"; do
    IFS='|' read -r name main job_args <<< "$job"
    log="$work/logs/$tool-$name.log"
    wrapper="$sanitizer --tool $tool --error-exitcode 86 --print-limit 50 --report-api-errors no"
    say "$tool $name: W=$world $main $job_args"
    start=$SECONDS
    # shellcheck disable=SC2086
    timeout -k 10 "${GPU_SANITIZE_RANKS_TIMEOUT_S:-600}" "$java" "${java_opts[@]}" -cp "$classpath" \
      org.moecomm.core.launch.LocalLauncher -n "$world" --jvm -Xss4m --timeout "${GPU_SANITIZE_RANKS_TIMEOUT_S:-600}" \
      --rank-wrapper "$wrapper" "$main" $job_args > "$log" 2>&1
    r=$?
    problems=()
    [ "$r" -ne 0 ] && problems+=("launcher exit status $r")
    for ((k = 0; k < world; k++)); do
      grep -qE "^\[rank $k\] CHECK .* ok rank $k" "$log" || problems+=("rank $k: no CHECK line")
      grep -qE "^\[rank $k\] =+ $summary_re" "$log" || problems+=("rank $k: no clean $tool summary")
    done
    summaries=$(grep -hE '^\[rank [0-9]+\] =+ [A-Z]+ SUMMARY' "$log" | sed 's/=* //' | tr -s ' ' | paste -sd';' -)
    if [ ${#problems[@]} -eq 0 ]; then
      verdict=PASS
    else
      verdict="FAIL ($(IFS=';'; echo "${problems[*]}"))"
      rc=1
      grep -hE '^\[rank [0-9]+\] =+ (Invalid|Race|Barrier|Error|Uninitialized|Program hit)' "$log" | sort | uniq -c | head -n 20
      tail -n 20 "$log"
    fi
    echo "sanitize ranks ($label) $tool $name: $verdict in $((SECONDS - start)) s; ${summaries:-no summary}" \
      | tee -a "$out/summary.txt"
  done
done
tar -C "$work" -czf "$out/sanitize-ranks-$label.tgz" logs 2>/dev/null || true
exit "$rc"
