# shellcheck shell=bash
# burst-large (opt-in: VS_E2E_LARGE=1): 1,000 GPU pods created at once on 50 fake nodes of 8
# cards (16 GiB, shared by up to 10), a mix of shares (1-4 GiB, 5-30 cores) and whole cards
# (every fifth pod: 100 % of a card's memory and cores). Every pod must end bound and Running
# or refused for capacity, no card over-committed, vgpu-sched's metrics equal to the API's
# allocations, and no Bind failed for node lock contention; the emulated device plugin holds
# each lock for VS_E2E_HOLD (20ms). Prints the settle time and pods/s against the 60 s target.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_burst_large_pre_up() {
    [[ "${VS_E2E_LARGE:-}" == 1 ]] || e2e_skip "burst-large is opt-in (VS_E2E_LARGE=1)"
    vs_pre_up
}

scenario_burst_large() {
    local ns=burst-large out i x=20261201 mem cores nodes=()
    for ((i = 1; i <= 50; i++)); do
        nodes+=("$(printf 'large-%02d' "$i")")
    done
    e2e_fake_nodes --cards 8 --devmem 16384 --split 10 --label pool=large "${nodes[@]}"
    vs_setup --hold "${VS_E2E_HOLD:-20ms}"
    vs_namespace "$ns"
    for ((i = 1; i <= 1000; i++)); do
        if ((i % 5 == 0)); then
            vs_pod_yaml "l-$i" "{nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 100, nvidia.com/gpucores: 100}" \
                "{}" "{pool: large}" "$ns"
            continue
        fi
        x=$(((x * 1103515245 + 12345) % 2147483648))
        mem=$((1024 + (x / 65536 % 31) * 1024 / 10))
        x=$(((x * 1103515245 + 12345) % 2147483648))
        cores=$((5 + x / 65536 % 26))
        vs_pod_yaml "l-$i" "{nvidia.com/gpu: 1, nvidia.com/gpumem: $mem, nvidia.com/gpucores: $cores}" \
            "{}" "{pool: large}" "$ns"
    done >"$E2E_CLUSTER/large-pods.yaml"
    local t0
    t0="$(date +%s.%N)"
    "$E2E_BIN/vs-e2e" create-pods --kubeconfig "$KUBECONFIG" --concurrency 40 "$E2E_CLUSTER/large-pods.yaml"
    out="$(vs_settle "$ns" 10m --started "$t0")"
    e2e_log "settled: $out"
    vs_burst_report "$out" 60 "1000 pods / 50 nodes, hold ${VS_E2E_HOLD:-20ms}"
    if grep -qvE '^(CardInsufficientMemory|CardInsufficientCore|CardTimeSlicingExhausted|CardUuidMismatch|NodeInsufficientDevice|)$' \
        < <(sed -E 's/.*"reasons":\{([^}]*)\}.*/\1/' <<<"$out" | tr ',' '\n' | sed -E 's/"([^"]+)":[0-9]+/\1/'); then
        e2e_fail "unexpected refusal reasons: $out"
    fi
    vs_capacity --refused "$ns" --table 2>"$E2E_CLUSTER/capacity.txt" >/dev/null || {
        cat "$E2E_CLUSTER/capacity.txt" >&2
        e2e_fail "capacity check failed"
    }
    e2e_log "capacity: no card over-committed, vgpu-sched metrics agree (table in capacity.txt)"
    vs_burst_no_contention
}
