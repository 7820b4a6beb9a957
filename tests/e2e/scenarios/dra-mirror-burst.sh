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

# shellcheck source=dra-mirror.sh
. "$E2E_DIR/scenarios/dra-mirror.sh"

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
metadata: {name: h$i, namespace: default, labels: {db: hami}}
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
    VS_E2E_SERVE_FLAGS="--dra-mirror=fence --debug" vs_setup
    db_pods "$n" "$seed" >"$E2E_CLUSTER/burst.yaml"
    t0=$EPOCHREALTIME
    e2e_kubectl apply -f "$E2E_CLUSTER/burst.yaml" >/dev/null
    e2e_wait 240 "every pod bound or refused" db_settled || return 1
    e2e_log "settled in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s: $(e2e_kubectl get pods -l db=hami -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true) HAMi and $(e2e_kubectl get pods -l db=dra -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true) DRA pods bound"
    both="$(comm -12 <(db_cards_hami) <(db_cards_dra) | paste -sd, -)"
    refused="$(vs_log_count 'taken after Filter')"
    e2e_log "dra-mirror-burst seed=$seed pods=$n: cards with HAMi pods: $(db_cards_hami | wc -l), with DRA claims: $(db_cards_dra | wc -l), both: ${both:-none}; Binds refused (claim after Filter): $refused"
    e2e_log "windows: $(db_windows)"
    [[ -z "$both" ]] || e2e_fail "cards held by a HAMi pod and a DRA claim: $both"
}
