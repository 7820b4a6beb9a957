# shellcheck shell=bash
# chaos-node: nodes change under a burst. 55 pods on 5 nodes of 4 × 8 GiB cards (a little more
# memory asked than is left after the faults); the agent holds every node lock 1 s (--hold), so
# Binds queue on every node.
#
# (a) Once 10 pods are bound, the node with the most Binds in flight (vgpu-sched's log: Filter
#     decisions for it not yet followed by a Bind result) is deleted. vgpu-sched's bind queue
#     fails the queued Binds at once ("node X was deleted while the Bind waited for its lock");
#     kube-scheduler retries them on the remaining nodes. The pods already bound to the deleted
#     node are deleted as kube-controller-manager's PodGC deletes the pods of a node that no longer
#     exists (there is no controller-manager here); their usage leaves with them.
# (b) One second later another node is re-registered with 3 cards (its device plugin lost
#     GPU-<node>-3: hami.io/node-nvidia-register changes, as after an XID error). The pods already
#     on that card keep their allocation and keep running; vgpu-sched stops counting the card
#     (its usage is not moved to the other cards, which those pods do not use, so nothing is
#     over-committed: the same as HAMi, which sums usage per registered card), drops its metrics,
#     and places no new pod on it.
#
# At the end (vs_chaos_end): every remaining pod bound and Running or Pending with a reason, no
# card over-committed, vgpu-sched's metrics equal the usage on the pods and name no card that is
# not registered (the deleted node's and the removed card's), no node lock left; plus: no Filter
# chose the removed card after the change, and the bound pods on it are pods that held it (or
# were placed on it) before, with the same allocation, Running.
#
# Opt-in (VS_E2E_CHAOS=1), like the other chaos scenarios.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_chaos_node_pre_up() {
    if [[ "${VS_E2E_CHAOS:-0}" != 1 ]]; then
        e2e_skip "chaos scenarios are opt-in (VS_E2E_CHAOS=1)" || exit 77
    fi
    vs_pre_up
}

CN_NODES=(cn-01 cn-02 cn-03 cn-04 cn-05)

# cn_inflight NODE : Filter decisions for NODE in vgpu-sched's log not yet followed by a Bind
# result (bind or bind_failed): Binds queued on the node or about to arrive.
cn_inflight() {
    local log="$E2E_CLUSTER/vgpu-sched.log" f d
    f="$(grep -cE "event=filter pod=[^ ]+ node=$1 " "$log" || true)"
    d="$(grep -cE "event=bind(_failed)? pod=[^ ]+ node=$1 " "$log" || true)"
    echo $((f - d))
}

# cn_pick_busy : sets CN_BUSY to the node with the most Binds in flight if that is at least 3.
cn_pick_busy() {
    local n k best=0
    CN_BUSY=
    for n in "${CN_NODES[@]}"; do
        k="$(cn_inflight "$n")"
        if ((k > best)); then
            best=$k
            CN_BUSY=$n
        fi
    done
    CN_BUSY_INFLIGHT=$best
    ((best >= 3))
}

# cn_pods_on_card NS UUID [all] : "name=allocation" of the bound pods of NS (with "all": of every
# pod, bound or not) whose allocation names UUID.
cn_pods_on_card() {
    e2e_kubectl get pods --namespace "$1" \
        -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}={.metadata.annotations.hami\.io/vgpu-devices-allocated}{"\n"}{end}' |
        awk -F= -v card="$2," -v all="${3:-}" '(all != "" || $2 != "") && index($3, card) { print $1 "=" $3 }' |
        LC_ALL=C sort || true
}

# cn_card_in_metrics UUID : vgpu-sched's /metrics has the card's per-card series (true as well
# when /metrics cannot be read).
cn_card_in_metrics() {
    local m
    m="$(curl -fsS --max-time 10 "$(vs_metrics_url)")" || return 0
    grep -q "^hami_gpu_memory_allocated_bytes{.*device_uuid=\"$1\"" <<<"$m"
}

scenario_chaos_node() {
    local ns=chaos t0 t_reg applied_ts del_ts x y k card on_card_end on_card gone failed_del late n msg
    e2e_fake_nodes --cards 4 --devmem 8192 --split 5 --label pool=chaos "${CN_NODES[@]}"
    vs_setup --hold 1s
    vs_namespace "$ns"
    vs_random_pods k 55 20261414 '{pool: chaos}' "$ns" >"$E2E_CLUSTER/chaos-pods.yaml"
    t0=$EPOCHREALTIME
    "$E2E_BIN/vs-e2e" create-pods --kubeconfig "$KUBECONFIG" --concurrency 20 "$E2E_CLUSTER/chaos-pods.yaml"

    # (a) delete the node with the most Binds in flight.
    e2e_wait 120 "10 pods bound" vs_bound_at_least 10 "$ns" || return 1
    e2e_wait 60 "a node with 3 Binds in flight" cn_pick_busy || return 1
    x=$CN_BUSY
    del_ts="$(date -u +%Y-%m-%dT%H:%M:%S.%3N)" # just before the request: a bound on the delay
    e2e_kubectl delete node "$x" --wait=false >/dev/null
    e2e_log "node $x deleted with $CN_BUSY_INFLIGHT Binds in flight ($(vs_log_count 'event=bind ') binds logged, $(curl -fsS "$(vs_metrics_url)" | awk '$1 == "vgpu_sched_binds_waiting" { print $2 }') waiting in all queues)"

    # (b) one second later, another node loses its last card: the one with the most pods on it.
    sleep 1
    y="$(e2e_kubectl get pods --namespace "$ns" \
        -o 'jsonpath={range .items[*]}{.spec.nodeName}={.metadata.annotations.hami\.io/vgpu-devices-allocated}{"\n"}{end}' |
        awk -F= -v x="$x" -v nodes="${CN_NODES[*]}" '
            { if ($1 != "" && index($2, "GPU-" $1 "-3,")) k[$1]++ }
            END { split(nodes, n, " "); best = -1
                  for (i = 1; i in n; i++) if (n[i] != x && k[n[i]] + 0 > best) { best = k[n[i]] + 0; y = n[i] }
                  print y }')"
    card="GPU-$y-3"
    "$E2E_BIN/vs-e2e" nodes --kubeconfig "$KUBECONFIG" --kubelet-version "$K8S_VERSION" \
        --cards 3 --devmem 8192 --split 5 --label pool=chaos "$y" >/dev/null
    t_reg=$EPOCHREALTIME
    e2e_wait 30 "vgpu-sched dropping $card from its metrics" eval "! cn_card_in_metrics $card" || return 1
    applied_ts="$(date -u +%Y-%m-%dT%H:%M:%S.%3N)"
    e2e_log "vgpu-sched no longer reports $card: $(awk -v a="$t_reg" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s after the register change"
    sleep 1 # a Filter decided just before the change: its pod patch is in flight
    # Every pod that may hold the card: bound, or placed by a Filter before the change (the API's
    # view, and vgpu-sched's own Filter decisions in its log).
    cn_pods_on_card "$ns" "$card" all >"$E2E_CLUSTER/on-removed-card-alloc.txt"
    {
        sed 's/=.*//' "$E2E_CLUSTER/on-removed-card-alloc.txt"
        grep -E "event=filter pod=$ns/[^ ]+ node=$y devices=[^ ]*$card," "$E2E_CLUSTER/vgpu-sched.log" |
            sed -E "s|.* pod=$ns/([^ ]+) .*|\1|"
    } | LC_ALL=C sort -u >"$E2E_CLUSTER/on-removed-card.txt"
    e2e_log "node $y re-registered without $card, which $(grep -c . "$E2E_CLUSTER/on-removed-card.txt" || true) pods hold (bound or placed)"

    # The deleted node's queue drains at once (its Binds fail); then PodGC's part: delete the pods
    # bound to the node that no longer exists. Nothing can bind there afterwards (kube-scheduler
    # has dropped the node, and the node lock cannot be taken on a missing node).
    e2e_wait 30 "no Bind in flight for the deleted node $x" eval '(($(cn_inflight "$x") <= 0))' || return 1
    gone="$(e2e_kubectl get pods --namespace "$ns" --field-selector "spec.nodeName=$x" -o name | grep -c . || true)"
    if ((gone > 0)); then
        e2e_kubectl delete pods --namespace "$ns" --field-selector "spec.nodeName=$x" \
            --grace-period=0 --force >/dev/null 2>&1
    fi
    e2e_log "PodGC (emulated): deleted the $gone pods bound to $x"

    VS_CHAOS_SETTLE_FLAGS="--started $t0" vs_chaos_end "$ns" "$((55 - gone))" --removed-cards "$card" || return 1

    # The queued Binds of the deleted node failed, with the reason, right after the deletion.
    failed_del="$(grep -cE "event=bind_failed pod=[^ ]+ node=$x .*node $x was deleted while the Bind waited for its lock" \
        "$E2E_CLUSTER/vgpu-sched.log" || true)"
    ((failed_del >= 1)) || {
        e2e_fail "no queued Bind failed with 'node $x was deleted while the Bind waited for its lock'"
        grep -E "event=bind_failed" "$E2E_CLUSTER/vgpu-sched.log" | tail -5 >&2
        return 1
    }
    late="$(grep -E "event=bind_failed pod=[^ ]+ node=$x .*was deleted while" "$E2E_CLUSTER/vgpu-sched.log" |
        sed -E 's/^ts=([^ ]+)Z .*/\1/' | LC_ALL=C sort | tail -1)"
    msg="$(awk -v a="${del_ts}" -v b="$late" 'BEGIN {
        split(a, x, "T"); split(x[2], p, ":"); ta = p[1] * 3600 + p[2] * 60 + p[3]
        split(b, y, "T"); split(y[2], q, ":"); tb = q[1] * 3600 + q[2] * 60 + q[3]
        if (tb < ta - 43200) tb += 86400 # midnight passed
        printf "%.2f", tb - ta }')"
    e2e_log "node $x: $failed_del queued Binds failed with the deletion, the last ${msg}s after the delete request"
    awk -v d="$msg" 'BEGIN { exit !(d < 5) }' || {
        e2e_fail "a queued Bind of the deleted node failed ${msg}s after the deletion (not at once)"
        return 1
    }
    e2e_expect_eq "pods still bound to the deleted node" \
        "$(e2e_kubectl get pods --namespace "$ns" --field-selector "spec.nodeName=$x" -o name | grep -c . || true)" 0

    # The removed card: no Filter chose it once the change was applied; the pods on it are pods
    # that held it (or were placed on it) before, all Running.
    late="$(awk -v t="ts=$applied_ts" '$1 > t' "$E2E_CLUSTER/vgpu-sched.log" |
        grep -E "event=filter .* devices=[^ ]*$card," || true)"
    e2e_expect_eq "Filter decisions for the removed card $card after the change" "$late" ""
    on_card_end="$(cn_pods_on_card "$ns" "$card")"
    e2e_expect_eq "pods on the removed card $card that did not hold it when it was removed" \
        "$(LC_ALL=C comm -23 <(sed 's/=.*//' <<<"$on_card_end" | grep . | LC_ALL=C sort) "$E2E_CLUSTER/on-removed-card.txt" | paste -sd' ' -)" ""
    e2e_expect_eq "pods on $card whose allocation changed since it was removed" \
        "$(LC_ALL=C join -t= <(grep . <<<"$on_card_end" | LC_ALL=C sort -t= -k1,1) \
            <(LC_ALL=C sort -t= -k1,1 "$E2E_CLUSTER/on-removed-card-alloc.txt") |
            awk -F= '$2 != $3 { print $1 }' | paste -sd' ' -)" ""
    for n in $(sed 's/=.*//' <<<"$on_card_end"); do
        vs_running "$n" "$ns" || {
            e2e_fail "pod $n on the removed card is not Running"
            return 1
        }
    done
    on_card="$(grep -c . <<<"$on_card_end" || true)"
    k="$(sed -nE 's/.*"onRemovedCards":\{"[^"]+":([0-9]+)\}.*/\1/p' "$E2E_CLUSTER/capacity.json")"
    e2e_expect_eq "capacity: pods on removed cards" "${k:-0}" "$on_card"
    e2e_log "chaos-node: settled $(sed -E 's/.*"settled":([0-9.]+).*/\1/' <<<"$VS_SETTLED")s after the first create; $(sed -E 's/.*"bound":([0-9]+).*/\1/' <<<"$VS_SETTLED") bound, $(sed -E 's/.*"unschedulable":([0-9]+).*/\1/' <<<"$VS_SETTLED") refused, $gone deleted with node $x; $on_card pods kept on $card ($(grep -c . "$E2E_CLUSTER/on-removed-card.txt" || true) when it was removed)"
}
