# shellcheck shell=bash
# vgpu-sched against the e2e control plane. Source it from a scenario file (the runner has already
# sourced lib/common.sh and lib/scenario.sh).
#
#   vs_pre_up            in scenario_<name>_pre_up: pick the extender and metrics ports and export
#                        VS_EXTENDER_PORT, so cluster.sh up puts the extender stanza into
#                        kube-scheduler's configuration (https://127.0.0.1:PORT, caData = the
#                        e2e CA, which signed pki/extender.crt)
#   vs_setup             after up: vgpu-sched's identity (the chart's ServiceAccount and RBAC),
#                        vgpu-sched serve, the MutatingWebhookConfiguration, the node agent
#   vs_start / vs_stop   start vgpu-sched and wait until /readyz is 200; stop it by PID (SIGTERM)
#
# The binary is $VS_E2E_VGPU_SCHED (run.sh sets it from its argument; default build/vgpu-sched).
# VS_E2E_IDENTITY=admin runs vgpu-sched with the admin kubeconfig instead of the chart's RBAC;
# VS_E2E_HELM_FLAGS (words) are passed to helm when that RBAC is rendered, e.g.
# "--set scheduler.gpuPreemption=verb".
#
# VS_E2E_HAMI=1 (the dropin-* scenarios) runs vgpu-sched as it runs once the image of HAMi
# v2.10's vgpu-scheduler-extender container is swapped, HAMi's chart left as it is: under HAMi's
# RBAC (fixtures/hami-v2.10/rbac.yaml, ServiceAccount kube-system/hami-scheduler), started as
# `scheduler` with that container's arguments and environment, reading HAMi's device-config.yaml,
# following the Lease kube-system/hami-scheduler (written here for the kube-scheduler of HAMi's
# pod, which holds it there), registered as HAMi registers its webhook (v1beta1, failurePolicy
# Ignore), called by kube-scheduler with HAMi's extender stanza
# (templates/hami-scheduler-config.yaml).

VS_ROOT="$(cd "$E2E_DIR/../.." && pwd)"
VS_BIN="${VS_E2E_VGPU_SCHED:-$VS_ROOT/build/vgpu-sched}"
VS_SCHEDULER_NAME=hami-scheduler
# Namespace of vgpu-sched's ServiceAccount (as the chart would be installed).
VS_SYSTEM_NS=vgpu-sched
# The drop-in: HAMi's release "hami" in kube-system, its scheduler pod's name (POD_NAME).
VS_HAMI_FIXTURES="$E2E_DIR/fixtures/hami-v2.10"
VS_HAMI_NS=kube-system
VS_HAMI_POD=hami-scheduler-e2e

vs_hami() { [[ "${VS_E2E_HAMI:-0}" == 1 ]]; }

vs_pre_up() {
    read -r VS_EXTENDER_PORT VS_METRICS_PORT < <("$E2E_BIN/vs-e2e" freeport 2)
    export VS_EXTENDER_PORT VS_METRICS_PORT
    unset VS_EXTENDER_URL VS_EXTENDER_CA VS_EXTENDER_CLIENT_CERT VS_EXTENDER_CLIENT_KEY
    if vs_hami; then
        export VS_E2E_SCHEDULER_TEMPLATE="$E2E_DIR/templates/hami-scheduler-config.yaml"
    fi
}

# vs_use_verb_control_plane: this scenario runs kube-apiserver and kube-scheduler
# K8S_VERSION_VERB (built by `tests/e2e/build.sh verb`; etcd stays the pinned one). For a
# scenario's _pre_up, after its own pre-up; skips the scenario when they are not built.
vs_use_verb_control_plane() {
    local b
    for b in kube-apiserver kube-scheduler; do
        [[ -x "$E2E_BIN_VERB/$b" ]] || e2e_skip "$E2E_BIN_VERB/$b missing (tests/e2e/build.sh verb)"
    done
    export VS_E2E_KUBE_APISERVER="$E2E_BIN_VERB/kube-apiserver"
    export VS_E2E_KUBE_SCHEDULER="$E2E_BIN_VERB/kube-scheduler"
    E2E_KUBE_APISERVER=$VS_E2E_KUBE_APISERVER
    E2E_KUBE_SCHEDULER=$VS_E2E_KUBE_SCHEDULER
}

# vs_expect_verb_control_plane: fails unless the running binaries report K8S_VERSION_VERB.
vs_expect_verb_control_plane() {
    "$E2E_KUBE_APISERVER" --version | grep -qx "Kubernetes $K8S_VERSION_VERB" ||
        e2e_fail "kube-apiserver is not $K8S_VERSION_VERB: $("$E2E_KUBE_APISERVER" --version)"
    "$E2E_KUBE_SCHEDULER" --version | grep -qx "Kubernetes $K8S_VERSION_VERB" ||
        e2e_fail "kube-scheduler is not $K8S_VERSION_VERB: $("$E2E_KUBE_SCHEDULER" --version)"
}

vs_url() { printf 'https://127.0.0.1:%s%s' "$VS_EXTENDER_PORT" "${1:-}"; }
vs_metrics_url() { printf 'http://127.0.0.1:%s/metrics' "$VS_METRICS_PORT"; }

# vs_kubeconfig_identity : DIR/vgpu-sched.kubeconfig for the ServiceAccount of the chart, bound
# to the chart's ClusterRole (rendered from charts/vgpu-sched by helm, so a rule missing there
# fails here), with a TokenRequest token; or a copy of the admin kubeconfig.
vs_kubeconfig_identity() {
    local kc="$E2E_CLUSTER/vgpu-sched.kubeconfig" token api sa=vgpu-sched ns=$VS_SYSTEM_NS
    if [[ "${VS_E2E_IDENTITY:-chart}" == admin ]]; then
        cp "$KUBECONFIG" "$kc"
        e2e_log "vgpu-sched runs as admin (VS_E2E_IDENTITY=admin)"
        return
    fi
    if vs_hami; then
        sa=hami-scheduler ns=$VS_HAMI_NS
        e2e_kubectl apply -f "$VS_HAMI_FIXTURES/rbac.yaml" >/dev/null
    else
        [[ -x "$E2E_BIN/helm" ]] || e2e_die "$E2E_BIN/helm missing: run tests/e2e/build.sh"
        e2e_kubectl create namespace "$VS_SYSTEM_NS" >/dev/null
        # shellcheck disable=SC2086  # words on purpose
        "$E2E_BIN/helm" template vgpu-sched "$VS_ROOT/charts/vgpu-sched" --namespace "$VS_SYSTEM_NS" \
            --kube-version "$K8S_VERSION" --show-only templates/rbac.yaml ${VS_E2E_HELM_FLAGS:-} \
            >"$E2E_CLUSTER/rbac.yaml"
        e2e_kubectl apply -f "$E2E_CLUSTER/rbac.yaml" >/dev/null
    fi
    token="$(e2e_kubectl create token "$sa" --namespace "$ns" --duration=4h)"
    api="$(e2e_kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}')"
    (
        umask 077
        cat >"$kc" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: vs-e2e
    cluster:
      server: $api
      certificate-authority-data: $(base64 -w0 "$E2E_CLUSTER/pki/ca.crt")
users:
  - name: vgpu-sched
    user:
      token: $token
contexts:
  - name: vs-e2e
    context: {cluster: vs-e2e, user: vgpu-sched, namespace: $ns}
current-context: vs-e2e
EOF
    )
    if vs_hami; then
        e2e_log "vgpu-sched runs as system:serviceaccount:$ns:$sa (HAMi v2.10's RBAC)"
    else
        e2e_log "vgpu-sched runs as system:serviceaccount:$ns:$sa (chart RBAC)"
    fi
}

# vs_pid [PROC] : PID of the running vgpu-sched (or PROC) ("" if none is recorded).
vs_pid() { awk -v n="${1:-vgpu-sched}" '$1 == n { p = $2 } END { print p }' "$E2E_CLUSTER/pids" 2>/dev/null; }

vs_ready() { curl -fsS --max-time 2 --cacert "$E2E_CLUSTER/pki/ca.crt" "$(vs_url /readyz)"; }

# vs_cpu_pids NAME... : the PIDs of the processes cluster.sh spawn started under NAME (etcd,
# kube-apiserver, kube-scheduler, vgpu-sched, agent), comma-separated, for `vs-e2e cpu PIDS`
# (their CPU seconds so far) and vs_settle --cpu-pids (fails if one is not running).
vs_cpu_pids() {
    local name pid out=()
    for name in "$@"; do
        pid="$(vs_pid "$name")"
        [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
        out+=("$pid")
    done
    local IFS=,
    printf '%s\n' "${out[*]}"
}

# vs_settled_cpu SETTLE-JSON : "S1 S2 ..." from its "cpu" array (vs_settle --cpu-pids): the CPU
# seconds each process had used when the settled state was first seen.
vs_settled_cpu() { sed -E 's/.*"cpu":\[([^]]*)\].*/\1/; t; s/.*/-/' <<<"$1" | tr ',' ' '; }

# vs_timed_burst LABEL NS N FILE TIMEOUT PROC... : creates the pods of FILE (20 at a time) and
# waits until NS settles; prints "SETTLED CREATE CPU...": the settle time from the first create
# (s), how long the creates took (s) and the CPU seconds of each PROC (names cluster.sh spawn
# started) from before the creates until the settled state was first seen (vs_settle
# --cpu-pids: not the stable window after it). Fails, naming LABEL, unless all N are bound.
vs_timed_burst() {
    local label=$1 ns=$2 n=$3 file=$4 timeout=$5 t0 t1 out bound cpu0 cpu1 pids
    shift 5
    pids="$(vs_cpu_pids "$@")" || {
        e2e_fail "$label: one of $* is not running"
        return 1
    }
    cpu0="$("$E2E_BIN/vs-e2e" cpu "$pids")" || {
        e2e_fail "$label: reading the CPU seconds of $* failed"
        return 1
    }
    t0="$(date +%s.%N)"
    "$E2E_BIN/vs-e2e" create-pods --kubeconfig "$KUBECONFIG" --concurrency 20 "$file" 2>/dev/null || {
        e2e_fail "$label: creating the pods failed"
        return 1
    }
    t1="$(date +%s.%N)"
    out="$(vs_settle "$ns" "$timeout" --started "$t0" --cpu-pids "$pids")" || {
        e2e_fail "$label: not settled: $out"
        return 1
    }
    cpu1="$(vs_settled_cpu "$out")"
    bound="$(sed -E 's/.*"bound":([0-9]+).*/\1/' <<<"$out")"
    [[ "$bound" == "$n" ]] || {
        e2e_fail "$label: $bound of $n bound: $out"
        return 1
    }
    printf '%s %s %s\n' "$(sed -E 's/.*"settled":([0-9.]+).*/\1/' <<<"$out")" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" \
        "$(paste -d' ' <(tr ' ' '\n' <<<"$cpu1") <(tr ' ' '\n' <<<"$cpu0") |
            awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 - $2 }')"
}

# vs_metric NAME : the value of an unlabelled sample on vgpu-sched's /metrics ("-" if absent).
vs_metric() {
    curl -s --max-time 5 "$(vs_metrics_url)" |
        awk -v n="$1" '$1 == n { print $2; found = 1 } END { if (!found) print "-" }'
}

# vs_api_requests : requests kube-apiserver has answered so far (apiserver_request_total, every
# verb and resource).
vs_api_requests() {
    e2e_kubectl get --raw /metrics 2>/dev/null |
        awk '/^apiserver_request_total\{/ { n += $NF } END { printf "%d\n", n }'
}

# vs_api_requests_by_kind : the same by kind, one "VERB RESOURCE[/SUBRESOURCE] COUNT" line each,
# sorted (WATCH counts a watch when it starts).
vs_api_requests_by_kind() {
    e2e_kubectl get --raw /metrics 2>/dev/null |
        awk '/^apiserver_request_total\{/ {
            v = $0; sub(/.*verb="/, "", v); sub(/".*/, "", v)
            r = $0; sub(/.*[{,]resource="/, "", r); sub(/".*/, "", r)
            u = $0; sub(/.*subresource="/, "", u); sub(/".*/, "", u)
            n[v " " r (u != "" ? "/" u : "")] += $NF
        } END { for (k in n) printf "%s %d\n", k, n[k] }' | LC_ALL=C sort
}

# vs_api_requests_delta BEFORE AFTER N : per kind, (AFTER - BEFORE) / N from two
# vs_api_requests_by_kind outputs, "VERB RESOURCE PER-N" lines with a change, then "reads R
# writes W" (reads: GET, LIST, WATCH; writes: every other verb), each per N.
vs_api_requests_delta() {
    awk -v n="$3" 'FNR == NR { b[$1 " " $2] = $3; next }
        { d = $3 - b[$1 " " $2]; if (d <= 0) next
          printf "%s %s %.2f\n", $1, $2, d / n
          if ($1 == "GET" || $1 == "LIST" || $1 == "WATCH") r += d; else w += d }
        END { printf "reads %.2f writes %.2f\n", r / n, w / n }' "$1" "$2"
}

# shellcheck disable=SC2120  # the flags are optional
# vs_start [EXTRA FLAGS] : start vgpu-sched serve, wait for "listening on port N" and /readyz.
# VS_PROC names the process and its log (default vgpu-sched; a second replica needs its own, and
# its own VS_EXTENDER_PORT/VS_METRICS_PORT); VS_START_NOT_READY=1 skips the /readyz wait (a
# follower replica is not ready by design).
vs_start() {
    local proc=${VS_PROC:-vgpu-sched}
    local log="$E2E_CLUSTER/$proc.log" before pid deadline
    [[ -x "$VS_BIN" ]] || e2e_die "vgpu-sched binary $VS_BIN not found (build it, or pass its path to run.sh)"
    before="$(grep -c '^listening on port ' "$log" 2>/dev/null || true)"
    # Where this start's log begins (vs_log_since_start).
    VS_LOG_START=1
    if [[ -f "$log" ]]; then VS_LOG_START=$(($(wc -l <"$log") + 1)); fi
    if vs_hami; then
        # HAMi's container: command `scheduler` (the image's entry of that name), its arguments
        # with the addresses, certificates and paths of this cluster, and its environment; plus
        # --kubeconfig (HAMi's pod uses the in-cluster configuration).
        ln -sfn "$VS_BIN" "$E2E_CLUSTER/scheduler"
        cp "$VS_HAMI_FIXTURES/device-config.yaml" "$E2E_CLUSTER/device-config.yaml"
        E2E_SPAWN_ARGV0="$E2E_CLUSTER/scheduler" e2e_spawn "$proc" env POD_NAME="$VS_HAMI_POD" \
            POD_NAMESPACE="$VS_HAMI_NS" HAMI_NODELOCK_EXPIRE=5m "$E2E_CLUSTER/scheduler" \
            --kubeconfig="$E2E_CLUSTER/vgpu-sched.kubeconfig" \
            --http_bind="127.0.0.1:$VS_EXTENDER_PORT" \
            --cert_file="$E2E_CLUSTER/pki/extender.crt" --key_file="$E2E_CLUSTER/pki/extender.key" \
            --scheduler-name=hami-scheduler \
            --metrics-bind-address="127.0.0.1:$VS_METRICS_PORT" \
            --node-scheduler-policy=binpack --gpu-scheduler-policy=spread \
            --force-overwrite-default-scheduler=true \
            --device-config-file="$E2E_CLUSTER/device-config.yaml" \
            --leader-elect=true --leader-elect-resource-name=hami-scheduler \
            --leader-elect-resource-namespace="$VS_HAMI_NS" \
            --debug -v=4 "$@"
    else
        e2e_spawn "$proc" "$VS_BIN" serve \
            --kubeconfig "$E2E_CLUSTER/vgpu-sched.kubeconfig" \
            --http_bind="127.0.0.1:$VS_EXTENDER_PORT" \
            --cert_file "$E2E_CLUSTER/pki/extender.crt" --key_file "$E2E_CLUSTER/pki/extender.key" \
            --scheduler-name="$VS_SCHEDULER_NAME" \
            --metrics-bind-address="127.0.0.1:$VS_METRICS_PORT" "$@"
    fi
    pid="$(vs_pid "$proc")"
    deadline=$((SECONDS + 60))
    until [[ "$(grep -c "^listening on port $VS_EXTENDER_PORT\$" "$log" 2>/dev/null || true)" -gt "${before:-0}" ]] &&
        { [[ "${VS_START_NOT_READY:-0}" == 1 ]] || vs_ready >/dev/null 2>&1; }; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 20 "$log" >&2 || true
            e2e_fail "vgpu-sched (pid $pid) exited during start-up (log: $log)"
            return 1
        fi
        if ((SECONDS >= deadline)); then
            tail -n 20 "$log" >&2 || true
            e2e_fail "vgpu-sched not ready after 60s (log: $log)"
            return 1
        fi
        sleep 0.2
    done
    e2e_log "$proc ready on $(vs_url) (pid $pid, metrics $(vs_metrics_url))"
}

# vs_stop : SIGTERM vgpu-sched (cluster.sh stop: by recorded PID, SIGKILL after 15 s) and check
# that it shut down cleanly (its "shutdown" log line, naming the signal).
vs_stop() {
    local log="$E2E_CLUSTER/vgpu-sched.log" before
    before="$(grep -c 'event=shutdown signal=SIGTERM' "$log" || true)"
    "$E2E_DIR/cluster.sh" stop "$E2E_CLUSTER" vgpu-sched
    [[ "$(grep -c 'event=shutdown signal=SIGTERM' "$log" || true)" -gt "$before" ]] ||
        e2e_fail "vgpu-sched did not log a clean shutdown after SIGTERM (log: $log)"
}

# vs_register_webhook : the apiserver calls vgpu-sched's /webhook for every pod CREATE (as the
# chart registers it, but by URL: there is no Service routing here), trusting the e2e CA.
vs_register_webhook() {
    if vs_hami; then
        vs_hami_register_webhook
        return
    fi
    e2e_kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: vgpu-sched-e2e
webhooks:
  - name: vgpu.hami.io
    admissionReviewVersions: ["v1"]
    clientConfig:
      url: $(vs_url /webhook)
      caBundle: $(base64 -w0 "$E2E_CLUSTER/pki/ca.crt")
    rules:
      - operations: ["CREATE"]
        apiGroups: [""]
        apiVersions: ["v1"]
        resources: ["pods"]
        scope: Namespaced
    failurePolicy: Fail
    matchPolicy: Equivalent
    sideEffects: None
    timeoutSeconds: 10
    reinvocationPolicy: Never
    namespaceSelector:
      matchExpressions:
        - {key: hami.io/webhook, operator: NotIn, values: ["ignore"]}
    objectSelector:
      matchExpressions:
        - {key: hami.io/webhook, operator: NotIn, values: ["ignore"]}
EOF
}

# vs_setup [AGENT FLAGS] : everything a vgpu-sched scenario needs after cluster.sh up; the
# flags go to the node agent (e.g. --hold 200ms). VS_E2E_SERVE_FLAGS (words) are added to
# vgpu-sched serve.
vs_setup() {
    vs_kubeconfig_identity
    ! vs_hami || vs_hami_pod_and_lease
    # shellcheck disable=SC2086  # words on purpose
    vs_start ${VS_E2E_SERVE_FLAGS:-}
    vs_register_webhook
    if vs_hami; then
        # Under HAMi's RBAC only filter-mode preemption is missing (pods/eviction): ready anyway.
        vs_hami_expect_optional 1 0 1 1 1
        e2e_wait 20 "HAMi's Service selector label on the scheduler pod" e2e_field_is pod \
            "$VS_HAMI_POD" '{.metadata.labels.hami\.io/scheduler-role}' leader --namespace "$VS_HAMI_NS"
        [[ "$(vs_log_since_start 'event=gpu_preemption ')" == 'level=info event=gpu_preemption mode=filter apiserver=1.36' ]] ||
            e2e_fail "gpu_preemption: $(vs_log_since_start 'event=gpu_preemption ')"
    fi
    e2e_agent_start "$@"
}

# vs_log_since_start TEXT : the lines of vgpu-sched.log since the last vs_start that contain
# TEXT (a fixed string), each from "level=" on.
vs_log_since_start() {
    tail -n "+${VS_LOG_START:-1}" "$E2E_CLUSTER/vgpu-sched.log" | grep -F -- "$1" |
        sed 's/^.* level=/level=/' || true
}

# vs_hami_pod_and_lease : what HAMi's Deployment provides around its extender container: the
# scheduler pod (POD_NAME; the extender labels it hami.io/scheduler-role=leader, which the
# selector of HAMi's Service requires) and the Lease kube-system/hami-scheduler that the pod's
# kube-scheduler holds (holderIdentity "<pod>_<id>"; here valid for an hour, not renewed).
vs_hami_pod_and_lease() {
    e2e_kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $VS_HAMI_POD
  namespace: $VS_HAMI_NS
  labels:
    app.kubernetes.io/component: hami-scheduler
    app.kubernetes.io/name: hami
    app.kubernetes.io/instance: hami
    hami.io/webhook: ignore
spec:
  serviceAccountName: hami-scheduler
  automountServiceAccountToken: false
  containers:
    - name: vgpu-scheduler-extender
      image: vs-e2e.invalid/hami:v2.10.0
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: hami-scheduler
  namespace: $VS_HAMI_NS
spec:
  holderIdentity: ${VS_HAMI_POD}_e2e
  leaseDurationSeconds: 3600
EOF
}

# vs_hami_register_webhook : HAMi v2.10's MutatingWebhookConfiguration (hami-webhook, as its
# chart renders it by default), by URL (no Service routing here): admissionReviewVersions
# v1beta1, failurePolicy Ignore, matchPolicy Equivalent, reinvocationPolicy Never, scope '*'.
vs_hami_register_webhook() {
    e2e_kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: hami-webhook
webhooks:
  - name: vgpu.hami.io
    admissionReviewVersions: ["v1beta1"]
    clientConfig:
      url: $(vs_url /webhook)
      caBundle: $(base64 -w0 "$E2E_CLUSTER/pki/ca.crt")
    failurePolicy: Ignore
    matchPolicy: Equivalent
    namespaceSelector:
      matchExpressions:
        - {key: hami.io/webhook, operator: NotIn, values: ["ignore"]}
    objectSelector:
      matchExpressions:
        - {key: hami.io/webhook, operator: NotIn, values: ["ignore"]}
    reinvocationPolicy: Never
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
        scope: "*"
    sideEffects: None
    timeoutSeconds: 10
EOF
}

# vs_hami_expect_optional PDB EVICTION LEASE EVENTS DRA : each 1 (available) or 0 (missing):
# vgpu_sched_optional_api_available says so, /readyz is 200 and names exactly the missing ones,
# this start's log has exactly one optional_api_missing line for each missing one (reason
# forbidden) and none for the others, and no watch_error line.
vs_hami_expect_optional() {
    # The fifth covers the three DRA APIs (DeviceClasses, ResourceSlices, ResourceClaims): the
    # same grant (system:kube-scheduler's) gives or takes all three.
    local want=("$@" "$5" "$5") i line lines metrics degraded=""
    local apis=(poddisruptionbudgets.policy pods/eviction leases.coordination.k8s.io events
        deviceclasses.resource.k8s.io resourceslices.resource.k8s.io resourceclaims.resource.k8s.io)
    local features=(pdb-aware-preemption filter-preemption leader-election events dra-guard
        dra-ledger dra-ledger)
    local effects=("preemption ignores PodDisruptionBudgets" "filter-mode preemption is off"
        "the Lease is not followed: this replica acts as the leader" "Events are not posted"
        "DeviceClasses that map a GPU resource to DRA are not reported"
        "DRA claims on HAMi cards are not counted" "DRA claims on HAMi cards are not counted")
    local perms=("list, watch poddisruptionbudgets.policy" "create pods/eviction"
        "get, list, watch leases.coordination.k8s.io in namespace $VS_HAMI_NS" "create events"
        "list, watch deviceclasses.resource.k8s.io" "list, watch resourceslices.resource.k8s.io"
        "list, watch resourceclaims.resource.k8s.io")
    metrics="$(curl -fsS --max-time 5 "$(vs_metrics_url)" | grep '^vgpu_sched_optional_api_available' || true)"
    for i in 0 1 2 3 4 5 6; do
        line="vgpu_sched_optional_api_available{api=\"${apis[i]}\",feature=\"${features[i]}\"} ${want[i]}"
        grep -qxF "$line" <<<"$metrics" || e2e_fail "want '$line' in /metrics, got: $metrics"
        lines="$(vs_log_since_start "event=optional_api_missing api=${apis[i]} ")"
        if ((want[i])); then
            e2e_expect_eq "optional_api_missing lines of ${apis[i]}" "$lines" ""
        else
            [[ "$lines" =~ ^"level=warn event=optional_api_missing api=${apis[i]} permission=\"${perms[i]}\" reason=forbidden feature=${features[i]} effect=\"${effects[i]}\" retry_s="[0-9.]+$ ]] ||
                e2e_fail "${apis[i]}: want one optional_api_missing line, got: '$lines'"
            degraded+="${degraded:+,}{\"api\":\"${apis[i]}\",\"feature\":\"${features[i]}\",\"effect\":\"${effects[i]}\",\"reason\":\"forbidden\"}"
        fi
    done
    e2e_expect_eq "/readyz" "$(vs_ready)" "{\"status\":\"ok\",\"degraded\":[$degraded]}"
    e2e_expect_eq "watch_error lines" "$(vs_log_since_start 'event=watch_error')" ""
    e2e_log "drop-in: optional APIs (PDBs, eviction, Lease, events, DRA) $* as expected, /readyz 200"
}

# vs_namespace NS : a namespace with its default ServiceAccount (no controller-manager here).
vs_namespace() {
    e2e_kubectl create namespace "$1" >/dev/null
    e2e_kubectl create serviceaccount default --namespace "$1" >/dev/null
}

# vs_pod_yaml NAME LIMITS [ANNOTATIONS] [NODE-SELECTOR] [NAMESPACE] : one pod with one container,
# maps in YAML flow style, e.g. vs_pod_yaml p '{nvidia.com/gpu: 1, nvidia.com/gpumem: 3000}'.
# No schedulerName: the webhook routes GPU pods to hami-scheduler.
vs_pod_yaml() {
    local annos=${3:-"{}"} sel=${4:-"{}"} ns=${5:-default}
    cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $ns
  annotations: $annos
spec:
  nodeSelector: $sel
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources:
        limits: $2
EOF
}

# vs_pod NAME LIMITS [ANNOTATIONS] [NODE-SELECTOR] [NAMESPACE] : create it.
vs_pod() { vs_pod_yaml "$@" | e2e_kubectl create -f - >/dev/null; }

# vs_running POD [NS] : bound, handed off (bind-phase success) and Running.
vs_running() {
    [[ "$(e2e_jsonpath pod "$1" '{.status.phase}/{.metadata.annotations.hami\.io/bind-phase}' \
        --namespace "${2:-default}")" == Running/success ]]
}

# vs_unschedulable POD [NS] : kube-scheduler gave up on it (PodScheduled False, Unschedulable).
vs_unschedulable() {
    [[ "$(e2e_jsonpath pod "$1" \
        '{.status.conditions[?(@.type=="PodScheduled")].status}/{.status.conditions[?(@.type=="PodScheduled")].reason}' \
        --namespace "${2:-default}")" == False/Unschedulable ]]
}

# vs_wait_running POD [NS] / vs_wait_unschedulable POD [NS]
vs_wait_running() { e2e_wait 60 "pod $1 Running" vs_running "$@"; }
vs_wait_unschedulable() { e2e_wait 60 "pod $1 unschedulable" vs_unschedulable "$@"; }

# vs_devices POD [NS] : hami.io/vgpu-devices-allocated.
vs_devices() {
    e2e_jsonpath pod "$1" '{.metadata.annotations.hami\.io/vgpu-devices-allocated}' --namespace "${2:-default}"
}

# vs_expect_placement POD NODE DEVICES [NS] : bound to NODE with exactly DEVICES allocated.
vs_expect_placement() {
    local ns=${4:-default}
    e2e_expect_eq "node of $1" "$(e2e_jsonpath pod "$1" '{.spec.nodeName}' --namespace "$ns")" "$2"
    e2e_expect_eq "devices of $1" "$(vs_devices "$1" "$ns")" "$3"
}

# vs_events POD REASON [NS] : "source|message" lines of the pod's events with that reason.
vs_events() {
    e2e_kubectl get events --namespace "${3:-default}" \
        --field-selector "involvedObject.name=$1,reason=$2" \
        -o 'jsonpath={range .items[*]}{.source.component}|{.message}{"\n"}{end}'
}

# vs_has_event POD REASON MESSAGE [NS] : an event from hami-scheduler with exactly MESSAGE.
vs_has_event() { grep -qxF "$VS_SCHEDULER_NAME|$3" < <(vs_events "$1" "$2" "${4:-default}"); }

# vs_expect_event POD REASON MESSAGE [NS] : vs_has_event within 30 s (vgpu-sched posts events
# asynchronously, after answering kube-scheduler).
vs_expect_event() {
    local deadline=$((SECONDS + 30))
    until vs_has_event "$@"; do
        if ((SECONDS >= deadline)); then
            e2e_fail "pod $1: no $2 event '$3' from $VS_SCHEDULER_NAME; got: $(vs_events "$1" "$2" "${4:-default}")"
            return 1
        fi
        sleep 0.5
    done
}

# vs_condition_message POD [NS] : message of the PodScheduled condition.
vs_condition_message() {
    e2e_jsonpath pod "$1" '{.status.conditions[?(@.type=="PodScheduled")].message}' --namespace "${2:-default}"
}

# vs_capacity [vs-e2e capacity flags] : no card over-committed by bound pods, and vgpu-sched's
# per-card metrics equal the usage recorded on the pods.
# shellcheck disable=SC2120  # the flags are optional
vs_capacity() {
    "$E2E_BIN/vs-e2e" capacity --kubeconfig "$KUBECONFIG" --metrics "$(vs_metrics_url)" "$@"
}

# vs_settle NS TIMEOUT [FLAGS] : every pod of NS bound and Running or refused (vs-e2e settle;
# FLAGS such as --started UNIX_TIME go to it). VS_SCHED_PORT: another kube-scheduler's port.
vs_settle() {
    local port ns=$1 timeout=$2
    shift 2
    port="${VS_SCHED_PORT:-$(awk -F= '$1 == "SCHED_PORT" { print $2 }' "$E2E_CLUSTER/env")}"
    "$E2E_BIN/vs-e2e" settle --kubeconfig "$KUBECONFIG" --namespace "$ns" --timeout "$timeout" \
        --scheduler-metrics "https://127.0.0.1:$port/metrics" "$@"
}

# vs_random_pods PREFIX COUNT SEED NODE-SELECTOR [NS] : COUNT pods with gpumem 1000..4000 MiB
# (steps of 100) and gpucores 5..30, from a fixed linear congruential sequence (reproducible).
vs_random_pods() {
    local prefix=$1 count=$2 x=$3 sel=$4 ns=${5:-default} i mem cores
    for ((i = 1; i <= count; i++)); do
        x=$(((x * 1103515245 + 12345) % 2147483648))
        mem=$((1000 + (x / 65536 % 31) * 100))
        x=$(((x * 1103515245 + 12345) % 2147483648))
        cores=$((5 + x / 65536 % 26))
        vs_pod_yaml "$prefix-$i" "{nvidia.com/gpu: 1, nvidia.com/gpumem: $mem, nvidia.com/gpucores: $cores}" \
            "{}" "$sel" "$ns"
    done
}

# vs_burst_report SETTLE-JSON TARGET-SECONDS LABEL : prints the settle time and bound pods/s
# against the target and the Binds failed for node lock contention (vgpu-sched's log); the
# scenario asserts that count with vs_burst_no_contention after its other checks, so a failing
# run still shows them.
vs_burst_report() {
    local out=$1 target=$2 label=$3 settled bound contended verdict
    settled="$(sed -E 's/.*"settled":([0-9.]+).*/\1/' <<<"$out")"
    bound="$(sed -E 's/.*"bound":([0-9]+).*/\1/' <<<"$out")"
    contended="$(grep 'event=bind_failed' "$E2E_CLUSTER/vgpu-sched.log" | grep -c 'node lock contention' || true)"
    verdict="met"
    awk -v s="$settled" -v t="$target" 'BEGIN { exit !(s > t) }' && verdict="MISSED"
    e2e_log "burst ($label): settled in ${settled}s (target ${target}s: $verdict), $bound pods bound, $(awk -v b="$bound" -v s="$settled" 'BEGIN { printf "%.1f", (s > 0 ? b / s : 0) }') pods/s, $contended Binds failed for lock contention"
    VS_BURST_CONTENDED=$contended
    # Where the API server's work came from: its request counters by verb and resource (the
    # whole run, set-up included), for reading beside the settle time.
    e2e_kubectl get --raw /metrics 2>/dev/null | grep '^apiserver_request_total{' |
        sed -E 's/.*resource="([^"]*)".*subresource="([^"]*)".*verb="([^"]*)".*\} ([0-9]+)$/\4 \3 \1 \2/;
                s/.*resource="([^"]*)".*verb="([^"]*)".*\} ([0-9]+)$/\3 \2 \1/' |
        awk '$1 ~ /^[0-9]+$/ { n[$2 " " $3 " " $4] += $1 } END { for (k in n) print n[k], k }' |
        sort -rn >"$E2E_CLUSTER/apiserver-requests.txt" || true
    # And vgpu-sched's own counters (its Filter results, preemptions, lock and API traffic).
    curl -s --max-time 5 "$(vs_metrics_url)" | grep -E '^vgpu_sched_[a-z_]*_total' \
        >"$E2E_CLUSTER/vgpu-sched-counters.txt" || true
}

# vs_burst_no_contention : no Bind failed for node lock contention (counted by vs_burst_report).
vs_burst_no_contention() {
    e2e_expect_eq "Binds failed for node lock contention" "${VS_BURST_CONTENDED:-unknown}" 0
}

# vs_bound_at_least N NS : at least N pods of NS have a node.
vs_bound_at_least() {
    (($(e2e_kubectl get pods --namespace "$2" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' |
        grep -c .) >= $1))
}

# vs_log_count REGEX : lines of vgpu-sched.log matching REGEX.
vs_log_count() { grep -cE "$1" "$E2E_CLUSTER/vgpu-sched.log" || true; }

# vs_no_node_locks : no node carries hami.io/mutex.lock.
vs_no_node_locks() {
    local locks
    locks="$(e2e_kubectl get nodes -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.annotations.hami\.io/mutex\.lock}{"\n"}{end}' |
        grep -v '=$' || true)"
    [[ -z "$locks" ]] || {
        e2e_fail "node locks left: $locks"
        return 1
    }
}

# vs_chaos_nodes : the chaos scenarios' 10 fake nodes, label pool=chaos: chaos-01..05 with 4
# cards of 16 GiB shared by 5, chaos-06..10 with 4 of 8 GiB shared by 10.
vs_chaos_nodes() {
    e2e_fake_nodes --cards 4 --devmem 16384 --split 5 --label pool=chaos \
        chaos-01 chaos-02 chaos-03 chaos-04 chaos-05
    e2e_fake_nodes --cards 4 --devmem 8192 --split 10 --label pool=chaos \
        chaos-06 chaos-07 chaos-08 chaos-09 chaos-10
}

# vs_chaos_burst NS : creates the chaos scenarios' 200 random pods (the burst mix, a fixed
# seed, pool=chaos) in NS, 20 requests at a time; they are in chaos-pods.yaml.
vs_chaos_burst() {
    vs_random_pods k 200 20260101 '{pool: chaos}' "$1" >"$E2E_CLUSTER/chaos-pods.yaml"
    "$E2E_BIN/vs-e2e" create-pods --kubeconfig "$KUBECONFIG" --concurrency 20 "$E2E_CLUSTER/chaos-pods.yaml"
}

# vs_chaos_end NS COUNT [CAPACITY FLAGS] : the end of a chaos scenario: every one of the COUNT pods
# of NS bound and Running or refused with a reason (vs-e2e settle; VS_CHAOS_SETTLE_FLAGS adds
# settle flags, e.g. --allow-failed: then pods Failed by the device plugin count too), no card
# over-committed, every bound GPU pod with its allocation, vgpu-sched's metrics equal to the usage
# on the pods (vs-e2e capacity, with the extra flags given), no node lock left. Sets VS_SETTLED to
# settle's JSON.
vs_chaos_end() {
    local ns=$1 count=$2 out bound refused failed
    shift 2
    # shellcheck disable=SC2086  # words on purpose
    out="$(vs_settle "$ns" 5m ${VS_CHAOS_SETTLE_FLAGS:-})" || {
        e2e_fail "not settled: $out"
        return 1
    }
    VS_SETTLED=$out
    e2e_log "settled: $out"
    bound="$(sed -E 's/.*"bound":([0-9]+).*/\1/' <<<"$out")"
    refused="$(sed -E 's/.*"unschedulable":([0-9]+).*/\1/' <<<"$out")"
    failed=0
    [[ "$out" != *'"failed":'* ]] || failed="$(sed -E 's/.*"failed":([0-9]+).*/\1/' <<<"$out")"
    e2e_expect_eq "bound + refused + failed by the device plugin" "$((bound + refused + failed))" "$count"
    vs_capacity --refused "$ns" --table "$@" 2>"$E2E_CLUSTER/capacity.txt" >"$E2E_CLUSTER/capacity.json" || {
        cat "$E2E_CLUSTER/capacity.txt" >&2
        e2e_fail "capacity check failed"
    }
    vs_no_node_locks
}
