# shellcheck shell=bash
# scale-waves (opt-in: VS_E2E_SCALE=1): kube-scheduler with vgpu-sched as its extender on a
# cluster of VS_E2E_SCALE_NODES (1,000) fake nodes of 8 cards (16 GiB, 100 cores, shared by up to
# 10; label pool=scale), the emulated device plugin holding each node lock VS_E2E_HOLD (20ms).
# VS_E2E_SCALE_WAVES (10) waves of VS_E2E_SCALE_WAVE (1,000) pods without GPUs, then as many waves
# of GPU pods, each wave created 20 at a time (vs-e2e create-pods, as baseline) into a namespace of
# its own and left to settle (vs_settle: every pod bound and Running, kube-scheduler's queues
# empty) before the next one starts.
#
# The order, so that wave w of each kind meets the same cluster: the CPU-only waves come first,
# pods cpu 10m with schedulerName hami-scheduler (as baseline's: they never reach the extender,
# whose managedResources they do not ask for), and stay, so CPU-only wave w is scheduled among
# (w-1) x WAVE bound pods; then they are all deleted (one delete-collection per namespace, the
# agent removing them as a kubelet would) and the GPU waves follow (nvidia.com/gpu 1, gpumem
# 1000, gpucores 10: ten per card by cores and by split, so 10,000 of them need 1,000 of the
# 8,000 cards), and stay too, so GPU wave w meets (w-1) x WAVE bound GPU pods. No GPU wave runs
# beside a CPU-only one; what a wave leaves behind (kube-scheduler's and vgpu-sched's paced
# Events, posted after the pods are bound) is paid in the next wave of the same kind.
#
# Per GPU wave, logged: the API connections vgpu-sched opened and its requests that waited for
# a kept connection (vgpu_sched_api_connections_total, vgpu_sched_api_pool_waits_total), and the
# connections its listener accepted, each a TLS handshake (vgpu_sched_http_connections_total).
# Per wave: the settle time from the first create (and how long the creates alone took), the
# CPU seconds of kube-apiserver, etcd, kube-scheduler, vgpu-sched and the agent over the wave
# (from before the creates until the settled state was first seen: vs_settle --cpu-pids), the
# API requests answered (from before the creates until vs_settle returns, its 3 s stable window
# included); for
# the pair of waves w the ratio GPU / CPU-only settle time, vgpu-sched's CPU ms per GPU pod
# placed and its CPU as a share of kube-apiserver's in the GPU wave. Printed after each GPU wave
# and at the end, and written to scale-waves.txt. Reported, not asserted (a benchmark on a shared
# machine); asserted are: every pod of every wave bound and Running, no card over-committed and
# vgpu-sched's metrics equal to the allocations after each GPU wave (vs_capacity), no Bind failed
# for node lock contention.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_scale_waves_pre_up() {
    [[ "${VS_E2E_SCALE:-}" == 1 ]] || e2e_skip "scale-waves is opt-in (VS_E2E_SCALE=1)"
    vs_pre_up
}

SW_PROCS=(kube-apiserver etcd kube-scheduler vgpu-sched agent)
SW_CARDS=8  # per node
SW_SPLIT=10 # shares per card; a GPU pod asks 10 of a card's 100 cores, so 10 fit a card

# sw_pods KIND N NS : N pods of KIND cpu (cpu 10m, schedulerName hami-scheduler) or gpu (no
# schedulerName: the webhook routes them, as vs_pod_yaml's), nodeSelector pool=scale.
sw_pods() {
    local kind=$1 n=$2 ns=$3 i
    for ((i = 1; i <= n; i++)); do
        if [[ "$kind" == cpu ]]; then
            printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: cpu-%d\n  namespace: %s\nspec:\n  schedulerName: %s\n  nodeSelector: {pool: scale}\n  containers:\n    - name: main\n      image: vs-e2e.invalid/cpu:1\n      resources:\n        requests: {cpu: 10m}\n' \
                "$i" "$ns" "$VS_SCHEDULER_NAME"
        else
            printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: gpu-%d\n  namespace: %s\n  annotations: {}\nspec:\n  nodeSelector: {pool: scale}\n  containers:\n    - name: main\n      image: vs-e2e.invalid/cuda:1\n      resources:\n        limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10}\n' \
                "$i" "$ns"
        fi
    done
}

# sw_wave KIND W N : wave W of N KIND pods in namespace scale-KIND-W, created and settled; prints
# "SETTLED CREATE API ETCD SCHEDULER VGPU-SCHED AGENT REQUESTS": the settle time from the first
# create (s), how long the creates took (s), each process's CPU seconds over the wave and the API
# requests answered; fails unless all N are bound and Running.
sw_wave() {
    local kind=$1 w=$2 n=$3 ns file m req0
    ns="$(printf 'scale-%s-%02d' "$kind" "$w")"
    file="$E2E_CLUSTER/scale-$kind-$w.yaml"
    sw_pods "$kind" "$n" "$ns" >"$file"
    vs_namespace "$ns"
    req0="$(vs_api_requests)"
    m="$(vs_timed_burst "$kind wave $w" "$ns" "$n" "$file" 10m "${SW_PROCS[@]}")" || return 1
    printf '%s %s\n' "$m" "$(($(vs_api_requests) - req0))"
}

# sw_count_cpu_pods : pods left in the CPU-only waves' namespaces (being deleted or not).
sw_count_cpu_pods() {
    e2e_kubectl get pods --all-namespaces --no-headers -o 'custom-columns=NS:.metadata.namespace' |
        grep -c '^scale-cpu-' || true
}

# sw_clear_cpu WAVES : deletes the pods of the CPU-only waves (a delete-collection per namespace;
# bound pods get a graceful deletion that the agent finishes at once) and waits until they are gone.
sw_clear_cpu() {
    local w t0=$SECONDS left deadline=$((SECONDS + 600))
    for ((w = 1; w <= $1; w++)); do
        e2e_kubectl delete --raw "/api/v1/namespaces/$(printf 'scale-cpu-%02d' "$w")/pods" >/dev/null
    done
    while left="$(sw_count_cpu_pods)" && ((left > 0)); do
        ((SECONDS < deadline)) || {
            e2e_fail "$left pods of the CPU-only waves still there after 600s"
            return 1
        }
        sleep 2
    done
    e2e_log "the CPU-only waves' pods deleted and gone in $((SECONDS - t0))s"
}

sw_load() { cut -d' ' -f1 /proc/loadavg; }

# sw_delta AFTER BEFORE : AFTER - BEFORE of two metric samples, "-" when either is missing (a
# build without that metric).
sw_delta() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/) print a - b; else print "-" }'
}

# sw_range FIELD : "MIN-MAX" of a field of the rows (the caller's array rows).
sw_range() {
    printf '%s\n' "${rows[@]}" | awk -v f="$1" 'NR == 1 || $f < lo { lo = $f } NR == 1 || $f > hi { hi = $f }
        END { printf "%s-%s", lo, hi }'
}

scenario_scale_waves() {
    local nodes=${VS_E2E_SCALE_NODES:-1000} waves=${VS_E2E_SCALE_WAVES:-10} n=${VS_E2E_SCALE_WAVE:-1000}
    [[ "$nodes" =~ ^[1-9][0-9]{0,4}$ ]] || e2e_die "VS_E2E_SCALE_NODES=$nodes: want 1..99999"
    [[ "$waves" =~ ^[1-9][0-9]?$ ]] || e2e_die "VS_E2E_SCALE_WAVES=$waves: want 1..99"
    [[ "$n" =~ ^[1-9][0-9]{0,4}$ ]] || e2e_die "VS_E2E_SCALE_WAVE=$n: want 1..99999"
    ((waves * n <= nodes * SW_CARDS * SW_SPLIT)) ||
        e2e_die "$waves waves of $n GPU pods do not fit $nodes nodes of $SW_CARDS cards shared by $SW_SPLIT"
    # ... nor do the CPU-only ones fit more than 100 pods per node (capacity pods 110).
    ((waves * n <= nodes * 100)) || e2e_die "$waves waves of $n pods exceed 100 pods per node"
    local names=() i t0 w cpu gpu ratio ms share load0 table="" rows=()
    load0="$(cut -d' ' -f1-3 /proc/loadavg)"
    e2e_log "scale-waves: $nodes nodes x $SW_CARDS cards, $waves waves of $n pods of each kind, hold ${VS_E2E_HOLD:-20ms} (load $load0)"
    for ((i = 1; i <= nodes; i++)); do names+=("$(printf 'scale-%04d' "$i")"); done
    t0=$SECONDS
    e2e_fake_nodes --cards "$SW_CARDS" --devmem 16384 --split "$SW_SPLIT" --label pool=scale \
        --concurrency 16 --timeout 10m "${names[@]}"
    e2e_log "$nodes fake nodes created in $((SECONDS - t0))s"
    vs_setup --hold "${VS_E2E_HOLD:-20ms}"

    # CPU-only waves first; kept until the GPU waves start (see the top of the file).
    local cpus=()
    for ((w = 1; w <= waves; w++)); do
        cpu="$(sw_wave cpu "$w" "$n")" || return 1
        cpus+=("$cpu $(sw_load)")
        e2e_log "cpu-only wave $w: $n pods settled in ${cpu%% *}s (load $(sw_load))"
    done
    sw_clear_cpu "$waves" || return 1

    local conn0 waits0 acc0
    for ((w = 1; w <= waves; w++)); do
        conn0="$(vs_metric vgpu_sched_api_connections_total)"
        acc0="$(vs_metric vgpu_sched_http_connections_total)"
        waits0="$(vs_metric vgpu_sched_api_pool_waits_total)"
        gpu="$(sw_wave gpu "$w" "$n")" || return 1
        vs_capacity --table 2>"$E2E_CLUSTER/capacity.txt" >/dev/null || {
            cat "$E2E_CLUSTER/capacity.txt" >&2
            e2e_fail "gpu wave $w: capacity check failed"
            return 1
        }
        cpu="${cpus[w - 1]}"
        # Fields: 1-2 settle/create, 3-7 CPU s (apiserver etcd scheduler vgpu-sched agent), 8 requests, 9 load.
        read -r ratio ms share < <(awk -v c="$cpu" -v g="$gpu" -v n="$n" 'BEGIN {
            split(c, a, " "); split(g, b, " ")
            printf "%.2f %.2f %.1f\n", (a[1] > 0 ? b[1] / a[1] : 0), b[6] * 1000 / n, (b[3] > 0 ? 100 * b[6] / b[3] : 0) }')
        rows+=("$w $ratio $ms $share cpu-only $cpu gpu $gpu $(sw_load)")
        e2e_log "gpu wave $w: $n pods settled in ${gpu%% *}s, cpu-only wave $w in ${cpu%% *}s: ratio $ratio; vgpu-sched $ms ms CPU per GPU pod, $share % of kube-apiserver's CPU, $(sw_delta "$(vs_metric vgpu_sched_api_connections_total)" "$conn0") API connections opened, $(sw_delta "$(vs_metric vgpu_sched_api_pool_waits_total)" "$waits0") requests waited for a kept one, $(sw_delta "$(vs_metric vgpu_sched_http_connections_total)" "$acc0") connections accepted (load $(sw_load))"
    done

    e2e_log "scale-waves: $nodes nodes, waves of $n (issue 31 targets: ratio <= 1.5; vgpu-sched's CPU a small share of kube-apiserver's); per wave: settle s, create s, CPU s of ${SW_PROCS[*]}, API requests, load"
    table="# wave ratio vgpu_ms_per_gpu_pod vgpu_pct_of_apiserver | cpu-only: settled_s create_s cpu_s(${SW_PROCS[*]}) requests load | gpu: the same"$'\n'
    table+="$(printf '%s\n' "${rows[@]}")"$'\n'
    printf '%s' "$table" >"$E2E_CLUSTER/scale-waves.txt"
    printf '%s\n' "${rows[@]}" | awk '{ printf "    wave %2s ratio %5s | cpu-only %7ss (create %5ss) cpu %s %s %s %s %s req %s load %s | gpu %7ss (create %5ss) cpu %s %s %s %s %s req %s load %s | vgpu-sched %s ms/pod, %s %% of apiserver\n", $1, $2, $6, $7, $8, $9, $10, $11, $12, $13, $14, $16, $17, $18, $19, $20, $21, $22, $23, $24, $3, $4 }' >&2
    e2e_log "over the waves: ratio $(sw_range 2), vgpu-sched $(sw_range 3) ms CPU per GPU pod, $(sw_range 4) % of kube-apiserver's CPU"
    e2e_log "load: $load0 at start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; table in scale-waves.txt"
    e2e_expect_eq "Binds failed for node lock contention" \
        "$(grep 'event=bind_failed' "$E2E_CLUSTER/vgpu-sched.log" | grep -c 'node lock contention' || true)" 0
}
