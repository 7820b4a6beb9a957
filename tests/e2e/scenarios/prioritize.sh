# shellcheck shell=bash
# prioritize: the pods without a GPU placed by vgpu-sched's /prioritize through the real
# kube-scheduler (docs/fragmentation.md, "Placing the pods without a GPU too"): a second extender entry with
# only prioritizeVerb (weight 200, no managedResources). Three one-card nodes with equal cpu;
# a GPU pod fills pr-b's card (and teaches Filter the workload). A pod without a GPU that asks
# kube-scheduler (schedulerName hami-scheduler) for little cpu strands no GPU capacity anywhere,
# so the node with the least idle GPU capacity, pr-b, scores 10 and the others 5: it lands on
# pr-b, which kube-scheduler's own scoring alone (least allocated: pr-b has the GPU pod's cpu)
# would never pick.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_prioritize_pre_up() {
    vs_pre_up
    export VS_E2E_PRIORITIZE=1
}

scenario_prioritize() {
    e2e_fake_nodes --cards 1 --cpu 16 --label pool=prio pr-a pr-b pr-c
    vs_setup
    grep -q 'prioritizeVerb: prioritize' "$E2E_CLUSTER/scheduler-config.yaml" ||
        e2e_fail "scheduler-config.yaml has no prioritize entry"

    e2e_kubectl create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: fill
  namespace: default
spec:
  nodeSelector: {kubernetes.io/hostname: pr-b}
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources:
        requests: {cpu: "2"}
        limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 16384, nvidia.com/gpucores: 100}
YAML
    vs_wait_running fill
    vs_expect_placement fill pr-b 'GPU-pr-b-0,NVIDIA,16384,100:;'

    e2e_kubectl create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: cpu-only
  namespace: default
spec:
  schedulerName: hami-scheduler
  nodeSelector: {pool: prio}
  containers:
    - name: main
      image: vs-e2e.invalid/pause:1
      resources:
        requests: {cpu: 500m, memory: 64Mi}
YAML
    e2e_wait 60 "pod cpu-only bound" e2e_has_value pod cpu-only '{.spec.nodeName}'
    e2e_expect_eq "node of cpu-only" "$(e2e_jsonpath pod cpu-only '{.spec.nodeName}')" pr-b
    e2e_expect_eq "devices of cpu-only" "$(vs_devices cpu-only)" ""
    # kube-scheduler asked: the placement is the extender's, not chance.
    grep -qE 'event=prioritize pod=default/cpu-only nodes=3 top=pr-b' "$E2E_CLUSTER/vgpu-sched.log" ||
        e2e_fail "no prioritize call for cpu-only in vgpu-sched.log"
}
