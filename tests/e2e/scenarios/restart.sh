# shellcheck shell=bash
# restart: vgpu-sched keeps no state of its own — after a restart its usage comes from the pod
# annotations (hami-compat.md §3.2). With pods placed, vgpu-sched is stopped (SIGTERM, clean
# shutdown) and started again; its per-card metrics must equal the usage recorded on the bound
# pods, a node it filled must refuse a new pod (CardInsufficientMemory), and a second wave of
# pods, more than fits, must never double-book a card. While it is down, pod creation fails
# closed (the webhook's failurePolicy is Fail; with HAMi's registration, failurePolicy Ignore, a
# pod is admitted unmodified instead). VS_RESTART_WHILE_STOPPED names a command run while
# vgpu-sched is stopped (dropin-restart changes the RBAC there).

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_restart_pre_up() { vs_pre_up; }

scenario_restart() {
    local ns=restart pool='{pool: restart}' out refused
    # 4 nodes x 2 cards x 8 GiB = 65536 MiB.
    e2e_fake_nodes --cards 2 --devmem 8192 --label pool=restart r-a r-b r-c r-d
    vs_setup
    vs_namespace "$ns"

    # Wave 1: r-a filled to 6000 of 8192 MiB on both cards, then 16 pods anywhere.
    vs_pod full-1 '{nvidia.com/gpu: 1, nvidia.com/gpumem: 6000, nvidia.com/gpucores: 20}' '{}' \
        '{kubernetes.io/hostname: r-a}' "$ns"
    vs_pod full-2 '{nvidia.com/gpu: 1, nvidia.com/gpumem: 6000, nvidia.com/gpucores: 20}' '{}' \
        '{kubernetes.io/hostname: r-a}' "$ns"
    vs_wait_running full-1 "$ns"
    vs_wait_running full-2 "$ns"
    vs_random_pods w1 16 11 "$pool" "$ns" >"$E2E_CLUSTER/wave1.yaml"
    "$E2E_BIN/vs-e2e" create-pods --kubeconfig "$KUBECONFIG" "$E2E_CLUSTER/wave1.yaml"
    out="$(vs_settle "$ns" 2m)"
    e2e_log "wave 1 settled: $out"
    vs_expect_placement full-1 r-a 'GPU-r-a-1,NVIDIA,6000,20:;' "$ns"
    vs_expect_placement full-2 r-a 'GPU-r-a-0,NVIDIA,6000,20:;' "$ns"
    vs_capacity --refused "$ns" >/dev/null

    # Stop: a clean shutdown on SIGTERM; nothing is admitted while the webhook is gone.
    vs_stop
    if vs_hami; then
        # failurePolicy Ignore: admitted as written (not for hami-scheduler, no gpucores).
        vs_pod_yaml down '{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}' '{}' "$pool" "$ns" |
            e2e_kubectl create -f - >/dev/null
        e2e_expect_eq "pod admitted while vgpu-sched was down (failurePolicy Ignore)" \
            "$(e2e_jsonpath pod down '{.spec.schedulerName}/{.spec.containers[0].resources.limits.nvidia\.com/gpucores}' --namespace "$ns")" \
            default-scheduler/
        e2e_kubectl delete pod down --namespace "$ns" --wait=false >/dev/null
        e2e_wait 30 "pod down gone" e2e_gone pod down --namespace "$ns"
    else
        if out="$(vs_pod_yaml down '{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}' '{}' "$pool" "$ns" |
            e2e_kubectl create -f - 2>&1)"; then
            e2e_fail "a GPU pod was admitted while vgpu-sched was down"
        fi
        [[ "$out" == *'failed calling webhook "vgpu.hami.io"'* ]] ||
            e2e_fail "pod creation with vgpu-sched down: $out"
    fi
    ${VS_RESTART_WHILE_STOPPED:-}

    # Start again: the usage is rebuilt from the API before /readyz turns 200.
    # shellcheck disable=SC2086  # words on purpose
    vs_start ${VS_E2E_SERVE_FLAGS:-}
    vs_capacity >/dev/null || e2e_fail "the restarted vgpu-sched does not report the existing usage"
    e2e_log "restarted vgpu-sched reports exactly the usage of the bound pods"
    vs_pod no-room '{nvidia.com/gpu: 1, nvidia.com/gpumem: 7000, nvidia.com/gpucores: 10}' '{}' \
        '{kubernetes.io/hostname: r-a}' "$ns"
    vs_wait_unschedulable no-room "$ns"
    [[ "$(vs_condition_message no-room "$ns")" == *" 1 2/2 CardInsufficientMemory,"* ]] ||
        e2e_fail "no-room: PodScheduled message: $(vs_condition_message no-room "$ns")"
    vs_expect_event no-room FilteringFailed "1 nodes CardInsufficientMemory(r-a)" "$ns"

    # Wave 2: 24 more pods, more than the free capacity.
    vs_random_pods w2 24 22 "$pool" "$ns" >"$E2E_CLUSTER/wave2.yaml"
    "$E2E_BIN/vs-e2e" create-pods --kubeconfig "$KUBECONFIG" "$E2E_CLUSTER/wave2.yaml"
    out="$(vs_settle "$ns" 3m)"
    e2e_log "wave 2 settled: $out"
    refused="$(sed -E 's/.*"unschedulable":([0-9]+).*/\1/' <<<"$out")"
    ((refused > 1)) || e2e_fail "wave 2: expected pods refused for lack of capacity: $out"
    vs_capacity --refused "$ns" --table 2>"$E2E_CLUSTER/capacity.txt" >/dev/null || {
        cat "$E2E_CLUSTER/capacity.txt" >&2
        e2e_fail "capacity check after the restart failed"
    }
}
