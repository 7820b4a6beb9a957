#!/usr/bin/env bash
# Golden tests of `vgpu-sched simulate`. Each tests/golden/<case>/ has an `args` file (flags,
# paths relative to the repository root) and expectations:
#   expected.json    stdout of `simulate <args> --output json`
#   expected.txt     stdout of `simulate <args> --output table`
#   expected.stderr  stderr of `simulate <args> --output json`, with expected.rc its exit code
# UPDATE=1 rewrites the expectations that exist (review the diff before committing).
set -uo pipefail
bin=$1; root=$2
pass=0; fail=0
check() { # name got file
  if [ "${UPDATE:-0}" = 1 ]; then printf '%s\n' "$2" > "$3"; return; fi
  if [ "$2" = "$(cat "$3")" ]; then pass=$((pass+1)); else
    fail=$((fail+1)); echo "FAIL golden $1 (${3##*/})"; diff <(printf '%s\n' "$2") "$3" | head -20; fi
}
cd "$root" || exit 1
for dir in tests/golden/*/; do
  name=$(basename "$dir")
  read -r -a args < "$dir/args"
  if [ -f "$dir/expected.json" ]; then
    got=$("$bin" simulate "${args[@]}" --output json 2>/dev/null); rc=$?
    [ $rc -eq 0 ] || { fail=$((fail+1)); echo "FAIL golden $name: exit $rc"; }
    check "$name" "$got" "$dir/expected.json"
  fi
  if [ -f "$dir/expected.txt" ]; then
    got=$("$bin" simulate "${args[@]}" --output table 2>/dev/null)
    check "$name" "$got" "$dir/expected.txt"
  fi
  if [ -f "$dir/expected.stderr" ]; then
    got=$("$bin" simulate "${args[@]}" --output json 2>&1 >/dev/null); rc=$?
    check "$name" "$got" "$dir/expected.stderr"
    check "$name" "$rc" "$dir/expected.rc"
  fi
done
echo "golden: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
