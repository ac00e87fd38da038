#!/usr/bin/env bash
# Runs ON the GPU machine, in the repository root (carry .gpu-carry, made by
# scripts/make-gpu-bundle.sh): ranks started by a launcher other than LocalLauncher, one killed
# mid-round. No supervisor stops the others: the library alone must release them.
#
#   1. starts a rendezvous (org.moecomm.core.launch.RendezvousServer, a process of its own) and W
#      rank processes on the one GPU, directly, with LaunchEnv's variables (MOECOMM_RANK, ...,
#      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / W), each running checked rounds on one handle
#      with a short wait timeout (org.moecomm.bench.PeerLossRankMain);
#   2. once every rank has run a few rounds, SIGKILLs one rank (its own pid, started here);
#   3. checks every other rank: it failed with a WaitTimeoutException or a PeerAbortedException
#      within the wait timeout plus slack after the kill, its handle's close() and its backend's
#      close() each returned within a bound, and it exited with status 1 (not a signal, not a hang),
#      its error printed;
#   4. probes the MPS server and restarts it when it faulted (scripts/mps.sh), so that what runs
#      next starts on a healthy server.
# Writes $OUT/kill-rank.json (bounds, the kill, every rank's times and exit, the verdict) and
# $OUT/kill-rank.log (every process's output); prints "KILL-RANK PASS" or "KILL-RANK FAIL: ...".
# Exit status: 0 pass, 1 a check failed, 2 it could not run (no bundle, the ranks did not start).
# Only processes started here are killed, by pid; every wait is bounded.
#
# Environment (defaults in brackets):
#   KILL_RANK_WORLD [4]  KILL_RANK_VICTIM [2]  KILL_RANK_WAIT_MS, the handles' wait timeout [2000]
#   KILL_RANK_SLACK_MS   failure later than the kill by at most wait + this [5000]
#   KILL_RANK_CLOSE_MS   bound of each close [10000]   KILL_RANK_EXIT_MS  bound of kill -> exit [30000]
#   KILL_RANK_START_S    bound of the start, until every rank runs [240]
#   KILL_RANK_DELAY_MS   from "every rank runs" to the kill [500]
#   KILL_RANK_SPEC       the rounds (a StressSpec) [deepseek-v2-lite:16:W:1:1000000:1:0.3:200]
#   KILL_RANK_JAVA, KILL_RANK_CLASSPATH, KILL_RANK_MAIN   another runtime, class path or rank main
#   KILL_RANK_DRY=1      no GPU, NVSHMEM or MPS (with KILL_RANK_MAIN=org.moecomm.bench.FakePeerLossRankMain
#                        from the benchmarks' test classes: the script's own logic, on any machine)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
carry="${GPU_CARRY:-$root/.gpu-carry}"
# shellcheck source=scripts/mps.sh
source "$root/scripts/mps.sh"
# shellcheck source=scripts/bundle.sh
source "$root/scripts/bundle.sh"
say() { echo "[gpu-kill-rank] $*"; }
now_ms() { date +%s%3N; }

world=${KILL_RANK_WORLD:-4}
victim=${KILL_RANK_VICTIM:-2}
wait_ms=${KILL_RANK_WAIT_MS:-2000}
slack_ms=${KILL_RANK_SLACK_MS:-5000}
close_ms=${KILL_RANK_CLOSE_MS:-10000}
exit_ms=${KILL_RANK_EXIT_MS:-30000}
start_s=${KILL_RANK_START_S:-240}
delay_ms=${KILL_RANK_DELAY_MS:-500}
spec=${KILL_RANK_SPEC:-deepseek-v2-lite:16:$world:1:1000000:1:0.3:200}
main=${KILL_RANK_MAIN:-org.moecomm.bench.PeerLossRankMain}
dry=${KILL_RANK_DRY:-0}
if [ "$victim" -lt 0 ] || [ "$victim" -ge "$world" ] || [ "$world" -lt 2 ]; then
  echo "KILL-RANK FAIL: KILL_RANK_VICTIM=$victim must be a rank of KILL_RANK_WORLD=$world (>= 2)"
  exit 2
fi

rm -f "$out/kill-rank.json"
work=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-kill-rank.XXXXXX")
mkdir -p "$work/ranks"
pids=()
rv_pid=""
started_mps_here=0
# Kills what is still alive of the processes started here (by pid), collects their logs.
cleanup() {
  local p
  for p in "${pids[@]}" $rv_pid; do
    [ -n "$p" ] && kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
  done
  {
    for f in "$work"/rendezvous.log "$work"/rank-*.log; do
      [ -f "$f" ] && { echo "===== ${f##*/}"; cat "$f"; }
    done
  } > "$out/kill-rank.log" 2>/dev/null
  [ "$started_mps_here" = 1 ] && mps_stop
  rm -rf "$work"
  # ended before the checks (a signal, a setup failure that wrote nothing): say so in the JSON too
  [ -f "$out/kill-rank.json" ] || echo '{"check":"kill-a-rank","result":"FAIL","problems":["ended before the checks (kill-rank.log)"]}' > "$out/kill-rank.json"
}
trap cleanup EXIT
trap 'exit 143' TERM INT   # the EXIT trap then still kills what was started here

# ---- runtime, class path, GPU environment ---------------------------------------------------------
if [ -n "${KILL_RANK_JAVA:-}" ]; then
  java=$KILL_RANK_JAVA
else
  java=$(bundle_java "$carry" "$work") || { echo "KILL-RANK FAIL: no bundle"; exit 2; }
fi
classpath=${KILL_RANK_CLASSPATH:-$(ls "$carry"/lib/*.jar 2>/dev/null | paste -sd: -)}
java_opts=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Xss4m
  "-Dorg.bytedeco.javacpp.cachedir=$work/javacpp-cache" "-Djava.io.tmpdir=$work" -Dmoecomm.log.level=WARN)

export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
if [ "$dry" != 1 ]; then
  native="${MOECOMM_NVSHMEM_OUT:-$root/nvshmem-bridge/target/nvshmem-native}"
  if [ -z "${MOECOMM_NVSHMEM_LIB:-}" ]; then
    # run alone: build the bridge unless an earlier step did
    if [ ! -f "$native/env.sh" ] && ! bash scripts/gpu-nvshmem-build.sh build > "$out/nvshmem-build.log" 2>&1; then
      echo "KILL-RANK FAIL: the NVSHMEM bridge did not build (nvshmem-build.log)"
      exit 2
    fi
    # shellcheck disable=SC1091
    source "$native/env.sh"
  fi
  export MOECOMM_REQUIRE_NVSHMEM=1
  export MPS_LOG="${MPS_LOG:-$out/mps.log}"
  if ! mps_daemon_running && mps_start; then
    started_mps_here=1
  fi
  mps_recover "before the kill-a-rank check"
fi

# ---- the rendezvous and the ranks ------------------------------------------------------------------
"$java" "${java_opts[@]}" -cp "$classpath" org.moecomm.core.launch.RendezvousServer \
  --env-file "$work/rendezvous.env" --max-seconds 900 > "$work/rendezvous.log" 2>&1 &
rv_pid=$!
for _ in $(seq 1 600); do
  [ -f "$work/rendezvous.env" ] && break
  kill -0 "$rv_pid" 2>/dev/null || break
  sleep 0.1
done
if [ ! -f "$work/rendezvous.env" ]; then
  echo "KILL-RANK FAIL: the rendezvous did not start: $(tail -n 5 "$work/rendezvous.log" | tr '\n' ' ')"
  exit 2
fi
rv_addr=$(sed -n 's/^MOECOMM_RENDEZVOUS=//p' "$work/rendezvous.env")
rv_token=$(sed -n 's/^MOECOMM_RENDEZVOUS_TOKEN=//p' "$work/rendezvous.env")
gpu_env=()
if [ "$dry" != 1 ]; then
  gpu_env=(CUDA_VISIBLE_DEVICES="${KILL_RANK_DEVICE:-0}" CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / world))
    NVSHMEM_REMOTE_TRANSPORT="${NVSHMEM_REMOTE_TRANSPORT:-none}")
fi
say "W=$world, rank $victim to be killed, wait timeout $wait_ms ms, $main, spec $spec"
started_ms=$(now_ms)
for ((r = 0; r < world; r++)); do
  env MOECOMM_RANK=$r MOECOMM_WORLD_SIZE="$world" MOECOMM_LOCAL_RANK=$r MOECOMM_LOCAL_WORLD_SIZE="$world" \
    MOECOMM_PES_PER_GPU="$world" MOECOMM_RENDEZVOUS="$rv_addr" MOECOMM_RENDEZVOUS_TOKEN="$rv_token" "${gpu_env[@]}" \
    "$java" "${java_opts[@]}" -cp "$classpath" "$main" "$spec" "$wait_ms" "$work/ranks" > "$work/rank-$r.log" 2>&1 &
  pids[r]=$!
done

# exited PID: the process is gone or a zombie (its status is then collected by `wait`)
# one read of the process's state: gone (reaped: the read fails) or a zombie. (Testing for
# /proc/PID first and reading its stat after raced with bash reaping the child in between.)
exited() {
  local state
  state=$(sed -E 's/^.*\) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
  [ -z "$state" ] || [ "$state" = Z ]
}

# ---- every rank running, then the kill ---------------------------------------------------------------
deadline=$((SECONDS + start_s))
setup_problem=""
while :; do
  n=$(ls "$work"/ranks/rank-*.running 2>/dev/null | wc -l)
  [ "$n" -ge "$world" ] && break
  for ((r = 0; r < world; r++)); do
    if exited "${pids[r]}"; then setup_problem="rank $r exited before every rank ran $world rounds"; break 2; fi
  done
  if [ "$SECONDS" -ge "$deadline" ]; then setup_problem="not every rank was running after $start_s s ($n of $world)"; break; fi
  sleep 0.1
done
if [ -n "$setup_problem" ]; then
  echo "KILL-RANK FAIL: $setup_problem (kill-rank.log)"
  for ((r = 0; r < world; r++)); do tail -n 5 "$work/rank-$r.log" | sed "s/^/  [rank $r] /"; done
  printf '{"result":"FAIL","problems":[%s]}\n' "\"could not start: $setup_problem\"" > "$out/kill-rank.json"
  exit 2
fi
running_ms=$(now_ms)
sleep "$(awk "BEGIN {print $delay_ms / 1000}")"
if exited "${pids[victim]}"; then
  echo "KILL-RANK FAIL: rank $victim exited before the kill"
  exit 2
fi
kill_ms=$(now_ms)
kill -9 "${pids[victim]}"
# bounded: a killed process can sit in the driver a while; `wait` alone could block for good
victim_status=not-exited-after-30s
for _ in $(seq 1 300); do
  if exited "${pids[victim]}"; then
    wait "${pids[victim]}" 2>/dev/null
    victim_status=$?
    break
  fi
  sleep 0.1
done
say "SIGKILL to rank $victim (pid ${pids[victim]}) $((kill_ms - running_ms)) ms after every rank ran; status $victim_status"

# ---- the survivors' exits, bounded -----------------------------------------------------------------
declare -A status exit_at
left=$((world - 1))
end=$((kill_ms + wait_ms + exit_ms))
while [ "$left" -gt 0 ] && [ "$(now_ms)" -lt "$end" ]; do
  for ((r = 0; r < world; r++)); do
    [ "$r" = "$victim" ] && continue
    [ -n "${status[$r]:-}" ] && continue
    if exited "${pids[r]}"; then
      exit_at[$r]=$(now_ms)
      wait "${pids[r]}" 2>/dev/null
      status[$r]=$?
      left=$((left - 1))
    fi
  done
  sleep 0.05
done
for ((r = 0; r < world; r++)); do
  [ "$r" = "$victim" ] && continue
  if [ -z "${status[$r]:-}" ]; then
    kill -9 "${pids[r]}" 2>/dev/null
    wait "${pids[r]}" 2>/dev/null
    status[$r]=hung
  fi
done

# ---- checks ----------------------------------------------------------------------------------------
field() { sed -n "s/.*\"$2\":\\([^,}]*\\).*/\\1/p" "$1" | tr -d '"'; }
problems=()
rank_json=()
for ((r = 0; r < world; r++)); do
  [ "$r" = "$victim" ] && continue
  f="$work/ranks/rank-$r.json"
  log="$work/rank-$r.log"
  st=${status[$r]}
  printed=false
  grep -q 'Exception in thread "main"' "$log" 2>/dev/null && printed=true
  if [ "$st" = hung ]; then
    problems+=("rank $r did not exit within $((wait_ms + exit_ms)) ms of the kill (killed here); last line: $(grep -v '^\s*at ' "$log" | tail -n 1)")
  elif [ "$st" -gt 128 ]; then
    problems+=("rank $r died by signal $((st - 128)) (status $st)$([ -f "$f" ] && echo ' after its closes returned')")
  elif [ "$st" = "${NO_FAILURE_STATUS:-3}" ]; then
    problems+=("rank $r ran every round without a failure: the kill was not seen")
  elif [ "$st" -ne 1 ]; then
    problems+=("rank $r exited with status $st, not 1")
  fi
  if [ "$printed" != true ] && [ "$st" != hung ]; then
    problems+=("rank $r did not print its error (no 'Exception in thread \"main\"' in its output)")
  fi
  if [ ! -f "$f" ]; then
    problems+=("rank $r wrote no report: it hung or died before its closes returned; last line: $(grep -v '^\s*at ' "$log" | tail -n 1)")
    rank_json+=("{\"rank\":$r,\"exit_status\":\"$st\",\"report\":null}")
    continue
  fi
  kind=$(field "$f" kind)
  failed=$(field "$f" failed_epoch_ms)
  hc=$(field "$f" handle_close_ms)
  bc=$(field "$f" backend_close_ms)
  bdone=$(field "$f" backend_closed_epoch_ms)
  after=$((failed - kill_ms))
  case "$kind" in
    timeout|aborted) ;;
    *) problems+=("rank $r failed with $(field "$f" exception), not a timeout or a peer's abort: $(field "$f" message)") ;;
  esac
  [ "$after" -lt 0 ] && problems+=("rank $r failed $((-after)) ms before the kill: $(field "$f" message)")
  [ "$after" -gt $((wait_ms + slack_ms)) ] && problems+=("rank $r failed $after ms after the kill (bound $((wait_ms + slack_ms)) ms)")
  [ "$hc" -gt "$close_ms" ] && problems+=("rank $r: the handle's close took $hc ms (bound $close_ms ms)")
  [ "$bc" -gt "$close_ms" ] && problems+=("rank $r: the backend's close took $bc ms (bound $close_ms ms)")
  exit_after=null
  [ -n "${exit_at[$r]:-}" ] && exit_after=$((exit_at[$r] - bdone))
  rank_json+=("$(sed 's/}[[:space:]]*$//' "$f"),\"failed_after_kill_ms\":$after,\"exit_status\":\"$st\",\"exit_after_backend_close_ms\":$exit_after,\"error_printed\":$printed}")
done

result=PASS
[ "${#problems[@]}" -gt 0 ] && result=FAIL
json_list() { local first=1 s; printf '['; for s in "$@"; do [ $first = 1 ] || printf ','; first=0; printf '%s' "$s"; done; printf ']'; }
quoted=()
for p in "${problems[@]}"; do quoted+=("\"$(printf '%s' "$p" | sed 's/\\/\\\\/g; s/"/\\"/g')\""); done
{
  printf '{"check":"kill-a-rank","result":"%s","world":%d,"victim":%d,"wait_timeout_ms":%d,' "$result" "$world" "$victim" "$wait_ms"
  printf '"bounds_ms":{"failure_after_kill":%d,"each_close":%d,"exit_after_kill":%d},' $((wait_ms + slack_ms)) "$close_ms" $((wait_ms + exit_ms))
  printf '"started_epoch_ms":%s,"all_running_epoch_ms":%s,"kill_epoch_ms":%s,"victim_exit_status":"%s",' "$started_ms" "$running_ms" "$kill_ms" "$victim_status"
  printf '"rank_main":"%s","spec":"%s","dry":%s,"ranks":' "$main" "$spec" "$([ "$dry" = 1 ] && echo true || echo false)"
  json_list "${rank_json[@]}"
  printf ',"problems":'
  json_list "${quoted[@]}"
  printf '}\n'
} > "$out/kill-rank.json"

for ((r = 0; r < world; r++)); do
  [ "$r" = "$victim" ] && continue
  grep -h '^PEERLOSS' "$work/rank-$r.log" | sed "s/^/  /"
  echo "  rank $r: exit status ${status[$r]}"
done
mps_rc=0
if [ "$dry" != 1 ]; then
  mps_recover "after the kill-a-rank check" || mps_rc=$?
  [ "$mps_rc" -ne 0 ] && say "the MPS server is still faulted after the check (mps.log)"
fi
if [ "$result" = PASS ]; then
  echo "KILL-RANK PASS: W=$world, rank $victim killed; every other rank failed within $((wait_ms + slack_ms)) ms, closed within $close_ms ms each and exited with status 1"
  exit 0
fi
echo "KILL-RANK FAIL: ${#problems[@]} problem(s):"
printf '  - %s\n' "${problems[@]}"
exit 1
