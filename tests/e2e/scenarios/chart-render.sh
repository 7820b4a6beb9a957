# shellcheck shell=bash
# chart-render: every Helm chart under charts/ lints, renders, and its rendered objects are
# accepted by the real kube-apiserver (server-side dry run: schema, defaulting, admission).
# Skipped while the repository has no chart yet. vgpu-sched's chart (certs.mode generate, the
# default) renders an ECDSA P-256 CA and serving certificate, and vgpu-sched serves with them:
# a client trusting only the rendered ca.crt reaches it under the Service's in-cluster name.

scenario_chart_render() {
    local root chart name out
    root="$(cd "$E2E_DIR/../.." && pwd)"
    local charts=()
    for chart in "$root"/charts/*/Chart.yaml "$root"/charts/Chart.yaml; do
        [[ -f "$chart" ]] && charts+=("$(dirname "$chart")")
    done
    ((${#charts[@]})) || e2e_skip "no Helm chart under charts/ yet"
    [[ -x "$E2E_BIN/helm" ]] || e2e_fail "$E2E_BIN/helm missing: run tests/e2e/build.sh"
    e2e_kubectl create namespace vgpu-sched >/dev/null
    # Objects without metadata.namespace go to the release namespace, as with `helm install`;
    # those that name another one (e.g. kube-system) keep it. `kubectl --namespace` would refuse
    # the latter, a context namespace does not.
    local kc="$E2E_CLUSTER/chart.kubeconfig"
    cp "$KUBECONFIG" "$kc"
    "$E2E_BIN/kubectl" --kubeconfig="$kc" config set-context --current --namespace=vgpu-sched >/dev/null
    for chart in "${charts[@]}"; do
        name="$(basename "$chart")"
        out="$E2E_CLUSTER/chart-$name.yaml"
        "$E2E_BIN/helm" lint "$chart"
        "$E2E_BIN/helm" template vgpu-sched "$chart" --namespace vgpu-sched \
            --kube-version "$K8S_VERSION" >"$out"
        "$E2E_BIN/kubectl" --kubeconfig="$kc" apply --dry-run=server -f "$out"
        e2e_log "chart $name: lint, template and server-side dry run OK"
    done
    chart_certs_serve "$root/charts/vgpu-sched/templates/webhook.yaml"
}

# chart_certs_serve TEMPLATE : the generated certificates of vgpu-sched's chart (see above).
chart_certs_serve() {
    [[ -f "$1" ]] || return 0
    local dir="$E2E_CLUSTER/chart-certs" port mport bin="$VS_E2E_VGPU_SCHED" k pid alg
    mkdir -p "$dir"
    "$E2E_BIN/helm" template vgpu-sched "$(dirname "$(dirname "$1")")" --namespace vgpu-sched \
        --kube-version "$K8S_VERSION" --show-only templates/webhook.yaml >"$dir/webhook.yaml"
    for k in tls.crt tls.key ca.crt; do
        sed -nE "s/^  ${k//./\\.}: (.+)\$/\1/p" "$dir/webhook.yaml" | base64 -d >"$dir/$k"
        [[ -s "$dir/$k" ]] || e2e_fail "the chart's Secret has no $k"
    done
    alg="$(openssl x509 -in "$dir/tls.crt" -noout -text | grep -E 'Public Key Algorithm|NIST CURVE' | tr -s ' ' | paste -sd ';')"
    e2e_expect_eq "serving key" "$alg" " Public Key Algorithm: id-ecPublicKey; NIST CURVE: P-256"
    openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt" >/dev/null || e2e_fail "tls.crt is not signed by ca.crt"
    read -r port mport < <("$E2E_BIN/vs-e2e" freeport 2)
    "$bin" serve --cluster "$E2E_DIR/../../examples/demo-cluster.json" --http_bind "127.0.0.1:$port" \
        --cert_file "$dir/tls.crt" --key_file "$dir/tls.key" \
        --metrics-bind-address "127.0.0.1:$mport" >"$dir/serve.log" 2>&1 &
    pid=$!
    e2e_wait 30 "vgpu-sched serving the chart's certificate" \
        curl -sf --cacert "$dir/ca.crt" --resolve "vgpu-sched.vgpu-sched.svc:$port:127.0.0.1" \
        "https://vgpu-sched.vgpu-sched.svc:$port/healthz" || {
        kill "$pid"
        return 1
    }
    local got
    got="$(curl -sf --cacert "$dir/ca.crt" --resolve "vgpu-sched.vgpu-sched.svc:$port:127.0.0.1" \
        "https://vgpu-sched.vgpu-sched.svc:$port/healthz")"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    e2e_expect_eq "/healthz over the chart's certificate" "$got" "ok"
    e2e_log "chart vgpu-sched: generated certificates are ECDSA P-256; vgpu-sched serves with them"
}
