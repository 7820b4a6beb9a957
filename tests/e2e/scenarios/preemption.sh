# shellcheck shell=bash
# preemption: filter-mode GPU preemption (--gpu-preemption=auto picks filter on v1.36) with
# PriorityClasses low (100) and high (1000). Two fake nodes of 2 cards (8192 MiB, 100 cores) are
# filled with 8 low-priority pods (4096 MiB, 50 cores: two per card). Pods pending while the
# nodes are full: one that no eviction can fit (high, 9000 MiB) and one with preemptionPolicy
# Never (PriorityClass high-never, 1000: the Priority admission plugin refuses a pod whose
# spec.preemptionPolicy differs from its class's) evict nothing; a low-priority pod asking for
# a whole card cannot preempt its equals. A PodDisruptionBudget allowing no disruption covers the
# fillers of three cards. Then a high-priority pod asking for a whole card evicts
# (pods/eviction) exactly the two pods of the fourth card, is bound to that card once the
# emulated kubelet has removed them, and none of the pods pending meanwhile takes the card.
# Capacity checks (no card over-committed, vgpu-sched's metrics equal the pods' allocations)
# pass after each step.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_preemption_pre_up() { vs_pre_up; }

PRE_TERMINATE=6s

# pre_terminating : "name=reason " of the pods of namespace pre being deleted, sorted; reason is
# that of their DisruptionTarget condition.
pre_terminating() {
    e2e_kubectl get pods --namespace pre \
        -o 'jsonpath={range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name}={.status.conditions[?(@.type=="DisruptionTarget")].reason}{"\n"}{end}' |
        sort | tr '\n' ' '
}

# pre_pod NAME CLASS MEM CORES [ROLE] : a pod in namespace pre on the pool's nodes.
pre_pod() {
    e2e_kubectl create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: pre, labels: {role: ${5:-other}}}
spec:
  priorityClassName: $2
  nodeSelector: {pool: pre}
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources:
        limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: $3, nvidia.com/gpucores: $4}
EOF
}

# pre_metric NAME{LABELS} : value of one vgpu-sched metric sample (0 when absent).
pre_metric() {
    curl -fsS "$(vs_metrics_url)" | awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }'
}

# pre_evictions : how many Preempted events vgpu-sched posted in namespace pre.
pre_evictions() {
    e2e_kubectl get events --namespace pre --field-selector reason=Preempted -o name | wc -l
}

# pre_low_pods : "name node devices" of the low-priority filler pods that exist, sorted.
pre_low_pods() {
    e2e_kubectl get pods --namespace pre -l role=filler \
        -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.annotations.hami\.io/vgpu-devices-allocated}{"\n"}{end}' |
        sort
}

pre_capacity() {
    vs_capacity --refused pre 2>"$E2E_CLUSTER/capacity-$1.txt" >/dev/null || {
        cat "$E2E_CLUSTER/capacity-$1.txt" >&2
        e2e_fail "capacity check failed after $1"
    }
    e2e_log "capacity ok after $1"
}

# pre_message_names_victims : boss's PodScheduled message has Filter's "; preempting pre/x,
# pre/y." and kube-scheduler's own finding; BASH_REMATCH[1] and [2] are x and y.
pre_message_names_victims() {
    [[ "$(vs_condition_message boss pre)" =~ \;\ preempting\ pre/([a-z0-9-]+),\ pre/([a-z0-9-]+)\.\ .*expected\ at\ least\ one\ victim\ pod\ on\ node ]]
}

# pre_cluster : the two nodes of two 8 GiB cards, vgpu-sched with the agent's 6 s termination
# (the emulated kubelet takes that long to stop a pod being deleted, so a preemptor must wait
# for its victims while they terminate), namespace pre and the PriorityClasses.
pre_cluster() {
    e2e_fake_nodes --cards 2 --devmem 8192 --split 10 --label pool=pre pre-a pre-b
    vs_setup --terminate "$PRE_TERMINATE"
    vs_namespace pre
    e2e_kubectl apply -f - >/dev/null <<EOF
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-never}
value: 1000
preemptionPolicy: Never
EOF
}

# pre_fill : step 1 of both preemption scenarios: both nodes full, two low pods per card.
pre_fill() {
    local i
    for i in 1 2 3 4 5 6 7 8; do
        pre_pod "low-$i" low 4096 50 filler
    done
    for i in 1 2 3 4 5 6 7 8; do vs_wait_running "low-$i" pre; done
    e2e_expect_eq "low pods per card" \
        "$(pre_low_pods | awk '{ print $3 }' | cut -d, -f1 | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ')" \
        "2 2 2 2 "
    pre_low_pods >"$E2E_CLUSTER/fillers-before.txt"
    pre_capacity "filling the nodes"
}

scenario_preemption() {
    local t0 t1 i
    pre_cluster
    # auto mode: the apiserver is v1.36, so filter-time preemption.
    grep -q 'event=gpu_preemption mode=filter apiserver=1.36' "$E2E_CLUSTER/vgpu-sched.log" ||
        e2e_fail "vgpu-sched did not choose filter-mode preemption: $(grep gpu_preemption "$E2E_CLUSTER/vgpu-sched.log")"

    # Step 1: fill both nodes, two low pods per card.
    pre_fill

    # A PodDisruptionBudget (no disruption allowed) covers the fillers of three cards; only the
    # card of low-1, the first placed (so the plan ranked last by start time among equals), is
    # left unprotected: the preemptor must pick that one. There is no disruption controller here,
    # so its status is written as that controller would.
    local free_card protected
    free_card="$(awk '$1 == "low-1" { split($3, d, ","); print d[1] }' "$E2E_CLUSTER/fillers-before.txt")"
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
    e2e_log "PDB keep protects $(wc -w <<<"$protected") fillers; $free_card is unprotected"

    # Step 2: pods that must not evict anything.
    pre_pod too-big high 9000 10
    vs_wait_unschedulable too-big pre
    pre_pod never high-never 8192 100
    vs_wait_unschedulable never pre
    pre_pod low-wait low 8192 100
    vs_wait_unschedulable low-wait pre
    e2e_expect_eq "pods evicted by too-big, never and low-wait" "$(pre_evictions)" 0
    e2e_expect_eq "fillers after the refused pods" "$(pre_low_pods)" "$(cat "$E2E_CLUSTER/fillers-before.txt")"
    e2e_expect_eq "preemptions planned so far" \
        "$(pre_metric 'vgpu_sched_preemptions_total{mode="filter",outcome="planned"}')" 0
    [[ "$(pre_metric 'vgpu_sched_preemptions_total{mode="filter",outcome="no_plan"}')" -gt 0 ]] ||
        e2e_fail "too-big was refused without a no_plan preemption attempt"
    pre_capacity "the refused pods"

    # Step 3: the preemptor.
    t0="$(date +%s.%N)"
    pre_pod boss high 8192 100
    # Its first Filter evicts the victims; while they terminate ($PRE_TERMINATE) they still hold
    # the card: boss waits unbound and nothing else is evicted.
    e2e_wait 30 "two pods terminating" eval '[[ "$(wc -w <<<"$(pre_terminating)")" -eq 2 ]]'
    local terminating plan
    terminating="$(pre_terminating)"
    # Evicted through the Eviction API, which marks the pod before deleting it.
    e2e_expect_eq "terminating pods' DisruptionTarget reasons" \
        "$(sed -E 's/[^ =]+=//g' <<<"$terminating")" "EvictionByEvictionAPI EvictionByEvictionAPI "
    terminating="$(sed -E 's/=[^ ]*//g' <<<"$terminating")"
    # kube-scheduler's PodScheduled message carries Filter's reason for the node: "...; preempting
    # pre/x, pre/y.", and its own preemption found no victim (v1.36: GPU resources are ignored).
    e2e_wait 10 "boss's PodScheduled message names the victims" pre_message_names_victims
    plan="$(printf '%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" | sort | tr '\n' ' ')"
    e2e_log "boss preempting $plan(terminating: $terminating)"
    e2e_expect_eq "victims named in boss's PodScheduled message" "$plan" "$terminating"
    e2e_expect_eq "node of boss while its victims terminate" \
        "$(e2e_jsonpath pod boss '{.spec.nodeName}' --namespace pre)" ""
    vs_wait_running boss pre
    t1="$(date +%s.%N)"
    local node card evicted
    node="$(e2e_jsonpath pod boss '{.spec.nodeName}' --namespace pre)"
    card="$(vs_devices boss pre | cut -d, -f1)"
    e2e_expect_eq "card of boss (the one without PDB-protected pods)" "$card" "$free_card"
    e2e_log "boss bound to $node card $card, Running $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s after its creation (victims take $PRE_TERMINATE to terminate)"
    e2e_expect_eq "devices of boss" "$(vs_devices boss pre)" "$card,NVIDIA,8192,100:;"
    # Exactly the two fillers of that card are gone, the six others untouched.
    evicted="$(awk -v c="$card" 'index($3, c ",") == 1 { print $1 }' "$E2E_CLUSTER/fillers-before.txt" | tr '\n' ' ')"
    e2e_expect_eq "fillers of $card before" "$(wc -w <<<"$evicted")" 2
    e2e_expect_eq "pods terminating after boss's first Filter" "$terminating" "$evicted"
    e2e_expect_eq "fillers left" "$(pre_low_pods)" \
        "$(awk -v c="$card" 'index($3, c ",") != 1' "$E2E_CLUSTER/fillers-before.txt")"
    for i in $evicted; do
        vs_expect_event "$i" Preempted "Preempted by pod $(e2e_jsonpath pod boss '{.metadata.uid}' --namespace pre) on node $node" pre
    done
    local a b
    read -r a b <<<"$evicted"
    e2e_wait 30 "Preempting event on boss" eval \
        'vs_has_event boss Preempting "Preempting pre/$a, pre/$b on node $node" pre ||
         vs_has_event boss Preempting "Preempting pre/$b, pre/$a on node $node" pre'
    e2e_expect_eq "Preempted events" "$(pre_evictions)" 2
    e2e_expect_eq "preemptions planned" \
        "$(pre_metric 'vgpu_sched_preemptions_total{mode="filter",outcome="planned"}')" 1
    e2e_expect_eq "victims evicted" "$(pre_metric vgpu_sched_preemption_victims_total)" 2

    # The pods pending meanwhile did not take the card and are still refused.
    for i in too-big never low-wait; do
        e2e_expect_eq "node of $i" "$(e2e_jsonpath pod "$i" '{.spec.nodeName}' --namespace pre)" ""
    done
    pre_capacity "the preemption"
}
