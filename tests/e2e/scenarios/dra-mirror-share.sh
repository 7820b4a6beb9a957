# shellcheck shell=bash
# dra-mirror-share: --dra-mirror=share against kube-scheduler's consumable-capacity allocator
# (v1.36.3, DRAConsumableCapacity beta and on). Node dm-s has two 16 GiB cards; the slice lists
# them as gpu-0 (A) and gpu-1 (B) with allowMultipleAllocations and capacity memory 16Gi, cores
# 100. A HAMi pod holds 8 GiB of A; its mirror consumes exactly that (shareID = the pod's uid).
# (and 30 cores). A claim for 10 GiB and 10 cores of A stays pending (8 + 10 > 16), one for 8 GiB
# and 70 cores of A is allocated beside the mirror (16 GiB and 100 cores of A consumed).

# shellcheck source=dra-mirror.sh
. "$E2E_DIR/scenarios/dra-mirror.sh"

scenario_dra_mirror_share_pre_up() {
    vs_pre_up
    export VS_E2E_HELM_FLAGS="--set scheduler.draMirror.mode=share"
}

# ds_claim NAME MEMORY CORES : claim NAME for MEMORY and CORES of card A (selected by its uuid)
# and a pod using it. A capacity a request does not name is consumed whole (no requestPolicy).
ds_claim() {
    e2e_kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: $1, namespace: default}
spec:
  devices:
    requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          selectors:
            - cel: {expression: 'device.attributes["gpu.nvidia.com"].uuid == "GPU-dm-s-0"'}
          capacity: {requests: {memory: $2, cores: "$3"}}
---
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
  labels: {hami.io/webhook: ignore}
spec:
  schedulerName: hami-scheduler
  resourceClaims: [{name: gpu, resourceClaimName: $1}]
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources: {claims: [{name: gpu}]}
YAML
}

scenario_dra_mirror_share() {
    e2e_fake_nodes --cards 2 --devmem 16384 dm-s
    e2e_kubectl apply -f - >/dev/null <<'YAML'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  selectors:
    - cel:
        expression: device.driver == "gpu.nvidia.com"
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: dm-s-gpu
spec:
  driver: gpu.nvidia.com
  nodeName: dm-s
  pool: {name: dm-s, generation: 1, resourceSliceCount: 1}
  devices:
    - name: gpu-0
      allowMultipleAllocations: true
      attributes:
        uuid: {string: GPU-dm-s-0}
      capacity:
        memory: {value: 16Gi}
        cores: {value: "100"}
    - name: gpu-1
      allowMultipleAllocations: true
      attributes:
        uuid: {string: GPU-dm-s-1}
      capacity:
        memory: {value: 16Gi}
        cores: {value: "100"}
YAML
    e2e_expect_eq "the slice keeps allowMultipleAllocations (DRAConsumableCapacity on)" \
        "$(e2e_jsonpath resourceslice dm-s-gpu '{.spec.devices[0].allowMultipleAllocations}')" true
    VS_E2E_SERVE_FLAGS="--dra-mirror=share" vs_setup

    vs_pod_yaml hs '{nvidia.com/gpu: 1, nvidia.com/gpumem: 8192, nvidia.com/gpucores: 30}' \
        '{nvidia.com/use-gpuuuid: GPU-dm-s-0}' | e2e_kubectl create -f - >/dev/null
    vs_wait_running hs || return 1
    local uid
    uid="$(e2e_jsonpath pod hs '{.metadata.uid}')"
    e2e_expect_eq "the share mirror of hs" "$(e2e_kubectl get resourceclaims -n "$DM_NS" \
        -l "vgpu-sched.io/mirror-of=$uid" -o \
        jsonpath='{range .items[*]}{.status.allocation.devices.results[0].device} {.status.allocation.devices.results[0].shareID} {.status.allocation.devices.results[0].consumedCapacity.memory} {.status.allocation.devices.results[0].consumedCapacity.cores}{end}')" \
        "gpu-0 $uid 8Gi 30" # the API server writes 8192Mi canonically

    ds_claim big 10Gi 10
    vs_wait_unschedulable big || return 1
    e2e_expect_eq "10Gi beside the mirror's 8Gi: not allocated" "$(dm_device big)" ""
    ds_claim fits 8Gi 70
    e2e_wait 60 "claim fits allocated" dm_allocated fits || return 1
    e2e_expect_eq "8Gi beside the mirror: on A" "$(dm_device fits)" gpu-0
    e2e_expect_eq "fits shares A" \
        "$(e2e_jsonpath resourceclaim fits '{.status.allocation.devices.results[0].consumedCapacity.memory}')" 8Gi
    [[ -n "$(e2e_jsonpath resourceclaim fits '{.status.allocation.devices.results[0].shareID}')" ]] ||
        e2e_fail "claim fits has no shareID"
    e2e_expect_eq "big still not allocated" "$(dm_device big)" ""
    e2e_log "dra-mirror-share: the mirror consumed hs's 8Gi of A; 10Gi refused, 8Gi allocated beside it (16Gi of 16Gi)"
}
