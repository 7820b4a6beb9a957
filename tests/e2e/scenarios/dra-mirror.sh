# shellcheck shell=bash
# dra-mirror: HAMi allocations in DRA (docs/dra.md "mirror claims") against kube-scheduler's
# real DRA allocator. Node dm-a has two cards, A (GPU-dm-a-0) and B (GPU-dm-a-1); a ResourceSlice
# of driver gpu.nvidia.com lists them as gpu-0 (A) and gpu-1 (B), and DeviceClass gpu.nvidia.com
# selects that driver (no extendedResourceName). A DRA pod here is a pod with a pre-created
# ResourceClaim that kube-scheduler allocates and binds (no kubelet: bound is enough).
#
#   1. mirrors off: a HAMi pod on A, then a DRA claim: the allocator hands out A, its first
#      device: the double-booking the feature prevents (negative control);
#   2. vgpu-sched restarted with --dra-mirror=fence: the start-up reconcile creates the mirror of
#      A (one per card, allocated, gpu-0); a new DRA claim gets B, a second one stays pending;
#   3. the HAMi pod deleted: A's mirror is deallocated and deleted, the pending claim gets A;
#   4. crash: vgpu-sched killed with SIGKILL right after Binds; while it is down a placed pod is
#      deleted, A's mirror goes missing, B's is left created but not allocated (what a kill
#      between the two writes leaves) and an orphan appears; after the restart the mirrors are
#      exactly the cards of the placed pods (no orphan, none missing, all allocated).

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"
# shellcheck source=../lib/dra-mirror.sh
. "$E2E_DIR/lib/dra-mirror.sh"

scenario_dra_mirror_pre_up() {
    vs_pre_up
    # The mirror namespace's Role and resourceclaims/binding come from the chart.
    export VS_E2E_HELM_FLAGS="--set scheduler.draMirror.mode=fence"
}

dm_dra_objects() {
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
  name: dm-a-gpu
spec:
  driver: gpu.nvidia.com
  nodeName: dm-a
  pool: {name: dm-a, generation: 1, resourceSliceCount: 1}
  devices:
    - name: gpu-0
      attributes:
        uuid: {string: GPU-dm-a-0}
    - name: gpu-1
      attributes:
        uuid: {string: GPU-dm-a-1}
YAML
}

# dm_dra_pod NAME : ResourceClaim NAME (one device of class gpu.nvidia.com) and pod NAME using it,
# scheduled by kube-scheduler alone (it asks no resource the extender manages).
dm_dra_pod() {
    e2e_kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: $1, namespace: default}
spec:
  devices:
    requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
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

# dm_device CLAIM : the device its allocation names ("" while not allocated).
dm_device() { e2e_jsonpath resourceclaim "$1" '{.status.allocation.devices.results[0].device}'; }
dm_allocated() { [[ -n "$(dm_device "$1")" ]]; }
dm_bound() { [[ -n "$(e2e_jsonpath pod "$1" '{.spec.nodeName}')" ]]; }

# dm_hami NAME CARD : a HAMi pod (label dm=hami) pinned to CARD.
dm_hami() {
    vs_pod_yaml "$1" '{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10}' \
        "{nvidia.com/use-gpuuuid: $2}" | sed 's/^  annotations:/  labels: {dm: hami}\n  annotations:/' |
        e2e_kubectl create -f - >/dev/null
}

scenario_dra_mirror() {
    e2e_fake_nodes --cards 2 --devmem 16384 dm-a
    dm_dra_objects
    vs_setup

    # 1. mirrors off: the double-booking
    dm_hami h0 GPU-dm-a-0
    vs_wait_running h0 || return 1
    e2e_expect_eq "h0's card" "$(vs_devices h0)" "GPU-dm-a-0,NVIDIA,1000,10:;"
    e2e_expect_eq "mirrors while off" "$(dm_mirrors)" ""
    dm_dra_pod n0
    e2e_wait 60 "claim n0 allocated" dm_allocated n0 || return 1
    e2e_expect_eq "mirrors off: the DRA claim gets h0's card A" "$(dm_device n0)" gpu-0
    dm_drop_dra n0

    # 2. mirrors on: the start-up reconcile mirrors h0; DRA gets B, then nothing
    vs_stop
    vs_start --dra-mirror=fence
    e2e_wait 30 "h0's mirror" dm_mirrors_match dm=hami || return 1
    e2e_expect_eq "the mirror of h0's card" "$(dm_mirrors)" "GPU-dm-a-0/gpu-0"
    e2e_expect_eq "start-up reconcile" "$(vs_log_since_start 'event=dra_mirror_reconcile ')" \
        "level=info event=dra_mirror_reconcile kept=0 created=1 deleted=0 failed=0"
    dm_dra_pod c1
    e2e_wait 60 "claim c1 allocated" dm_allocated c1 || return 1
    e2e_expect_eq "mirrors on: the DRA claim gets B" "$(dm_device c1)" gpu-1
    e2e_wait 60 "pod c1 bound" dm_bound c1 || return 1
    dm_dra_pod c2
    vs_wait_unschedulable c2 || return 1
    e2e_expect_eq "claim c2 not allocated" "$(dm_device c2)" ""

    # 3. release: h0 leaves, its mirror goes, c2 gets A
    local t0=$EPOCHREALTIME
    e2e_kubectl delete pod h0 --wait=false >/dev/null
    e2e_wait 60 "h0's card's mirror gone" dm_mirrors_match dm=hami || return 1
    e2e_expect_eq "no mirror left" "$(dm_mirrors)" ""
    e2e_wait 120 "claim c2 allocated after the release" dm_allocated c2 || return 1
    e2e_expect_eq "c2 gets A" "$(dm_device c2)" gpu-0
    e2e_log "release: h0 deleted to c2 allocated in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s"
    dm_drop_dra c1
    dm_drop_dra c2

    # 4. crash: SIGKILL right after Binds; what a kill can leave, made while vgpu-sched is down
    local i pid
    for i in 1 2 3; do dm_hami "k$i" GPU-dm-a-$((i % 2)); done
    for i in 1 2 3; do vs_wait_running "k$i" || return 1; done
    dm_hami k4 GPU-dm-a-0
    dm_hami k5 GPU-dm-a-1
    e2e_wait 30 "a Bind of k4 or k5 began" dm_bound_any k4 k5 || return 1
    pid="$(vs_pid)"
    kill -KILL "$pid"
    e2e_log "vgpu-sched (pid $pid) killed with SIGKILL"
    e2e_kubectl delete pod k1 --wait=false >/dev/null
    e2e_wait 30 "k1 gone" e2e_gone pod k1 || return 1
    # A's mirror never made (killed before its create), B's made but not allocated (killed between
    # the create and the status write), and an orphan (its card's pods gone while it was down).
    e2e_kubectl delete -n "$DM_NS" "$(dm_mirror_of GPU-dm-a-0)" >/dev/null
    e2e_kubectl patch -n "$DM_NS" "$(dm_mirror_of GPU-dm-a-1)" --subresource=status --type=merge \
        -p '{"status":{"allocation":null}}' >/dev/null
    e2e_kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: vgpu-mirror-card-stale
  namespace: $DM_NS
  labels: {vgpu-sched.io/mirror-of: card}
  annotations: {vgpu-sched.io/mirror-node: dm-a, vgpu-sched.io/mirror-card: GPU-gone}
spec:
  devices:
    requests: [{name: r0, exactly: {deviceClassName: gpu.nvidia.com}}]
YAML
    e2e_expect_eq "the mirrors the kill left" "$(dm_mirrors | paste -sd' ')" "GPU-dm-a-1/ GPU-gone/"
    vs_start --dra-mirror=fence
    for i in 2 3 4 5; do vs_wait_running "k$i" || return 1; done
    e2e_wait 60 "mirrors = the placed HAMi pods' cards after the restart" dm_mirrors_match dm=hami || return 1
    e2e_expect_eq "mirrors after the crash" "$(dm_mirrors | paste -sd' ')" "GPU-dm-a-0/gpu-0 GPU-dm-a-1/gpu-1"
    e2e_expect_eq "reconcile after the crash" "$(vs_log_since_start 'event=dra_mirror_reconcile ')" \
        "level=info event=dra_mirror_reconcile kept=0 created=2 deleted=1 failed=0"
    e2e_log "dra-mirror: double-booking without mirrors; with them DRA took B then waited; release and crash left the mirrors exact"
}

# dm_mirror_of CARD : "resourceclaim/NAME" of the card's mirror.
dm_mirror_of() {
    printf 'resourceclaim/%s' "$(e2e_kubectl get resourceclaims -n "$DM_NS" -l vgpu-sched.io/mirror-of=card \
        -o jsonpath="{.items[?(@.metadata.annotations.vgpu-sched\.io/mirror-card==\"$1\")].metadata.name}")"
}

# dm_bound_any POD... : one of them has a nodeName (kube-scheduler called Bind on it).
dm_bound_any() {
    local p
    for p in "$@"; do dm_bound "$p" && return 0; done
    return 1
}
