# shellcheck shell=bash
# chart-render: every Helm chart under charts/ lints, renders, and its rendered objects are
# accepted by the real kube-apiserver (server-side dry run: schema, defaulting, admission).
# Skipped while the repository has no chart yet.

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
}
