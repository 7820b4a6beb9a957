#!/usr/bin/env bash
# Runs every test of vgpu-sched from a fresh clone: installs missing packages, builds, runs the
# unit/integration/golden/replay tests plainly and under ASan+UBSan, the dashboard in headless
# chromium, checks formatting, runs each libFuzzer target for a bounded time, and (when its
# tools are present) the end-to-end suite.
# Env: VS_FUZZ_SECONDS (default 15 per target), VS_SKIP_E2E=1, VS_E2E_SOAK (minutes of the e2e
# soak, default 2, 0 skips it), VS_JOBS (default 2).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${VS_JOBS:-2}
passed=0; failed=0; failures=()

step() { # name command...
  local name=$1 t0=$SECONDS; shift
  echo "=== $name"
  if "$@"; then passed=$((passed+1)); echo "=== $name: ok ($((SECONDS - t0)) s)"
  else failed=$((failed+1)); failures+=("$name"); echo "=== $name: FAILED ($((SECONDS - t0)) s)"; fi
}

bash scripts/deps.sh || { echo "dependency installation failed"; exit 1; }
# A helm built by the e2e suite (tests/e2e/build.sh) lets ctest lint and render the chart too.
for d in "${VS_E2E_CACHE:-$HOME/.cache/vgpu-sched-e2e}"/bin-*; do
  [ -x "$d/helm" ] && PATH="$d:$PATH"
done
export PATH

build() { # dir extra-cmake-args...
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.cmake.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" 2>&1 | grep -E 'error|warning: ' ; test "${PIPESTATUS[0]}" -eq 0
}
ctest_in() { (cd "$1" && ctest --output-on-failure -j"$jobs" --timeout 600); }

step "build" build build
step "tests" ctest_in build
step "build (asan,ubsan)" build build-asan -DVS_SANITIZE=address,undefined
# Criterion counts a test as passed even when LeakSanitizer or UBSan complained in it, so the
# whole output is searched for sanitizer reports as well.
asan_tests() {
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     LSAN_OPTIONS="suppressions=$root/tests/lsan.supp" \
     ctest -V -j"$jobs" --timeout 900) > build-asan/ctest.log 2>&1
  local rc=$?
  grep -E '^[0-9]+% tests passed|tests failed out of' build-asan/ctest.log
  if grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:' build-asan/ctest.log; then
    grep -E -B2 -A20 'ERROR: (Leak|Address)Sanitizer|runtime error:' build-asan/ctest.log | head -80
    return 1
  fi
  [ $rc -eq 0 ] || grep -E 'Failed|\*\*\*' build-asan/ctest.log | head -20
  return $rc
}
step "tests (asan,ubsan)" asan_tests

tsan_stress() {
  build build-tsan -DVS_SANITIZE=thread -DVS_TESTS=OFF || return 1
  cmake --build build-tsan -j"$jobs" --target stress_service stress_bindq >/dev/null 2>&1 || true
  local prog rc=0
  for prog in stress_service stress_bindq; do
    [ -x build-tsan/$prog ] || { echo "$prog not built"; return 1; }
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/$prog \
      > build-tsan/$prog.log 2>&1
    local r=$?
    grep '^stress: ' build-tsan/$prog.log | tail -3
    [ $r -eq 0 ] || { grep -A30 'WARNING: ThreadSanitizer' build-tsan/$prog.log | head -60; rc=$r; }
  done
  return $rc
}
step "concurrency stress (tsan)" tsan_stress

# The dashboard in a real browser (tests/browser): Debian's chromium driven by playwright-core
# under Node's test runner, against build/vgpu-sched; screenshots go to build/browser.
browser_tests() {
  bash scripts/deps.sh --with-browser || return 1
  (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error) || return 1
  (cd tests/browser && VS_BINARY="$root/build/vgpu-sched" VS_SHOTS="$root/build/browser" \
     node --test --test-concurrency=1 dashboard.test.mjs)
}
step "browser (dashboard)" browser_tests

format_check() {
  local bad=0
  while IFS= read -r f; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || { echo "not formatted: $f"; bad=1; }
  done < <(git ls-files '*.c' '*.h')
  return $bad
}
step "clang-format" format_check

# Bounded libFuzzer run of every target; the committed corpora are only read here (no merge).
fuzz() { VS_FUZZ_MERGE=0 VS_JOBS=$jobs bash scripts/fuzz.sh "${VS_FUZZ_SECONDS:-15}"; }
step "fuzz" fuzz

if [ "${VS_SKIP_E2E:-0}" != 1 ] && [ -x tests/e2e/run.sh ]; then
  # With a 2-minute soak (scenario soak, opt-in elsewhere); VS_E2E_SOAK=N for longer, 0 skips it.
  soak=${VS_E2E_SOAK-2}; [ "$soak" = 0 ] && soak=
  step "e2e" env VS_E2E_SOAK="$soak" tests/e2e/run.sh "$root/build/vgpu-sched"
fi

echo
[ ${#failures[@]} -gt 0 ] && echo "failed steps: ${failures[*]}"
echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
