# shellcheck shell=bash
# vendors: a mixed cluster (issue 29, spec hami-vendors.md §3). Fake nodes of three vendors —
# NVIDIA (hami.io/node-nvidia-register), Huawei Ascend 910B3 (hami.io/node-register-Ascend910B3,
# NetworkID 0 for NPUs 0-3 and 1 for 4-7, as the Ascend plugin registers them) and Hygon DCU
# (hami.io/node-dcu-register, the plugin's legacy text) — and two nodes with NVIDIA and DCU cards
# (v-mix shared by every pod, v-mix-2 only for the burst's pods asking both vendors);
# vgpu-sched runs with --enable-ascend, and the extender's managedResources list the Ascend and
# DCU resources as the chart does with those vendors enabled. The emulated device plugins hand
# off per vendor: each consumes its own to-allocate list, then bind-phase=success and the shared
# hami.io/mutex.lock released (all three vendors take that lock).
#
# First single pods with exact outcomes: two whole NPUs land on one NetworkID group (NPUs 7 and 6
# of an idle node), a vNPU of 12000 MiB is rounded by the webhook to the 16384 MiB template in
# limits and requests and gets the device plugin's runtime JSON, a pod asking NVIDIA and DCU
# lands on the mixed node with both vendors' lists handed off, a multi-NPU vNPU is denied at
# admission and a hami-core pod is refused with 1/8 ModeNotFit (template-mode nodes). Then a
# burst of 135 mixed pods (NVIDIA, Ascend vNPUs and whole NPUs, DCU shares, pods asking two
# vendors), more than fits: every pod bound and Running or refused with HAMi's reasons (exactly 8
# of the 10 two-vendor pods bound: v-mix-2 has 8 slots per vendor), no card
# over-committed per vendor (the pods' allocated lists of every vendor against the fake
# registers), vgpu-sched's per-card metrics equal to those sums, every bound pod handed off,
# every Ascend pod's memory a template and its runtime JSON naming its NPUs, no lock left and no
# Bind failed for lock contention.

# shellcheck source=../lib/vgpu.sh
. "$E2E_DIR/lib/vgpu.sh"

VENDORS_MANAGED="huawei.com/Ascend910B3 huawei.com/Ascend910B3-memory huawei.com/Ascend910B3-core
hygon.com/dcunum hygon.com/dcumem hygon.com/dcucores"

scenario_vendors_pre_up() {
    vs_pre_up
    VS_E2E_MANAGED="$(tr '\n' ' ' <<<"$VENDORS_MANAGED")"
    export VS_E2E_MANAGED
}

# vendors_pods NS : the burst, from a fixed linear congruential sequence (reproducible): 60
# NVIDIA pods (1000..4000 MiB, 5..30 cores), 40 Ascend pods (vNPUs of 4000..30000 MiB the webhook
# rounds to a template, a whole NPU, or two whole NPUs), 25 DCU pods (4000..32000 MiB, 10..50
# cores) and 10 pods asking one NVIDIA share and one DCU share (node selector pool=mixed).
vendors_pods() {
    local ns=$1 x=20290129 i kind mem cores
    next() { x=$(((x * 1103515245 + 12345) % 2147483648)) && r=$((x / 65536)); }
    local r
    for ((i = 1; i <= 135; i++)); do
        next
        if ((i <= 60)); then
            mem=$((1000 + r % 31 * 100))
            next
            cores=$((5 + r % 26))
            vs_pod_yaml "gpu-$i" "{nvidia.com/gpu: 1, nvidia.com/gpumem: $mem, nvidia.com/gpucores: $cores}" \
                "{}" "{pool: vendors}" "$ns"
        elif ((i <= 100)); then
            kind=$((r % 6))
            next
            mem=$((4000 + r % 27 * 1000))
            case $kind in
            0) vs_pod_yaml "npu-$i" "{huawei.com/Ascend910B3: 1}" "{}" "{pool: vendors}" "$ns" ;;
            1) vs_pod_yaml "npu-$i" "{huawei.com/Ascend910B3: 2}" "{}" "{pool: vendors}" "$ns" ;;
            *) vs_pod_yaml "npu-$i" "{huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: $mem}" \
                "{}" "{pool: vendors}" "$ns" ;;
            esac
        elif ((i <= 125)); then
            mem=$((4000 + r % 29 * 1000))
            next
            cores=$((10 + r % 41))
            vs_pod_yaml "dcu-$i" "{hygon.com/dcunum: 1, hygon.com/dcumem: $mem, hygon.com/dcucores: $cores}" \
                "{}" "{pool: vendors}" "$ns"
        else
            vs_pod_yaml "two-$i" "{nvidia.com/gpu: 1, nvidia.com/gpumem: 2000, nvidia.com/gpucores: 10, hygon.com/dcunum: 1, hygon.com/dcumem: 2000, hygon.com/dcucores: 10}" \
                "{}" "{pool: mixed}" "$ns"
        fi
    done
}

# annotation POD KEY [NS] : one annotation of the pod (dots in KEY escaped for jsonpath).
annotation() {
    e2e_jsonpath pod "$1" "{.metadata.annotations.${2//./\\.}}" --namespace "${3:-default}"
}

scenario_vendors() {
    local ns=vendors node out bound refused t0
    e2e_fake_nodes --vendor nvidia --cards 4 --devmem 16384 --split 5 --label pool=vendors v-gpu-1 v-gpu-2
    e2e_fake_nodes --vendor ascend --word Ascend910B3 --cards 8 --devmem 65536 --devcore 20 --split 4 \
        --label pool=vendors v-npu-1 v-npu-2
    e2e_fake_nodes --vendor dcu --cards 4 --devmem 65536 --devcore 100 --split 4 --label pool=vendors v-dcu-1 v-dcu-2
    e2e_fake_nodes --vendor nvidia,dcu --cards 2 --devmem 16384 --devcore 100 --split 4 --label pool=vendors v-mix
    e2e_fake_nodes --vendor nvidia,dcu --cards 2 --devmem 16384 --devcore 100 --split 4 --label pool=mixed v-mix-2
    VS_E2E_SERVE_FLAGS="${VS_E2E_SERVE_FLAGS:-} --enable-ascend" vs_setup --hold "${VS_E2E_HOLD:-20ms}"

    # 1. Two whole NPUs on an idle node: one NetworkID group, the walk's last cards first.
    vs_pod npu-pair "{huawei.com/Ascend910B3: 2}"
    vs_wait_running npu-pair
    node="$(e2e_jsonpath pod npu-pair '{.spec.nodeName}')"
    e2e_expect_eq "node of npu-pair" "${node%-[12]}" v-npu
    e2e_expect_eq "npu-pair Ascend910B3-devices-allocated" "$(annotation npu-pair hami.io/Ascend910B3-devices-allocated)" \
        "NPU-$node-7,Ascend910B3,65536,0:NPU-$node-6,Ascend910B3,65536,0:;"
    e2e_expect_eq "npu-pair huawei.com/Ascend910B3" "$(annotation npu-pair huawei.com/Ascend910B3)" \
        "[{\"UUID\":\"NPU-$node-7\",\"memory\":65536},{\"UUID\":\"NPU-$node-6\",\"memory\":65536}]"
    e2e_expect_eq "npu-pair Ascend910B3-devices-to-allocate after the handoff" \
        "$(annotation npu-pair hami.io/Ascend910B3-devices-to-allocate)" ";;"
    [[ "$(annotation npu-pair predicate-time)" =~ ^[0-9]{10}$ ]] || e2e_fail "npu-pair predicate-time is not Unix seconds"
    e2e_expect_eq "npu-pair memory limit and request (the webhook: a whole card)" \
        "$(e2e_jsonpath pod npu-pair '{.spec.containers[0].resources.limits.huawei\.com/Ascend910B3-memory}/{.spec.containers[0].resources.requests.huawei\.com/Ascend910B3-memory}')" \
        "65536/65536"
    e2e_expect_eq "lock on $node after the handoff" "$(e2e_jsonpath node "$node" '{.metadata.annotations.hami\.io/mutex\.lock}')" ""

    # 2. A vNPU: 12000 MiB becomes the vir05_1c_16g template (16384) in limits and requests.
    vs_pod npu-vnpu "{huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 12000}"
    vs_wait_running npu-vnpu
    e2e_expect_eq "npu-vnpu memory limit and request" \
        "$(e2e_jsonpath pod npu-vnpu '{.spec.containers[0].resources.limits.huawei\.com/Ascend910B3-memory}/{.spec.containers[0].resources.requests.huawei\.com/Ascend910B3-memory}')" \
        "16384/16384"
    [[ "$(annotation npu-vnpu huawei.com/Ascend910B3)" =~ ^\[\{\"UUID\":\"NPU-v-npu-[12]-[0-7]\",\"temp\":\"vir05_1c_16g\",\"memory\":16384\}\]$ ]] ||
        e2e_fail "npu-vnpu huawei.com/Ascend910B3: $(annotation npu-vnpu huawei.com/Ascend910B3)"

    # 3. NVIDIA and DCU in one container: only the mixed node has both; both lists handed off.
    vs_pod two "{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10, hygon.com/dcunum: 1, hygon.com/dcumem: 3000, hygon.com/dcucores: 20}" \
        "{}" "{pool: vendors}"
    vs_wait_running two
    e2e_expect_eq "node of two" "$(e2e_jsonpath pod two '{.spec.nodeName}')" v-mix
    e2e_expect_eq "two dcu-devices-allocated" "$(annotation two hami.io/dcu-devices-allocated)" "DCU-v-mix-1,DCU,3000,20:;"
    e2e_expect_eq "two vgpu-devices-allocated" "$(annotation two hami.io/vgpu-devices-allocated)" "GPU-v-mix-1,NVIDIA,1000,10:;"
    e2e_expect_eq "two to-allocate lists after the handoff" \
        "$(annotation two hami.io/dcu-devices-to-allocate)/$(annotation two hami.io/vgpu-devices-to-allocate)" ";;/;;"

    # 4. Refusals in HAMi's words: a multi-NPU vNPU at admission, a hami-core pod at Filter.
    if out="$(vs_pod npu-multi "{huawei.com/Ascend910B3: 2, huawei.com/Ascend910B3-memory: 8000}" 2>&1)"; then
        e2e_fail "npu-multi was admitted"
    fi
    grep -qF 'denied the request: vNPU not supported for multiple devices' <<<"$out" ||
        e2e_fail "npu-multi: want the webhook's denial, got: $out"
    vs_pod npu-soft "{huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 1000}" "{huawei.com/vnpu-mode: hami-core}"
    vs_wait_unschedulable npu-soft
    vs_expect_event npu-soft FilteringFailed "no available node, 8 nodes do not meet"
    [[ "$(vs_condition_message npu-soft)" == *"1/8 ModeNotFit"* ]] ||
        e2e_fail "npu-soft: want 1/8 ModeNotFit, got: $(vs_condition_message npu-soft)"
    e2e_kubectl delete pod npu-soft --wait=false >/dev/null

    # 5. The burst.
    vs_namespace "$ns"
    vendors_pods "$ns" >"$E2E_CLUSTER/vendors-pods.yaml"
    t0="$(date +%s.%N)"
    "$E2E_BIN/vs-e2e" create-pods --kubeconfig "$KUBECONFIG" --concurrency 20 "$E2E_CLUSTER/vendors-pods.yaml"
    out="$(vs_settle "$ns" 4m --started "$t0")"
    e2e_log "settled: $out"
    vs_burst_report "$out" 10 "mixed vendors, hold ${VS_E2E_HOLD:-20ms}"
    bound="$(sed -E 's/.*"bound":([0-9]+).*/\1/' <<<"$out")"
    refused="$(sed -E 's/.*"unschedulable":([0-9]+).*/\1/' <<<"$out")"
    e2e_expect_eq "bound + refused" "$((bound + refused))" 135
    ((refused > 0)) || e2e_fail "no pod refused although the pods ask for more than the cards have"
    if grep -qvE '^(CardInsufficientMemory|CardInsufficientCore|CardTimeSlicingExhausted|NodeInsufficientDevice|AllocatedCardsInsufficientRequest|ExclusiveDeviceAllocateConflict|CardComputeUnitsExhausted)$' \
        < <(sed -E 's/.*"reasons":\{([^}]*)\}.*/\1/' <<<"$out" | tr ',' '\n' | sed -E 's/"([^"]+)":[0-9]+/\1/'); then
        e2e_fail "unexpected refusal reasons: $out"
    fi
    vendors_check_pods "$ns"
    vs_capacity --refused "$ns" --handed-off --table 2>"$E2E_CLUSTER/capacity.txt" >"$E2E_CLUSTER/capacity.json" || {
        cat "$E2E_CLUSTER/capacity.txt" >&2
        e2e_fail "capacity check failed"
    }
    e2e_log "capacity: no card of any vendor over-committed, every bound pod handed off, vgpu-sched metrics agree (capacity.txt)"
    vs_no_node_locks
    vs_burst_no_contention
}

# vendors_check_pods NS : per vendor, the bound pods' count (at least one each, 8 of the pods
# asking two vendors); every Ascend
# pod's memory (limit = request) is a template or the whole card, and every bound one's runtime
# JSON names exactly the NPUs of its allocated list, with the template of its memory.
vendors_check_pods() {
    local ns=$1 summary bad
    e2e_kubectl get pods --namespace "$ns" -o json >"$E2E_CLUSTER/vendors-pods.json"
    summary="$(jq -r '[.items[] | select(.spec.nodeName != null) | .metadata.name | sub("-[0-9]+$"; "")]
        | group_by(.) | map("\(.[0])=\(length)") | join(" ")' "$E2E_CLUSTER/vendors-pods.json")"
    e2e_log "bound per kind: $summary"
    [[ "$summary" =~ dcu=[0-9]+ && "$summary" =~ gpu=[0-9]+ && "$summary" =~ npu=[0-9]+ ]] ||
        e2e_fail "some kind of pod has nothing bound: $summary"
    [[ "$summary" =~ (^| )two=8( |$) ]] || e2e_fail "want 8 two-vendor pods bound (v-mix-2's slots): $summary"
    bad="$(jq -r '.items[] | select(.metadata.name | startswith("npu-")) | .spec.containers[0].resources as $r
        | select(($r.limits["huawei.com/Ascend910B3-memory"] // "") as $m
            | ($m != ($r.requests["huawei.com/Ascend910B3-memory"] // "")) or ([$m] | inside(["16384", "32768", "65536"]) | not))
        | .metadata.name' "$E2E_CLUSTER/vendors-pods.json")"
    [[ -z "$bad" ]] || e2e_fail "Ascend pods whose memory is not a template in limits and requests: $bad"
    bad="$(jq -r '.items[] | select(.spec.nodeName != null and (.metadata.name | startswith("npu-")))
        | .metadata.annotations as $a
        | ($a["hami.io/Ascend910B3-devices-allocated"] | rtrimstr(":;") | split(":") | map(split(","))) as $devs
        | ($a["huawei.com/Ascend910B3"] | fromjson) as $rt
        | select(($rt | map(.UUID)) != ($devs | map(.[0]))
            or ($rt | map(.temp // "")) != ($devs | map(if .[2] == "16384" then "vir05_1c_16g"
                elif .[2] == "32768" then "vir10_3c_32g" else "" end)))
        | .metadata.name' "$E2E_CLUSTER/vendors-pods.json")"
    [[ -z "$bad" ]] || e2e_fail "Ascend pods whose huawei.com/Ascend910B3 does not match their NPUs: $bad"
}
