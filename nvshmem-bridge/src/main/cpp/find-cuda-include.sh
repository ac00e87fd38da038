#!/usr/bin/env bash
# Prints the folder that holds the CUDA driver header cuda.h, or nothing when none is found (exit
# status 0 either way: the Maven build decides by whether the printed folder holds cuda.h).
# Order: $CUDA_HOME, $CUDA_PATH, then the CUDA install that the nvcc on PATH belongs to.
set -u
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}"; do
  if [ -n "$d" ]; then
    for inc in "$d/include" "$d/targets/x86_64-linux/include"; do
      if [ -f "$inc/cuda.h" ]; then echo "$inc"; exit 0; fi
    done
  fi
done
if command -v nvcc >/dev/null 2>&1; then
  # nvcc may be a wrapper script: ask nvcc itself where its installation is.
  top=$(nvcc --dryrun -E -x cu /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n1)
  real=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  for d in "$top" "$real"; do
    if [ -n "$d" ]; then
      for inc in "$d/include" "$d/targets/x86_64-linux/include"; do
        if [ -f "$inc/cuda.h" ]; then (cd "$inc" && pwd -P); exit 0; fi
      done
    fi
  done
fi
exit 0
