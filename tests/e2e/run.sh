#!/usr/bin/env bash
# Run the end-to-end scenarios, each on a fresh control plane (etcd, kube-apiserver,
# kube-scheduler on loopback; see tests/e2e/README.md).
#   tests/e2e/run.sh [VGPU-SCHED] [NAME...]
#     VGPU-SCHED  the vgpu-sched binary under test (default build/vgpu-sched); taken as such when
#                 the first argument contains a '/' or names an existing file
#     NAME...     only these scenarios (file names under scenarios/, without .sh); default all,
#                 in name order
# First runs tests/e2e/build.sh (builds the control-plane binaries from Go modules on first use,
# a no-op when the cache is warm). Every cluster is torn down after its scenario, pass or fail.
# Prints exactly one closing line "e2e: N passed, M failed" and exits non-zero if any failed.
# VS_E2E_RUN_DIR=DIR keeps every cluster directory (logs) there; VS_E2E_SKIP_BUILD=1 skips
# build.sh (the binaries must then be there). The verb-mode control plane (build.sh verb: a
# v1.38 kube-apiserver and kube-scheduler, another Go toolchain) is built too; when it cannot be,
# preemption-verb is skipped (and says why). VS_E2E_PREEMPT_VERB=0 neither builds nor runs it.
set -euo pipefail

# shellcheck source=lib/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/common.sh"
# shellcheck source=lib/scenario.sh
. "$E2E_DIR/lib/scenario.sh"

vgpu="$E2E_DIR/../../build/vgpu-sched"
if (($#)) && [[ "$1" == */* || -f "$1" ]]; then
    vgpu=$1
    shift
fi
[[ "$vgpu" == /* ]] || vgpu="$PWD/$vgpu"
if [[ -d "$(dirname "$vgpu")" ]]; then vgpu="$(cd "$(dirname "$vgpu")" && pwd)/$(basename "$vgpu")"; fi
export VS_E2E_VGPU_SCHED="$vgpu"

files=()
if (($#)); then
    for name in "$@"; do
        f="$E2E_DIR/scenarios/${name%.sh}.sh"
        [[ -f "$f" ]] || e2e_die "no scenario $f"
        files+=("$f")
    done
else
    for f in "$E2E_DIR"/scenarios/*.sh; do files+=("$f"); done
fi

if [[ "${VS_E2E_SKIP_BUILD:-0}" != 1 ]]; then
    if ! "$E2E_DIR/build.sh" tools etcd k8s helm >&2; then
        e2e_log "tests/e2e/build.sh failed"
        printf 'e2e: 0 passed, %d failed\n' "${#files[@]}"
        exit 1
    fi
    # The verb-mode control plane (scenario preemption-verb) needs another Go toolchain from the
    # module proxy; when it cannot be built, that scenario is skipped (and says why).
    if [[ "${VS_E2E_PREEMPT_VERB:-1}" != 0 ]] && ! "$E2E_DIR/build.sh" verb >&2; then
        e2e_log "WARNING: the $K8S_VERSION_VERB control plane could not be built (tests/e2e/build.sh verb): preemption-verb will be skipped"
    fi
fi
[[ -x "$VS_E2E_VGPU_SCHED" ]] || e2e_log "WARNING: $VS_E2E_VGPU_SCHED is not an executable; the vgpu-sched scenarios will fail"
e2e_log "vgpu-sched under test: $VS_E2E_VGPU_SCHED"
e2e_run_scenarios e2e "${files[@]}"
