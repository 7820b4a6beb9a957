# shellcheck shell=bash
# unschedulable: pods vgpu-sched refuses stay Pending, and the reasons are where a user looks —
# FilteringFailed events from hami-scheduler (hami-compat.md §4.6: one per reason word with the
# nodes, then "no available node, N nodes do not meet") and kube-scheduler's PodScheduled
# condition, which carries the extender's per-node reasons (§4.5: "<n>/<cards> <Reason>").
# A refused pod is scheduled once capacity is freed (pod deleted).

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_unschedulable_pre_up() { vs_pre_up; }

# refused POD CONDITION-SUBSTRING EVENT-MESSAGE... : unschedulable, the PodScheduled message
# contains CONDITION-SUBSTRING, and each EVENT-MESSAGE is a FilteringFailed event.
refused() {
    local pod=$1 want=$2 msg
    shift 2
    vs_wait_unschedulable "$pod"
    e2e_expect_eq "node of $pod" "$(e2e_jsonpath pod "$pod" '{.spec.nodeName}')" ""
    msg="$(vs_condition_message "$pod")"
    [[ "$msg" == *"$want"* ]] || e2e_fail "$pod: PodScheduled message '$msg' lacks '$want'"
    for m in "$@"; do vs_expect_event "$pod" FilteringFailed "$m"; done
    e2e_log "$pod refused: $msg"
}

scenario_unschedulable() {
    e2e_fake_nodes --cards 2 --devmem 16384 --label pool=u u-a u-b
    vs_setup
    local pool='{pool: u}'

    # More memory than any card has.
    vs_pod too-big '{nvidia.com/gpu: 1, nvidia.com/gpumem: 20000, nvidia.com/gpucores: 10}' '{}' "$pool"
    refused too-big "0/2 nodes are available: 2 2/2 CardInsufficientMemory." \
        "2 nodes CardInsufficientMemory(u-a,u-b)" "no available node, 2 nodes do not meet"

    # More cards than a node has: a node-level reason, no per-reason event.
    vs_pod three-cards '{nvidia.com/gpu: 3, nvidia.com/gpumem: 1000}' '{}' "$pool"
    refused three-cards "0/2 nodes are available: 2 NodeInsufficientDevice." \
        "no available node, 2 nodes do not meet"
    e2e_expect_eq "three-cards FilteringFailed events (each attempt)" \
        "$(vs_events three-cards FilteringFailed | sort -u)" "hami-scheduler|no available node, 2 nodes do not meet"

    # A model no node has.
    vs_pod h100 '{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}' '{nvidia.com/use-gputype: H100}' "$pool"
    refused h100 "0/2 nodes are available: 2 2/2 CardTypeMismatch." \
        "2 nodes CardTypeMismatch(u-a,u-b)" "no available node, 2 nodes do not meet"

    # Exclusive cards (gpucores 100) on a node where one card is shared already: one card is
    # found, the other conflicts.
    vs_pod seed '{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 0}' '{}' \
        '{kubernetes.io/hostname: u-a}'
    vs_wait_running seed
    vs_expect_placement seed u-a 'GPU-u-a-1,NVIDIA,1000,0:;'
    vs_pod exclusive '{nvidia.com/gpu: 2, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 100}' '{}' \
        '{kubernetes.io/hostname: u-a}'
    refused exclusive "1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict" \
        "1 nodes ExclusiveDeviceAllocateConflict(u-a)" "1 nodes AllocatedCardsInsufficientRequest(u-a)" \
        "no available node, 1 nodes do not meet"

    # A bad annotation is the pod's own error, not a node's. The webhook refuses it at admission
    # with Filter's wording ...
    local err='calcScore failed invalid hami.io/device-scoring-weights annotation "slot=1,memory=3": expected slot, core, and memory weights for pod bad-weights'
    local out
    if out="$(vs_pod_yaml bad-weights '{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}' \
        '{hami.io/device-scoring-weights: "slot=1,memory=3"}' "$pool" |
        e2e_kubectl create -f - 2>&1)"; then
        e2e_fail "bad-weights was admitted"
    fi
    e2e_expect_eq "bad-weights admission" "$out" \
        "Error from server (Forbidden): error when creating \"STDIN\": admission webhook \"vgpu.hami.io\" denied the request: $err"
    # ... and a pod that bypasses the webhook (hami.io/webhook: ignore) gets it from Filter.
    vs_pod_yaml bad-weights '{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}' \
        '{hami.io/device-scoring-weights: "slot=1,memory=3"}' "$pool" |
        sed -e 's/^  namespace: \(.*\)$/  namespace: \1\n  labels: {hami.io\/webhook: ignore}/' \
            -e 's/^spec:$/spec:\n  schedulerName: hami-scheduler/' |
        e2e_kubectl create -f - >/dev/null
    e2e_wait 60 "FilteringFailed error event for bad-weights" vs_expect_event bad-weights FilteringFailed "$err"
    e2e_wait 30 "bad-weights PodScheduled SchedulerError" e2e_field_is pod bad-weights \
        '{.status.conditions[?(@.type=="PodScheduled")].reason}' SchedulerError
    e2e_expect_eq "bad-weights PodScheduled message" "$(vs_condition_message bad-weights)" "$err"
    e2e_expect_eq "node of bad-weights" "$(e2e_jsonpath pod bad-weights '{.spec.nodeName}')" ""

    # Freeing the shared card makes room: kube-scheduler retries the refused pod on the pod
    # deletion, and it gets both of u-a's cards whole (picked last card first).
    e2e_kubectl delete pod seed --wait=false >/dev/null
    e2e_wait 60 "pod seed gone" e2e_gone pod seed
    vs_wait_running exclusive
    vs_expect_placement exclusive u-a 'GPU-u-a-1,NVIDIA,1000,100:GPU-u-a-0,NVIDIA,1000,100:;'
    # Still refused: nothing changed for them.
    for p in too-big three-cards h100; do vs_unschedulable "$p" || e2e_fail "$p no longer unschedulable"; done
    vs_capacity >/dev/null
}
