# shellcheck shell=bash
# dra-ledger: DRA claims count on HAMi cards (docs/dra.md, "DRA claims count on HAMi cards") on
# the real control plane. A fake DRA driver's ResourceSlice (created by the admin, as a driver's
# kubelet plugin would) publishes the two cards of fake node led with the same UUIDs as the
# node's HAMi register (GPU-led-0, GPU-led-1). ResourceClaim default/train is created and
# allocated on GPU-led-1 (status.allocation written through the status subresource, as
# kube-scheduler's DRA plugin does in PreBind; no kubelet here), the card vgpu-sched would pick
# first without the claim. HAMi pods then go to GPU-led-0; when that card is full, a HAMi pod is
# refused by vgpu-sched with a reason naming the claim, in kube-scheduler's FailedScheduling
# event, the PodScheduled condition and vgpu-sched's FilteringFailed events. Deleting the claim
# frees GPU-led-1: a new pod is placed there.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_dra_ledger_pre_up() { vs_pre_up; }

LEDGER_DRIVER=gpu.vs-e2e.example.com
# What kube-scheduler adds after the extender's reason when its preemption finds no victim (the
# refusal is not about pods it could evict); v1.38 leaves out the DRA part (dra-ledger-v138.sh).
LEDGER_TAIL="no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
LEDGER_POD='{nvidia.com/gpu: 1, nvidia.com/gpumem: 8000, nvidia.com/gpucores: 40}'

# ledger_card_mem UUID : hami_gpu_memory_allocated_bytes of the card (vgpu-sched's metrics).
ledger_card_mem() {
    curl -fsS --max-time 5 "$(vs_metrics_url)" |
        awk -v u="device_uuid=\"$1\"" '/^hami_gpu_memory_allocated_bytes\{/ && index($0, u) { print $NF }'
}

# ledger_card_mem_is UUID BYTES
ledger_card_mem_is() { [[ "$(ledger_card_mem "$1")" == "$2" ]]; }

# ledger_failed_scheduling POD : the messages of kube-scheduler's FailedScheduling events.
ledger_failed_scheduling() {
    e2e_kubectl get events --field-selector "involvedObject.name=$1,reason=FailedScheduling" \
        -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}'
}

# ledger_has_failed_scheduling POD MESSAGE
ledger_has_failed_scheduling() { grep -qxF "$2" < <(ledger_failed_scheduling "$1"); }

scenario_dra_ledger() {
    e2e_fake_nodes --cards 2 --devmem 16384 led
    vs_setup

    e2e_kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: led-gpus
spec:
  nodeName: led
  driver: $LEDGER_DRIVER
  pool:
    name: led
    generation: 1
    resourceSliceCount: 1
  devices:
    - name: gpu-0
      attributes:
        uuid: {string: GPU-led-0}
    - name: gpu-1
      attributes:
        uuid: {string: GPU-led-1}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: $LEDGER_DRIVER
spec:
  selectors:
    - cel:
        expression: device.driver == "$LEDGER_DRIVER"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: train
  namespace: default
spec:
  devices:
    requests:
      - name: gpu
        exactly:
          deviceClassName: $LEDGER_DRIVER
YAML
    e2e_kubectl patch resourceclaim train --subresource=status --type=merge -p "$(
        cat <<JSON
{"status":{"allocation":{"devices":{"results":[
  {"request":"gpu","driver":"$LEDGER_DRIVER","pool":"led","device":"gpu-1"}]}}}}
JSON
    )" >/dev/null || e2e_fail "allocating claim train through the status subresource"
    e2e_expect_eq "the claim's allocated device" \
        "$(e2e_jsonpath resourceclaim train '{.status.allocation.devices.results[0].device}')" gpu-1
    # The claim holds the whole card: all its memory counts as allocated.
    e2e_wait 30 "GPU-led-1 held by the claim in the metrics" ledger_card_mem_is GPU-led-1 17179869184 || {
        e2e_log "metrics: $(curl -fsS --max-time 5 "$(vs_metrics_url)" | grep '^hami_gpu_memory_allocated_bytes')"
        return 1
    }
    e2e_expect_eq "GPU-led-0 free" "$(ledger_card_mem GPU-led-0)" 0

    vs_pod p1 "$LEDGER_POD"
    vs_wait_running p1 || return 1
    vs_expect_placement p1 led 'GPU-led-0,NVIDIA,8000,40:;'
    vs_pod p2 "$LEDGER_POD"
    vs_wait_running p2 || return 1
    vs_expect_placement p2 led 'GPU-led-0,NVIDIA,8000,40:;'

    # GPU-led-0 is full (16000 of 16384 MiB), GPU-led-1 is the claim's.
    local reason='1/2 CardInsufficientMemory, 1/2 CardTimeSlicingExhausted (held by DRA claim default/train)'
    vs_pod p3 "$LEDGER_POD"
    vs_wait_unschedulable p3 || return 1
    local msg="0/1 nodes are available: 1 $reason. $LEDGER_TAIL"
    e2e_expect_eq "p3's PodScheduled message" "$(vs_condition_message p3)" "$msg"
    e2e_wait 30 "p3's FailedScheduling event naming the claim" \
        ledger_has_failed_scheduling p3 "$msg" || {
        e2e_fail "p3's FailedScheduling events: $(ledger_failed_scheduling p3)"
        return 1
    }
    vs_expect_event p3 FilteringFailed "1 nodes CardTimeSlicingExhausted(led) (held by DRA claim default/train)" || return 1
    vs_expect_event p3 FilteringFailed "1 nodes CardInsufficientMemory(led) (held by DRA claim default/train)" || return 1
    vs_expect_event p3 FilteringFailed "no available node, 1 nodes do not meet" || return 1
    e2e_expect_eq "p3 not bound" "$(e2e_jsonpath pod p3 '{.spec.nodeName}')" ""

    # Deleting the claim frees GPU-led-1: a new pod goes there (the card vgpu-sched picks first).
    # p3 goes first: kube-scheduler may retry it on the claim's deletion and place it there.
    e2e_kubectl delete pod p3 --wait=true >/dev/null
    e2e_kubectl delete resourceclaim train --wait=true >/dev/null
    e2e_wait 30 "GPU-led-1 free in the metrics" ledger_card_mem_is GPU-led-1 0 || return 1
    vs_pod p4 "$LEDGER_POD"
    vs_wait_running p4 || return 1
    vs_expect_placement p4 led 'GPU-led-1,NVIDIA,8000,40:;'
    vs_capacity
    e2e_log "dra-ledger: claim on GPU-led-1 sent p1, p2 to GPU-led-0, refused p3 naming it; deleted, p4 on GPU-led-1"
}
