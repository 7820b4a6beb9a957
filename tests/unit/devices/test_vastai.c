/* test_vastai: the Vastai backend against spec/hami-vendors.md §2.12 and HAMi's
 * pkg/device/vastai/device_test.go (test names cited), the section's die-mode probe, and our fixed
 * order for physical cards with equally many dies. */
#include "devsuite.h"

DEV_SUITE(vastai);

#define NODE(name, reg)                                                                            \
    "- kind: Node\n  metadata:\n    name: " name "\n    annotations:\n"                            \
    "      hami.io/node-va-register: '" reg "'\n"

#define CARD(id, idx, count)                                                                       \
    "{\"id\":\"" id "\",\"index\":" idx ",\"count\":" count ",\"devmem\":32768,\"type\":"          \
    "\"Vastai\",\"health\":true}"

/* A die of physical card `aic`. */
#define DIE(id, idx, count, aic)                                                                   \
    "{\"id\":\"" id "\",\"index\":" idx ",\"count\":" count ",\"devmem\":32768,\"type\":"          \
    "\"Vastai\",\"health\":true,\"custominfo\":{\"DeviceStrategy\":\"die\",\"AIC\":\"" aic "\"}}"

#define POD(name, an, lim)                                                                         \
    "- kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name                     \
    ", annotations: " an "}\n  spec:\n    containers:\n    - name: c\n      resources:\n"          \
    "        limits: " lim "\n"

#define BUSY(name, node, card)                                                                     \
    "- kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n    uid: " name         \
    "\n    annotations: {hami.io/vgpu-node: " node ", hami.io/Vastai-devices-allocated: \"" card   \
    ",Vastai,0,0:;\"}\n  spec:\n    nodeName: " node "\n    containers:\n    - name: c\n"

/* Test_GetNodeDevices: devcore becomes 100; custominfo kept. */
Test(vastai, inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "[{\"id\":\"7-0\",\"count\":1,\"devmem\":32768,\"type\":\"Vastai\",\"health\":"
                  "true,\"devicepairscore\":{}}]"));
    add(NODE("d", "[" DIE("d0", "0", "1", "A") "]"));
    add(NODE("colon", ":"));
    expect(dt_cards(&t, "n"), "7-0,Vastai,0,1,32768,100,0,true,");
    expect(dt_cards(&t, "d"), "d0,Vastai,0,1,32768,100,0,true,");
    expect(dt_cards(&t, "colon"),
           "error: invalid hami.io/node-va-register \":\": no gpu found on node");
    const struct vs_node *n = vs_model_node(t.m, "d");
    cr_assert_str_eq(json_string_value(json_object_get(n->cards[0].custom, "AIC")), "A");
}

/* Test_GenerateResourceRequests and Test_MutateAdmission. */
Test(vastai, requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("lim", "{}", "{vastaitech.com/va: 2}"));
    add("- kind: Pod\n  metadata: {name: req, namespace: default}\n  spec:\n    containers:\n"
        "    - name: c\n      resources: {requests: {vastaitech.com/va: 1}}\n");
    expect(dt_requests(&t, "lim"), "Vastai 2,0,100,0");
    expect(dt_requests(&t, "req"), "Vastai 1,0,100,0");
    expect(dt_admit(&t, "lim", "Vastai"), "found");
    expect(dt_admit(&t, "req", "Vastai"), "-");
}

/* TestDevices_Fit "fit success" (dev-1), Test_PatchAnnotations (both keys, capital V), "partial
 * allocation AllocatedCardsInsufficientRequest", "card overused", the UUID cases. */
Test(vastai, fit_cards)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "[" CARD("dev-0", "0", "1") "," CARD("dev-1", "1", "1") "]"));
    add(POD("a", "{}", "{vastaitech.com/va: 1}"));
    add(POD("three", "{}", "{vastaitech.com/va: 2}"));
    add(POD("use", "{vastaitech.com/use-gpuuuid: dev-0}", "{vastaitech.com/va: 1}"));
    add(POD("nouse", "{vastaitech.com/nouse-gpuuuid: dev-0}", "{vastaitech.com/va: 1}"));
    expect(dt_filter(&t, "a"), "n hami.io/Vastai-devices-allocated=dev-1,Vastai,0,0:; "
                               "hami.io/Vastai-devices-to-allocate=dev-1,Vastai,0,0:;");
    expect(dt_filter(&t, "three"),
           "refused n: 1/2 AllocatedCardsInsufficientRequest, 1/2 CardTimeSlicingExhausted");
    expect(dt_filter(&t, "nouse"), "refused n: 1/2 CardTimeSlicingExhausted, 1/2 CardUuidMismatch");
    expect(dt_filter(&t, "use"), "n hami.io/Vastai-devices-allocated=dev-0,Vastai,0,0:; "
                                 "hami.io/Vastai-devices-to-allocate=dev-0,Vastai,0,0:;");
}

/* TestDevices_Fit "mutex die mode rejects idle die on occupied card, picks die on free card" and
 * "... rejects all idle dies on an occupied card"; "mutex policy rejects used device". Node n
 * scores 2.5 (one of four slots used) plus 1 (the container's die alone on its card). */
Test(vastai, mutex_dies)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "[" DIE("dev-0", "0", "2", "1") "," DIE("dev-1", "1", "1", "1") "," DIE(
                      "dev-2", "2", "1", "2") "]"));
    add(NODE("m", "[" DIE("dev-0", "0", "2", "1") "," DIE("dev-1", "1", "1", "1") "]"));
    add(BUSY("on-n", "n", "dev-0"));
    add(BUSY("on-m", "m", "dev-0"));
    add(POD("p", "{hami.io/gpu-scheduler-policy: mutex}", "{vastaitech.com/va: 1}"));
    expect(dt_scores(&t, "p", NULL, NULL), "n=3.5000; m: 2/2 ExclusiveDeviceAllocateConflict");
    expect(dt_filter(&t, "p"), "n hami.io/Vastai-devices-allocated=dev-2,Vastai,0,0:; "
                               "hami.io/Vastai-devices-to-allocate=dev-2,Vastai,0,0:;");
}

/* The section's probe: dies d0 (AIC A), d1 and d2 (AIC B), two asked: both from B, and the node
 * score gains 1 (all of the container's dies on one card). */
Test(vastai, probe_dies_of_one_card)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "[" DIE("d0", "0", "1", "A") "," DIE("d1", "1", "1", "B") "," DIE("d2", "2", "1",
                                                                                    "B") "]"));
    add(POD("p", "{}", "{vastaitech.com/va: 2}"));
    expect(dt_scores(&t, "p", NULL, NULL), "n=1.0000");
    expect(dt_filter(&t, "p"), "n hami.io/Vastai-devices-allocated=d2,Vastai,0,0:d1,Vastai,0,0:; "
                               "hami.io/Vastai-devices-to-allocate=d2,Vastai,0,0:d1,Vastai,0,0:;");
}

/* TestComputeBestCombination through Fit (the dies are collected walking from the last card, so
 * the register lists them backwards): one AIC enough; the largest group first; across groups;
 * a die that splits across cards scores its share. */
Test(vastai, best_combination)
{
    static const char reg[] = "[" DIE("dev6", "6", "1", "3") "," DIE("dev5", "5", "1", "2") "," DIE(
        "dev4", "4", "1", "2") "," DIE("dev3", "3", "1", "1") "," DIE("dev2", "2", "1",
                                                                      "1") "," DIE("dev1", "1", "1",
                                                                                   "1") "]";
    static const struct {
        const char *nums, *alloc, *score;
    } cases[] = {
        {"2", "dev1,Vastai,0,0:dev2,Vastai,0,0:;", "n=1.0000"},
        {"3", "dev1,Vastai,0,0:dev2,Vastai,0,0:dev3,Vastai,0,0:;", "n=1.0000"},
        {"4", "dev1,Vastai,0,0:dev2,Vastai,0,0:dev3,Vastai,0,0:dev4,Vastai,0,0:;", "n=0.7500"},
        {"6",
         "dev1,Vastai,0,0:dev2,Vastai,0,0:dev3,Vastai,0,0:dev4,Vastai,0,0:dev5,Vastai,0,0:dev6,"
         "Vastai,0,0:;",
         "n=0.5000"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[2048], want[512];
        cr_assert(dt_init(&t, NULL, false, false));
        snprintf(buf, sizeof(buf), NODE("n", "%s"), reg);
        add(buf);
        snprintf(buf, sizeof(buf), POD("p", "{}", "{vastaitech.com/va: %s}"), cases[i].nums);
        add(buf);
        expect(dt_scores(&t, "p", NULL, NULL), cases[i].score);
        snprintf(want, sizeof(want),
                 "n hami.io/Vastai-devices-allocated=%s hami.io/Vastai-devices-to-allocate=%s",
                 cases[i].alloc, cases[i].alloc);
        expect(dt_filter(&t, "p"), want);
        dt_cleanup(&t);
        memset(&t, 0, sizeof(t));
    }
}

/* Physical cards with equally many usable dies are taken in the order their first die was
 * collected (HAMi: Go's map order); a die without an AIC is a card of its own. */
Test(vastai, equal_groups_in_collection_order)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(NODE("n", "[" DIE("a1", "0", "1", "A") "," DIE("b1", "1", "1", "B") "," DIE(
                      "a2", "2", "1", "A") "," DIE("b2", "3", "1", "B") ",{\"id\":\"x\",\"index\":"
                                                                        "4,\"count\":1,\"devmem\":"
                                                                        "1,\"type\":\"Vastai\","
                                                                        "\"health\":true,"
                                                                        "\"custominfo\":{"
                                                                        "\"DeviceStrategy\":"
                                                                        "\"die\"}}]"));
    add(POD("p", "{}", "{vastaitech.com/va: 3}"));
    add(POD("q", "{}", "{vastaitech.com/va: 2}"));
    /* Collected x, b2, a2, b1, a1: groups x(1), B(2), A(2) -> B, A, x. */
    expect(dt_filter(&t, "p"), "n hami.io/Vastai-devices-allocated=b2,Vastai,0,0:b1,Vastai,0,0:"
                               "a2,Vastai,0,0:; hami.io/Vastai-devices-to-allocate=b2,Vastai,0,0:"
                               "b1,Vastai,0,0:a2,Vastai,0,0:;");
    /* Left: x and a1. The default score is 10 x 3/5 used slots; a die without an AIC makes the
     * node's Vastai term 0. */
    expect(dt_scores(&t, "q", NULL, NULL), "n=6.0000");
}
