# shellcheck shell=bash
# preemption-verb: verb-mode GPU preemption on a v1.38 control plane: kube-apiserver and
# kube-scheduler K8S_VERSION_VERB (v1.38.0-beta.0, built by `build.sh verb`; etcd is the pinned
# one). That kube-scheduler hands nodes short only of extender resources to the extender's
# preemptVerb as placeholder candidates. vgpu-sched runs as the chart deploys it
# (--gpu-preemption=auto, the chart's RBAC for auto) and must pick verb itself from the API
# server's version.
#
# Same cluster as `preemption`: PriorityClasses low (100), high (1000), high-never (1000,
# Never); two fake nodes of 2 cards (8192 MiB, 100 cores) filled with 8 low pods (4096 MiB, 50
# cores, two per card); a PDB allowing no disruption over the fillers of three cards. Pending
# while the nodes are full: too-big (high, 9000 MiB: /preempt omits every node), never (Never:
# kube-scheduler does not preempt, /preempt is not called for it) and low-wait (low, a whole
# card: no lower-priority pod anywhere, so kube-scheduler does not call /preempt) evict nothing. Then boss (high, a whole card):
# kube-scheduler calls /preempt with both nodes as empty placeholders, vgpu-sched answers the two
# pods of one card per node with their PDB violations, kube-scheduler picks the node of the
# unprotected card, deletes exactly those two pods (DisruptionTarget PreemptionByScheduler),
# nominates boss there, and binds it to that card once they are gone; the pods pending meanwhile
# do not take it. Capacity checks after each step.

# shellcheck source=preemption.sh
. "$E2E_DIR/scenarios/preemption.sh" # its helpers: pre_pod, pre_metric, pre_low_pods, ...

scenario_preemption_verb_pre_up() {
    [[ "${VS_E2E_PREEMPT_VERB:-1}" != 0 ]] || e2e_skip "VS_E2E_PREEMPT_VERB=0"
    vs_pre_up
    vs_use_verb_control_plane
    # -v=5: the preemption dry run and the candidates are logged (what tests/e2e/README.md reports).
    export VS_E2E_SCHEDULER_V="${VS_E2E_SCHEDULER_V:-5}"
}

# prv_preempt_calls POD : lines "candidates=N kept=M" of vgpu-sched's /preempt answers for pre/POD.
prv_preempt_calls() {
    grep -E "event=preempt pod=pre/$1 " "$E2E_CLUSTER/vgpu-sched.log" | sed -E 's/.* (candidates=)/\1/' || true
}

# prv_deleted : how many pods of namespace pre carry a deletionTimestamp.
prv_deleted() {
    e2e_kubectl get pods --namespace pre -o 'jsonpath={range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name}{"\n"}{end}' |
        grep -c . || true
}

scenario_preemption_verb() {
    local t0 t1 i
    vs_expect_verb_control_plane
    pre_cluster
    # --gpu-preemption=auto (the default) read the API server's version and chose verb.
    grep -q 'event=gpu_preemption mode=verb apiserver=1.38' "$E2E_CLUSTER/vgpu-sched.log" ||
        e2e_fail "vgpu-sched did not choose verb mode: $(grep gpu_preemption "$E2E_CLUSTER/vgpu-sched.log")"
    grep -q 'poddisruptionbudgets' "$E2E_CLUSTER/rbac.yaml" || e2e_fail "the chart's RBAC lacks PDBs"

    # Step 1: fill both nodes, two low pods per card.
    pre_fill

    # The PDB (no disruption allowed) covers the fillers of every card but low-1's.
    local free_card free_node protected
    free_card="$(awk '$1 == "low-1" { split($3, d, ","); print d[1] }' "$E2E_CLUSTER/fillers-before.txt")"
    free_node="$(awk '$1 == "low-1" { print $2 }' "$E2E_CLUSTER/fillers-before.txt")"
    protected="$(awk -v c="$free_card" 'index($3, c ",") != 1 { print $1 }' "$E2E_CLUSTER/fillers-before.txt")"
    # shellcheck disable=SC2086  # one name per word
    e2e_kubectl label pod --namespace pre $protected protect=yes >/dev/null
    e2e_kubectl apply -f - >/dev/null <<EOF
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: keep, namespace: pre}
spec:
  minAvailable: 6
  selector: {matchLabels: {protect: "yes"}}
EOF
    e2e_kubectl patch pdb keep --namespace pre --subresource=status --type=merge \
        -p '{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":6,"desiredHealthy":6,"expectedPods":6}}' >/dev/null
    e2e_log "PDB keep protects $(wc -w <<<"$protected") fillers; $free_card on $free_node is unprotected"

    # Step 2: pods that must not evict anything.
    pre_pod too-big high 9000 10
    vs_wait_unschedulable too-big pre
    # kube-scheduler v1.38 asks /preempt about both nodes (placeholders): no set fits 9000 MiB.
    e2e_wait 30 "/preempt asked about too-big" eval '[[ -n "$(prv_preempt_calls too-big)" ]]'
    e2e_expect_eq "/preempt answers for too-big" "$(prv_preempt_calls too-big | sort -u)" "candidates=2 kept=0"
    pre_pod never high-never 8192 100
    vs_wait_unschedulable never pre
    pre_pod low-wait low 8192 100
    vs_wait_unschedulable low-wait pre
    # No lower-priority pod anywhere: kube-scheduler's dry run finds no potential victim ("No
    # preemption victims found for incoming pod") and does not call /preempt.
    e2e_expect_eq "/preempt calls for low-wait" "$(prv_preempt_calls low-wait)" ""
    e2e_expect_eq "/preempt calls for never" "$(prv_preempt_calls never)" ""
    e2e_expect_eq "pods deleted for too-big, never and low-wait" "$(prv_deleted)" 0
    e2e_expect_eq "fillers after the refused pods" "$(pre_low_pods)" "$(cat "$E2E_CLUSTER/fillers-before.txt")"
    e2e_expect_eq "verb preemptions planned so far" \
        "$(pre_metric 'vgpu_sched_preemptions_total{mode="verb",outcome="planned"}')" 0
    [[ "$(pre_metric 'vgpu_sched_preemptions_total{mode="verb",outcome="no_plan"}')" -gt 0 ]] ||
        e2e_fail "no verb-mode no_plan answer counted"
    pre_capacity "the refused pods"

    # Step 3: the preemptor.
    t0="$(date +%s.%N)"
    pre_pod boss high 8192 100
    e2e_wait 30 "two pods terminating" eval '[[ "$(wc -w <<<"$(pre_terminating)")" -eq 2 ]]'
    local terminating
    terminating="$(pre_terminating)"
    # Deleted by kube-scheduler's preemption, which marks the pods first.
    e2e_expect_eq "terminating pods' DisruptionTarget reasons" \
        "$(sed -E 's/[^ =]+=//g' <<<"$terminating")" "PreemptionByScheduler PreemptionByScheduler "
    terminating="$(sed -E 's/=[^ ]*//g' <<<"$terminating")"
    e2e_expect_eq "nominated node of boss while its victims terminate" \
        "$(e2e_jsonpath pod boss '{.status.nominatedNodeName}' --namespace pre)" "$free_node"
    e2e_expect_eq "node of boss while its victims terminate" \
        "$(e2e_jsonpath pod boss '{.spec.nodeName}' --namespace pre)" ""
    e2e_log "boss nominated to $free_node, victims $terminating"
    vs_wait_running boss pre
    t1="$(date +%s.%N)"
    local node card evicted
    node="$(e2e_jsonpath pod boss '{.spec.nodeName}' --namespace pre)"
    card="$(vs_devices boss pre | cut -d, -f1)"
    e2e_expect_eq "card of boss (the one without PDB-protected pods)" "$card" "$free_card"
    e2e_log "boss bound to $node card $card, Running $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s after its creation (victims take $PRE_TERMINATE to terminate)"
    e2e_expect_eq "devices of boss" "$(vs_devices boss pre)" "$card,NVIDIA,8192,100:;"
    evicted="$(awk -v c="$card" 'index($3, c ",") == 1 { print $1 }' "$E2E_CLUSTER/fillers-before.txt" | tr '\n' ' ')"
    e2e_expect_eq "fillers of $card before" "$(wc -w <<<"$evicted")" 2
    e2e_expect_eq "pods deleted by the preemption" "$terminating" "$evicted"
    e2e_expect_eq "fillers left" "$(pre_low_pods)" \
        "$(awk -v c="$card" 'index($3, c ",") != 1' "$E2E_CLUSTER/fillers-before.txt")"
    # kube-scheduler posts the Preempted events (vgpu-sched posts none in verb mode).
    for i in $evicted; do
        e2e_expect_eq "Preempted event of $i" \
            "$(e2e_kubectl get events --namespace pre --field-selector "reason=Preempted,involvedObject.name=$i" -o 'jsonpath={.items[*].message}')" \
            "Preempted by pod $(e2e_jsonpath pod boss '{.metadata.uid}' --namespace pre) on node $node"
    done
    [[ "$(pre_metric 'vgpu_sched_preemptions_total{mode="verb",outcome="planned"}')" -ge 1 ]] ||
        e2e_fail "no verb-mode planned answer counted"
    e2e_expect_eq "filter-mode preemptions" \
        "$(pre_metric 'vgpu_sched_preemptions_total{mode="filter",outcome="planned"}')" 0
    e2e_log "vgpu-sched /preempt answers for boss: $(prv_preempt_calls boss | sort | uniq -c | tr -s ' \n' ' ')"

    # The pods pending meanwhile did not take the card and are still refused.
    for i in too-big never low-wait; do
        e2e_expect_eq "node of $i" "$(e2e_jsonpath pod "$i" '{.spec.nodeName}' --namespace pre)" ""
    done
    e2e_expect_eq "pods deleted in all" "$(prv_deleted)" 0
    pre_capacity "the preemption"
}
