# shellcheck shell=bash
# policies: node and card choice through the real kube-scheduler, made deterministic by usage
# that exists before each pod (hami-compat.md §5): the default node policy binpack (most used
# node) against a per-pod hami.io/node-scheduler-policy: spread, the default card policy spread
# (least used card) against hami.io/gpu-scheduler-policy: binpack, and card selection by
# nvidia.com/use-gpuuuid, nouse-gpuuuid and use-gputype (§1.10). Pods are created one after the
# other, each once the previous one is Running, and every placement is asserted exactly.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

scenario_policies_pre_up() { vs_pre_up; }

# place NAME LIMITS ANNOTATIONS SELECTOR NODE DEVICES : create, wait Running, expect placement.
place() {
    vs_pod "$1" "$2" "$3" "$4"
    vs_wait_running "$1"
    vs_expect_placement "$1" "$5" "$6"
    e2e_log "$1 -> $5 $6"
}

scenario_policies() {
    local small='{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10}'
    local pool='{pool: pol}' mixed='{pool: mixed}'
    e2e_fake_nodes --cards 2 --devmem 16384 --label pool=pol pol-a pol-b
    # One node with two different models: card 0 an A100 (40 GiB), card 1 a T4.
    e2e_fake_nodes --label pool=mixed --register \
        '[{"id":"GPU-{node}-0","count":10,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB","health":true,"mode":"hami-core"},{"id":"GPU-{node}-1","index":1,"count":10,"devmem":16384,"devcore":100,"type":"NVIDIA-Tesla T4","health":true,"mode":"hami-core"}]' \
        pol-m
    vs_setup

    # Usage on pol-a first (pinned): two idle cards, spread takes the last one.
    place seed '{nvidia.com/gpu: 1, nvidia.com/gpumem: 8000, nvidia.com/gpucores: 10}' '{}' \
        '{kubernetes.io/hostname: pol-a}' pol-a 'GPU-pol-a-1,NVIDIA,8000,10:;'
    # Default node policy binpack: the used node pol-a; default card policy spread: its idle card.
    place binpack "$small" '{}' "$pool" pol-a 'GPU-pol-a-0,NVIDIA,1000,10:;'
    # hami.io/node-scheduler-policy: spread: the idle node pol-b, its last card.
    place spread "$small" '{hami.io/node-scheduler-policy: spread}' "$pool" \
        pol-b 'GPU-pol-b-1,NVIDIA,1000,10:;'
    # hami.io/gpu-scheduler-policy: binpack: pol-a (binpack node) and its most used card 1
    # (8000 MiB) instead of the less used card 0 that spread would take.
    place gpu-binpack "$small" '{hami.io/gpu-scheduler-policy: binpack}' "$pool" \
        pol-a 'GPU-pol-a-1,NVIDIA,1000,10:;'
    # Both overrides: the least used node (pol-b), its used card.
    place spread-binpack "$small" \
        '{hami.io/node-scheduler-policy: spread, hami.io/gpu-scheduler-policy: binpack}' "$pool" \
        pol-b 'GPU-pol-b-1,NVIDIA,1000,10:;'
    # nvidia.com/use-gpuuuid names a card of pol-b: binpack would have chosen pol-a.
    place by-uuid "$small" '{nvidia.com/use-gpuuuid: GPU-pol-b-0}' "$pool" \
        pol-b 'GPU-pol-b-0,NVIDIA,1000,10:;'
    # nvidia.com/nouse-gpuuuid excludes pol-a's less used card 0, which spread would take.
    place not-uuid "$small" '{nvidia.com/nouse-gpuuuid: GPU-pol-a-0}' '{kubernetes.io/hostname: pol-a}' \
        pol-a 'GPU-pol-a-1,NVIDIA,1000,10:;'
    # nvidia.com/use-gputype (case-insensitive substring of the model): on two idle cards spread
    # would take the last one (the T4); a100 selects card 0.
    place by-type "$small" '{nvidia.com/use-gputype: a100}' "$mixed" \
        pol-m 'GPU-pol-m-0,NVIDIA,1000,10:;'
    # binpack would now take the used A100; Tesla T4 forces card 1.
    place by-type-binpack "$small" \
        '{nvidia.com/use-gputype: Tesla T4, hami.io/gpu-scheduler-policy: binpack}' "$mixed" \
        pol-m 'GPU-pol-m-1,NVIDIA,1000,10:;'
    # nvidia.com/nouse-gputype: both cards now hold one equal pod, the A100 scores lower (bigger
    # card) so spread would take it; not A100 means the T4.
    place not-type "$small" '{nvidia.com/nouse-gputype: A100}' "$mixed" \
        pol-m 'GPU-pol-m-1,NVIDIA,1000,10:;'

    vs_capacity >/dev/null
}
