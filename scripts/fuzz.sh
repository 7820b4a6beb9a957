#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/fuzz_*.c) for a bounded time, each starting from its
# committed corpus tests/fuzz/corpus/<target>, then merges the inputs that add coverage back
# into that corpus (libFuzzer -merge=1), so the next run and every ctest replay start from them.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 15)] [TARGET...]   (TARGET: e.g. gojson)
# Env: VS_JOBS (build jobs, default 2), VS_FUZZ_DIR (build directory, default build-fuzz),
#      VS_FUZZ_MERGE=0 (fuzz only; leave tests/fuzz/corpus untouched, as scripts/test.sh does).
# A crash or leak stops that target, leaves its input in $VS_FUZZ_DIR/crash-<target>-*, prints
# the end of its log, and makes the script exit 1 after the other targets have run.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
secs=${1:-15}
shift $(( $# > 0 ? 1 : 0 ))
case $secs in ''|*[!0-9]*) echo "fuzz.sh: seconds must be a whole number, got \"$secs\"" >&2; exit 2;; esac
dir=${VS_FUZZ_DIR:-build-fuzz}
merge=${VS_FUZZ_MERGE:-1}

CC=clang cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVS_FUZZ=ON -DVS_TESTS=OFF \
  -DVS_SANITIZE=address,undefined >"$dir.cmake.log" 2>&1 || { cat "$dir.cmake.log"; exit 1; }
cmake --build "$dir" -j"${VS_JOBS:-2}" 2>&1 | grep -E 'error'; test "${PIPESTATUS[0]}" -eq 0 || exit 1

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for t in "$dir"/fuzz_*; do targets+=("${t##*/fuzz_}"); done
fi
rc=0
for name in "${targets[@]}"; do
  t=$dir/fuzz_$name corpus=tests/fuzz/corpus/$name work=$dir/corpus-$name
  [ -x "$t" ] || { echo "fuzz.sh: no target fuzz_$name" >&2; rc=1; continue; }
  mkdir -p "$work" "$corpus"
  before=$(ls "$corpus" | wc -l)
  # New inputs go to the scratch directory (first corpus argument); the committed one is read.
  "$t" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$dir/crash-$name-" \
    "$work" "$corpus" >"$dir/$name.log" 2>&1
  status=$?
  runs=$(grep -Eo '^stat::number_of_executed_units: *[0-9]+' "$dir/$name.log" | grep -Eo '[0-9]+$')
  cov=$(grep -Eo 'cov: [0-9]+' "$dir/$name.log" | tail -1)
  if [ $status -ne 0 ]; then
    rc=1
    echo "fuzz $name: FAILED after ${runs:-?} runs (${cov:-cov: ?}); artifacts: $dir/crash-$name-*"
    tail -40 "$dir/$name.log"
    continue
  fi
  added=0
  if [ "$merge" = 1 ]; then
    "$t" -merge=1 "$corpus" "$work" >"$dir/$name.merge.log" 2>&1 || { rc=1; tail -20 "$dir/$name.merge.log"; }
    added=$(( $(ls "$corpus" | wc -l) - before ))
  fi
  echo "fuzz $name: ${secs}s, ${runs:-?} runs, ${cov:-cov: ?}, corpus $before -> $((before + added))"
done
exit $rc
