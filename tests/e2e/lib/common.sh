# shellcheck shell=bash
# Shared helpers for tests/e2e scripts. Source it; do not execute it.
#
# Sets: E2E_DIR (tests/e2e), E2E_CACHE (cache root), E2E_BIN (binaries of the pinned versions),
# E2E_SRC (throwaway build modules), K8S_VERSION, K8S_STAGING_VERSION, ETCD_VERSION, HELM_VERSION,
# E2E_BIN_VERB and K8S_VERSION_VERB (the verb-mode kube-scheduler), E2E_KUBE_SCHEDULER.
# shellcheck disable=SC2034  # the variables are for the scripts that source this file

E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../versions.env
. "$E2E_DIR/versions.env"

# Staging modules (k8s.io/api, apimachinery, client-go, ...) are tagged v0.<minor>.<patch>
# for Kubernetes v1.<minor>.<patch>.
K8S_STAGING_VERSION="v0.${K8S_VERSION#v1.}"
E2E_CACHE="${VS_E2E_CACHE:-$HOME/.cache/vgpu-sched-e2e}"
E2E_BIN="$E2E_CACHE/bin-$K8S_VERSION"
# kube-apiserver and kube-scheduler K8S_VERSION_VERB (build.sh verb), for the verb-mode
# preemption scenario.
E2E_BIN_VERB="$E2E_CACHE/bin-$K8S_VERSION_VERB"
# The kube-scheduler binary cluster.sh starts (VS_E2E_KUBE_SCHEDULER overrides; a scenario's
# pre_up hook may export it).
E2E_KUBE_SCHEDULER="${VS_E2E_KUBE_SCHEDULER:-$E2E_BIN/kube-scheduler}"
# The kube-apiserver binary cluster.sh starts (VS_E2E_KUBE_APISERVER overrides, as above).
E2E_KUBE_APISERVER="${VS_E2E_KUBE_APISERVER:-$E2E_BIN/kube-apiserver}"
E2E_SRC="$E2E_CACHE/src"

e2e_log() { printf '%s [e2e] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
e2e_die() { printf '%s [e2e] FATAL: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

# e2e_need_bins NAME... : fail with a hint unless tests/e2e/build.sh has produced NAME.
e2e_need_bins() {
    local b
    for b in "$@"; do
        [[ -x "$E2E_BIN/$b" ]] || e2e_die "$E2E_BIN/$b missing: run tests/e2e/build.sh first"
    done
}

# e2e_need_cmds NAME... : fail unless each host command exists.
e2e_need_cmds() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || e2e_die "host command '$c' not found"
    done
}
