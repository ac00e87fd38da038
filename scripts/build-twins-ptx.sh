#!/usr/bin/env bash
# Builds the PTX of the CUDA C++ twins of the kernels (benchmarks/src/main/cuda/twins.cu: pack_twin,
# reduce_twin) with nvcc, on the development machine, so the GPU machine needs no nvcc: the kernel
# benchmark (org.moecomm.bench.gpu.KernelBenchmark) loads it through the driver's JIT linker, the
# same way as the PTX compiled from the Java kernels.
#
# Usage: scripts/build-twins-ptx.sh <output-folder>     (writes twins.ptx and twins.txt there)
# Environment: NVCC (default: nvcc on PATH, then $CUDA_HOME/bin/nvcc), TWINS_ARCH (default sm_90a).
# Exit status: 0 when built, 1 when nvcc failed, 2 when there is no nvcc.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/build-twins-ptx.sh <output-folder>}
src="$root/benchmarks/src/main/cuda/twins.cu"
arch=${TWINS_ARCH:-sm_90a}
nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
  if command -v nvcc >/dev/null 2>&1; then
    nvcc=$(command -v nvcc)
  elif [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
    nvcc="$CUDA_HOME/bin/nvcc"
  else
    echo "no nvcc (PATH, CUDA_HOME): the twins' PTX is not built" >&2
    exit 2
  fi
fi
flags=(-ptx "-arch=$arch" -O3 -std=c++17)
mkdir -p "$out"
"$nvcc" "${flags[@]}" -o "$out/twins.ptx.tmp" "$src"
mv "$out/twins.ptx.tmp" "$out/twins.ptx"
{
  echo "source: benchmarks/src/main/cuda/twins.cu (sha256 $(sha256sum "$src" | cut -d' ' -f1))"
  echo "command: nvcc ${flags[*]} -o twins.ptx twins.cu"
  echo "nvcc: $("$nvcc" --version | tail -n 2 | tr '\n' ' ')"
  echo "entries: $(sed -n 's/^\.visible \.entry \([A-Za-z0-9_]*\)(.*/\1/p' "$out/twins.ptx" | tr '\n' ' ')"
} > "$out/twins.txt"
echo "twins PTX: $out/twins.ptx ($(wc -c < "$out/twins.ptx") bytes; $(sed -n 's/^entries: //p' "$out/twins.txt"))"
