#!/usr/bin/env bash
# Prints the home of a JDK whose major version is >= 25 (the build needs java.lang.classfile).
# Order: $JAVA_HOME if recent enough, then the JDKs in the system's JVM folder, then `java` on PATH.
set -u
major() { "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -n1; }
ok() { [ -x "$1/bin/java" ] && [ -x "$1/bin/javac" ] && v=$(major "$1") && [ -n "$v" ] && [ "$v" -ge 25 ] 2>/dev/null; }
if [ -n "${JAVA_HOME:-}" ] && ok "$JAVA_HOME"; then echo "$JAVA_HOME"; exit 0; fi
for d in /usr/lib/jvm/*; do
  if ok "$d"; then echo "$d"; exit 0; fi
done
if command -v javac >/dev/null; then
  d=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
  if ok "$d"; then echo "$d"; exit 0; fi
fi
echo "no JDK 25 or newer found: install one (for example Temurin 25) and set JAVA_HOME" >&2
exit 1
