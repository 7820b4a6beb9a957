# shellcheck shell=bash
# dra-mirror-v138: the dra-mirror scenario (dra-mirror.sh) on a v1.38.0-beta.0 control plane
# (kube-apiserver and kube-scheduler K8S_VERSION_VERB, built by `build.sh verb`, as
# preemption-verb): the mirrors fence DRA's allocator there the same way.

# shellcheck source=dra-mirror.sh
. "$E2E_DIR/scenarios/dra-mirror.sh"

scenario_dra_mirror_v138_pre_up() {
    scenario_dra_mirror_pre_up
    vs_use_verb_control_plane
}

scenario_dra_mirror_v138() {
    vs_expect_verb_control_plane
    scenario_dra_mirror
}
