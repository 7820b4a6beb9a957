#!/usr/bin/env bash
# Fake GPU nodes for a control plane started by cluster.sh (thin wrapper over vs-e2e, the Go
# helper in tests/e2e/tools, built by build.sh).
#
# usage:
#   fake-nodes.sh create DIR [FLAGS] NAME...
#       Create (or refresh) Node objects NAME... through the API: label gpu=on and
#       e2e.vgpu-sched/fake-node=true, annotation hami.io/node-nvidia-register (HAMi JSON
#       format, hami-compat.md §1.1), capacity/allocatable (cpu, memory, pods, nvidia.com/gpu =
#       cards × split), a Ready condition, and without the not-ready taint new nodes get.
#       FLAGS (see `vs-e2e nodes -h`): --cards 2 --split 10 --devmem 16384 --devcore 100
#       --type 'NVIDIA-Tesla T4' --numa 1 --mode hami-core --unhealthy 1,3 --no-gpu
#       --register RAW_JSON --label k=v --annotation k=v; --concurrency 16 writes that many
#       nodes at once (default 1) and --timeout 10m bounds the whole set (default 60s), for
#       clusters of hundreds of nodes; other vendors' cards with
#       --vendor nvidia|ascend|dcu (a comma list for a node with several; each gets the card
#       flags): ascend registers hami.io/node-register-<--word, Ascend910B3> as the Ascend plugin
#       does (custominfo.NetworkID 0 for NPUs 0-3, 1 above; node annotation hami-vnpu-core from
#       --vnpu-core) with capacity huawei.com/<word>; dcu registers hami.io/node-dcu-register (the
#       plugin's legacy text, model --dcu-type DCU-K100_AI) with capacity hygon.com/dcunum
#   fake-nodes.sh agent DIR [FLAGS]
#       FLAGS (see `vs-e2e agent -h`): --hold 20ms (the emulated device plugin's Allocate
#       time, during which the node lock stays held), --terminate 3s (how long a pod being
#       deleted takes to stop, at most its grace period; default 0), --workers 64, injected
#       device-plugin faults --fail-rate 0.1 --delay-rate 0.1 --delay 3s --seed 14 (per pod,
#       drawn from a hash of the seed and its name; see tests/e2e/README.md).
#       Start the node emulation loop in the background (PID in DIR/pids, so cluster.sh down
#       stops it; log DIR/agent.log). For pods bound to fake nodes it does the HAMi device
#       plugins' handoff (hami-compat.md §6.4: hami.io/bind-phase=allocating => every entry of
#       each vendor's to-allocate list consumed — hami.io/vgpu-devices-to-allocate,
#       hami.io/dcu-devices-to-allocate, hami.io/<Ascend word>-devices-to-allocate —,
#       bind-phase=success, the node's hami.io/mutex.lock released if this pod owns it) and the kubelet's part (phase Running
#       via the status subresource; Failed/UnexpectedAdmissionError when allocation failed or a
#       GPU pod was never handed off; pods being deleted are removed). Pod annotation
#       e2e.vgpu-sched/handoff=fail|hold makes the emulated plugin fail, or never allocate.
set -euo pipefail

# shellcheck source=lib/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/common.sh"

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

(($# >= 2)) || usage
cmd=$1
DIR=$2
shift 2
[[ -f "$DIR/kubeconfig" ]] || e2e_die "$DIR/kubeconfig missing: start the cluster with cluster.sh up $DIR"
e2e_need_bins vs-e2e

case $cmd in
create)
    (($#)) || usage
    n="$("$E2E_BIN/vs-e2e" nodes --kubeconfig="$DIR/kubeconfig" --kubelet-version="$K8S_VERSION" "$@" | wc -l)"
    # Hundreds of names would make one very long line: the count and the last name instead.
    if (($# <= 40)); then
        e2e_log "fake nodes ready: $*"
    else
        e2e_log "fake nodes ready: $n nodes (${*:1:12} ... ${!#})"
    fi
    ;;
agent)
    "$E2E_DIR/cluster.sh" spawn "$DIR" agent "$E2E_BIN/vs-e2e" agent --kubeconfig="$DIR/kubeconfig" "$@"
    deadline=$((SECONDS + 60))
    until grep -q 'running' "$DIR/agent.log" 2>/dev/null; do
        ((SECONDS < deadline)) || e2e_die "agent did not start (log: $DIR/agent.log)"
        sleep 0.2
    done
    ;;
*) usage ;;
esac
