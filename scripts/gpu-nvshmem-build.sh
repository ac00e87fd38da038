#!/usr/bin/env bash
# Builds the NVSHMEM bridge's native library (libjniNvshmemNative.so) and the device functions
# for compiled Java kernels (moe_nvshmem_devfns.fatbin).
#
# Usage: scripts/gpu-nvshmem-build.sh [MODE]
#   build      (default; on the GPU machine) compile and link against the NVSHMEM wheel;
#              writes into $MOECOMM_NVSHMEM_OUT (default nvshmem-bridge/target/nvshmem-native)
#              the library, the fatbin and env.sh (exports MOECOMM_NVSHMEM_LIB, LD_LIBRARY_PATH,
#              MOECOMM_NVSHMEM_DEVFNS). Needs what `prepare` staged in .gpu-carry/nvshmem-jni.
#   prepare    (on the development machine; scripts/make-gpu-bundle.sh runs it) generates JavaCPP's
#              JNI glue for NvshmemNative (-nocompile) into .gpu-carry/nvshmem-jni/glue, stages
#              jni.h and jni_md.h of the local JDK into .gpu-carry/nvshmem-jni/include (the GPU
#              machine has no JDK headers), and compile-checks the glue against them. Needs the
#              bridge built (mvn install).
#   local      (a machine with a JDK, CUDA and NVSHMEM; scripts/install.sh runs it) generates the JNI
#              glue into nvshmem-bridge/target/nvshmem-jni and builds as `build` does. Needs the
#              project built (mvn install).
#   find       prints where NVSHMEM is (NVSHMEM_HOME, the pip wheel, the system's packages) and
#              exits 0, or exits 1 when there is none; builds nothing.
#   devfns SRC OUT   (on the GPU machine) builds only the device functions' fatbin from the
#              bridge sources in folder SRC into file OUT (an A/B variant whose device functions
#              differ from the bundle's: scripts/gpu-ab.sh).
#   check      (anywhere with nvcc) compile-checks the CUDA sources against NVSHMEM headers:
#              $NVSHMEM_INCLUDE, else the wheel's, else .nvshmem-src/src/include (NVSHMEM's
#              public source tree, git-ignored; its .h.in files must be configured).
#
# Environment: NVSHMEM_HOME (folder with include/ and lib/; default: the Python wheel
# nvidia.nvshmem, else the system's NVSHMEM packages: /usr/include/nvshmem_<N> and
# /usr/lib/<arch>-linux-gnu/nvshmem/<N>), CUDA_HOME, JNI_INCLUDE (folder with jni.h), CUDA_ARCH (default 90a),
# MOECOMM_NVSHMEM_OUT, MAVEN_REPO (default ~/.m2/repository). Every command is printed; any
# failure stops the script.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/nvshmem-bridge/src/main/cpp/nvshmem"
carry="$root/.gpu-carry/nvshmem-jni"
if [ "${1:-build}" = local ]; then carry="$root/nvshmem-bridge/target/nvshmem-jni"; fi
gen="$carry/glue"
carry_jni="$carry/include"
mode="${1:-build}"
arch="${CUDA_ARCH:-90a}"

say() { echo "[gpu-nvshmem-build] $*" >&2; }
die() { echo "[gpu-nvshmem-build] ERROR: $*" >&2; exit 1; }
run() { echo "+ $*" >&2; "$@"; }

find_cuda_home() {
  if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then echo "$CUDA_HOME"; return; fi
  if command -v nvcc >/dev/null 2>&1; then
    # nvcc on PATH may be a wrapper script: ask it where its installation is
    local top real
    top=$(nvcc --dryrun -E -x cu /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n1)
    if [ -n "$top" ] && [ -x "$top/bin/nvcc" ]; then (cd "$top" && pwd -P); return; fi
    real=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    if [ -x "$real/bin/nvcc" ] && [ -d "$real/include" ]; then echo "$real"; return; fi
  fi
  for d in /usr/local/cuda; do
    if [ -x "$d/bin/nvcc" ]; then echo "$d"; return; fi
  done
  die "nvcc not found: set CUDA_HOME"
}

# Sets nvshmem_inc and nvshmem_lib (and nvshmem_from: what found them); returns 1 when there is no NVSHMEM.
find_nvshmem() {
  local d py
  if [ -n "${NVSHMEM_HOME:-}" ]; then
    nvshmem_inc="$NVSHMEM_HOME/include"; nvshmem_lib="$NVSHMEM_HOME/lib"; nvshmem_from="NVSHMEM_HOME"
    [ -f "$nvshmem_inc/nvshmem.h" ] && return 0
    say "NVSHMEM_HOME=$NVSHMEM_HOME has no include/nvshmem.h"
    return 1
  fi
  for py in python3 python; do
    if command -v "$py" >/dev/null 2>&1; then
      d=$("$py" -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])" 2>/dev/null || true)
      if [ -n "$d" ] && [ -f "$d/include/nvshmem.h" ]; then
        nvshmem_inc="$d/include"; nvshmem_lib="$d/lib"; nvshmem_from="the pip wheel nvidia-nvshmem ($py)"
        return 0
      fi
    fi
  done
  # the system's packages (libnvshmem3-dev-cuda-<N>, ...): headers and libraries per CUDA major version
  for d in /usr/include/nvshmem_*; do
    local major=${d##*/nvshmem_}
    local lib
    for lib in /usr/lib/*-linux-gnu/nvshmem/"$major"; do
      if [ -f "$d/nvshmem.h" ] && [ -f "$lib/libnvshmem_device.a" ]; then
        nvshmem_inc="$d"; nvshmem_lib="$lib"; nvshmem_from="the system's NVSHMEM packages"
        return 0
      fi
    done
  done
  return 1
}

find_jni_include() {
  local c
  local jdk=""
  if [ -x "$root/scripts/java-home.sh" ]; then jdk=$("$root/scripts/java-home.sh" 2>/dev/null || true); fi
  for c in "${JNI_INCLUDE:-}" "${JAVA_HOME:+$JAVA_HOME/include}" "${jdk:+$jdk/include}" "$carry_jni"; do
    if [ -n "$c" ] && [ -f "$c/jni.h" ] && [ -f "$c/linux/jni_md.h" ]; then echo "$c"; return; fi
  done
  if command -v javac >/dev/null 2>&1; then
    c="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")/include"
    if [ -f "$c/jni.h" ]; then echo "$c"; return; fi
  fi
  for c in /usr/lib/jvm/*/include; do
    if [ -f "$c/jni.h" ] && [ -f "$c/linux/jni_md.h" ]; then echo "$c"; return; fi
  done
  return 1
}

check_glue_present() {
  [ -f "$gen/jniNvshmemNative.cpp" ] && [ -f "$gen/jnijavacpp.cpp" ] \
    || die "the JNI glue is missing from $gen: make the bundle again on the development machine \
(scripts/make-gpu-bundle.sh, which runs 'scripts/gpu-nvshmem-build.sh prepare') and carry .gpu-carry"
}

generate_glue() {
  local java_home jar ver classes
  java_home=$("$root/scripts/java-home.sh")
  ver=$(sed -n 's:.*<javacpp.version>\(.*\)</javacpp.version>.*:\1:p' "$root/pom.xml" | head -n1)
  [ -n "$ver" ] || die "javacpp.version not found in pom.xml"
  jar="${JAVACPP_JAR:-${MAVEN_REPO:-$HOME/.m2/repository}/org/bytedeco/javacpp/$ver/javacpp-$ver.jar}"
  [ -f "$jar" ] || die "JavaCPP $ver not found at $jar (build the project once with Maven, or set JAVACPP_JAR)"
  classes="$root/nvshmem-bridge/target/classes"
  [ -f "$classes/org/moecomm/bridge/nvshmem/NvshmemNative.class" ] \
    || die "NvshmemNative.class missing: build first (mvn install -pl kernels,nvshmem-bridge)"
  local tmp
  tmp=$(mktemp -d)
  run "$java_home/bin/java" -cp "$jar" org.bytedeco.javacpp.tools.Builder -cp "$classes" -nocompile -d "$tmp" org.moecomm.bridge.nvshmem.NvshmemNative
  run mkdir -p "$gen"
  run cp "$tmp/jniNvshmemNative.cpp" "$tmp/jnijavacpp.cpp" "$gen/"
  rm -rf "$tmp"
  say "generated the JNI glue in $gen (JavaCPP $ver)"
}

mode_prepare() {
  generate_glue
  local jni
  jni=$(find_jni_include) || die "no jni.h found (set JNI_INCLUDE or JAVA_HOME)"
  if [ "$jni" != "$carry_jni" ]; then
    run mkdir -p "$carry_jni/linux"
    run cp "$jni/jni.h" "$carry_jni/jni.h"
    run cp "$jni/linux/jni_md.h" "$carry_jni/linux/jni_md.h"
  fi
  local tmp
  tmp=$(mktemp -d)
  for f in jniNvshmemNative jnijavacpp; do
    run g++ -std=c++11 -O2 -fPIC -fvisibility=hidden -I"$carry_jni" -I"$carry_jni/linux" -I"$src" \
      -c "$gen/$f.cpp" -o "$tmp/$f.o"
  done
  rm -rf "$tmp"
  say "staged JNI headers in $carry_jni; the JNI glue in $gen compiles"
}

mode_check() {
  local cuda inc
  cuda=$(find_cuda_home)
  if [ -n "${NVSHMEM_INCLUDE:-}" ]; then inc="$NVSHMEM_INCLUDE"
  elif find_nvshmem; then inc="$nvshmem_inc"
  else inc="$root/.nvshmem-src/src/include"; fi
  [ -f "$inc/nvshmem.h" ] || die "no NVSHMEM headers at $inc (set NVSHMEM_INCLUDE)"
  [ -f "$inc/non_abi/nvshmem_version.h" ] || die "$inc/non_abi/nvshmem_version.h missing (configure the .h.in files)"
  say "compile-checking against $inc"
  local tmp
  tmp=$(mktemp -d)
  run "$cuda/bin/nvcc" -std=c++17 -O2 -rdc=true -gencode "arch=compute_$arch,code=sm_$arch" -Xcompiler -fPIC \
    -Xcompiler -Wall -I"$inc" -I"$src" -c "$src/moe_nvshmem.cu" -o "$tmp/moe_nvshmem.o"
  # shellcheck disable=SC2046
  run "$cuda/bin/nvcc" -std=c++17 -O2 -rdc=true $(devfns_flags "$src") -gencode "arch=compute_$arch,code=sm_$arch" \
    -gencode "arch=compute_$arch,code=compute_$arch" -I"$inc" -I"$src" -fatbin "$src/moe_nvshmem_devfns.cu" \
    -o "$tmp/moe_nvshmem_devfns.fatbin"
  run "$cuda/bin/nvcc" -std=c++17 -O2 -rdc=true -arch="sm_$arch" -I"$inc" -I"$src" -ptx \
    "$src/moe_nvshmem_devfns.cu" -o "$tmp/moe_nvshmem_devfns.ptx"
  local missing=0
  for fn in mnvd_ptr mnvd_put_signal_warp mnvd_put_signal_block mnvd_put_signal_add_block mnvd_put_nbi_warp mnvd_signal_op mnvd_fence \
            mnvd_quiet mnvd_wait_ge; do
    if ! grep -q "^\.visible \.func.* $fn(" "$tmp/moe_nvshmem_devfns.ptx"; then
      echo "missing exported device function $fn" >&2; missing=1
    fi
  done
  [ "$missing" = 0 ] || die "device functions not exported as expected"
  rm -rf "$tmp"
  say "CUDA sources compile against $inc"
}

mode_build() {
  check_glue_present
  local cuda inc lib jni out obj cudalib
  cuda=$(find_cuda_home)
  find_nvshmem || die "NVSHMEM not found: install the nvidia-nvshmem-cu13 wheel or the system's NVSHMEM packages, or set NVSHMEM_HOME"
  inc="$nvshmem_inc"
  lib="$nvshmem_lib"
  [ -f "$inc/nvshmem.h" ] || die "$inc/nvshmem.h missing"
  [ -f "$lib/libnvshmem_device.a" ] || die "$lib/libnvshmem_device.a missing"
  [ -e "$lib/libnvshmem_host.so.3" ] || die "$lib/libnvshmem_host.so.3 missing"
  jni=$(find_jni_include) || die "no jni.h: make the bundle again on the development machine (scripts/make-gpu-bundle.sh \
stages it in .gpu-carry/nvshmem-jni/include) and carry .gpu-carry, or set JNI_INCLUDE"
  cudalib="$cuda/lib64"
  [ -f "$cudalib/libcudart_static.a" ] || cudalib="$cuda/targets/x86_64-linux/lib"
  [ -f "$cudalib/libcudart_static.a" ] || die "libcudart_static.a not found under $cuda"
  out="${MOECOMM_NVSHMEM_OUT:-$root/nvshmem-bridge/target/nvshmem-native}"
  obj="$out/obj"
  run mkdir -p "$obj"
  say "NVSHMEM: $inc, $lib (from $nvshmem_from)"
  say "CUDA: $cuda ($("$cuda/bin/nvcc" --version | tail -n1))"
  say "JNI headers: $jni"
  local gencode=(-gencode "arch=compute_$arch,code=sm_$arch")
  run "$cuda/bin/nvcc" -std=c++17 -O2 -rdc=true "${gencode[@]}" -Xcompiler -fPIC -I"$inc" -I"$src" \
    -c "$src/moe_nvshmem.cu" -o "$obj/moe_nvshmem.o"
  # Device link: the bridge's barrier kernel against NVSHMEM's device library.
  run "$cuda/bin/nvcc" "${gencode[@]}" -Xcompiler -fPIC -dlink "$obj/moe_nvshmem.o" "$lib/libnvshmem_device.a" \
    -o "$obj/moe_nvshmem_dlink.o"
  for f in jniNvshmemNative jnijavacpp; do
    run g++ -std=c++11 -O2 -fPIC -I"$jni" -I"$jni/linux" -I"$src" -c "$gen/$f.cpp" -o "$obj/$f.o"
  done
  # Final link: libnvshmem_device.a again (it holds host code too), libnvshmem_host.so.3 by file name.
  run g++ -shared -o "$out/libjniNvshmemNative.so" "$obj/moe_nvshmem.o" "$obj/moe_nvshmem_dlink.o" \
    "$obj/jniNvshmemNative.o" "$obj/jnijavacpp.o" "$lib/libnvshmem_device.a" \
    -L"$lib" -l:libnvshmem_host.so.3 -L"$cudalib" -lcudadevrt -lcudart_static -ldl -lpthread -lrt \
    -Wl,-rpath,"$lib" -Wl,--no-undefined
  # Relocatable device functions for kernels compiled from Java (linked at load time with
  # libnvshmem_device.a by the CUDA driver's linker).
  # (-Xptxas -v: each device function's registers in the build log; a kernel linked with one
  # gets at least as many)
  # shellcheck disable=SC2046
  run "$cuda/bin/nvcc" -std=c++17 -O2 -rdc=true $(devfns_flags "$src") -Xptxas -v "${gencode[@]}" \
    -gencode "arch=compute_$arch,code=compute_$arch" \
    -I"$inc" -I"$src" -fatbin "$src/moe_nvshmem_devfns.cu" -o "$out/moe_nvshmem_devfns.fatbin"
  # Sanity: the JNI entry points are exported and every dependency resolves.
  local n
  n=$(nm -D --defined-only "$out/libjniNvshmemNative.so" | grep -c ' Java_org_moecomm_bridge_nvshmem_NvshmemNative_' || true)
  [ "$n" -ge 20 ] || die "only $n JNI entry points exported by $out/libjniNvshmemNative.so"
  if ldd "$out/libjniNvshmemNative.so" | grep -q 'not found'; then
    ldd "$out/libjniNvshmemNative.so" >&2
    die "unresolved shared library dependencies"
  fi
  cat > "$out/env.sh" <<EOF
# Written by scripts/gpu-nvshmem-build.sh: source it before running the GPU tests.
export MOECOMM_NVSHMEM_LIB="$out/libjniNvshmemNative.so"
export MOECOMM_NVSHMEM_DEVFNS="$out/moe_nvshmem_devfns.fatbin"
export MOECOMM_NVSHMEM_DEVICE_LIB="$lib/libnvshmem_device.a"
export LD_LIBRARY_PATH="$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
EOF
  say "built $out/libjniNvshmemNative.so ($n JNI entry points) and $out/moe_nvshmem_devfns.fatbin"
  say "environment for the tests: source $out/env.sh"
  echo "MOECOMM_NVSHMEM_LIB=$out/libjniNvshmemNative.so"
}

# Extra nvcc options for the device functions: the words of devfns.nvccflags in their source
# folder, when there is one (an A/B variant can carry its own).
devfns_flags() {
  [ -f "$1/devfns.nvccflags" ] && grep -v '^#' "$1/devfns.nvccflags" | tr '\n' ' '
  return 0
}

mode_devfns() {
  local srcdir=${1:?devfns needs the source folder} fatbin=${2:?devfns needs the output file} cuda
  cuda=$(find_cuda_home)
  find_nvshmem || die "NVSHMEM not found"
  # shellcheck disable=SC2046
  run "$cuda/bin/nvcc" -std=c++17 -O2 -rdc=true $(devfns_flags "$srcdir") -Xptxas -v -gencode "arch=compute_$arch,code=sm_$arch" \
    -gencode "arch=compute_$arch,code=compute_$arch" -I"$nvshmem_inc" -I"$srcdir" -fatbin \
    "$srcdir/moe_nvshmem_devfns.cu" -o "$fatbin"
}

mode_find() {
  if find_nvshmem; then
    echo "$nvshmem_inc $nvshmem_lib ($nvshmem_from)"
  else
    exit 1
  fi
}

case "$mode" in
  build) mode_build ;;
  local) generate_glue; mode_build ;;
  find) mode_find ;;
  prepare) mode_prepare ;;
  check) mode_check ;;
  devfns) mode_devfns "${2:-}" "${3:-}" ;;
  -h|--help|help) sed -n '2,31p' "$0" ;;
  *) die "unknown mode '$mode' (build, local, prepare, find, check, devfns)" ;;
esac
