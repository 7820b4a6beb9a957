# shellcheck shell=bash
# dra-mirror-burst (opt-in: VS_E2E_DRA_BURST=1): HAMi pods and DRA pods created at once on the
# same cards, --dra-mirror=fence, and the race windows that remain (docs/dra.md). Four nodes of
# two 16 GiB cards, each card also a device of a gpu.nvidia.com slice; VS_E2E_DRA_BURST_PODS
# (default 24) pods in one apply, every third a DRA pod (a claim of one whole device), the
# others HAMi pods of 4096 MiB and 25 cores (four fit a card), in an order drawn from
# VS_E2E_DRA_BURST_SEED (default 1). When every pod is bound or refused, no card may hold both
# a HAMi pod and a DRA claim (fence: DRA must see a HAMi card as taken, HAMi must not use a
# claimed card). Printed: the over-committed cards (the scenario fails on any), the Binds
# refused because a claim took the card after Filter, and three windows measured from the logs
# (kube-scheduler at -v=5, vgpu-sched at --debug): DRA's Reserve to its PreBind status write,
# Reserve to vgpu-sched's ledger applying the allocation, and, for each card's mirror a Bind
# made, the last Filter that chose the card to the mirror being allocated.
#
# VS_E2E_DRA_BURST_KILL=1 adds a crash mid-burst (issue 32). The agent holds every node lock 1 s
# (--hold), so HAMi Binds queue on every node, each with its mirror made before it waits; at the
# first HAMi pod bound (seen by a watch known to be open before the apply) vgpu-sched gets SIGKILL
# and is started again with the same flags (as dra-mirror does); the scenario fails if the burst
# had settled before the kill. Once the burst settles, besides the over-commit check, the mirror
# claims (label vgpu-sched.io/mirror-of) must become, within 60 s, one allocated mirror per card
# that a bound HAMi pod holds (every card here is a published device) and no other, except on a
# card an allocated DRA claim holds (the "Overlap" rule of docs/dra.md: a claim allocated in the
# race beside a mirror keeps it; the over-commit check has ensured no HAMi pod is there): no
# orphan, none missing, none without status.allocation. Printed: the pods bound at the kill and
# the mirrors then, and at the end the mirror and HAMi card counts and the restart's reconcile
# line. Then every DRA pod and claim is deleted and the mirrors must become exactly the bound HAMi
# pods' cards (the overlap mirrors go too).

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"
# shellcheck source=../lib/dra-mirror.sh
. "$E2E_DIR/lib/dra-mirror.sh"

scenario_dra_mirror_burst_pre_up() {
    [[ "${VS_E2E_DRA_BURST:-}" == 1 ]] || e2e_skip "dra-mirror-burst is opt-in (VS_E2E_DRA_BURST=1)"
    vs_pre_up
    export VS_E2E_HELM_FLAGS="--set scheduler.draMirror.mode=fence"
    export VS_E2E_SCHEDULER_V=5
}

DB_NODES="db-0 db-1 db-2 db-3"

db_objects() {
    local n
    {
        cat <<'YAML'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  selectors:
    - cel:
        expression: device.driver == "gpu.nvidia.com"
YAML
        for n in $DB_NODES; do
            cat <<YAML
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: $n-gpu
spec:
  driver: gpu.nvidia.com
  nodeName: $n
  pool: {name: $n, generation: 1, resourceSliceCount: 1}
  devices:
    - {name: gpu-0, attributes: {uuid: {string: GPU-$n-0}}}
    - {name: gpu-1, attributes: {uuid: {string: GPU-$n-1}}}
YAML
        done
    } | e2e_kubectl apply -f - >/dev/null
}

# db_pods N SEED : the burst's YAML, pods in a seeded order (every third a DRA pod).
db_pods() {
    local n=$1 seed=$2 i
    for i in $(seq 0 $((n - 1)) | awk -v s="$seed" 'BEGIN { srand(s) } { print rand() "\t" $0 }' |
        sort -n | cut -f2); do
        if ((i % 3 == 2)); then
            cat <<YAML
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: d$i, namespace: default}
spec:
  devices:
    requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: v1
kind: Pod
metadata: {name: d$i, namespace: default, labels: {hami.io/webhook: ignore, db: dra}}
spec:
  schedulerName: hami-scheduler
  resourceClaims: [{name: gpu, resourceClaimName: d$i}]
  containers:
    - {name: main, image: vs-e2e.invalid/cuda:1, resources: {claims: [{name: gpu}]}}
YAML
        else
            cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: h$i, namespace: default, labels: {db: hami, db-watch: hami}}
spec:
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources:
        limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4096, nvidia.com/gpucores: 25}
YAML
        fi
    done
}

# db_settled : every pod of the burst is bound, or refused and not being bound.
db_settled() {
    e2e_kubectl get pods -l db -o \
        jsonpath='{range .items[*]}{.spec.nodeName}|{.status.conditions[?(@.type=="PodScheduled")].reason}{"\n"}{end}' |
        awk -F'|' '$1 == "" && $2 != "Unschedulable" { busy++ } END { exit busy > 0 }'
}

# db_cards_hami / db_cards_dra : the cards held by bound HAMi pods / allocated DRA claims
# (mirrors excluded: they live in another namespace), one per line, sorted, unique.
db_cards_hami() {
    e2e_kubectl get pods -l db=hami -o \
        jsonpath='{range .items[*]}{.spec.nodeName} {.metadata.annotations.hami\.io/vgpu-devices-allocated}{"\n"}{end}' |
        awk '$1 != "" && $2 != "" { split($2, d, ","); print d[1] }' | sort -u
}
db_cards_dra() {
    e2e_kubectl get resourceclaims -n default -o \
        jsonpath='{range .items[*]}{.status.allocation.devices.results[0].pool} {.status.allocation.devices.results[0].device}{"\n"}{end}' |
        awk '$2 != "" { sub("gpu-", "", $2); print "GPU-" $1 "-" $2 }' | sort -u
}

# db_windows : "reserve_to_prebind ... reserve_to_ledger ... filter_to_mirror ..." statistics in
# milliseconds (n, median, max) from the logs.
db_windows() {
    local ks="$E2E_CLUSTER/kube-scheduler.log" vs="$E2E_CLUSTER/vgpu-sched.log"
    # kube-scheduler (klog, local time = UTC here): Reserve and the status write per claim.
    awk '
        function t(s,  a) { split(s, a, ":"); return (a[1] * 3600 + a[2] * 60 + a[3]) * 1000 }
        /"Reserved resource in allocation result"/ && match($0, /claim="default\/[^"]*"/) {
            c = substr($0, RSTART + 15, RLENGTH - 16); if (!(c in r)) r[c] = t($2) }
        /"reserved" / && match($0, /pod="default\/[^"]*"/) {
            c = substr($0, RSTART + 13, RLENGTH - 14); if (!(c in w)) w[c] = t($2) }
        END { for (c in r) if (c in w) print "prebind", c, w[c] - r[c], r[c] }
    ' "$ks" >"$E2E_CLUSTER/windows.txt"
    # vgpu-sched: the first application of an allocated claim; a pod's last Filter before its
    # mirror was made by Bind.
    awk '
        function t(s,  a) { sub(/^ts=/, "", s); sub(/Z$/, "", s); split(s, a, "T"); split(a[2], b, ":")
                            return (b[1] * 3600 + b[2] * 60 + b[3]) * 1000 }
        / event=dra_claim_applied / && / results=1 / && / mirror=0/ && match($0, /claim=default\/[^ ]*/) {
            c = substr($0, RSTART + 14, RLENGTH - 14); if (!(c in a)) { a[c] = t($1); print "ledger", c, a[c] } }
        / event=filter / && match($0, /devices=[^,]*/) { f[substr($0, RSTART + 8, RLENGTH - 8)] = t($1) }
        / event=dra_mirror_created / && / source=bind new=1/ && match($0, /card=[^ ]*/) {
            k = substr($0, RSTART + 5, RLENGTH - 5); if (k in f) print "mirror", k, t($1) - f[k] }
    ' "$vs" >>"$E2E_CLUSTER/windows.txt"
    awk '
        $1 == "prebind" { pb[++np] = $3; res[$2] = $4 }
        $1 == "ledger" { led[$2] = $3 }
        $1 == "mirror" { mi[++nm] = $3 }
        function stats(name, v, n,  i, j, x) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
            if (n) printf "%s n=%d median=%.0fms max=%.0fms ", name, n, v[int((n + 1) / 2)], v[n]
            else printf "%s n=0 ", name }
        END { for (c in res) if (c in led) lr[++nl] = led[c] - res[c]
              stats("reserve_to_prebind", pb, np); stats("reserve_to_ledger", lr, nl)
              stats("filter_to_mirror", mi, nm); print "" }
    ' "$E2E_CLUSTER/windows.txt"
}

scenario_dra_mirror_burst() {
    local n=${VS_E2E_DRA_BURST_PODS:-24} seed=${VS_E2E_DRA_BURST_SEED:-1} t0 both refused
    # shellcheck disable=SC2086  # words on purpose
    e2e_fake_nodes --cards 2 --devmem 16384 $DB_NODES
    db_objects
    # The kill variant: the agent holds every node lock 1 s, so Binds queue on every node (with
    # their mirrors made) and are still in flight once the apply has returned.
    local hold=()
    [[ "${VS_E2E_DRA_BURST_KILL:-}" != 1 ]] || hold=(--hold 1s)
    VS_E2E_SERVE_FLAGS="--dra-mirror=fence --debug" vs_setup "${hold[@]}"
    db_pods "$n" "$seed" >"$E2E_CLUSTER/burst.yaml"
    t0=$EPOCHREALTIME
    if [[ "${VS_E2E_DRA_BURST_KILL:-}" == 1 ]]; then
        db_apply_and_kill || return 1
    else
        e2e_kubectl apply -f "$E2E_CLUSTER/burst.yaml" >/dev/null
    fi
    e2e_wait 240 "every pod bound or refused" db_settled || return 1
    e2e_log "settled in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s: $(e2e_kubectl get pods -l db=hami -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true) HAMi and $(e2e_kubectl get pods -l db=dra -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true) DRA pods bound"
    both="$(comm -12 <(db_cards_hami) <(db_cards_dra) | paste -sd, -)"
    refused="$(vs_log_count 'taken after Filter')"
    e2e_log "dra-mirror-burst seed=$seed pods=$n: cards with HAMi pods: $(db_cards_hami | wc -l), with DRA claims: $(db_cards_dra | wc -l), both: ${both:-none}; Binds refused (claim after Filter): $refused"
    e2e_log "windows: $(db_windows)"
    [[ -z "$both" ]] || e2e_fail "cards held by a HAMi pod and a DRA claim: $both"
    [[ "${VS_E2E_DRA_BURST_KILL:-}" != 1 ]] || db_mirrors_exact
}

# db_bound_count : pods of the burst with a node.
db_bound_count() {
    e2e_kubectl get pods -l db -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}

# db_apply_and_kill : apply the burst with a watch on its HAMi pods open; at the first one bound,
# SIGKILL vgpu-sched, fail if the burst had already settled, and start it again with the same
# flags. A kubectl started after the apply (seconds under load) saw the first Binds late: the
# watch is known to be open once it reports a sentinel pod (label db-watch, never scheduled),
# deleted before the apply.
db_apply_and_kill() {
    local fd watch pid name node bound
    exec {fd}< <(exec "$E2E_BIN/kubectl" --kubeconfig="$KUBECONFIG" get pods --watch \
        -l 'db-watch in (hami, sentinel)' -o jsonpath='{.metadata.name} {.spec.nodeName}{"\n"}')
    watch=$!
    e2e_kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: db-sentinel, namespace: default, labels: {db-watch: sentinel, hami.io/webhook: ignore}}
spec:
  schedulerName: vs-e2e-nobody
  containers: [{name: main, image: vs-e2e.invalid/none:1}]
YAML
    while read -r -t 120 -u "$fd" name _; do [[ "$name" != db-sentinel ]] || break; done
    e2e_kubectl delete pod db-sentinel --wait=false >/dev/null
    e2e_kubectl apply -f "$E2E_CLUSTER/burst.yaml" >/dev/null
    node=""
    while read -r -t 120 -u "$fd" name node; do [[ -z "$node" ]] || break; done
    kill "$watch" 2>/dev/null || true
    exec {fd}<&-
    [[ -n "$node" ]] || {
        e2e_fail "no HAMi pod of the burst seen bound (watch ended or silent for 120 s)"
        return 1
    }
    pid="$(vs_pid)"
    kill -KILL "$pid"
    bound="$(db_bound_count)"
    if db_settled; then
        e2e_fail "the burst settled before the kill ($bound pods bound): not mid-burst"
        return 1
    fi
    e2e_log "vgpu-sched (pid $pid) killed with SIGKILL mid-burst: $bound pods bound, mirrors: $(dm_mirrors | paste -sd' ')"
    vs_start --dra-mirror=fence --debug
}

# db_dra_overlap : "card/gpu-k" of the cards allocated DRA claims hold; a mirror may stay on
# them ("Overlap" in docs/dra.md: a claim allocated in the race beside a mirror keeps it).
db_dra_overlap() { db_cards_dra | awk '{ k = $1; sub(/.*-/, "", k); print $1 "/gpu-" k }'; }

# db_mirror_diff : "orphan=... missing=..." (space-separated "card/device"; an unallocated
# mirror has no device, so it is an orphan here): orphans are mirrors of cards that neither a
# bound HAMi pod nor a DRA claim holds, missing the bound HAMi pods' cards without one.
db_mirror_diff() {
    local got want allowed
    got="$(dm_mirrors)"
    want="$(dm_want db=hami)"
    allowed="$( { printf '%s\n' "$want"; db_dra_overlap; } | grep . | sort -u)"
    printf 'orphan=%s missing=%s' \
        "$(comm -23 <(printf '%s\n' "$got" | grep .) <(printf '%s\n' "$allowed") | paste -sd' ')" \
        "$(comm -13 <(printf '%s\n' "$got" | grep .) <(printf '%s\n' "$want" | grep .) | paste -sd' ')"
}
db_mirrors_ok() { [[ "$(db_mirror_diff)" == "orphan= missing=" ]]; }

# db_mirrors_exact : after the kill, the mirrors converge (60 s at most) to the bound HAMi pods'
# cards, plus at most the cards of the overlap.
db_mirrors_exact() {
    if ! e2e_wait 60 "mirrors = the bound HAMi pods' cards (+ overlap)" db_mirrors_ok; then
        e2e_log "mirrors: $(dm_mirrors | paste -sd' '); $(db_mirror_diff)"
        return 1
    fi
    local overlap
    overlap="$(comm -12 <(dm_mirrors) <(db_dra_overlap) | grep -c . || true)"
    e2e_log "mirrors after the kill: $(dm_mirrors | grep -c . || true), all allocated: $(dm_want db=hami | grep -c . || true) on the cards of bound HAMi pods (as many cards), $overlap beside a DRA claim (overlap), no orphan, none missing; restart: $(vs_log_since_start 'event=dra_mirror_reconcile ' | head -n 1)"
    # The overlap mirrors are no orphans for good: once the DRA pods and claims are gone, the
    # mirrors are exactly the bound HAMi pods' cards.
    local p
    for p in $(e2e_kubectl get pods -l db=dra -o jsonpath='{.items[*].metadata.name}'); do dm_drop_dra "$p"; done
    e2e_wait 60 "mirrors = the bound HAMi pods' cards once the DRA claims are gone" dm_mirrors_match db=hami || {
        e2e_log "mirrors: $(dm_mirrors | paste -sd' '); want: $(dm_want db=hami | paste -sd' ')"
        return 1
    }
    e2e_log "DRA pods and claims deleted: mirrors $(dm_mirrors | grep -c . || true) = the cards of bound HAMi pods $(dm_want db=hami | grep -c . || true)"
}
