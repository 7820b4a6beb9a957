# shellcheck shell=bash
# dra-ledger-v138: the dra-ledger scenario (dra-ledger.sh) on a v1.38.0-beta.0 control plane
# (kube-apiserver and kube-scheduler K8S_VERSION_VERB, built by `build.sh verb`, as
# preemption-verb): a DRA claim counts on its HAMi card the same way there.

# shellcheck source=dra-ledger.sh
. "$E2E_DIR/scenarios/dra-ledger.sh"

LEDGER_TAIL="preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."

scenario_dra_ledger_v138_pre_up() {
    vs_pre_up
    vs_use_verb_control_plane
}

scenario_dra_ledger_v138() {
    vs_expect_verb_control_plane
    scenario_dra_ledger
}
