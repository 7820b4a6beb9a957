# shellcheck shell=bash
# extender-wiring: the kube-scheduler side of the extender path, checked with vs-e2e's stub
# extender (not vgpu-sched): the rendered extender stanza is accepted, kube-scheduler reaches
# https://127.0.0.1:PORT trusting the e2e CA (caData) and presenting its client certificate
# (the stub requires one), sends /filter and /bind only for pods that ask for a managed
# resource (nvidia.com/*), and leaves binding of other pods to itself.

scenario_extender_wiring_pre_up() {
    VS_EXTENDER_PORT="$("$E2E_BIN/vs-e2e" freeport)"
    export VS_EXTENDER_PORT
    unset VS_EXTENDER_URL VS_EXTENDER_CA VS_EXTENDER_CLIENT_CERT VS_EXTENDER_CLIENT_KEY
}

scenario_extender_wiring() {
    local pki="$E2E_CLUSTER/pki" log="$E2E_CLUSTER/stub-extender.log"
    e2e_spawn stub-extender "$E2E_BIN/vs-e2e" stub-extender --kubeconfig="$KUBECONFIG" \
        --listen="127.0.0.1:$VS_EXTENDER_PORT" --cert="$pki/extender.crt" --key="$pki/extender.key" \
        --client-ca="$pki/ca.crt"
    e2e_wait 30 "stub extender listening" grep -q listening "$log"
    e2e_fake_nodes --cards 2 gpu-node-1 gpu-node-2

    e2e_kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: gpu, namespace: default}
spec:
  schedulerName: hami-scheduler
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources:
        limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 3000}
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: default}
spec:
  schedulerName: hami-scheduler
  containers:
    - name: main
      image: vs-e2e.invalid/pause:1
YAML
    e2e_wait 60 "pod gpu bound" e2e_has_value pod gpu '{.spec.nodeName}'
    e2e_wait 60 "pod plain bound" e2e_has_value pod plain '{.spec.nodeName}'
    # Candidate order is kube-scheduler's business; both nodes must be there.
    grep -qE 'filter default/gpu nodes=\[gpu-node-(1 gpu-node-2|2 gpu-node-1)\] client=vs-e2e-kube-scheduler' "$log" ||
        e2e_fail "no /filter for default/gpu with both nodes and the client certificate in $log"
    grep -q 'bind default/gpu -> gpu-node-[12] error="" client=vs-e2e-kube-scheduler' "$log" ||
        e2e_fail "no successful /bind for default/gpu in $log"
    if grep -q 'default/plain' "$log"; then
        e2e_fail "pod plain (no managed resource) reached the extender"
    fi
    e2e_log "extender saw: $(grep -cE ' (filter|bind) ' "$log") calls"
}
