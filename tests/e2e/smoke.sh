#!/usr/bin/env bash
# Smoke test of the e2e infrastructure: a real control plane (no extender), fake GPU nodes, one
# pod scheduled by the hami-scheduler profile. Prints "e2e-smoke: 1 passed, 0 failed" on success.
# Needs the binaries from tests/e2e/build.sh. VS_E2E_RUN_DIR=DIR keeps the work directory.
set -euo pipefail

# shellcheck source=lib/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/common.sh"
# shellcheck source=lib/scenario.sh
. "$E2E_DIR/lib/scenario.sh"

e2e_run_scenarios e2e-smoke "$E2E_DIR/scenarios/smoke.sh"
