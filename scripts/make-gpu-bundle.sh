#!/usr/bin/env bash
# Builds, on the development machine, everything the GPU machine needs to run the GPU tests and
# benchmarks without Java or Maven there, into the git-ignored folder .gpu-carry/:
#
#   lib/           every module's jar and every jar they need at run time        } made by Maven:
#   tests/         every module's test jar (the roots the test launcher scans)    } the profile
#   tools/         junit-platform-console-standalone (the build's JUnit launcher) } gpu-bundle
#   jre.txz        that profile's jlink runtime of the JDK 25, packed here with xz on every core (jre.tgz,
#                  gzip, with BUNDLE_JRE_XZ=0: a third larger, and with the variants of an A/B call and
#                  the tracked files it no longer fits in what may be carried); scripts/gpu-check.sh
#                  unpacks either
#   twins/         twins.ptx: the CUDA C++ twins of the kernels, built with nvcc (scripts/build-twins-ptx.sh)
#   nvshmem-jni/   the NVSHMEM bridge's JNI glue and the JDK's jni.h, from which the GPU machine builds
#                  the bridge (scripts/gpu-nvshmem-build.sh prepare)
#   BUNDLE.txt     what was built, from which commit, and the sizes
#
# Usage: scripts/make-gpu-bundle.sh            (builds and installs all modules first)
# Environment:
#   BUNDLE_SKIP_BUILD=1                        bundle the jars installed by the last build (scripts/install.sh)
#   BUNDLE_EXTRA_MODULES=jdk.jfr               more JDK modules for the runtime (comma-separated)
#   BUNDLE_JRE_XZ=0                            pack the runtime with gzip instead of xz
#   BUNDLE_SKIP_TWINS=1                        do not build twins/twins.ptx (the kernel benchmark's CUDA C++ twins)
#   MAVEN_ARGS="-o"                            extra Maven arguments (offline, say)
# Then, on the GPU machine, with .gpu-carry in the repository root: `bash scripts/gpu-nvshmem-check.sh`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
JAVA_HOME=$("$root/scripts/java-home.sh")
export JAVA_HOME

out="$root/.gpu-carry"
made="$root/gpu-bundle/target/gpu-carry"   # what the profile gpu-bundle makes (gpu-bundle/pom.xml)
# shellcheck disable=SC2206
mvn_args=(-q -Pgpu-bundle ${MAVEN_ARGS:-})
if [ -n "${BUNDLE_EXTRA_MODULES:-}" ]; then
  mvn_args+=("-Dbundle.jre.extraModules=$BUNDLE_EXTRA_MODULES")
fi

step() { echo "== $*" >&2; }

if [ "${BUNDLE_SKIP_BUILD:-0}" = 1 ]; then
  step "bundling the installed jars (mvn -Pgpu-bundle -pl gpu-bundle package)"
  "$root/scripts/mvn.sh" "${mvn_args[@]}" -pl gpu-bundle package
else
  step "building and bundling (mvn -Pgpu-bundle install -DskipTests)"
  "$root/scripts/mvn.sh" "${mvn_args[@]}" install -DskipTests
fi

rm -rf "$out"
mkdir -p "$out"
cp -r "$made/lib" "$made/tests" "$made/tools" "$out/"

step "packing the Java runtime"
jre_ext=txz
tar_flag=-J
if [ "${BUNDLE_JRE_XZ:-1}" = 0 ]; then jre_ext=tgz; tar_flag=-z; fi
rm -f "$out/jre.tgz" "$out/jre.txz"
XZ_OPT="${XZ_OPT:--T0}" tar -C "$made" "$tar_flag" -cf "$out/jre.$jre_ext" jre

# ---- CUDA C++ twins for the kernel benchmark (scripts/build-twins-ptx.sh) -------------------------
# twins/twins.ptx: benchmarks/src/main/cuda/twins.cu compiled here with nvcc -ptx -arch=sm_90a, so the
# GPU machine needs no nvcc (scripts/gpu-bench.sh passes it to the benchmark). Without nvcc, or when
# it fails, the bundle is still made and the benchmark reports that it has no twins.
if [ "${BUNDLE_SKIP_TWINS:-0}" != 1 ]; then
  step "building the CUDA C++ twins' PTX"
  twins_rc=0
  "$root/scripts/build-twins-ptx.sh" "$out/twins" || twins_rc=$?
  if [ "$twins_rc" -ne 0 ]; then
    echo "WARNING: no twins PTX (scripts/build-twins-ptx.sh exit status $twins_rc): the kernel benchmark will time no twins" >&2
    rm -rf "$out/twins"
  fi
fi

# ---- the NVSHMEM bridge's JNI glue (NVSHMEM exists only on the GPU machine, which builds the bridge) -
step "generating the NVSHMEM bridge's JNI glue (scripts/gpu-nvshmem-build.sh prepare)"
javacpp_jar=$(ls "$out"/lib/javacpp-[0-9]*.jar | grep -v -- '-linux-' | head -n1)
if ! JAVACPP_JAR="$javacpp_jar" "$root/scripts/gpu-nvshmem-build.sh" prepare 2> "$made/nvshmem-jni.log"; then
  cat "$made/nvshmem-jni.log" >&2
  echo "WARNING: no JNI glue in .gpu-carry/nvshmem-jni: scripts/gpu-nvshmem-build.sh build will fail on the GPU machine" >&2
fi

{
  echo "moecomm GPU bundle"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "modules: $(cd "$out/tests" && ls | sed 's/^moecomm-\(.*\)-tests\.jar$/\1/' | tr '\n' ' ')"
  echo "java: $("$JAVA_HOME/bin/java" -version 2>&1 | head -n1)"
  echo "runtime modules: $(sed -n 's/^MODULES="\(.*\)"$/\1/p' "$made/jre/release")"
  echo "junit console: $(cd "$out/tools" && ls junit-platform-console-standalone-*.jar | sed 's/.*-\([0-9.]*\)\.jar$/\1/')"
  echo
  (cd "$out" && find . -type f | sort | while read -r f; do printf '%10d  %s\n' "$(stat -c %s "$f")" "${f#./}"; done)
  echo
  echo "total: $(du -sb "$out" | cut -f1) bytes"
} > "$out/BUNDLE.txt"
step "bundle ready: $(du -sh "$out" | cut -f1) in .gpu-carry (limit for everything carried: 64 MiB)"
# what travels with the bundle: every tracked file too (counted as the disk holds them)
tree_kib=$(git -C "$root" ls-files -z | (cd "$root" && xargs -0 du -ck 2>/dev/null) | tail -n1 | cut -f1)
carried_kib=$(( tree_kib + $(du -sk "$out" | cut -f1) ))
if [ "$carried_kib" -gt $(( 60 * 1024 )) ]; then
  echo "warning: the bundle and the tracked files take $(( carried_kib / 1024 )) MiB, near or past the 64 MiB" \
       "that may be carried: leave fewer variants, or large results out of the tracked files" >&2
fi
