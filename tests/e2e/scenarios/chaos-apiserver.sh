# shellcheck shell=bash
# chaos-apiserver: kube-apiserver is killed (SIGKILL) in the middle of a 200-pod burst (once 20
# pods are bound) and started again on the same port 10 s later. Every watch breaks, every
# request fails meanwhile (vgpu-sched's, kube-scheduler's, the node agent's); vgpu-sched resumes
# or relists and must neither lose nor double-book a card. vgpu-sched keeps running throughout
# (same process: the scenario fails if its PID changed or it died). At the end, as in
# chaos-kill: every pod bound or refused with a reason, no card over-committed, every bound GPU
# pod with its allocation, vgpu-sched's metrics equal the usage on the pods, no node lock left.
#
# Opt-in (VS_E2E_CHAOS=1): it adds about a minute and a half to a run (see tests/e2e/README.md).

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_chaos_apiserver_pre_up() {
    if [[ "${VS_E2E_CHAOS:-0}" != 1 ]]; then
        e2e_skip "chaos scenarios are opt-in (VS_E2E_CHAOS=1)" || exit 77
    fi
    vs_pre_up
}

scenario_chaos_apiserver() {
    local ns=chaos pid binds_before t0 t1
    vs_chaos_nodes
    vs_setup
    vs_namespace "$ns"
    vs_chaos_burst "$ns"

    e2e_wait 120 "20 pods bound" vs_bound_at_least 20 "$ns" || return 1
    pid="$(vs_pid)"
    t0=$EPOCHREALTIME
    "$E2E_DIR/cluster.sh" restart-apiserver "$E2E_CLUSTER" 10 || {
        e2e_fail "kube-apiserver did not come back"
        return 1
    }
    t1=$EPOCHREALTIME
    binds_before="$(vs_log_count 'event=bind ')"
    e2e_log "kube-apiserver away (kill + 10 s + start until /readyz) for $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s; $binds_before binds logged by then"
    if [[ "$(vs_pid)" != "$pid" ]] || ! kill -0 "$pid" 2>/dev/null; then
        e2e_fail "vgpu-sched (pid $pid) did not survive the outage"
        return 1
    fi
    e2e_wait 60 "vgpu-sched /readyz 200 after the outage" vs_ready || return 1
    e2e_wait 120 "a Bind after the outage" \
        eval '(($(vs_log_count "event=bind ") > binds_before))' || return 1
    e2e_log "apiserver back to the next Bind: $(awk -v a="$t1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s (polled every 0.5 s)"

    vs_chaos_end "$ns" 200
    e2e_expect_eq "vgpu-sched pid after the outage" "$(vs_pid)" "$pid"
}
