# shellcheck shell=bash
# Mirror claims (docs/dra.md "HAMi allocations in DRA: mirror claims") as the dra-mirror
# scenarios see them, fence mode: one mirror per card. The fixtures name card k of node N
# GPU-N-k and list it in N's ResourceSlice as device gpu-k. Source it after lib/vgpu.sh.

DM_NS=vgpu-sched # the mirrors' namespace: the one of vgpu-sched's kubeconfig

# dm_mirrors : "card/device" of every mirror claim (the device empty while not allocated),
# sorted, one per line.
dm_mirrors() {
    e2e_kubectl get resourceclaims -n "$DM_NS" -l vgpu-sched.io/mirror-of -o \
        jsonpath='{range .items[*]}{.metadata.annotations.vgpu-sched\.io/mirror-card}/{.status.allocation.devices.results[0].device}{"\n"}{end}' |
        sort
}

# dm_want SELECTOR : the same, as it should be: "card/gpu-k" for every card a bound pod of the
# default namespace matching SELECTOR (HAMi pods) holds, sorted, unique.
dm_want() {
    e2e_kubectl get pods -l "$1" -o \
        jsonpath='{range .items[*]}{.spec.nodeName} {.metadata.annotations.hami\.io/vgpu-devices-allocated}{"\n"}{end}' |
        awk '$1 != "" && $2 != "" { split($2, d, ","); k = d[1]; sub(/.*-/, "", k); print d[1] "/gpu-" k }' |
        sort -u
}

# dm_mirrors_match SELECTOR : the mirrors are exactly dm_want SELECTOR.
dm_mirrors_match() { [[ "$(dm_mirrors)" == "$(dm_want "$1")" ]]; }

# dm_drop_dra NAME : the DRA pod and its claim gone (no kubelet, no kube-controller-manager:
# the pod is force-deleted, the claim's reservation and finalizer removed by hand).
dm_drop_dra() {
    e2e_kubectl delete pod "$1" --grace-period=0 --force >/dev/null 2>&1 || true
    e2e_kubectl patch resourceclaim "$1" --subresource=status --type=merge \
        -p '{"status":{"reservedFor":null,"allocation":null}}' >/dev/null 2>&1 || true
    e2e_kubectl patch resourceclaim "$1" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
    e2e_kubectl delete resourceclaim "$1" --wait=true >/dev/null
}
