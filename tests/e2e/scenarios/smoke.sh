# shellcheck shell=bash
# smoke: the control plane alone, no extender. Two fake GPU nodes; a plain pod with
# schedulerName hami-scheduler is bound to one of them (kube-scheduler's own binder, as the pod
# asks for no managed resource) and "runs" (agent); a pod left to default-scheduler, a profile
# this kube-scheduler does not run, stays unbound.

scenario_smoke() {
    local n node
    e2e_fake_nodes --cards 2 --split 10 gpu-node-1 gpu-node-2
    e2e_agent_start
    for n in gpu-node-1 gpu-node-2; do
        e2e_expect_eq "$n Ready" \
            "$(e2e_jsonpath node "$n" '{.status.conditions[?(@.type=="Ready")].status}')" True
        e2e_expect_eq "$n allocatable nvidia.com/gpu" \
            "$(e2e_jsonpath node "$n" '{.status.allocatable.nvidia\.com/gpu}')" 20
        e2e_expect_eq "$n taints" "$(e2e_jsonpath node "$n" '{.spec.taints}')" ""
        e2e_has_value node "$n" '{.metadata.annotations.hami\.io/node-nvidia-register}' ||
            e2e_fail "$n has no hami.io/node-nvidia-register"
    done

    e2e_kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: plain
  namespace: default
spec:
  schedulerName: hami-scheduler
  containers:
    - name: main
      image: vs-e2e.invalid/pause:1
      resources:
        requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: default-scheduler-pod
  namespace: default
spec:
  containers:
    - name: main
      image: vs-e2e.invalid/pause:1
YAML
    e2e_wait 60 "pod plain bound to a node" e2e_has_value pod plain '{.spec.nodeName}'
    node="$(e2e_jsonpath pod plain '{.spec.nodeName}')"
    case $node in
    gpu-node-1 | gpu-node-2) e2e_log "pod plain bound to $node" ;;
    *) e2e_fail "pod plain bound to unexpected node '$node'" ;;
    esac
    e2e_wait 30 "pod plain Running" e2e_field_is pod plain '{.status.phase}' Running
    e2e_expect_eq "scheduler of pod plain" \
        "$(e2e_kubectl get events --field-selector involvedObject.name=plain,reason=Scheduled \
            -o 'jsonpath={.items[0].reportingComponent}')" hami-scheduler
    e2e_expect_eq "node of default-scheduler-pod" \
        "$(e2e_jsonpath pod default-scheduler-pod '{.spec.nodeName}')" ""
}
