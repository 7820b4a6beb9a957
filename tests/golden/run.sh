#!/usr/bin/env bash
# Golden `simulate` outputs: every tests/golden/<case>/ holds cluster.json|yaml, optional
# pods.json|yaml, an args file with extra flags, and expected.json (and optionally
# expected.txt for --output table). Run with UPDATE=1 to rewrite the expectations.
set -uo pipefail
bin=$1; root=$2
pass=0; fail=0
for dir in "$root"/tests/golden/*/; do
  name=$(basename "$dir")
  cluster=$(ls "$dir"cluster.* 2>/dev/null | head -n1)
  pods=$(ls "$dir"pods.* 2>/dev/null | head -n1)
  args=()
  [ -f "$dir/args" ] && read -r -a args < "$dir/args"
  [ -n "$pods" ] && args+=(--pods "$pods")
  for fmt in json table; do
    exp="$dir/expected.$([ $fmt = json ] && echo json || echo txt)"
    [ -f "$exp" ] || [ "${UPDATE:-0}" = 1 -a $fmt = json ] || continue
    got=$(cd "$root" && "$bin" simulate --cluster "${cluster#$root/}" "${args[@]}" --output $fmt 2>/dev/null)
    rc=$?
    if [ "${UPDATE:-0}" = 1 ]; then printf '%s\n' "$got" > "$exp"; continue; fi
    if [ $rc -eq 0 ] && [ "$got" = "$(cat "$exp")" ]; then
      pass=$((pass+1))
    else
      fail=$((fail+1)); echo "FAIL golden $name ($fmt, exit $rc)"
      diff <(printf '%s\n' "$got") "$exp" | head -20
    fi
  done
done
echo "golden: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
