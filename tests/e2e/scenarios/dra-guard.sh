# shellcheck shell=bash
# dra-guard: the DeviceClass trap (docs/dra.md) on the real control plane, and the guard's
# reports. A GPU pod is Running; then a DeviceClass maps nvidia.com/gpu to DRA (what NVIDIA's
# and HAMi's DRA charts create). vgpu-sched logs it once and shows it in /readyz and /metrics;
# every GPU pod created from then on gets the admission warning from the webhook, and
# kube-scheduler refuses it ("cannot fit resource") without asking vgpu-sched (no Filter call).
# A pod asking no GPU is not warned. Deleting the class clears every report, and a GPU pod
# created then is placed by vgpu-sched.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_dra_guard_pre_up() { vs_pre_up; }

DRA_WARNING="Warning: DeviceClass gpu.nvidia.com maps nvidia.com/gpu to DRA: kube-scheduler will refuse this pod before vgpu-sched sees it"
DRA_EFFECT="kube-scheduler refuses every pod asking nvidia.com/gpu before vgpu-sched sees it"

# dra_filter_total : vgpu_sched_filter_total summed over outcomes.
dra_filter_total() {
    curl -fsS --max-time 5 "$(vs_metrics_url)" |
        awk '/^vgpu_sched_filter_total\{/ { s += $2 } END { print s + 0 }'
}

# dra_metric : the vgpu_sched_dra_extended_resource_conflict samples.
dra_metric() {
    curl -fsS --max-time 5 "$(vs_metrics_url)" | grep '^vgpu_sched_dra_extended_resource_conflict' || true
}

# dra_create NAME LIMITS : creates the pod; prints kubectl's stderr (the admission warnings).
dra_create() {
    local err
    err="$(vs_pod_yaml "$1" "$2" | e2e_kubectl create -f - 2>&1 >/dev/null)" ||
        e2e_fail "create $1: $err"
    printf '%s' "$err"
}

# dra_cannot_fit POD : kube-scheduler's own refusal (DynamicResources), naming no extender.
dra_cannot_fit() {
    vs_unschedulable "$1" && [[ "$(vs_condition_message "$1")" == *"cannot fit resource"* ]]
}

scenario_dra_guard() {
    e2e_fake_nodes --cards 2 --devmem 16384 dra-a dra-b
    vs_setup

    e2e_expect_eq "warnings before the class" \
        "$(dra_create before '{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 10}')" ""
    vs_wait_running before || return 1
    e2e_expect_eq "/readyz before the class" "$(vs_ready)" '{"status":"ok","degraded":[]}'

    e2e_kubectl apply -f - >/dev/null <<'YAML'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  selectors:
    - cel:
        expression: device.driver == "gpu.nvidia.com"
  extendedResourceName: nvidia.com/gpu
YAML
    e2e_expect_eq "the class keeps extendedResourceName" \
        "$(e2e_jsonpath deviceclass gpu.nvidia.com '{.spec.extendedResourceName}')" nvidia.com/gpu
    e2e_wait 30 "the guard's log line" grep -qF "event=dra_extended_resource_conflict " "$E2E_CLUSTER/vgpu-sched.log" || return 1
    e2e_expect_eq "guard log lines" "$(vs_log_since_start 'event=dra_extended_resource_conflict')" \
        "level=warn event=dra_extended_resource_conflict deviceclass=gpu.nvidia.com resource=nvidia.com/gpu effect=\"$DRA_EFFECT\""
    e2e_expect_eq "/readyz with the class" "$(vs_ready)" \
        "{\"status\":\"ok\",\"degraded\":[],\"draConflicts\":[{\"deviceclass\":\"gpu.nvidia.com\",\"resource\":\"nvidia.com/gpu\",\"effect\":\"$DRA_EFFECT\"}]}"
    e2e_expect_eq "the metric" "$(dra_metric)" \
        'vgpu_sched_dra_extended_resource_conflict{deviceclass="gpu.nvidia.com",resource="nvidia.com/gpu"} 1'

    local filters
    filters="$(dra_filter_total)"
    e2e_expect_eq "warning for a shared GPU pod" \
        "$(dra_create shared '{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 10}')" "$DRA_WARNING"
    e2e_expect_eq "warning for a whole-GPU pod" "$(dra_create whole '{"nvidia.com/gpu": 1}')" "$DRA_WARNING"
    e2e_expect_eq "no warning for a CPU pod" "$(dra_create cpu '{"cpu": "100m"}')" ""
    e2e_wait 60 "pod shared refused by kube-scheduler" dra_cannot_fit shared || return 1
    e2e_wait 60 "pod whole refused by kube-scheduler" dra_cannot_fit whole || return 1
    e2e_expect_eq "Filter calls while the class exists" "$(dra_filter_total)" "$filters"
    e2e_expect_eq "shared not annotated by vgpu-sched" \
        "$(e2e_jsonpath pod shared '{.metadata.annotations.hami\.io/vgpu-node}')" ""
    e2e_expect_eq "before still Running" "$(e2e_jsonpath pod before '{.status.phase}')" Running

    e2e_kubectl delete deviceclass gpu.nvidia.com >/dev/null
    e2e_wait 30 "the guard's resolved line" grep -qF "event=dra_extended_resource_conflict_resolved" "$E2E_CLUSTER/vgpu-sched.log" || return 1
    e2e_expect_eq "/readyz after the class" "$(vs_ready)" '{"status":"ok","degraded":[]}'
    e2e_expect_eq "the metric after the class" "$(dra_metric)" ""
    # Pods created now are placed by vgpu-sched again (the refused ones wait for kube-scheduler's
    # own retry of unschedulable pods, up to podMaxInUnschedulablePodsDuration, 5 min).
    e2e_expect_eq "no warning after the class" \
        "$(dra_create after '{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 10}')" ""
    vs_wait_running after || return 1
    [[ "$(dra_filter_total)" -gt "$filters" ]] || e2e_fail "no Filter call for pod after"
    e2e_log "dra-guard: the trap reproduced with the warning, /readyz and metric; cleared on delete"
}
