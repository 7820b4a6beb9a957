# shellcheck shell=bash
# requeue: capacity that frees without any event kube-scheduler sees still reaches the pod it was
# refused to. A reservation Filter made for a pod nobody binds (here: a direct /filter for a pod
# of another scheduler) holds the only card; a GPU pod is refused (CardInsufficientMemory) and
# parked in kube-scheduler's unschedulable pool, which only a cluster event or its 5-minute
# timeout empties. When the reservation expires (--reservation-ttl 8s) vgpu-sched nudges the
# refused pod (annotation vgpu-sched.io/requeue, a Pod/Update event) and kube-scheduler retries
# it at once: the pod runs well before the 5 minutes.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_requeue_pre_up() { vs_pre_up; }

scenario_requeue() {
    e2e_fake_nodes --cards 1 --devmem 16384 --label pool=rq rq-a
    VS_E2E_SERVE_FLAGS="--reservation-ttl=8s" vs_setup

    # phantom bypasses the webhook and names a scheduler that does not run: only our direct
    # Filter below ever looks at it.
    e2e_kubectl create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: phantom
  namespace: default
  labels: {hami.io/webhook: ignore}
spec:
  schedulerName: nobody
  containers:
    - name: main
      image: vs-e2e.invalid/cuda:1
      resources:
        limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 16000}
EOF
    local args got
    args="{\"Pod\":$(e2e_kubectl get pod phantom -o json),\"Nodes\":null,\"NodeNames\":[\"rq-a\"]}"
    got="$(curl -fsS --max-time 10 --cacert "$E2E_CLUSTER/pki/ca.crt" -H 'Content-Type: application/json' \
        --data-binary "$args" "$(vs_url /filter)" | grep -o '"NodeNames":\[[^]]*\]')"
    e2e_expect_eq "direct Filter of phantom" "$got" '"NodeNames":["rq-a"]'
    local t0=$SECONDS
    vs_pod waiter '{nvidia.com/gpu: 1, nvidia.com/gpumem: 8000}' '{}' '{pool: rq}'
    vs_wait_unschedulable waiter
    local msg
    msg="$(vs_condition_message waiter)"
    [[ "$msg" == *"1/1 CardInsufficientMemory"* ]] || e2e_fail "waiter: PodScheduled message '$msg'"
    e2e_log "waiter refused while phantom's reservation holds the card"

    vs_wait_running waiter
    vs_expect_placement waiter rq-a 'GPU-rq-a-0,NVIDIA,8000,0:;'
    local took=$((SECONDS - t0))
    [[ "$(vs_log_count 'event=reservations_expired count=1 ')" -ge 1 ]] ||
        e2e_fail "phantom's reservation did not expire (log: $E2E_CLUSTER/vgpu-sched.log)"
    [[ "$(vs_log_count 'event=requeue_nudge pod=default/waiter$')" -ge 1 ]] ||
        e2e_fail "waiter was not nudged (log: $E2E_CLUSTER/vgpu-sched.log)"
    [[ -n "$(e2e_jsonpath pod waiter '{.metadata.annotations.vgpu-sched\.io/requeue}')" ]] ||
        e2e_fail "waiter has no vgpu-sched.io/requeue annotation"
    ((took < 60)) || e2e_fail "waiter took ${took}s to run"
    e2e_log "waiter Running ${took}s after its creation (reservation TTL 8s; kube-scheduler alone: 5 min)"
}
