# shellcheck shell=bash
# dra-mirror-v138: the dra-mirror scenario (dra-mirror.sh) on a v1.38.0-beta.0 control plane
# (kube-apiserver and kube-scheduler K8S_VERSION_VERB, built by `build.sh verb`, as
# preemption-verb): the mirrors fence DRA's allocator there the same way.

# shellcheck source=dra-mirror.sh
. "$E2E_DIR/scenarios/dra-mirror.sh"

scenario_dra_mirror_v138_pre_up() {
    local b
    for b in kube-apiserver kube-scheduler; do
        [[ -x "$E2E_BIN_VERB/$b" ]] || e2e_skip "$E2E_BIN_VERB/$b missing (tests/e2e/build.sh verb)"
    done
    scenario_dra_mirror_pre_up
    export VS_E2E_KUBE_APISERVER="$E2E_BIN_VERB/kube-apiserver"
    export VS_E2E_KUBE_SCHEDULER="$E2E_BIN_VERB/kube-scheduler"
    E2E_KUBE_APISERVER=$VS_E2E_KUBE_APISERVER
    E2E_KUBE_SCHEDULER=$VS_E2E_KUBE_SCHEDULER
}

scenario_dra_mirror_v138() {
    "$E2E_KUBE_APISERVER" --version | grep -qx "Kubernetes $K8S_VERSION_VERB" ||
        e2e_fail "kube-apiserver is not $K8S_VERSION_VERB: $("$E2E_KUBE_APISERVER" --version)"
    "$E2E_KUBE_SCHEDULER" --version | grep -qx "Kubernetes $K8S_VERSION_VERB" ||
        e2e_fail "kube-scheduler is not $K8S_VERSION_VERB: $("$E2E_KUBE_SCHEDULER" --version)"
    scenario_dra_mirror
}
