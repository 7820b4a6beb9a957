# shellcheck shell=bash
# dra-guard-v138: the dra-guard scenario (dra-guard.sh) on a v1.38.0-beta.0 control plane
# (kube-apiserver and kube-scheduler K8S_VERSION_VERB, built by `build.sh verb`, as
# preemption-verb): the DeviceClass trap and every report of the guard are the same there.

# shellcheck source=dra-guard.sh
. "$E2E_DIR/scenarios/dra-guard.sh"

scenario_dra_guard_v138_pre_up() {
    vs_pre_up
    vs_use_verb_control_plane
}

scenario_dra_guard_v138() {
    vs_expect_verb_control_plane
    scenario_dra_guard
}
