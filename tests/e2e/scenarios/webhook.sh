# shellcheck shell=bash
# webhook: the full path of one GPU pod through the real apiserver and kube-scheduler — a plain
# `kubectl apply` (no schedulerName) is mutated by vgpu-sched's webhook (hami-compat.md §7), sent
# by kube-scheduler to /filter and /bind, handed off by the emulated device plugin (§6.4) and
# Running, with exactly HAMi's annotations, label and events. Then: webhook exclusions and
# denials, and the node lock (§6.2) observed while the device plugin holds a pod in
# bind-phase=allocating: a second pod for that node waits in the node's bind queue (its Bind
# neither fails nor takes the lock) and is bound as soon as the lock is released, with no
# BindingFailed event.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_webhook_pre_up() { vs_pre_up; }

# expect_denied NAME MESSAGE YAML : creating the pod fails with the webhook's MESSAGE.
expect_denied() {
    local out
    if out="$(e2e_kubectl create -f - 2>&1 <<<"$3")"; then
        e2e_fail "pod $1 was admitted; want denied: $2"
        return 1
    fi
    if ! grep -qF "admission webhook \"vgpu.hami.io\" denied the request: $2" <<<"$out"; then
        e2e_fail "pod $1: want denial '$2', got: $out"
        return 1
    fi
    e2e_gone pod "$1" || e2e_fail "denied pod $1 exists"
}

# filtered_event POD NODE : FilteringSucceed for POD on NODE, both nodes fit at score 0.
filtered_event() {
    vs_has_event "$1" FilteringSucceed "find fit node($2), 0 nodes not fit, 2 nodes fit(wh-a:0.00,wh-b:0.00)" ||
        vs_has_event "$1" FilteringSucceed "find fit node($2), 0 nodes not fit, 2 nodes fit(wh-b:0.00,wh-a:0.00)"
}

# scheduled_by POD COMPONENT : kube-scheduler's Scheduled event names COMPONENT (the profile).
scheduled_by() {
    [[ "$(e2e_kubectl get events --field-selector "involvedObject.name=$1,reason=Scheduled" \
        -o 'jsonpath={.items[0].reportingComponent}')" == "$2" ]]
}

scenario_webhook() {
    local node lock t
    e2e_fake_nodes --cards 2 --devmem 16384 wh-a wh-b
    vs_setup

    # 1. A plain GPU pod, as a user writes it.
    e2e_kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: gpu
  namespace: default
spec:
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources:
        limits:
          nvidia.com/gpu: 1
YAML
    e2e_expect_eq "gpu schedulerName" "$(e2e_jsonpath pod gpu '{.spec.schedulerName}')" hami-scheduler
    e2e_expect_eq "gpu limits" \
        "$(e2e_jsonpath pod gpu '{.spec.containers[0].resources.limits.nvidia\.com/gpu}/{.spec.containers[0].resources.limits.nvidia\.com/gpucores}')" \
        1/100
    vs_wait_running gpu
    node="$(e2e_jsonpath pod gpu '{.spec.nodeName}')"
    [[ "$node" == wh-a || "$node" == wh-b ]] || e2e_fail "pod gpu bound to '$node', want wh-a or wh-b"
    # Two idle nodes score equally (binpack node policy): the winner is the first candidate in
    # kube-scheduler's order, which the test does not control. On the node, the card policy
    # (spread) on two idle cards takes the last card (stable order, tail first); the whole
    # card's memory (gpumem-percentage defaults to 100) and, from the webhook, 100 cores.
    e2e_expect_eq "gpu devices" "$(vs_devices gpu)" "GPU-$node-1,NVIDIA,16384,100:;"
    e2e_expect_eq "gpu to-allocate (consumed by the device plugin)" \
        "$(e2e_jsonpath pod gpu '{.metadata.annotations.hami\.io/vgpu-devices-to-allocate}')" ';;'
    e2e_expect_eq "gpu vgpu-node annotation/label" \
        "$(e2e_jsonpath pod gpu '{.metadata.annotations.hami\.io/vgpu-node}/{.metadata.labels.hami\.io/vgpu-node}')" \
        "$node/$node"
    [[ "$(e2e_jsonpath pod gpu '{.metadata.annotations.hami\.io/vgpu-time}')" =~ ^[0-9]{10}$ ]] ||
        e2e_fail "gpu hami.io/vgpu-time is not Unix seconds"
    [[ "$(e2e_jsonpath pod gpu '{.metadata.annotations.hami\.io/bind-time}')" =~ ^[0-9]{10}$ ]] ||
        e2e_fail "gpu hami.io/bind-time is not Unix seconds"
    # The agent only allocates pods it saw in bind-phase=allocating, and logs the transition.
    grep -qF "default/gpu on $node: devices \"GPU-$node-1,NVIDIA,16384,100:;\" -> bind-phase=success" \
        "$E2E_CLUSTER/agent.log" || e2e_fail "no allocating -> success handoff of default/gpu in agent.log"
    e2e_expect_eq "lock on $node after the handoff" \
        "$(e2e_jsonpath node "$node" '{.metadata.annotations.hami\.io/mutex\.lock}')" ""
    # The two nodes are listed in kube-scheduler's candidate order.
    e2e_wait 30 "FilteringSucceed event of gpu" filtered_event gpu "$node"
    vs_expect_event gpu BindingSucceed "Successfully binding node [$node] to default/gpu"
    e2e_wait 30 "Scheduled event of gpu from the hami-scheduler profile" scheduled_by gpu hami-scheduler

    # 2. Not for the webhook: excluded by label, no GPU.
    e2e_kubectl create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: ignored
  namespace: default
  labels: {hami.io/webhook: ignore}
spec:
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources:
        limits: {nvidia.com/gpu: 1}
---
apiVersion: v1
kind: Pod
metadata:
  name: cpu-only
  namespace: default
spec:
  containers:
    - name: main
      image: vs-e2e.invalid/pause:1
YAML
    e2e_expect_eq "ignored pod" \
        "$(e2e_jsonpath pod ignored '{.spec.schedulerName}/{.spec.containers[0].resources.limits.nvidia\.com/gpucores}')" \
        default-scheduler/
    e2e_expect_eq "cpu-only pod" "$(e2e_jsonpath pod cpu-only '{.spec.schedulerName}')" default-scheduler

    # 3. Denied at admission (failurePolicy Fail: the apiserver reports the webhook's verdict).
    expect_denied privileged "container main is privileged" "$(
        cat <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: privileged, namespace: default}
spec:
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      securityContext: {privileged: true}
      resources:
        limits: {nvidia.com/gpu: 1}
YAML
    )"
    expect_denied bad-percentage \
        "invalid nvidia.com/gpumem-percentage value 150 in container main: must be an integer between 0 and 100" \
        "$(vs_pod_yaml bad-percentage '{nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 150}')"
    expect_denied bad-policy "invalid hami.io/gpu-scheduler-policy \"fastest\": unknown policy \"fastest\"" \
        "$(vs_pod_yaml bad-policy '{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}' '{hami.io/gpu-scheduler-policy: fastest}')"

    # 4. The node lock while the device plugin has not allocated yet (handoff=hold).
    vs_pod held '{nvidia.com/gpu: 1, nvidia.com/gpumem: 2000, nvidia.com/gpucores: 10}' \
        '{e2e.vgpu-sched/handoff: hold}' '{kubernetes.io/hostname: wh-a}'
    e2e_wait 60 "pod held bound and allocating" e2e_field_is pod held \
        '{.spec.nodeName}/{.metadata.annotations.hami\.io/bind-phase}' wh-a/allocating
    # On wh-a the spread card policy prefers the idle card: card 0 if pod gpu holds card 1.
    local card=1
    [[ "$node" != wh-a ]] || card=0
    e2e_expect_eq "held devices" "$(vs_devices held)" "GPU-wh-a-$card,NVIDIA,2000,10:;"
    e2e_expect_eq "held to-allocate (not consumed yet)" \
        "$(e2e_jsonpath pod held '{.metadata.annotations.hami\.io/vgpu-devices-to-allocate}')" \
        "GPU-wh-a-$card,NVIDIA,2000,10:;"
    lock="$(e2e_jsonpath node wh-a '{.metadata.annotations.hami\.io/mutex\.lock}')"
    [[ "$lock" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2}),default,held$ ]] ||
        e2e_fail "node wh-a lock '$lock', want '<RFC3339>,default,held'"

    # A second pod for wh-a: filtered onto wh-a; its Bind finds the node locked and waits in the
    # node's bind queue (--node-lock-retry-timeout, 28 s).
    vs_pod queued '{nvidia.com/gpu: 1, nvidia.com/gpumem: 2000, nvidia.com/gpucores: 10}' '{}' \
        '{kubernetes.io/hostname: wh-a}'
    e2e_wait 20 "a Bind waiting in wh-a's queue" \
        bash -c "curl -fsS --max-time 2 '$(vs_metrics_url)' | grep -qx 'vgpu_sched_binds_waiting 1'"
    e2e_expect_eq "queued node while wh-a is locked" "$(e2e_jsonpath pod queued '{.spec.nodeName}')" ""
    e2e_expect_eq "lock still held by held" \
        "$(e2e_jsonpath node wh-a '{.metadata.annotations.hami\.io/mutex\.lock}')" "$lock"

    # The device plugin allocates held: lock released, and queued gets the node.
    t=$SECONDS
    e2e_kubectl annotate pod held e2e.vgpu-sched/handoff- >/dev/null
    vs_wait_running held
    vs_wait_running queued
    e2e_log "queued bound $((SECONDS - t))s after the lock was released"
    e2e_expect_eq "BindingFailed events of queued" \
        "$(e2e_kubectl get events -n default --field-selector involvedObject.name=queued,reason=BindingFailed -o name)" ""
    # Card 0: idle when pod gpu is elsewhere, the only one with cores left when it is on wh-a.
    e2e_expect_eq "queued devices" "$(vs_devices queued)" "GPU-wh-a-0,NVIDIA,2000,10:;"
    e2e_wait 30 "lock on wh-a released" e2e_field_is node wh-a '{.metadata.annotations.hami\.io/mutex\.lock}' ""
    vs_capacity >/dev/null

    # 5. The device plugin fails the allocation (handoff=fail): bind-phase failed, lock released,
    # the pod Failed; vgpu-sched stops counting it (its metrics equal the usage of the pods that
    # are still live). Likewise for a deleted pod.
    vs_pod fails '{nvidia.com/gpu: 1, nvidia.com/gpumem: 3000, nvidia.com/gpucores: 30}' \
        '{e2e.vgpu-sched/handoff: fail}' '{kubernetes.io/hostname: wh-b}'
    e2e_wait 60 "pod fails Failed" e2e_field_is pod fails \
        '{.status.phase}/{.status.reason}/{.metadata.annotations.hami\.io/bind-phase}' \
        Failed/UnexpectedAdmissionError/failed
    e2e_expect_eq "lock on wh-b after the failed allocation" \
        "$(e2e_jsonpath node wh-b '{.metadata.annotations.hami\.io/mutex\.lock}')" ""
    e2e_wait 30 "vgpu-sched no longer counts pod fails" vs_capacity
    e2e_kubectl delete pod gpu --wait=false >/dev/null
    e2e_wait 60 "pod gpu gone" e2e_gone pod gpu
    e2e_wait 30 "vgpu-sched no longer counts pod gpu" vs_capacity
}
