# shellcheck shell=bash
# baseline: the same burst with and without GPUs on one control plane, round after round, so the
# extender's share of a burst's time is read against kube-scheduler's own. 10 fake nodes of 4 x
# 16 GiB cards shared by up to 10 (400 slots); each round creates 200 pods at once (20 concurrent
# creates) asking only cpu 10m (schedulerName hami-scheduler: they never reach the extender, whose
# managedResources they do not ask for), waits until all are bound and Running, deletes them,
# then the same 200 asking nvidia.com/gpu 1, gpumem 700, gpucores 4 (all fit). The emulated device
# plugin holds each node lock VS_E2E_HOLD (20ms). Each burst starts once vgpu-sched has posted the
# Events it held during the last one. Every round prints both settle times and their
# ratio (GPU / CPU-only), and per burst the CPU seconds of kube-apiserver, etcd, kube-scheduler,
# vgpu-sched and the agent and the API requests (per pod by verb and resource in
# baseline-KIND-requests.txt); VS_E2E_BASELINE_ROUNDS rounds (5). Reported, not
# asserted (a benchmark on a shared machine); asserted are: every pod bound, no Bind failed for
# node lock contention, no card over-committed, vgpu-sched's metrics equal to the allocations.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_baseline_pre_up() { vs_pre_up; }

# baseline_pods KIND N NS : N pods, KIND cpu (cpu 10m, schedulerName hami-scheduler) or gpu.
baseline_pods() {
    local kind=$1 n=$2 ns=$3 i
    for ((i = 1; i <= n; i++)); do
        if [[ "$kind" == cpu ]]; then
            cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: cpu-$i
  namespace: $ns
spec:
  schedulerName: $VS_SCHEDULER_NAME
  nodeSelector: {pool: base}
  containers:
    - name: main
      image: vs-e2e.invalid/cpu:1
      resources:
        requests: {cpu: 10m}
EOF
        else
            vs_pod_yaml "gpu-$i" "{nvidia.com/gpu: 1, nvidia.com/gpumem: 700, nvidia.com/gpucores: 4}" \
                "{}" "{pool: base}" "$ns"
        fi
    done
}

# baseline_count NS : pods in NS (being deleted or not).
baseline_count() { e2e_kubectl get pods --namespace "$1" -o name | grep -c . || true; }

BASELINE_PROCS=(kube-apiserver etcd kube-scheduler vgpu-sched agent)

# baseline_burst KIND NS N : creates the burst and waits for it to settle; prints "SETTLE API ETCD
# SCHEDULER VGPU-SCHED AGENT REQUESTS CONNECTIONS ACCEPTED": the settle time (s), each process's
# CPU seconds from before the creates until the settled state was first seen (vs_settle
# --cpu-pids: the stable window after it not included), the API requests answered, the API
# connections vgpu-sched opened and the connections its extender/webhook listener accepted
# (kube-scheduler's and kube-apiserver's: a TLS handshake each); fails unless all N are bound.
baseline_burst() {
    local kind=$1 ns=$2 n=$3 m req0 conn0 acc0
    baseline_pods "$kind" "$n" "$ns" >"$E2E_CLUSTER/baseline-$kind.yaml"
    # The Events vgpu-sched held during the last GPU burst are posted before this burst starts,
    # so neither kind of burst carries the other's work.
    e2e_wait 120 "vgpu-sched's queued Events posted" eval \
        '[[ "$(vs_metric vgpu_sched_events_queued)" == 0 ]]' || return 1
    req0="$(vs_api_requests)"
    vs_api_requests_by_kind >"$E2E_CLUSTER/baseline-$kind-req0.txt"
    conn0="$(vs_metric vgpu_sched_api_connections_total)"
    acc0="$(vs_metric vgpu_sched_http_connections_total)"
    m="$(vs_timed_burst "$kind burst" "$ns" "$n" "$E2E_CLUSTER/baseline-$kind.yaml" 5m \
        "${BASELINE_PROCS[@]}")" || return 1
    # Requests per pod by kind, appended round after round (baseline-KIND-requests.txt).
    vs_api_requests_by_kind >"$E2E_CLUSTER/baseline-$kind-req1.txt"
    {
        printf '# burst of %s %s pods\n' "$n" "$kind"
        vs_api_requests_delta "$E2E_CLUSTER/baseline-$kind-req0.txt" "$E2E_CLUSTER/baseline-$kind-req1.txt" "$n"
    } >>"$E2E_CLUSTER/baseline-$kind-requests.txt"
    # SETTLED and the CPU seconds (the creates' own time left out).
    printf '%s %s %s %s\n' "$(cut -d' ' -f1,3- <<<"$m")" \
        "$(($(vs_api_requests) - req0))" "$(($(vs_metric vgpu_sched_api_connections_total) - conn0))" \
        "$(($(vs_metric vgpu_sched_http_connections_total) - acc0))"
}

# baseline_clear NS : deletes every pod of NS and waits until they are gone.
baseline_clear() {
    local ns=$1
    e2e_kubectl delete pods --all --namespace "$ns" --wait=false >/dev/null
    e2e_wait 120 "the pods of $ns gone" eval '(($(baseline_count "$ns") == 0))'
}

# baseline_beside_floor : when both `baseline` and `baseline-floor` have run in this run
# directory (each writes its rounds' table), logs both mean ratios and vgpu-sched's excess over the
# floor; called at the end of both, so the second prints it.
baseline_beside_floor() {
    local run base floor h2
    run="$(dirname "$E2E_CLUSTER")"
    base="$run/baseline/baseline.txt" floor="$run/baseline-floor/baseline-floor.txt"
    [[ -s "$base" && -s "$floor" ]] || return 0
    h2="$(cat "$run/baseline-floor/http2" 2>/dev/null || echo '?')"
    e2e_log "$(awk -v h2="$h2" 'FNR == NR { b += $2; nb++; next } { f += $2; nf++ }
        END { printf "mean ratio: vgpu-sched %.2f (baseline, %d rounds), the protocol-only stub %.2f (baseline-floor, %d rounds, http2=%s): vgpu-sched %+.0f %% over the floor", b / nb, nb, f / nf, nf, h2, (b / nb / (f / nf) - 1) * 100 }' \
        "$base" "$floor")"
}

# baseline_nodes : the 10 fake nodes both scenarios burst onto (4 x 16 GiB cards shared by <= 10).
baseline_nodes() {
    local nodes=() i
    for ((i = 1; i <= 10; i++)); do nodes+=("$(printf 'base-%02d' "$i")"); done
    e2e_fake_nodes --cards 4 --devmem 16384 --split 10 --label pool=base "${nodes[@]}"
}

# baseline_rounds LABEL BURST [CHECK] : VS_E2E_BASELINE_ROUNDS (5) rounds of a CPU-only then a
# GPU burst of 200 pods (BURST KIND NS N prints "SETTLE ..."), each cleared after it, CHECK ROUND
# run after the GPU burst; logs each round's ratio and prints the table, a line per round: "ROUND
# RATIO cpu-only <CPU burst's line> gpu <GPU burst's line>".
baseline_rounds() {
    local label=$1 burst=$2 check=${3:-} rounds=${VS_E2E_BASELINE_ROUNDS:-5} n=200 r cpu gpu ratio
    [[ "$rounds" =~ ^[1-9][0-9]?$ ]] || e2e_die "VS_E2E_BASELINE_ROUNDS=$rounds: want 1..99"
    for ((r = 1; r <= rounds; r++)); do
        cpu="$("$burst" cpu base-cpu "$n")" || return 1
        baseline_clear base-cpu || return 1
        gpu="$("$burst" gpu base-gpu "$n")" || return 1
        [[ -z "$check" ]] || "$check" "$r" || return 1
        baseline_clear base-gpu || return 1
        ratio="$(awk -v g="${gpu%% *}" -v c="${cpu%% *}" 'BEGIN { printf "%.2f", (c > 0 ? g / c : 0) }')"
        e2e_log "$label round $r: $n pods cpu-only settled in ${cpu%% *}s, with GPUs in ${gpu%% *}s: ratio $ratio (load $(cut -d' ' -f1-3 /proc/loadavg))"
        printf '%s %s cpu-only %s gpu %s\n' "$r" "$ratio" "$cpu" "$gpu"
    done
}

# baseline_capacity ROUND : no card over-committed, vgpu-sched's metrics equal to the allocations.
baseline_capacity() {
    vs_capacity --table 2>"$E2E_CLUSTER/capacity.txt" >/dev/null || {
        cat "$E2E_CLUSTER/capacity.txt" >&2
        e2e_fail "round $1: capacity check failed"
        return 1
    }
}

scenario_baseline() {
    local table
    baseline_nodes
    vs_setup --hold "${VS_E2E_HOLD:-20ms}"
    vs_namespace base-cpu
    vs_namespace base-gpu
    table="$(baseline_rounds baseline baseline_burst baseline_capacity)" || return 1
    e2e_log "API requests per GPU pod (reads / writes), round after round: $(grep '^reads' "$E2E_CLUSTER/baseline-gpu-requests.txt" | awk '{ printf "%s%s / %s", (NR > 1 ? ", " : ""), $2, $4 }'); by kind in baseline-gpu-requests.txt"
    e2e_log "baseline (target: ratio <= 1.5 in every round, rounds not slowing down); per burst: settle s, CPU s of ${BASELINE_PROCS[*]}, API requests, API connections vgpu-sched opened, connections it accepted"
    awk '{ printf "    round %s ratio %s | %s %6ss  cpu %s %s %s %s %s  req %s conn %s acc %s | %s %6ss  cpu %s %s %s %s %s  req %s conn %s acc %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22 }' <<<"$table" >&2
    printf '%s\n' "$table" >"$E2E_CLUSTER/baseline.txt"
    baseline_beside_floor
    e2e_expect_eq "Binds failed for node lock contention" \
        "$(grep 'event=bind_failed' "$E2E_CLUSTER/vgpu-sched.log" | grep -c 'node lock contention' || true)" 0
}
