# Sourced by the GPU scripts: the bundle's Java runtime, unpacked once per run.
# bundle_java CARRY WORK: unpacks CARRY's jre.tgz (or jre.txz) into WORK and prints WORK's java;
# status 1, with the message on stderr, when CARRY holds no bundle.
bundle_java() {
  local archive
  archive=$(ls "$1"/jre.tgz "$1"/jre.txz 2>/dev/null | head -n1)
  if [ -z "$archive" ]; then
    echo "no bundle at $1: run scripts/make-gpu-bundle.sh on the development machine and carry .gpu-carry" >&2
    return 1
  fi
  tar -C "$2" -xf "$archive" && echo "$2/jre/bin/java"
}
