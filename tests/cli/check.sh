#!/usr/bin/env bash
# The command line of vgpu-sched: docs/flags.md is the --help output (each fenced block that
# starts with "$ vgpu-sched ..." must equal what that command prints, and `vgpu-sched --help`
# holds them all), -h/--help exit 0, and bad flag values exit 2 with one line naming the flag
# and the value. Usage: tests/cli/check.sh BIN ROOT
set -uo pipefail
bin=$1; root=$2
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL $*"; }

# --- docs/flags.md against --help -------------------------------------------------------------
doc="$root/docs/flags.md"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Split the doc's "$ vgpu-sched ..." blocks into tmp/N.cmd and tmp/N.out.
awk -v dir="$tmp" '
    /^```/ { if (inblock) { inblock = 0; close(out) } else { fence = 1 }; next }
    fence { fence = 0
            if ($0 ~ /^\$ vgpu-sched/) { n++; inblock = 1; out = dir "/" n ".out"
                                         print substr($0, 3) > (dir "/" n ".cmd"); close(dir "/" n ".cmd")
                                         printf "" > out; next }
            inblock = 0; next }
    inblock { print > out }
' "$doc"
blocks=$(ls "$tmp"/*.cmd 2>/dev/null | wc -l)
[ "$blocks" -ge 3 ] || bad "docs/flags.md: $blocks blocks of \"\$ vgpu-sched ...\", want serve, simulate and version"
"$bin" --help > "$tmp/all.txt"; rc=$?
[ $rc -eq 0 ] && ok || bad "vgpu-sched --help: exit $rc"
for cmd in "$tmp"/*.cmd; do
    n=${cmd%.cmd}
    read -r -a words < "$cmd"
    got=$("$bin" "${words[@]:1}"); rc=$?
    [ $rc -eq 0 ] && ok || bad "${words[*]}: exit $rc"
    if [ "$got" = "$(cat "$n.out")" ]; then ok; else
        bad "docs/flags.md differs from \`${words[*]}\` (UPDATE: run it and paste its output)"
        diff <(printf '%s\n' "$got") "$n.out" | head -20
    fi
    grep -qF -- "$(head -1 "$n.out")" "$tmp/all.txt" && ok || bad "vgpu-sched --help lacks \`${words[*]}\`"
    # Every line of the command's help appears in vgpu-sched --help.
    missing=$(grep -vxF -f "$tmp/all.txt" "$n.out" | head -3)
    [ -z "$missing" ] && ok || bad "vgpu-sched --help lacks lines of \`${words[*]}\`: $missing"
done

# --- -h / --help of each command ---------------------------------------------------------------
for args in "-h" "help" "serve -h" "serve --help" "--kube-qps 5 --help" "simulate -h" \
            "simulate --help" "version -h" "version --help" "dra-mirror-sweep -h"; do
    read -r -a a <<< "$args"
    out=$("$bin" "${a[@]}" 2>&1); rc=$?
    [ $rc -eq 0 ] && [[ "$out" == usage:* ]] && ok || bad "vgpu-sched $args: exit $rc, want 0 and usage"
done

# --- bad values: exit 2, one line naming the flag and the value ---------------------------------
check_bad() { # expected-stderr args...
    local want=$1; shift
    local got rc
    got=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 2 ] && [ "$got" = "$want" ]; then ok; else
        bad "vgpu-sched $*: exit $rc, stderr \"$got\", want 2 and \"$want\""; fi
}
dur="such as 300ms, 28s, 5m or 1h30m"
check_bad 'vgpu-sched: invalid value "-5" for flag --kube-qps: want a number from 0 to 1000000' serve --kube-qps -5
check_bad 'vgpu-sched: invalid value "nan" for flag --kube-qps: want a number from 0 to 1000000' --kube-qps=nan
check_bad 'vgpu-sched: invalid value "0" for flag --kube-burst: want a whole number from 1 to 1000000' serve --kube-burst 0
check_bad 'vgpu-sched: invalid value "-10" for flag --kube-burst: want a whole number from 1 to 1000000' serve --kube-burst=-10
check_bad "vgpu-sched: invalid value \"-1s\" for flag --kube-timeout: want a duration from 0 to 24h, $dur" serve --kube-timeout -1s
check_bad "vgpu-sched: invalid value \"0\" for flag --node-lock-timeout: want a duration from 1s to 24h, $dur" serve --node-lock-timeout 0
check_bad "vgpu-sched: invalid value \"-28s\" for flag --node-lock-retry-timeout: want a duration from 0 to 24h, $dur" serve --node-lock-retry-timeout=-28s
check_bad "vgpu-sched: invalid value \"5\" for flag --reservation-ttl: want a duration from 1s to 24h, $dur" serve --reservation-ttl 5
check_bad 'vgpu-sched: invalid value "-1" for flag --bind-queue-depth: want a whole number from 0 to 1000000' serve --bind-queue-depth -1
check_bad 'vgpu-sched: invalid value "1.5" for flag --bind-queue-saturation: want a number from 0 to 1' serve --bind-queue-saturation 1.5
check_bad 'vgpu-sched: invalid value "0" for flag --http-threads: want a whole number from 1 to 1024' serve --http-threads 0
check_bad 'vgpu-sched: invalid value "-1" for flag --v: want a whole number from 0 to 2147483647' serve -v=-1
check_bad 'vgpu-sched: invalid value "yes" for flag --leader-elect: want true or false' serve --leader-elect=yes
check_bad 'vgpu-sched: invalid --dra-mirror "on" (want off, fence or share)' serve --dra-mirror on
check_bad 'vgpu-sched: unknown flag --kube-qbs' serve --kube-qbs 5
check_bad 'vgpu-sched: flag --kube-qps needs a value' serve --kube-qps
check_bad 'vgpu-sched: unexpected argument "extra"' serve extra
check_bad 'vgpu-sched: version takes no arguments ("--short")' version --short
check_bad 'simulate: unknown flag --kube-qps' simulate --cluster x --kube-qps 5
check_bad 'simulate: --cluster FILE is required' simulate
check_bad 'dra-mirror-sweep: unknown flag --ns' dra-mirror-sweep --ns x

echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
