/* test_kunlun: the Kunlunxin backends against spec/hami-vendors.md §2.8 — the board topology
 * (HAMi's pkg/device/kunlun/topo_test.go and device_test.go Test_graphSelect,
 * Test_graphSelectVXPU, TestCountbubble, TestCalcscore, Test_ScoreNode), whole XPUs
 * (device_test.go) and vXPU shares (vdevice_test.go), test names cited — plus the section's probes
 * and HAMi's own Test_calcScore Kunlun case (pkg/scheduler/score_test.go), which fix the choices
 * over the sorted candidates. */
#include "../../../devices/kunlun/kunlun.h"
#include "devsuite.h"

DEV_SUITE(kunlun);

/* A node with `n` whole XPUs in its capacity. */
#define XPU_NODE(name, n)                                                                          \
    "- kind: Node\n  metadata: {name: " name                                                       \
    "}\n  status:\n    capacity: {kunlunxin.com/xpu: \"" n "\"}\n"

/* A node registering vXPU cards (JSON). */
#define VXPU_NODE(name, reg)                                                                       \
    "- kind: Node\n  metadata:\n    name: " name "\n    annotations:\n"                            \
    "      hami.io/node-register-xpu: '" reg "'\n"

/* A pending pod: annotations `an`, one container asking limits `lim`. */
#define POD(name, an, lim)                                                                         \
    "- kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name                     \
    ", annotations: " an "}\n  spec:\n    containers:\n    - name: c\n      resources:\n"          \
    "        limits: " lim "\n"

/* A pod already placed on `node` holding the devices `alloc` under annotation `key`. */
#define PLACED(name, node, key, alloc)                                                             \
    "- kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n    uid: " name         \
    "\n    annotations: {hami.io/vgpu-node: " node ", " key ": \"" alloc "\"}\n"                   \
    "  spec:\n    nodeName: " node "\n    containers:\n    - name: c\n"

#define BUSY(name, node, card)                                                                     \
    PLACED(name, node, "hami.io/kunlun-allocated", node "-kunlun-" card ",kunlun,98304,100:;")

/* ---------------------------------------------------------------- topology */

/* The selection over positions 0..n-1 whose cards have the indices 0..n-1, as HAMi's tests give
 * it: `busy` lists the positions that do not fit. */
static char *select_str(size_t n, const char *busy, int32_t nums)
{
    bool fits[16];
    uint32_t index[16], out[16];
    for (size_t i = 0; i < n; i++) {
        fits[i] = !strchr(busy, (int)('0' + i));
        index[i] = (uint32_t)i;
    }
    size_t got = vs_kunlun_select(fits, index, n, nums, out);
    char *s = calloc(64, 1);
    for (size_t i = 0; i < got; i++)
        sprintf(s + strlen(s), "%s%u", i ? "," : "", out[i]);
    return s;
}

/* Test_graphSelect (FitXPU: used = 0). */
Test(kunlun, graph_select)
{
    expect(select_str(8, "", 8), "0,1,2,3,4,5,6,7");
    expect(select_str(8, "5", 8), "");
    expect(select_str(8, "5", 2), "4,6");
    expect(select_str(8, "5", 1), "4");
    expect(select_str(8, "67", 1), "4");
    expect(select_str(8, "012456", 2), "3,7");
    expect(select_str(8, "237", 4), "0,1,4,5");
    expect(select_str(8, "36", 4), "0,1,4,5");
    expect(select_str(8, "26", 4), "0,1,4,5");
    /* Only 1, 2, 4 and 8 cards have a topology. */
    expect(select_str(8, "", 3), "");
    expect(select_str(8, "", 5), "");
}

/* Test_graphSelectVXPU (FitVXPU: room and the same share size; the busy positions are those
 * whose shares differ or that are full). */
Test(kunlun, graph_select_vxpu)
{
    expect(select_str(8, "", 8), "0,1,2,3,4,5,6,7");
    expect(select_str(8, "5", 4), "0,1,2,3"); /* matching memory: only 5's average differs */
    expect(select_str(8, "3", 4), "4,5,6,7"); /* mixed memory */
    expect(select_str(8, "01234567", 2), ""); /* no suitable devices */
    expect(select_str(8, "2", 1), "0");       /* 1 card with matching memory */
    expect(select_str(8, "3", 2), "0,1");     /* 2 cards, different memory */
}

/* TestCountbubble through TestCalcscore's mapping (empty before: 1; [0,1,2,3]: 1; [0] and [4]:
 * 3; [0,1]: 2), TestCalcscore and Test_ScoreNode. */
Test(kunlun, calc_score)
{
    static const uint32_t i0[] = {0}, i4[] = {4}, i01[] = {0, 1}, i0123[] = {0, 1, 2, 3},
                          i07[] = {0, 1, 2, 3, 4, 5, 6, 7};
    cr_assert_eq(vs_kunlun_score(NULL, 0, NULL, 0), 2000);
    cr_assert_eq(vs_kunlun_score(NULL, 0, i0123, 4), 2000);
    cr_assert_eq(vs_kunlun_score(NULL, 0, i0, 1), 0);
    cr_assert_eq(vs_kunlun_score(NULL, 0, i4, 1), 0);
    cr_assert_eq(vs_kunlun_score(NULL, 0, i01, 2), 1000);
    cr_assert_eq(vs_kunlun_score(i0, 1, i01, 2), 3000);
    cr_assert_eq(vs_kunlun_score(i0, 1, i4, 1), 2000);
    cr_assert_eq(vs_kunlun_score(i01, 2, i0, 1), 1000);
    cr_assert_eq(vs_kunlun_score(i0123, 4, i0, 1), 0);
    cr_assert_eq(vs_kunlun_score(i0123, 4, i07, 8), 3000);
}

/* ---------------------------------------------------------------- whole XPUs */

/* GetNodeDevices: one card per unit of capacity; the first half NUMA 0 (HAMi's cards/2: a single
 * card is NUMA 1). */
Test(kunlun, inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(XPU_NODE("n", "4"));
    add(XPU_NODE("one", "1"));
    expect(dt_cards(&t, "n"), "n-kunlun-0,kunlun,0,100,98304,100,0,true,; "
                              "n-kunlun-1,kunlun,1,100,98304,100,0,true,; "
                              "n-kunlun-2,kunlun,2,100,98304,100,1,true,; "
                              "n-kunlun-3,kunlun,3,100,98304,100,1,true,");
    expect(dt_cards(&t, "one"), "one-kunlun-0,kunlun,0,100,98304,100,1,true,");
}

/* GenerateResourceRequests (limits, then requests) and MutateAdmission (limits only). */
Test(kunlun, requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("p", "{}", "{kunlunxin.com/xpu: 2}"));
    add("- kind: Pod\n  metadata: {name: r, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources: {requests: {kunlunxin.com/xpu: 1}}\n");
    expect(dt_requests(&t, "p"), "kunlun 2,0,100,0");
    expect(dt_requests(&t, "r"), "kunlun 1,0,100,0");
    expect(dt_admit(&t, "p", "kunlun"), "found");
    expect(dt_admit(&t, "r", "kunlun"), "-");
}

/* The section's probe: card 5 busy, default `spread`: the sorted positions are 5,0,1,2,3,4,6,7,
 * so one card is index 0, two are 0,1 and four are 3,4,6,7 (both NUMA halves). */
static void probe_node(void)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(XPU_NODE("n6", "8"));
    add(BUSY("busy", "n6", "5"));
}

Test(kunlun, probe_one_card)
{
    probe_node();
    add(POD("p", "{}", "{kunlunxin.com/xpu: 1}"));
    expect(dt_scores(&t, "p", NULL, NULL), "n6=2002.5125");
    expect(dt_filter(&t, "p"),
           "n6 BAIDU_COM_DEVICE_IDX=0 hami.io/kunlun-allocated=n6-kunlun-0,kunlun,98304,100:;");
}

Test(kunlun, probe_two_cards)
{
    probe_node();
    add(POD("p", "{}", "{kunlunxin.com/xpu: 2}"));
    expect(dt_filter(&t, "p"), "n6 BAIDU_COM_DEVICE_IDX=0,1 hami.io/kunlun-allocated="
                               "n6-kunlun-0,kunlun,98304,100:n6-kunlun-1,kunlun,98304,100:;");
}

Test(kunlun, probe_four_cards)
{
    probe_node();
    add(POD("p", "{}", "{kunlunxin.com/xpu: 4}"));
    expect(dt_filter(&t, "p"),
           "n6 BAIDU_COM_DEVICE_IDX=3,4,6,7 hami.io/kunlun-allocated=n6-kunlun-3,kunlun,98304,100:"
           "n6-kunlun-4,kunlun,98304,100:n6-kunlun-6,kunlun,98304,100:n6-kunlun-7,kunlun,98304,"
           "100:;");
}

/* Under the `numa` card policy the positions are the indices (NUMA, then index): Test_graphSelect's
 * "card 5 busy" cases through Filter. */
Test(kunlun, numa_order_matches_indices)
{
    probe_node();
    add(POD("two", "{hami.io/gpu-scheduler-policy: numa}", "{kunlunxin.com/xpu: 2}"));
    add(POD("eight", "{}", "{kunlunxin.com/xpu: 8}"));
    expect(dt_filter(&t, "eight"), "refused n6: 1/8 NumaNotFit");
    expect(dt_filter(&t, "two"), "n6 BAIDU_COM_DEVICE_IDX=4,6 hami.io/kunlun-allocated="
                                 "n6-kunlun-4,kunlun,98304,100:n6-kunlun-6,kunlun,98304,100:;");
}

/* HAMi's Test_calcScore "one node one device one pod one container use one device for kunlun.":
 * node1 idle, node2 with indices 3-7 busy; both take index 0, node2 scores the 1000 term (its
 * wings get less fragmented) and binpack chooses it. (HAMi's test cards have 1 slot and no
 * memory in use, hence its 1006.25; ours come from capacity: 100 slots, the busy ones' memory
 * and cores counted.) */
Test(kunlun, calc_score_two_nodes)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(XPU_NODE("node1", "8"));
    add(XPU_NODE("node2", "8"));
    add(BUSY("b3", "node2", "3"));
    add(BUSY("b4", "node2", "4"));
    add(BUSY("b5", "node2", "5"));
    add(BUSY("b6", "node2", "6"));
    add(BUSY("b7", "node2", "7"));
    add(POD("p", "{}", "{kunlunxin.com/xpu: 1}"));
    expect(dt_scores(&t, "p", "binpack", NULL), "node1=0.0000; node2=1012.5625");
    expect(dt_filter(&t, "p"), "node2 BAIDU_COM_DEVICE_IDX=0 "
                               "hami.io/kunlun-allocated=node2-kunlun-0,kunlun,98304,100:;");
}

/* TestKunlunDevices_Fit_NumaNotFit: every card busy. */
Test(kunlun, numa_not_fit)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(XPU_NODE("n", "2"));
    add(BUSY("b0", "n", "0"));
    add(BUSY("b1", "n", "1"));
    add(POD("p", "{}", "{kunlunxin.com/xpu: 1}"));
    add(POD("three", "{}", "{kunlunxin.com/xpu: 3}"));
    expect(dt_filter(&t, "p"), "refused n: 1/2 NumaNotFit");
    expect(dt_filter(&t, "three"), "refused n: NodeInsufficientDevice");
}

/* TestKunlunDevices_Fit_UseUUID / _NoUseUUID: both annotation pairs; a card that is not on the
 * node does not fall back to another (every card fails: 8/8 CardUuidMismatch). */
Test(kunlun, uuid_selectors)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(XPU_NODE("n", "8"));
    add(POD("legacy", "{baidu.com/use-gpuuuid: n-kunlun-5}", "{kunlunxin.com/xpu: 1}"));
    add(POD("std", "{hami.io/use-xpu-uuid: n-kunlun-3}", "{kunlunxin.com/xpu: 1}"));
    add(POD("absent", "{hami.io/use-xpu-uuid: xpu-99}", "{kunlunxin.com/xpu: 1}"));
    add(POD("noneleft",
            "{baidu.com/nouse-gpuuuid: \"n-kunlun-0,n-kunlun-1,n-kunlun-2,n-kunlun-3\", "
            "hami.io/no-use-xpu-uuid: \"n-kunlun-4,n-kunlun-5,n-kunlun-6,n-kunlun-7\"}",
            "{kunlunxin.com/xpu: 1}"));
    expect(dt_filter(&t, "absent"), "refused n: 8/8 CardUuidMismatch");
    expect(dt_filter(&t, "noneleft"), "refused n: 8/8 CardUuidMismatch");
    expect(dt_filter(&t, "legacy"),
           "n BAIDU_COM_DEVICE_IDX=5 hami.io/kunlun-allocated=n-kunlun-5,kunlun,98304,100:;");
    expect(dt_filter(&t, "std"),
           "n BAIDU_COM_DEVICE_IDX=3 hami.io/kunlun-allocated=n-kunlun-3,kunlun,98304,100:;");
}

/* BAIDU_COM_DEVICE_IDX names the last container with cards; within one Filter a card taken by
 * an earlier container is busy (AddResourceUsage: used + 1). */
Test(kunlun, last_container_indices)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(XPU_NODE("n", "8"));
    add("- kind: Pod\n  metadata: {name: p, namespace: default}\n  spec:\n    containers:\n"
        "    - name: a\n      resources: {limits: {kunlunxin.com/xpu: 2}}\n"
        "    - name: b\n      resources: {limits: {kunlunxin.com/xpu: 1}}\n"
        "    - name: c\n");
    expect(dt_filter_with(&t, "p", NULL, "numa"),
           "n BAIDU_COM_DEVICE_IDX=2 hami.io/kunlun-allocated=n-kunlun-0,kunlun,98304,100:"
           "n-kunlun-1,kunlun,98304,100:;n-kunlun-2,kunlun,98304,100:;;");
}

/* The node-score term is 0 on a node that also holds another vendor's cards: with card 5 busy
 * the pure Kunlun node gets the 2000 term, the mixed one only the default score. */
Test(kunlun, score_zero_beside_other_cards)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add("- kind: Node\n  metadata:\n    name: mixed\n    annotations:\n"
        "      hami.io/node-nvidia-register: '[{\"id\":\"GPU-0\",\"count\":10,\"devmem\":1000,"
        "\"devcore\":100,\"type\":\"NVIDIA-T4\",\"health\":true}]'\n"
        "  status:\n    capacity: {kunlunxin.com/xpu: \"8\"}\n");
    add(XPU_NODE("pure", "8"));
    add(BUSY("b", "mixed", "5"));
    add(BUSY("c", "pure", "5"));
    add(POD("p", "{}", "{kunlunxin.com/xpu: 1}"));
    expect(dt_scores(&t, "p", NULL, NULL), "mixed=2.3719; pure=2002.5125");
}

/* ---------------------------------------------------------------- vXPU */

#define XPU8                                                                                       \
    "[{\"id\":\"xpu-0\",\"index\":0,\"count\":10,\"devmem\":98304,\"devcore\":100,\"type\":"       \
    "\"XPU\",\"health\":true},{\"id\":\"xpu-1\",\"index\":1,\"count\":10,\"devmem\":98304,"        \
    "\"devcore\":100,\"type\":\"XPU\",\"health\":true},{\"id\":\"xpu-2\",\"index\":2,\"count\":"   \
    "10,\"devmem\":98304,\"devcore\":100,\"type\":\"XPU\",\"health\":true},{\"id\":\"xpu-3\","     \
    "\"index\":3,\"count\":10,\"devmem\":98304,\"devcore\":100,\"type\":\"XPU\",\"health\":true}," \
    "{\"id\":\"xpu-4\",\"index\":4,\"count\":10,\"devmem\":98304,\"devcore\":100,\"type\":"        \
    "\"XPU\","                                                                                     \
    "\"health\":true},{\"id\":\"xpu-5\",\"index\":5,\"count\":10,\"devmem\":98304,\"devcore\":"    \
    "100,\"type\":\"XPU\",\"health\":true},{\"id\":\"xpu-6\",\"index\":6,\"count\":10,\"devmem\":" \
    "98304,\"devcore\":100,\"type\":\"XPU\",\"health\":true},{\"id\":\"xpu-7\",\"index\":7,"       \
    "\"count\":10,\"devmem\":98304,\"devcore\":100,\"type\":\"XPU\",\"health\":true}]"

#define XPU_SHARE(name, card, mem)                                                                 \
    PLACED(name, "n", "hami.io/xpu-devices-allocated", card ",XPU," mem ",25:;")

/* Test_GetNodeDevices: the JSON register. */
Test(kunlun, vxpu_inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(VXPU_NODE("n", "[{\"id\":\"xpu-0\",\"index\":0,\"count\":1,\"devmem\":98304,\"devcore\":"
                       "100,\"type\":\"XPU\",\"health\":true}]"));
    add(VXPU_NODE("empty", "[]"));
    expect(dt_cards(&t, "n"), "xpu-0,XPU,0,1,98304,100,0,true,");
    expect(dt_cards(&t, "empty"),
           "error: invalid hami.io/node-register-xpu \"[]\": no gpu found on node");
}

/* Test_trimMemory through the requests, Test_KunlunVDevices_GenerateResourceRequests (whole XPU
 * without memory; requests fallback: 2 x 24576, 25 %). */
Test(kunlun, vxpu_requests)
{
    static const struct {
        const char *mem, *want;
    } cases[] = {
        {"0", "XPU 1,24576,0,25"},      {"24576", "XPU 1,24576,0,25"},
        {"24577", "XPU 1,49152,0,50"},  {"49152", "XPU 1,49152,0,50"},
        {"49153", "XPU 1,98304,0,100"}, {"200000", "XPU 1,98304,0,100"},
        {"-5", "XPU 1,24576,0,25"},     {"1Gi", "XPU 1,98304,0,100"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert(dt_init(&t, NULL, false, false));
        char pod[256];
        snprintf(pod, sizeof(pod),
                 POD("p", "{}", "{kunlunxin.com/vxpu: 1, kunlunxin.com/vxpu-memory: %s}"),
                 cases[i].mem);
        add(pod);
        expect(dt_requests(&t, "p"), cases[i].want);
        dt_cleanup(&t);
    }
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("whole", "{}", "{kunlunxin.com/vxpu: 1}"));
    add("- kind: Pod\n  metadata: {name: req, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources:\n"
        "        requests: {kunlunxin.com/vxpu: 2, kunlunxin.com/vxpu-memory: 24576}\n");
    add(POD("frac", "{}", "{kunlunxin.com/vxpu: 1, kunlunxin.com/vxpu-memory: 0.5}"));
    expect(dt_requests(&t, "whole"), "XPU 1,98304,100,100");
    expect(dt_requests(&t, "req"), "XPU 2,24576,0,25");
    expect(dt_requests(&t, "frac"),
           "error: invalid kunlunxin.com/vxpu-memory \"0.5\" in container c: must be a whole "
           "number between -9223372036854775808 and 9223372036854775807");
}

/* Test_MutateAdmission: found iff the count is in limits; a memory limit is rounded in limits
 * and requests. */
Test(kunlun, vxpu_admission)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("none", "{}", "{cpu: 1}"));
    add(POD("count", "{}", "{kunlunxin.com/vxpu: 1}"));
    add(POD("mem", "{}", "{kunlunxin.com/vxpu: 1, kunlunxin.com/vxpu-memory: 30000}"));
    add(POD("frac", "{}", "{kunlunxin.com/vxpu: 1, kunlunxin.com/vxpu-memory: 0.5}"));
    expect(dt_admit(&t, "none", "XPU"), "-");
    expect(dt_admit(&t, "count", "XPU"), "found");
    expect(dt_admit(&t, "mem", "XPU"),
           "found limit kunlunxin.com/vxpu-memory=49152 request kunlunxin.com/vxpu-memory=49152");
    expect(dt_admit(&t, "frac", "XPU"),
           "found limit kunlunxin.com/vxpu-memory=24576 request kunlunxin.com/vxpu-memory=24576");
}

/* The probe (request memory 20000 -> one 24576 share, 25 %) and
 * Test_KunlunVDevices_PatchAnnotations (both keys). */
Test(kunlun, vxpu_probe)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(VXPU_NODE("n", "[{\"id\":\"x0\",\"index\":0,\"count\":4,\"devmem\":98304,\"devcore\":100,"
                       "\"type\":\"XPU\",\"health\":true}]"));
    add(POD("p", "{}", "{kunlunxin.com/vxpu: 1, kunlunxin.com/vxpu-memory: 20000}"));
    expect(dt_filter(&t, "p"), "n hami.io/xpu-devices-allocated=x0,XPU,24576,25:; "
                               "hami.io/xpu-devices-to-allocate=x0,XPU,24576,25:;");
}

/* Test_FitVXPU_direct and Test_graphSelectVXPU "allocate with mixed memory requirements"
 * through Filter: card 1 holds two 24576 shares (fits), card 3 one 49152 share (does not),
 * card 5 one 24576 share (fits); four 24576 shares go to 4-7. */
Test(kunlun, vxpu_same_size_shares)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(VXPU_NODE("n", XPU8));
    add(XPU_SHARE("s1a", "xpu-1", "24576"));
    add(XPU_SHARE("s1b", "xpu-1", "24576"));
    add(XPU_SHARE("s3", "xpu-3", "49152"));
    add(XPU_SHARE("s5", "xpu-5", "24576"));
    add(POD("four", "{}", "{kunlunxin.com/vxpu: 4, kunlunxin.com/vxpu-memory: 24576}"));
    expect(dt_filter_with(&t, "four", NULL, "numa"),
           "n hami.io/xpu-devices-allocated=xpu-4,XPU,24576,25:xpu-5,XPU,24576,25:"
           "xpu-6,XPU,24576,25:xpu-7,XPU,24576,25:; hami.io/xpu-devices-to-allocate=xpu-4,XPU,"
           "24576,25:xpu-5,XPU,24576,25:xpu-6,XPU,24576,25:xpu-7,XPU,24576,25:;");
}

/* TestKunlunVDevices_Fit_Mutex: every card shared with matching shares fits by default, and is
 * a conflict under `mutex` (8/8); TestKunlunVDevices_Fit_NumaNotFit: no card has room. */
Test(kunlun, vxpu_mutex_and_numa)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(VXPU_NODE("n", XPU8));
    for (int i = 0; i < 8; i++) {
        char pod[512], name[8], card[8];
        snprintf(name, sizeof(name), "s%d", i);
        snprintf(card, sizeof(card), "xpu-%d", i);
        snprintf(pod, sizeof(pod),
                 PLACED("%s", "n", "hami.io/xpu-devices-allocated", "%s,XPU,24576,25:;"), name,
                 name, card);
        add(pod);
    }
    add(POD("mutex", "{hami.io/gpu-scheduler-policy: mutex}",
            "{kunlunxin.com/vxpu: 1, kunlunxin.com/vxpu-memory: 24576}"));
    add(POD("big", "{}", "{kunlunxin.com/vxpu: 1, kunlunxin.com/vxpu-memory: 98304}"));
    add(POD("share", "{}", "{kunlunxin.com/vxpu: 1, kunlunxin.com/vxpu-memory: 24576}"));
    expect(dt_filter(&t, "mutex"), "refused n: 8/8 ExclusiveDeviceAllocateConflict");
    expect(dt_filter(&t, "big"), "refused n: 1/8 NumaNotFit");
    expect(dt_filter(&t, "share"), "n hami.io/xpu-devices-allocated=xpu-0,XPU,24576,25:; "
                                   "hami.io/xpu-devices-to-allocate=xpu-0,XPU,24576,25:;");
}

/* TestKunlunVDevices_Fit_UUIDAnnotations: both annotation pairs. */
Test(kunlun, vxpu_uuid_selectors)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(VXPU_NODE("n", XPU8));
    add(POD("std", "{hami.io/use-xpu-uuid: xpu-3}", "{kunlunxin.com/vxpu: 1}"));
    add(POD("legacy", "{baidu.com/use-gpuuuid: xpu-2}", "{kunlunxin.com/vxpu: 1}"));
    add(POD("nouse",
            "{hami.io/no-use-xpu-uuid: \"xpu-0,xpu-1,xpu-2,xpu-3,xpu-4,xpu-5,xpu-6,xpu-7\"}",
            "{kunlunxin.com/vxpu: 1}"));
    expect(dt_filter(&t, "nouse"), "refused n: 8/8 CardUuidMismatch");
    expect(dt_filter(&t, "std"), "n hami.io/xpu-devices-allocated=xpu-3,XPU,98304,100:; "
                                 "hami.io/xpu-devices-to-allocate=xpu-3,XPU,98304,100:;");
    expect(dt_filter(&t, "legacy"), "n hami.io/xpu-devices-allocated=xpu-2,XPU,98304,100:; "
                                    "hami.io/xpu-devices-to-allocate=xpu-2,XPU,98304,100:;");
}

/* The kunlun section names the three resources; without it none is recognised. */
Test(kunlun, config_section)
{
    cr_assert(dt_init(&t,
                      "kunlun:\n  resourceCountName: x.com/xpu\n  resourceVCountName: x.com/v\n",
                      false, false));
    add(POD("whole", "{}", "{x.com/xpu: 1}"));
    add(POD("share", "{}", "{x.com/v: 1, kunlunxin.com/vxpu-memory: 5}"));
    expect(dt_requests(&t, "whole"), "kunlun 1,0,100,0");
    expect(dt_requests(&t, "share"), "XPU 1,98304,100,100");
    dt_cleanup(&t);
    cr_assert(dt_init(&t, "nvidia:\n  defaultCores: 0\n", false, false));
    add(POD("p", "{}", "{kunlunxin.com/xpu: 1, kunlunxin.com/vxpu: 1}"));
    expect(dt_requests(&t, "p"), "-");
}
