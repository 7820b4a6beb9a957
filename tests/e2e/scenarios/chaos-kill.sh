# shellcheck shell=bash
# chaos-kill: vgpu-sched is killed with SIGKILL in the middle of a 200-pod burst (once 20 pods
# are bound) and started again 2 s later. The restarted process is a new leadership term: it
# lists nodes and pods before /readyz turns 200 and breaks the node locks its predecessor left
# (owner unbound: the Bind died with it). At the end, as in `burst`: every pod bound or refused,
# no card over-committed, vgpu-sched's metrics equal the usage on the pods, and no node lock left.
#
# Opt-in (VS_E2E_CHAOS=1): it adds about a minute to a run (see tests/e2e/README.md).

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

# Checked before the control plane comes up, so a skipped run costs nothing.
scenario_chaos_kill_pre_up() {
    if [[ "${VS_E2E_CHAOS:-0}" != 1 ]]; then
        e2e_skip "chaos scenarios are opt-in (VS_E2E_CHAOS=1)" || exit 77
    fi
    vs_pre_up
}

scenario_chaos_kill() {
    local ns=chaos pid binds_before repairs_before t_kill
    vs_chaos_nodes
    vs_setup
    vs_namespace "$ns"
    vs_chaos_burst "$ns"

    e2e_wait 120 "20 pods bound" vs_bound_at_least 20 "$ns" || return 1
    pid="$(vs_pid)"
    kill -KILL "$pid"
    t_kill=$EPOCHREALTIME
    binds_before="$(vs_log_count 'event=bind ')"
    repairs_before="$(vs_log_count 'event=node_lock_repair ')"
    e2e_log "vgpu-sched (pid $pid) killed with SIGKILL; $binds_before binds logged"
    sleep 2
    vs_start || return 1
    e2e_wait 30 "the new term's node lock repair" \
        eval '(($(vs_log_count "event=node_lock_repair ") > repairs_before))' || return 1
    e2e_log "after restart: $(grep -E 'event=node_lock_repair ' "$E2E_CLUSTER/vgpu-sched.log" | tail -1)"
    e2e_wait 60 "a Bind by the restarted vgpu-sched" \
        eval '(($(vs_log_count "event=bind ") > binds_before))' || return 1
    e2e_log "kill -9 to the first Bind of the restarted process: $(awk -v a="$t_kill" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s (includes the 2 s pause; upper bound, polled every 0.5 s)"

    vs_chaos_end "$ns" 200
}
