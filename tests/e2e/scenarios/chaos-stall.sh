# shellcheck shell=bash
# chaos-stall: kube-apiserver hangs (SIGSTOP) for 45 s in the middle of a 200-pod burst, once 20
# pods are bound, then goes on (SIGCONT). Unlike chaos-apiserver nothing fails fast: requests on
# open connections hang (or fail after --kube-timeout when one is set, e.g. through
# VS_E2E_SERVE_FLAGS="--kube-timeout 10s"), new TLS handshakes time out after 10 s. vgpu-sched
# keeps running throughout and must neither lose nor double-book a card; at the end, as in
# chaos-kill: every pod bound or refused with a reason, no card over-committed, every bound GPU
# pod with its allocation, vgpu-sched's metrics equal the usage on the pods, no node lock left.
# It prints how many Binds timed out waiting for Filter's patch and how many Filter patches
# failed: both 0 by default, where Filter writes nothing (its decision travels in the Binding);
# VS_E2E_SERVE_FLAGS=--patch-at-filter runs HAMi's way. It does not reliably reproduce the double-booking that reservation ids prevent
# (docs/reliability.md "API outages": a pod filtered again onto the same card while its first
# patch was still out, that patch failing afterwards): in its runs each failed patch came before its pod's next
# Filter. test_server a_failed_patch_of_an_earlier_identical_decision_keeps_the_current_one
# covers that chain deterministically.
#
# Opt-in (VS_E2E_CHAOS=1; tests/e2e/README.md).

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_chaos_stall_pre_up() {
    if [[ "${VS_E2E_CHAOS:-0}" != 1 ]]; then
        e2e_skip "chaos scenarios are opt-in (VS_E2E_CHAOS=1)" || exit 77
    fi
    vs_pre_up
}

scenario_chaos_stall() {
    local ns=chaos pid binds_before t1
    vs_chaos_nodes
    vs_setup
    vs_namespace "$ns"
    vs_chaos_burst "$ns"

    e2e_wait 120 "20 pods bound" vs_bound_at_least 20 "$ns" || return 1
    pid="$(vs_pid)"
    "$E2E_DIR/cluster.sh" pause-apiserver "$E2E_CLUSTER" 45 || {
        e2e_fail "kube-apiserver could not be paused and continued"
        return 1
    }
    t1=$EPOCHREALTIME
    binds_before="$(vs_log_count 'event=bind ')"
    e2e_log "during the stall: $(vs_log_count 'timed out waiting for the filter decision') Binds timed out waiting for Filter's patch, $(vs_log_count 'event=pod_patch_failed') Filter patches failed; $binds_before binds logged"
    if [[ "$(vs_pid)" != "$pid" ]] || ! kill -0 "$pid" 2>/dev/null; then
        e2e_fail "vgpu-sched (pid $pid) did not survive the stall"
        return 1
    fi
    e2e_wait 60 "vgpu-sched /readyz 200 after the stall" vs_ready || return 1
    e2e_wait 120 "a Bind after the stall" \
        eval '(($(vs_log_count "event=bind ") > binds_before))' || return 1
    e2e_log "apiserver continued to the next Bind: $(awk -v a="$t1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s (polled every 0.5 s)"

    vs_chaos_end "$ns" 200
    e2e_log "whole run: $(vs_log_count 'timed out waiting for the filter decision') Binds timed out waiting for Filter's patch, $(vs_log_count 'event=pod_patch_failed') Filter patches failed"
    e2e_expect_eq "vgpu-sched pid after the stall" "$(vs_pid)" "$pid"
}
