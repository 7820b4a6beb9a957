# shellcheck shell=bash
# agent-emulation: checks the node emulation the vgpu-sched scenarios will lean on, with the
# control plane alone. Pods are created as vgpu-sched's Filter and Bind would leave them
# (device annotations, hami.io/bind-phase=allocating, node lock) and bound by kube-scheduler;
# the agent must then behave as HAMi's device plugin + kubelet (hami-compat.md §6.4).

# agent_pod NAME EXTRA-ANNOTATION-LINES GPU(0|1) : pod pinned to gpu-node-1 with a GPU container
# (or not) and a sidecar without GPU.
agent_pod() {
    local gpu=""
    if (($3)); then gpu=$'\n      resources:\n        limits: {nvidia.com/gpu: 1}'; fi
    e2e_kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
  annotations:
    e2e.vgpu-sched/case: $1
$2
spec:
  schedulerName: hami-scheduler
  nodeSelector: {kubernetes.io/hostname: gpu-node-1}
  containers:
    - name: gpu
      image: vs-e2e.invalid/cuda:1$gpu
    - name: sidecar
      image: vs-e2e.invalid/pause:1
YAML
}

lock_value() { printf '%s,%s,%s' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$1" "$2"; }

scenario_agent_emulation() {
    local devs='GPU-gpu-node-1-0,NVIDIA,3000,30:;;' now
    now="$(date +%s)"
    local annos="    hami.io/vgpu-node: gpu-node-1
    hami.io/vgpu-time: \"$now\"
    hami.io/vgpu-devices-to-allocate: \"$devs\"
    hami.io/vgpu-devices-allocated: \"$devs\"
    hami.io/bind-phase: allocating
    hami.io/bind-time: \"$now\""
    e2e_fake_nodes --cards 2 gpu-node-1
    e2e_agent_start

    # 1. Handoff success: devices consumed, bind-phase=success, our lock released, Running.
    e2e_kubectl annotate node gpu-node-1 "hami.io/mutex.lock=$(lock_value default ok)" >/dev/null
    agent_pod ok "$annos" 1
    e2e_wait 60 "pod ok Running" e2e_field_is pod ok '{.status.phase}' Running
    e2e_expect_eq "ok bind-phase" "$(e2e_jsonpath pod ok '{.metadata.annotations.hami\.io/bind-phase}')" success
    e2e_expect_eq "ok to-allocate" \
        "$(e2e_jsonpath pod ok '{.metadata.annotations.hami\.io/vgpu-devices-to-allocate}')" ';;;'
    e2e_expect_eq "ok allocated" \
        "$(e2e_jsonpath pod ok '{.metadata.annotations.hami\.io/vgpu-devices-allocated}')" "$devs"
    e2e_expect_eq "lock after ok" "$(e2e_jsonpath node gpu-node-1 '{.metadata.annotations.hami\.io/mutex\.lock}')" ""

    # 2. A lock owned by another pod is left alone.
    local other
    other="$(lock_value default someone-else)"
    e2e_kubectl annotate node gpu-node-1 "hami.io/mutex.lock=$other" >/dev/null
    agent_pod not-owner "$annos" 1
    e2e_wait 60 "pod not-owner Running" e2e_field_is pod not-owner '{.status.phase}' Running
    e2e_expect_eq "foreign lock" "$(e2e_jsonpath node gpu-node-1 '{.metadata.annotations.hami\.io/mutex\.lock}')" "$other"
    e2e_kubectl annotate node gpu-node-1 hami.io/mutex.lock- >/dev/null

    # 3. Allocation failure (annotation e2e.vgpu-sched/handoff=fail): failed, lock released, Failed.
    e2e_kubectl annotate node gpu-node-1 "hami.io/mutex.lock=$(lock_value default fails)" >/dev/null
    agent_pod fails "$annos"$'\n    e2e.vgpu-sched/handoff: fail' 1
    e2e_wait 60 "pod fails Failed" e2e_field_is pod fails '{.status.phase}' Failed
    e2e_expect_eq "fails bind-phase" "$(e2e_jsonpath pod fails '{.metadata.annotations.hami\.io/bind-phase}')" failed
    e2e_expect_eq "lock after fails" "$(e2e_jsonpath node gpu-node-1 '{.metadata.annotations.hami\.io/mutex\.lock}')" ""

    # 4. A GPU pod bound without any handoff is refused at admission, as kubelet would.
    agent_pod bypass "" 1
    e2e_wait 60 "pod bypass Failed" e2e_field_is pod bypass '{.status.phase}' Failed
    e2e_expect_eq "bypass reason" "$(e2e_jsonpath pod bypass '{.status.reason}')" UnexpectedAdmissionError

    # 5. Deleting a running pod completes without a kubelet.
    e2e_kubectl delete pod ok --wait=false >/dev/null
    e2e_wait 30 "pod ok gone" e2e_gone pod ok
}
