#!/usr/bin/env bash
# Builds, on the development machine, everything the GPU machine needs to run the GPU tests and
# benchmarks without Java or Maven there, into the git-ignored folder .gpu-carry/:
#
#   jre.tgz        a jlink runtime of the JDK 25, unpacked by scripts/gpu-check.sh (jre.txz with
#                  BUNDLE_JRE_XZ=1: about a third smaller, several minutes slower to make)
#   lib/           the project's jars and every dependency jar (test scope included, JUnit excluded)
#   tests/         one jar of test classes per module (the roots the test launcher scans)
#   tools/         junit-platform-console-standalone (JUnit 5 launcher, matching the build's JUnit)
#   native/        the JNI libraries built here (also inside the bridge jar; kept for inspection)
#   twins/         twins.ptx: the CUDA C++ twins of the kernels, built with nvcc (scripts/build-twins-ptx.sh)
#   BUNDLE.txt     what was built, from which commit, and the sizes
#
# Usage: scripts/make-gpu-bundle.sh            (builds all modules)
# Environment:
#   BUNDLE_MODULES=kernels,nvshmem-bridge      build (with what they need) and bundle only these modules;
#                                              list every module the tests need (kernels always)
#   BUNDLE_SKIP_BUILD=1                        reuse the jars already in */target
#   BUNDLE_EXTRA_MODULES=java.desktop          more JDK modules for the runtime (comma-separated)
#   BUNDLE_JRE_XZ=1                            pack the runtime with xz instead of gzip
#   BUNDLE_SKIP_TWINS=1                        do not build twins/twins.ptx (the kernel benchmark's CUDA C++ twins)
#   MAVEN_ARGS="-o"                            extra Maven arguments (offline, say)
# Then run on the GPU machine (device tool): carry .gpu-carry, command `bash scripts/gpu-check.sh`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
JAVA_HOME=$("$root/scripts/java-home.sh")
export JAVA_HOME
export PATH="$JAVA_HOME/bin:$PATH"

out="$root/.gpu-carry"
stage=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-gpu-bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
junit_console_version=1.14.1   # JUnit Platform version of JUnit Jupiter 5.14.1 (parent pom's junit.version)
# java.desktop: log4j-core needs java.beans (seen failing without it on the GPU machine)
runtime_modules="java.base,java.logging,java.management,jdk.management,jdk.unsupported,java.naming,java.xml,java.sql,jdk.zipfs,java.desktop"
if [ -n "${BUNDLE_EXTRA_MODULES:-}" ]; then
  runtime_modules="$runtime_modules,$BUNDLE_EXTRA_MODULES"
fi

# shellcheck disable=SC2206
mvn_args=(-B -ntp ${MAVEN_ARGS:-})
pl=()
if [ -n "${BUNDLE_MODULES:-}" ]; then
  pl=(-pl "$BUNDLE_MODULES" -am)
fi

step() { echo "== $*" >&2; }

mkdir -p "$stage/lib" "$stage/tests" "$stage/tools" "$stage/native"
if [ "${BUNDLE_SKIP_BUILD:-0}" != 1 ]; then
  step "building (mvn install -DskipTests ${pl[*]:-})"
  mvn "${mvn_args[@]}" -q install -DskipTests "${pl[@]}"
fi

step "copying dependency jars"
mvn "${mvn_args[@]}" -q dependency:copy-dependencies "${pl[@]}" \
  -DincludeScope=test \
  -DexcludeGroupIds=org.moecomm,org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian \
  -DexcludeArtifactIds=jmh-generator-annprocess \
  -DoutputDirectory="$stage/lib"

step "fetching junit-platform-console-standalone $junit_console_version"
mvn "${mvn_args[@]}" -q -N dependency:copy \
  -Dartifact="org.junit.platform:junit-platform-console-standalone:$junit_console_version" \
  -DoutputDirectory="$stage/tools"

step "collecting the project's jars, test classes and native libraries"
version=$(sed -n 's:^  <version>\(.*\)</version>:\1:p' pom.xml | head -n1)
modules=$(sed -n 's:^ *<module>\(.*\)</module>:\1:p' pom.xml)
bundled=()
for m in $modules; do
  jar="$m/target/moecomm-$m-$version.jar"
  if [ -n "${BUNDLE_MODULES:-}" ] && [[ ",$BUNDLE_MODULES," != *",$m,"* ]]; then
    continue   # not asked for
  fi
  if [ ! -f "$jar" ]; then
    echo "missing $jar: build $m first (or set BUNDLE_MODULES)" >&2
    exit 1
  fi
  cp "$jar" "$stage/lib/"
  if [ -d "$m/target/test-classes" ] && [ -n "$(ls -A "$m/target/test-classes")" ]; then
    jar --create --file "$stage/tests/moecomm-$m-tests.jar" -C "$m/target/test-classes" .
  fi
  if [ -d "$m/target/classes" ]; then
    find "$m/target/classes" -name '*.so' -exec cp {} "$stage/native/" \;
  fi
  bundled+=("$m")
done

# ---- CUDA C++ twins for the kernel benchmark (scripts/build-twins-ptx.sh) -------------------------
# twins/twins.ptx: benchmarks/src/main/cuda/twins.cu compiled here with nvcc -ptx -arch=sm_90a, so the
# GPU machine needs no nvcc (scripts/gpu-bench.sh passes it to the benchmark). Without nvcc, or when
# it fails, the bundle is still made and the benchmark reports that it has no twins.
if [ "${BUNDLE_SKIP_TWINS:-0}" != 1 ]; then
  step "building the CUDA C++ twins' PTX"
  twins_rc=0
  "$root/scripts/build-twins-ptx.sh" "$stage/twins" || twins_rc=$?
  if [ "$twins_rc" -ne 0 ]; then
    echo "WARNING: no twins PTX (scripts/build-twins-ptx.sh exit status $twins_rc): the kernel benchmark will time no twins" >&2
    rm -rf "$stage/twins"
  fi
fi
# ----------------------------------------------------------------------------------------------------

# The runtime is rebuilt only when the JDK, the module list or the packing changes (it is the slow
# part): jre.stamp records what the existing one was made from. The modules image is left
# uncompressed (zip-0) because the archive around it compresses better than jlink does.
jre_ext=tgz
tar_flag=-z
if [ "${BUNDLE_JRE_XZ:-0}" = 1 ]; then jre_ext=txz; tar_flag=-J; fi
jlink_opts=(--strip-debug --no-man-pages --no-header-files --compress zip-0)
stamp="$("$JAVA_HOME/bin/java" -version 2>&1 | head -n2 | tr '\n' ' ')| $runtime_modules | ${jlink_opts[*]} | $jre_ext"
if [ -f "$out/jre.stamp" ] && [ -f "$out/jre.$jre_ext" ] && [ "$(cat "$out/jre.stamp")" = "$stamp" ]; then
  step "reusing the Java runtime of the previous bundle ($runtime_modules)"
  cp "$out/jre.$jre_ext" "$stage/"
else
  step "making the Java runtime ($runtime_modules)"
  jre="$stage/jre"
  jlink --add-modules "$runtime_modules" "${jlink_opts[@]}" --output "$jre"
  tar -C "$stage" "$tar_flag" -cf "$stage/jre.$jre_ext" jre
  rm -rf "$jre"
fi
echo "$stamp" > "$stage/jre.stamp"

{
  echo "moecomm GPU bundle"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "modules: ${bundled[*]}"
  echo "java: $("$JAVA_HOME/bin/java" -version 2>&1 | head -n1)"
  echo "runtime modules: $runtime_modules"
  echo "junit console: $junit_console_version"
  echo
  (cd "$stage" && find . -type f | sort | while read -r f; do printf '%10d  %s\n' "$(stat -c %s "$f")" "${f#./}"; done)
  echo
  echo "total: $(du -sb "$stage" | cut -f1) bytes"
} > "$stage/BUNDLE.txt"

rm -rf "$out"
mkdir -p "$out"
cp -r "$stage"/. "$out"/
step "bundle ready: $(du -sh "$out" | cut -f1) in .gpu-carry (limit for everything carried: 64 MiB)"
