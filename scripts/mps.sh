# shellcheck shell=bash
# The MPS handling of the GPU scripts, sourced by them (scripts/gpu-nvshmem-check.sh,
# scripts/gpu-check.sh, scripts/gpu-bench.sh, scripts/gpu-ab.sh, scripts/gpu-latency-probe.sh,
# scripts/gpu-kill-rank.sh):
#
#   mps_start            start the MPS control daemon unless one runs (or MOECOMM_MPS=0)
#   mps_stop             stop it again, if mps_start started it
#   mps_probe            is the CUDA stack healthy for a new client? a context, one kernel, one copy
#                        (scripts/mps-probe.cu, built with nvcc on first use); 0 healthy, 1 not,
#                        2 cannot tell (no nvcc)
#   mps_recover WHY      probe; when it fails, retry a few times (a server that is cleaning up after
#                        a client answers CUDA_ERROR_MPS_SERVER_NOT_READY for a while), then restart
#                        the daemon (quit, wait for its server to exit, start) and probe again;
#                        0 healthy, 1 still faulted
#
# Why: after a client faults, or is killed with work on the GPU, the MPS server refuses new
# clients until all of its clients have exited, and may stay faulted; the next launch then fails
# at context creation (CUDA_ERROR_MPS_SERVER_NOT_READY, CUDA_ERROR_LAUNCH_FAILED). docs/gpu.md.
#
# Only a daemon this run started (MOECOMM_MPS_OWNED=1, exported so that the scripts called from
# here know it) is restarted; one found running is probed and reported, never restarted, unless
# MPS_RECOVER_FOREIGN=1. Nothing is killed: the daemon is asked to quit, and the wait is bounded.
# Environment: MOECOMM_MPS=0 (no MPS at all), MPS_LOG (default $OUT/mps.log, else stderr only),
# MPS_PROBE_RETRIES (default 5), MPS_PROBE_RETRY_S (default 2), MPS_QUIT_WAIT_S (default 30).

mps_log() {
  local line
  line="[mps $(date -u +%H:%M:%S)] $*"
  echo "$line" >&2
  local log="${MPS_LOG:-${OUT:+$OUT/mps.log}}"
  [ -n "$log" ] && echo "$line" >> "$log" 2>/dev/null
  return 0
}

mps_available() {
  [ "${MOECOMM_MPS:-1}" != 0 ] && command -v nvidia-cuda-mps-control >/dev/null 2>&1
}

# Pids of the MPS control daemon (control) or server (server). Not `pgrep -x`: a process name is
# cut to 15 characters, "nvidia-cuda-mps" for both, so `pgrep -x nvidia-cuda-mps-control` never
# matches; the command line tells them apart (the daemon runs with -d or -f).
mps_pids() {
  local pid cmd re
  case "$1" in
    control) re='nvidia-cuda-mps-control( | .* )-[df]( |$)' ;;
    server) re='nvidia-cuda-mps-server( |$)' ;;
    *) return 1 ;;
  esac
  for pid in $(pgrep -f nvidia-cuda-mps- 2>/dev/null); do
    cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)
    [[ "$cmd" =~ $re ]] && echo "$pid"
  done
  return 0
}
mps_daemon_running() { [ -n "$(mps_pids control)" ]; }
mps_server_running() { [ -n "$(mps_pids server)" ]; }

mps_start() {
  if ! mps_available; then
    mps_log "no MPS (MOECOMM_MPS=0 or no nvidia-cuda-mps-control): several processes time-slice the GPU (correct, slower)"
    return 1
  fi
  if mps_daemon_running; then
    if [ "${MOECOMM_MPS_OWNED:-0}" = 1 ]; then
      mps_log "the MPS control daemon this run started is running"
    else
      mps_log "an MPS control daemon is already running: using it (not restarted on a fault unless MPS_RECOVER_FOREIGN=1)"
    fi
    return 0
  fi
  if nvidia-cuda-mps-control -d; then
    export MOECOMM_MPS_OWNED=1
    MPS_STARTED_HERE=1
    mps_log "started the MPS control daemon (several processes share the GPU concurrently)"
    return 0
  fi
  mps_log "could not start the MPS control daemon: several processes time-slice the GPU (correct, slower)"
  return 1
}

# Waits up to $1 seconds for the daemon and its server to exit; 0 when both are gone.
mps_wait_gone() {
  local deadline=$((SECONDS + $1))
  while mps_daemon_running || mps_server_running; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.5
  done
  return 0
}

mps_stop() {
  if [ -n "${MPS_PROBE_BUILT_HERE:-}" ]; then
    rm -rf "$MPS_PROBE_BUILT_HERE"
    unset MPS_PROBE_BIN MPS_PROBE_BUILT_HERE
  fi
  if [ "${MPS_STARTED_HERE:-0}" != 1 ]; then
    return 0
  fi
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  if mps_wait_gone "${MPS_QUIT_WAIT_S:-30}"; then
    mps_log "stopped the MPS control daemon"
  else
    mps_log "asked the MPS control daemon to quit; it or its server is still running after ${MPS_QUIT_WAIT_S:-30} s (clients left?)"
  fi
  MPS_STARTED_HERE=0
  unset MOECOMM_MPS_OWNED
  return 0
}

# Builds the probe once (into a scratch folder; MPS_PROBE_BIN, exported, so that the scripts
# called from here reuse it). Not in a subshell: the variable must stay set.
mps_probe_build() {
  if [ -n "${MPS_PROBE_BIN:-}" ] && [ -x "$MPS_PROBE_BIN" ]; then
    return 0
  fi
  local src nvcc dir
  src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/mps-probe.cu"
  nvcc=$(command -v nvcc || ls "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" 2>/dev/null)
  [ -z "$nvcc" ] && return 1
  dir=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-mps-probe.XXXXXX") || return 1
  if ! timeout 180 "$nvcc" -O2 -o "$dir/mps-probe" "$src" > "$dir/build.log" 2>&1; then
    mps_log "the probe did not build: $(tail -n 3 "$dir/build.log" | tr '\n' ' ')"
    return 1
  fi
  export MPS_PROBE_BIN="$dir/mps-probe"
  MPS_PROBE_BUILT_HERE="$dir"
}

mps_probe() {
  local out rc
  if ! mps_probe_build; then
    mps_log "cannot probe the CUDA stack (no nvcc to build scripts/mps-probe.cu)"
    return 2
  fi
  out=$(timeout -k 5 60 "$MPS_PROBE_BIN" 2>&1)
  rc=$?
  [ "$rc" -ge 124 ] && out="mps-probe: FAILED: no answer within 60 s (status $rc)"
  MPS_PROBE_LAST="$out"
  [ "$rc" -eq 0 ] && return 0
  return 1
}

# What the daemon says about its servers and their clients, and the tail of its logs (diagnosis).
mps_report() {
  mps_daemon_running || { mps_log "no MPS control daemon running"; return 0; }
  local servers s
  servers=$(echo get_server_list | timeout 10 nvidia-cuda-mps-control 2>/dev/null | tr '\n' ' ')
  mps_log "MPS servers: ${servers:-none}"
  for s in $servers; do
    mps_log "  clients of server $s: $(echo "get_client_list $s" | timeout 10 nvidia-cuda-mps-control 2>/dev/null | tr '\n' ' ')"
  done
  local d="${CUDA_MPS_LOG_DIRECTORY:-/var/log/nvidia-mps}"
  [ -r "$d/server.log" ] && tail -n 5 "$d/server.log" | while read -r l; do mps_log "  server.log: $l"; done
  return 0
}

mps_recover() {
  local why="${1:-}"
  mps_probe
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    mps_log "healthy ${why:+($why)}: $MPS_PROBE_LAST"
    return 0
  fi
  [ "$rc" -eq 2 ] && return 0
  mps_log "probe failed ${why:+($why)}: $MPS_PROBE_LAST"
  mps_report
  local i
  for ((i = 1; i <= ${MPS_PROBE_RETRIES:-5}; i++)); do
    sleep "${MPS_PROBE_RETRY_S:-2}"
    if mps_probe; then
      mps_log "healthy again after $i retr$([ "$i" = 1 ] && echo y || echo ies): $MPS_PROBE_LAST"
      return 0
    fi
  done
  mps_log "still failing after ${MPS_PROBE_RETRIES:-5} retries: $MPS_PROBE_LAST"
  if ! mps_daemon_running; then
    mps_log "no MPS daemon to restart: the fault is not MPS's (see the probe's error)"
    return 1
  fi
  if [ "${MOECOMM_MPS_OWNED:-0}" != 1 ] && [ "${MPS_RECOVER_FOREIGN:-0}" != 1 ]; then
    mps_log "the MPS daemon was not started by this run: not restarting it (MPS_RECOVER_FOREIGN=1 allows it)"
    return 1
  fi
  mps_log "restarting the MPS daemon: quit, wait for its server to exit, start"
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  if ! mps_wait_gone "${MPS_QUIT_WAIT_S:-30}"; then
    mps_log "the MPS daemon or server did not exit within ${MPS_QUIT_WAIT_S:-30} s (a client still holds it?)"
    mps_report
    return 1
  fi
  if ! nvidia-cuda-mps-control -d; then
    mps_log "could not start the MPS daemon again"
    return 1
  fi
  export MOECOMM_MPS_OWNED=1
  # a new server answers "not ready" while it initialises: a few tries
  for ((i = 0; i < 3; i++)); do
    if mps_probe; then
      mps_log "recovered: restarted the MPS daemon; $MPS_PROBE_LAST"
      return 0
    fi
    sleep "${MPS_PROBE_RETRY_S:-2}"
  done
  mps_log "restarted the MPS daemon, the probe still fails: $MPS_PROBE_LAST"
  return 1
}

# Between two steps that may kill GPU processes: mps_recover, but only where a script above this
# one started the daemon (MOECOMM_MPS_OWNED=1); a script run alone leaves MPS to its caller.
mps_between() {
  [ "${MOECOMM_MPS_OWNED:-0}" = 1 ] || return 0
  mps_recover "$@"
}
