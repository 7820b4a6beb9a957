# shellcheck shell=bash
# soak (opt-in: VS_E2E_SOAK=MINUTES): waves of GPU pod creation and deletion for MINUTES on 5 fake
# nodes, with the emulated device plugin holding each node lock for VS_E2E_HOLD (20ms). Wave 1
# creates VS_E2E_SOAK_PODS (100) pods; every later wave deletes half of the namespace's pods,
# picked at random (bound and refused alike, a fixed seed per wave), and creates new ones until
# there are VS_E2E_SOAK_PODS again. The nodes hold fewer than 100 of these pods, so every wave
# has refusals, and pods refused earlier may fit once others are gone. Each wave ends when
# everything has settled (every pod bound and Running or refused with a reason), and then:
# no card over-committed, vgpu-sched's per-card metrics equal the usage on the pods, no refused
# pod fits anywhere (vs-e2e capacity --metrics --refused), no node lock left, vgpu-sched still
# the same process; its VmRSS (the lowest over the next 10 s, see soak_rss_quiet) and VmHWM
# (/proc/PID/status) are sampled.
#
# The waves go on until MINUTES have passed, and at least VS_SOAK_MIN_WAVES (4). At the end the
# samples are printed (and kept in soak-rss.txt) with the RSS slope: least squares of VmRSS over
# the waves after the first (wave 1 grows the heap, the informers' caches and the allocator's
# per-thread arenas to their working size). The scenario fails when RSS grows beyond what was
# measured (docs/reliability.md):
#   slope > VS_E2E_SOAK_SLOPE_KIB (256) KiB per wave, or
#   last VmRSS > VmRSS after wave 1 + VS_E2E_SOAK_GROWTH_KIB (2048) KiB.
# Why these limits: a 2-minute run's first waves still grow while the service's threads warm
# their caches and the async workers start and leave (one 2-minute run of scripts/test.sh rose
# 163 KiB/wave over its 4 samples), hence 256 KiB/wave; flatness itself is judged by the longer
# runs in docs/reliability.md "Soak" (5.2 KiB/wave over a 20-minute run). vgpu-sched trims its
# free heap memory once quiet (memtrim.c), so the samples are that floor. Every wave adds and
# removes about 50 pods and answers about 1,000 Filters, so a leak of 5 KiB per pod or 256 bytes
# per Filter pushes even the 2-minute run over the slope limit; smaller ones need a longer soak
# (VS_E2E_SOAK_HEAP=1 shows the heap).

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

VS_SOAK_MIN_WAVES=4

scenario_soak_pre_up() {
    if [[ -z "${VS_E2E_SOAK:-}" || "$VS_E2E_SOAK" == 0 ]]; then
        e2e_skip "soak is opt-in (VS_E2E_SOAK=MINUTES)" || exit 77
    fi
    [[ "$VS_E2E_SOAK" =~ ^[1-9][0-9]{0,3}$ ]] ||
        e2e_die "VS_E2E_SOAK=$VS_E2E_SOAK: want a whole number of minutes (1..9999)"
    vs_pre_up
}

# soak_rss PID : "VmRSS VmHWM" in KiB.
soak_rss() {
    awk '$1 == "VmRSS:" { r = $2 } $1 == "VmHWM:" { h = $2 } END { if (r == "" || h == "") exit 1; print r, h }' \
        "/proc/$1/status"
}

# soak_rss_quiet PID : "VmRSS VmHWM" in KiB, VmRSS the lowest of 21 reads 0.5 s apart (10 s):
# vgpu-sched gives its free heap memory back once it has made no API request for 1 s, at most
# every 5 s (memtrim.c), and a wave's Normal Events, held back while its pods' patches were
# going out (async.c), are still being posted when it settles (~4 s for 100 of them); the lowest
# read is RSS after that. With 3 s of reads a missed trim showed as +312 KiB in one wave.
soak_rss_quiet() {
    local i r h low=
    for ((i = 0; i < 21; i++)); do
        ((i == 0)) || sleep 0.5
        read -r r h < <(soak_rss "$1") || return 1
        [[ -n "$low" ]] && ((low <= r)) || low=$r
    done
    printf '%s %s\n' "$low" "$h"
}

# soak_maps PID : "HEAP ANON STACK FILE" KiB: the resident set by kind of mapping (/proc/PID/smaps:
# the main heap, anonymous mappings (thread arenas, thread stacks, mmap'd blocks), the main
# thread's stack, and those named by a path (program, libraries)), to tell where RSS moves
# between waves.
soak_maps() {
    awk '/^[0-9a-f]+-[0-9a-f]+ / { k = $6 == "[heap]" ? "heap" : $6 == "" ? "anon" : $6 ~ /^\[stack/ ? "stack" : $6 ~ /^\// ? "file" : "other"; next }
         $1 == "Rss:" { s[k] += $2 }
         END { printf "%d %d %d %d\n", s["heap"], s["anon"], s["stack"], s["file"] }' "/proc/$1/smaps"
}

# soak_heap PID : "INUSE ARENA" bytes from glibc's mallinfo2() in the process (uordblks + hblkhd,
# and arena: what its arenas hold from the system), read with gdb; "- -" when unavailable. Only
# with VS_E2E_SOAK_HEAP=1 (a diagnostic: gdb stops the process for a moment).
soak_heap() {
    local out
    if [[ "${VS_E2E_SOAK_HEAP:-0}" == 1 ]] && command -v gdb >/dev/null &&
        out="$(timeout 30 gdb -p "$1" -batch \
            -ex 'print (unsigned long)(((struct mallinfo2 (*)(void))mallinfo2)().uordblks + ((struct mallinfo2 (*)(void))mallinfo2)().hblkhd)' \
            -ex 'print (unsigned long)((struct mallinfo2 (*)(void))mallinfo2)().arena' 2>/dev/null |
            awk '/^\$[0-9]+ = / { printf "%s%s", sep, $3; sep = " " }')" && [[ "$out" == *" "* ]]; then
        printf '%s\n' "$out"
    else
        printf -- '- -\n'
    fi
}

# soak_conns : the API connections vgpu-sched has opened so far (its
# vgpu_sched_api_connections_total), "-" when the metrics do not answer.
soak_conns() {
    curl -s --max-time 5 "$(vs_metrics_url)" |
        awk '$1 == "vgpu_sched_api_connections_total" { print $2; found = 1 } END { if (!found) print "-" }'
}

# soak_pick SEED COUNT : COUNT of the lines on stdin, picked at random (Fisher-Yates, SEED).
soak_pick() {
    awk -v seed="$1" -v k="$2" '{ a[NR] = $0 }
        END { srand(seed)
              for (i = NR; i > 1; i--) { j = int(rand() * i) + 1; t = a[i]; a[i] = a[j]; a[j] = t }
              for (i = 1; i <= k && i <= NR; i++) print a[i] }'
}

# soak_pod_count NS : pods in NS (being deleted or not).
soak_pod_count() { e2e_kubectl get pods --namespace "$1" -o name | grep -c . || true; }

# soak_maps_report FILE : per kind of mapping, RSS after wave 1 and the last wave and the
# least-squares slope over waves 2..N (informational: the thresholds are on VmRSS).
soak_maps_report() {
    awk '{ w[NR] = $1; for (k = 2; k <= 5; k++) v[k, NR] = $k }
        END {
            if (NR < 3) exit 0
            split("- heap anon stack file", name, " ")
            line = "soak: RSS by mapping, KiB after wave 1 -> last (slope over waves 2.." NR " in KiB/wave):"
            for (k = 2; k <= 5; k++) {
                n = 0; sx = sy = sxy = sxx = 0
                for (i = 2; i <= NR; i++) { n++; sx += w[i]; sy += v[k, i]; sxy += w[i] * v[k, i]; sxx += w[i] * w[i] }
                slope = (n * sxx - sx * sx) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
                line = line sprintf(" %s %d -> %d (%.1f)", name[k], v[k, 1], v[k, NR], slope)
            }
            print line > "/dev/stderr"
        }' "$1"
}

# soak_report FILE : prints the samples and the slope; fails beyond the thresholds.
soak_report() {
    local file=$1 slope_max=${VS_E2E_SOAK_SLOPE_KIB:-256} growth_max=${VS_E2E_SOAK_GROWTH_KIB:-2048}
    e2e_log "soak samples: wave seconds pods bound refused VmRSS(KiB) VmHWM(KiB) heap-in-use(B) arenas(B) (the last two with VS_E2E_SOAK_HEAP=1)"
    sed 's/^/    /' "$file" >&2
    awk -v smax="$slope_max" -v gmax="$growth_max" '
        { w[NR] = $1; r[NR] = $6 }
        END {
            n = 0; sx = sy = sxy = sxx = 0
            for (i = 2; i <= NR; i++) { n++; sx += w[i]; sy += r[i]; sxy += w[i] * r[i]; sxx += w[i] * w[i] }
            slope = (n * sxx - sx * sx) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
            growth = r[NR] - r[1]
            printf "soak: %d waves; VmRSS after wave 1 %d KiB, last %d KiB (%+d KiB); slope over waves 2..%d: %.1f KiB/wave (limits: %d KiB/wave, %d KiB)\n",
                NR, r[1], r[NR], growth, NR, slope, smax, gmax > "/dev/stderr"
            if (slope > smax) { print "FAIL: RSS slope " sprintf("%.1f", slope) " KiB/wave > " smax > "/dev/stderr"; bad = 1 }
            if (growth > gmax) { print "FAIL: RSS grew " growth " KiB > " gmax " KiB after wave 1" > "/dev/stderr"; bad = 1 }
            exit bad
        }' "$file"
}

scenario_soak() {
    local ns=soak pop=${VS_E2E_SOAK_PODS:-100} minutes=$VS_E2E_SOAK wave=0 end pid t0 out
    local n half missing bound refused rss hwm inuse arena conns samples="$E2E_CLUSTER/soak-rss.txt" victims=()
    local mheap manon mstack mfile maps="$E2E_CLUSTER/soak-maps.txt"
    # 3 nodes of 4 x 16 GiB cards shared by 5 and 2 of 4 x 8 GiB shared by 10: 262144 MiB and
    # 140 slots; 100 of these pods (1000..4000 MiB, 2500 on average) do not all fit.
    e2e_fake_nodes --cards 4 --devmem 16384 --split 5 --label pool=soak soak-01 soak-02 soak-03
    e2e_fake_nodes --cards 4 --devmem 8192 --split 10 --label pool=soak soak-04 soak-05
    vs_setup --hold "${VS_E2E_HOLD:-20ms}"
    vs_namespace "$ns"
    pid="$(vs_pid)"
    : >"$samples"
    : >"$maps"
    end=$((SECONDS + minutes * 60))
    e2e_log "soak: $minutes min, $pop pods per wave, vgpu-sched pid $pid"
    # serve re-executes itself with malloc's per-thread caches off (mtune.c) unless
    # GLIBC_TUNABLES already sets them: the soak measures the service as it runs by default.
    local tunables
    tunables="$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^GLIBC_TUNABLES=//p')"
    e2e_log "soak: vgpu-sched runs with GLIBC_TUNABLES=${tunables:-(unset)}"
    [[ ":$tunables:" == *":glibc.malloc.tcache_count="* ]] || {
        e2e_fail "vgpu-sched runs without glibc.malloc.tcache_count in GLIBC_TUNABLES (\"$tunables\")"
        return 1
    }
    while ((SECONDS < end || wave < VS_SOAK_MIN_WAVES)); do
        wave=$((wave + 1))
        t0=$SECONDS
        n="$(soak_pod_count "$ns")"
        if ((n > 0)); then
            half=$((n / 2))
            e2e_kubectl get pods --namespace "$ns" -o name | sort |
                soak_pick "$((20261201 + wave))" "$half" >"$E2E_CLUSTER/soak-delete.txt"
            mapfile -t victims <"$E2E_CLUSTER/soak-delete.txt"
            e2e_kubectl delete --namespace "$ns" --wait=false "${victims[@]}" >/dev/null
            e2e_wait 120 "the $half pods deleted in wave $wave gone" \
                eval '(($(soak_pod_count "$ns") == n - half))' || return 1
        fi
        missing=$((pop - $(soak_pod_count "$ns")))
        vs_random_pods "w$wave" "$missing" "$((20260101 + wave))" '{pool: soak}' "$ns" \
            >"$E2E_CLUSTER/soak-pods.yaml"
        "$E2E_BIN/vs-e2e" create-pods --kubeconfig "$KUBECONFIG" --concurrency 20 \
            "$E2E_CLUSTER/soak-pods.yaml"
        out="$(vs_settle "$ns" 5m)" || {
            e2e_fail "wave $wave: not settled: $out"
            return 1
        }
        bound="$(sed -E 's/.*"bound":([0-9]+).*/\1/' <<<"$out")"
        refused="$(sed -E 's/.*"unschedulable":([0-9]+).*/\1/' <<<"$out")"
        e2e_expect_eq "wave $wave: bound + refused" "$((bound + refused))" "$pop"
        vs_capacity --refused "$ns" --table 2>"$E2E_CLUSTER/capacity.txt" >/dev/null || {
            cat "$E2E_CLUSTER/capacity.txt" >&2
            e2e_fail "wave $wave: capacity check failed"
            return 1
        }
        vs_no_node_locks || return 1
        [[ "$(vs_pid)" == "$pid" ]] && kill -0 "$pid" 2>/dev/null || {
            e2e_fail "wave $wave: vgpu-sched (pid $pid) is gone"
            return 1
        }
        read -r rss hwm < <(soak_rss_quiet "$pid")
        read -r inuse arena < <(soak_heap "$pid")
        conns="$(soak_conns)"
        read -r mheap manon mstack mfile < <(soak_maps "$pid") &&
            printf '%d %d %d %d %d\n' "$wave" "$mheap" "$manon" "$mstack" "$mfile" >>"$maps"
        printf '%d %d %d %d %d %d %d %s %s\n' "$wave" "$((SECONDS - t0))" "$pop" "$bound" "$refused" \
            "$rss" "$hwm" "$inuse" "$arena" >>"$samples"
        e2e_log "wave $wave: $missing created, $bound bound, $refused refused, $((SECONDS - t0))s; VmRSS $rss KiB, VmHWM $hwm KiB; API connections opened $conns${VS_E2E_SOAK_HEAP:+; heap in use $inuse B, arenas $arena B}"
    done
    soak_maps_report "$maps"
    soak_report "$samples"
}

