#!/usr/bin/env bash
# Run end-to-end scenarios, each on a fresh control plane.
#   tests/e2e/run.sh              every tests/e2e/scenarios/*.sh, in name order
#   tests/e2e/run.sh NAME...      only those (file names without .sh)
# Prints "e2e: N passed, M failed" and exits non-zero if any failed. Needs build.sh's binaries
# (run tests/e2e/build.sh first; it is a no-op when they are up to date).
# VS_E2E_RUN_DIR=DIR keeps every cluster directory (logs) there.
set -euo pipefail

# shellcheck source=lib/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/common.sh"
# shellcheck source=lib/scenario.sh
. "$E2E_DIR/lib/scenario.sh"

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
e2e_run_scenarios e2e "${files[@]}"
