# shellcheck shell=bash
# baseline-floor (VS_E2E_FLOOR=0 skips it): the `baseline` bursts with vs-e2e's stub extender in
# --hami mode in vgpu-sched's place: it keeps every candidate at Filter and at Bind does only
# what HAMi's device plugin needs (the node lock, the Binding with bind-phase and a device list,
# one allocation in flight per node, the next once the pod watch shows the hand-off). So the GPU
# burst's ratio here is what any extender speaking HAMi's protocol leaves on this machine, and
# `baseline`'s ratio minus this one is vgpu-sched's own share. No webhook is registered: both
# kinds of pod name hami-scheduler themselves. VS_E2E_FLOOR_HTTP2=1 lets the stub offer HTTP/2
# (Go's default; kube-scheduler's extender client then multiplexes its calls on one
# connection); the default 0 serves HTTP/1.1 only, as vgpu-sched does. Same 10 nodes, pods,
# hold and rounds (VS_E2E_BASELINE_ROUNDS) as `baseline`; whichever of the two runs second in a
# run directory prints both mean ratios (baseline_beside_floor); reported, not asserted, except
# that every pod is bound and Running.

# shellcheck source=baseline.sh
. "$E2E_DIR/scenarios/baseline.sh"

scenario_baseline_floor_pre_up() {
    [[ "${VS_E2E_FLOOR:-1}" != 0 ]] || e2e_skip "baseline-floor skipped (VS_E2E_FLOOR=0)"
    VS_EXTENDER_PORT="$("$E2E_BIN/vs-e2e" freeport)"
    export VS_EXTENDER_PORT
    unset VS_EXTENDER_URL VS_EXTENDER_CA VS_EXTENDER_CLIENT_CERT VS_EXTENDER_CLIENT_KEY
}

FLOOR_PROCS=(kube-apiserver etcd kube-scheduler stub-extender agent)

# floor_conns : the connections the stub extender has accepted (a TLS handshake each).
floor_conns() {
    local pki="$E2E_CLUSTER/pki"
    curl -fsS --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/extender-client.crt" \
        --key "$pki/extender-client.key" "https://127.0.0.1:$VS_EXTENDER_PORT/connections"
}

# floor_burst KIND NS N : creates the burst (schedulerName set in each pod) and waits for it to
# settle; prints "SETTLE API ETCD SCHEDULER STUB AGENT REQUESTS ACCEPTED" as baseline_burst
# does (ACCEPTED: the connections the stub accepted, not counting floor_conns' own).
floor_burst() {
    local kind=$1 ns=$2 n=$3 m req0 acc0
    # The CPU-only pods name the scheduler already; the GPU pods relied on vgpu-sched's webhook.
    baseline_pods "$kind" "$n" "$ns" |
        if [[ "$kind" == gpu ]]; then sed "s/^spec:\$/spec:\n  schedulerName: $VS_SCHEDULER_NAME/"; else cat; fi \
            >"$E2E_CLUSTER/floor-$kind.yaml"
    req0="$(vs_api_requests)"
    acc0="$(floor_conns)"
    m="$(vs_timed_burst "$kind burst" "$ns" "$n" "$E2E_CLUSTER/floor-$kind.yaml" 5m \
        "${FLOOR_PROCS[@]}")" || return 1
    printf '%s %s %s\n' "$(cut -d' ' -f1,3- <<<"$m")" "$(($(vs_api_requests) - req0))" \
        "$(($(floor_conns) - acc0 - 1))"
}

scenario_baseline_floor() {
    local table h2=${VS_E2E_FLOOR_HTTP2:-0} pki="$E2E_CLUSTER/pki" log="$E2E_CLUSTER/stub-extender.log"
    [[ "$h2" == 0 || "$h2" == 1 ]] || e2e_die "VS_E2E_FLOOR_HTTP2=$h2: want 0 or 1"
    e2e_spawn stub-extender "$E2E_BIN/vs-e2e" stub-extender --kubeconfig="$KUBECONFIG" \
        --listen="127.0.0.1:$VS_EXTENDER_PORT" --cert="$pki/extender.crt" --key="$pki/extender.key" \
        --client-ca="$pki/ca.crt" --hami --http2="$([[ "$h2" == 1 ]] && echo true || echo false)"
    e2e_wait 30 "stub extender listening" grep -q listening "$log"
    baseline_nodes
    e2e_agent_start --hold "${VS_E2E_HOLD:-20ms}"
    vs_namespace base-cpu
    vs_namespace base-gpu
    table="$(baseline_rounds "baseline-floor (http2=$h2)" floor_burst)" || return 1
    e2e_log "baseline-floor (the stub extender in vgpu-sched's place, http2=$h2); per burst: settle s, CPU s of ${FLOOR_PROCS[*]}, API requests, connections the stub accepted"
    awk '{ printf "    round %s ratio %s | %s %6ss  cpu %s %s %s %s %s  req %s acc %s | %s %6ss  cpu %s %s %s %s %s  req %s acc %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20 }' <<<"$table" >&2
    printf '%s\n' "$table" >"$E2E_CLUSTER/baseline-floor.txt"
    printf '%s\n' "$h2" >"$E2E_CLUSTER/http2"
    baseline_beside_floor
}
