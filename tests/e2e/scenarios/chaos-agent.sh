# shellcheck shell=bash
# chaos-agent: the device plugin misbehaves during a 200-pod burst. The agent (vs-e2e agent
# --fail-rate 0.1 --delay-rate 0.1 --delay 3s --seed 14) fails the Allocate of the pods drawn for
# it as HAMi's device plugin does on an error (bind-phase=failed, node lock released), after which
# the emulated kubelet sets the pod Failed (UnexpectedAdmissionError); it holds the node lock 3 s
# longer for the pods drawn for delay, so Binds queue behind them. The draw hashes the seed and
# the pod's name: reproducible, and `vs-e2e faults` recomputes it at the end.
#
# vgpu-sched must stop counting a Failed pod (its capacity goes to the pods still waiting), never
# leave a lock behind, and keep the queued Binds moving. At the end: every pod bound and Running,
# Failed by the plugin (exactly the pods drawn to fail among those that reached a node), or Pending
# with a reason; no card over-committed; vgpu-sched's metrics equal to the usage on the bound,
# non-terminal pods; no node lock; every delayed pod's delay seen in the agent's log; no Bind
# failed for lock contention.
#
# Opt-in (VS_E2E_CHAOS=1), like the other chaos scenarios.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_chaos_agent_pre_up() {
    if [[ "${VS_E2E_CHAOS:-0}" != 1 ]]; then
        e2e_skip "chaos scenarios are opt-in (VS_E2E_CHAOS=1)" || exit 77
    fi
    vs_pre_up
}

scenario_chaos_agent() {
    local ns=chaos t0 out failed delayed logged contended faults=(--fail-rate 0.1 --delay-rate 0.1 --seed 14)
    vs_chaos_nodes
    vs_setup "${faults[@]}" --delay 3s
    vs_namespace "$ns"
    t0=$EPOCHREALTIME
    vs_chaos_burst "$ns"

    VS_CHAOS_SETTLE_FLAGS="--allow-failed --started $t0" vs_chaos_end "$ns" 200 || return 1

    # The outcome per pod against the draw: Failed (bind-phase=failed) exactly when drawn to fail.
    out="$("$E2E_BIN/vs-e2e" faults --kubeconfig "$KUBECONFIG" --namespace "$ns" "${faults[@]}")" || {
        e2e_fail "fault outcome: $out"
        return 1
    }
    e2e_log "faults: $(sed -E 's/,"delayedPods":.*/}/' <<<"$out")"
    failed="$(sed -E 's/.*"failed":([0-9]+).*/\1/' <<<"$out")"
    delayed="$(sed -E 's/.*"delayed":([0-9]+).*/\1/' <<<"$out")"
    e2e_expect_eq "pods Failed by the plugin (settle)" \
        "$(sed -E 's/.*"failed":([0-9]+).*/\1/' <<<"$VS_SETTLED")" "$failed"
    ((failed > 0 && delayed > 0)) || {
        e2e_fail "the burst hit no fault (failed $failed, delayed $delayed): the scenario proves nothing"
        return 1
    }
    # Every bound pod drawn for delay was delayed by the agent (its log), and no other.
    logged="$(sed -nE 's/.* ([^ ]+) on [^ ]+: fault=delay .*/\1/p' "$E2E_CLUSTER/agent.log" | LC_ALL=C sort -u | sed "s|^$ns/||" | paste -sd, -)"
    e2e_expect_eq "pods delayed by the agent" "$logged" \
        "$(sed -E 's/.*"delayedPods":\[([^]]*)\].*/\1/; s/"//g' <<<"$out")"

    # vgpu-sched's side: each failed pod was dropped from its usage (capacity --metrics above) and
    # its lock released; a delayed holder made later Binds wait, never fail.
    contended="$(grep 'event=bind_failed' "$E2E_CLUSTER/vgpu-sched.log" | grep -c 'node lock contention' || true)"
    e2e_expect_eq "Binds failed for node lock contention" "$contended" 0
    e2e_log "chaos-agent: settled $(sed -E 's/.*"settled":([0-9.]+).*/\1/' <<<"$VS_SETTLED")s after the first create; $(sed -E 's/.*"bound":([0-9]+).*/\1/' <<<"$VS_SETTLED") Running, $failed Failed by the plugin, $(sed -E 's/.*"unschedulable":([0-9]+).*/\1/' <<<"$VS_SETTLED") refused; $delayed delayed by 3 s; longest bind queue wait $(sed -nE 's/.*event=bind .*wait_s=([0-9.]+).*/\1/p' "$E2E_CLUSTER/vgpu-sched.log" | sort -g | tail -1)s"
}
