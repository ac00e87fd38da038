#!/usr/bin/env bash
# Builds the jars of one commit (a "variant") for an A/B run on the GPU machine and puts them into
# the bundle: .gpu-carry/variants/<label>/ (every module's moecomm jar and VARIANT.txt). Figures of
# two device sessions drift by 10-30%, so compare code in one session: make the bundle, add a
# variant per commit to compare, carry .gpu-carry and run scripts/gpu-ab.sh there.
#
#   scripts/make-ab-variant.sh LABEL COMMIT [PATCH...]
#
# PATCH files (git diffs) are applied on top of COMMIT before building (a variant that is not a
# commit: an experiment, or one change taken out). The build runs in a temporary git worktree
# with Maven offline (MAVEN_ARGS to change that), so the working tree is not touched. The
# variants must use the same native library as the bundle (the JNI glue of the nvshmem bridge
# is built on the GPU machine from the bundle's sources).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
label=$1
commit=$2
shift 2
case "$label" in
  *[!A-Za-z0-9._-]*|"") echo "label must be letters, digits, '.', '_' or '-': $label" >&2; exit 2 ;;
esac
carry="${GPU_CARRY:-$root/.gpu-carry}"
[ -d "$carry/lib" ] || { echo "no bundle at $carry: run scripts/make-gpu-bundle.sh first" >&2; exit 2; }
sha=$(git -C "$root" rev-parse --short "$commit^{commit}")
tree=$(mktemp -d "${TMPDIR:-/tmp}/moecomm-variant.XXXXXX")
cleanup() { git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"; git -C "$root" worktree prune; }
trap cleanup EXIT
git -C "$root" worktree add -q --detach "$tree" "$sha"
for p in "$@"; do
  git -C "$tree" apply "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"
done
(cd "$tree" && MAVEN_ARGS="${MAVEN_ARGS:--o}" && scripts/mvn.sh $MAVEN_ARGS -q package -DskipTests)
out="$carry/variants/$label"
rm -rf "$out"
mkdir -p "$out"
# every module's jar (not the test jars, not the shaded moecomm-benchmarks.jar): the modules of that commit
cp "$tree"/*/target/moecomm-*-SNAPSHOT.jar "$out"/
# the bridge's CUDA sources: scripts/gpu-ab.sh builds the variant's own device functions when they differ
cp -r "$tree/nvshmem-bridge/src/main/cpp/nvshmem" "$out/cpp"
{
  echo "label: $label"
  echo "commit: $sha"
  for p in "$@"; do echo "patch: $(basename "$p")"; done
} > "$out/VARIANT.txt"
echo "variant $label: $sha$([ $# -gt 0 ] && echo " + $# patch(es)") -> $out"
ls "$out"
