/* test_enflame: the Enflame backends against spec/hami-vendors.md §2.7 — GCU whole cards
 * (HAMi's pkg/device/enflame/gcu_test.go) and DRS partitions (device_test.go), test names
 * cited — plus the section's probes, and our deviations: a quantity HAMi's webhook would refuse
 * is a pod-level error, an inventory that cannot be represented is a node error. */
#include "../../../devices/enflame/enflame.h"
#include "devsuite.h"

/* The outcome line is a placement on node `node`. */
static void placed(char *got, const char *node)
{
    size_t n = strlen(node);
    cr_assert(strncmp(got, node, n) == 0 && got[n] == ' ', "%s", got);
    free(got);
}

DEV_SUITE(enflame);

/* Each item is loaded on its own (dt_load appends). */
#define PROFILES "{\"1g.6gb\":\"0\",\"3g.20gb\":\"1\",\"6g.40gb\":\"2\"}"
#define ONE_CARD "[{\"index\":\"0\",\"minor\":\"0\",\"capacity\":6}]"

/* A node whose enflame.com/gcu-drs-capacity holds devices `devs` and profiles `prof` (JSON). */
#define DRS_NODE(name, devs, prof)                                                                 \
    "- kind: Node\n  metadata:\n    name: " name "\n    annotations:\n"                            \
    "      enflame.com/gcu-drs-capacity: '{\"devices\":" devs ",\"profiles\":" prof "}'\n"

/* A node with `n` GCU cards in its capacity. */
#define GCU_NODE(name, n)                                                                          \
    "- kind: Node\n  metadata: {name: " name "}\n  status:\n    capacity: {enflame.com/gcu: \"" n  \
    "\"}\n"

/* A pod with annotations `an` (a flow map) and one container `ctr` asking limits `lim`. */
#define POD(name, an, ctr, lim)                                                                    \
    "- kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name                     \
    ", annotations: " an "}\n  spec:\n    containers:\n    - name: " ctr                           \
    "\n      resources:\n        limits: " lim "\n"

/* The same with the container's amounts in requests only. */
#define POD_REQ(name, req)                                                                         \
    "- kind: Pod\n  metadata: {name: " name ", namespace: default}\n  spec:\n    containers:\n"    \
    "    - name: c\n      resources:\n        requests: " req "\n"

/* ---------------------------------------------------------------- GCU */

/* TestGCUDevices_GetNodeDevices: one card per unit of capacity; "missing resource": none. */
Test(enflame, gcu_inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(GCU_NODE("testnode", "2"));
    add(GCU_NODE("zero", "0"));
    add(GCU_NODE("half", "1.5"));
    add("- kind: Node\n  metadata: {name: none}\n");
    expect(dt_cards(&t, "testnode"),
           "testnode-GCU-0,GCU,0,1,100,100,0,true,; testnode-GCU-1,GCU,1,1,100,100,0,true,");
    expect(dt_cards(&t, "zero"), "");
    expect(dt_cards(&t, "none"), "");
    expect(dt_cards(&t, "half"), "error: invalid status.capacity[\"enflame.com/gcu\"] \"1.5\": "
                                 "must be a whole number between 0 and 256");
}

/* TestGCUDevices_GenerateResourceRequests: limits or requests; whole cards (100/100/100);
 * TestGCUDevices_MutateAdmission: found iff the count is in limits. */
Test(enflame, gcu_requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("lim", "{}", "c", "{enflame.com/gcu: 2}"));
    add(POD_REQ("req", "{enflame.com/gcu: 1}"));
    add(POD("none", "{}", "c", "{cpu: 1}"));
    add(POD("frac", "{}", "c", "{enflame.com/gcu: 500m}"));
    expect(dt_requests(&t, "lim"), "GCU 2,100,100,100");
    expect(dt_requests(&t, "req"), "GCU 1,100,100,100");
    expect(dt_requests(&t, "none"), "-");
    expect(dt_requests(&t, "frac"), "error: invalid enflame.com/gcu \"500m\" in container c: must "
                                    "be a whole number between 0 and 2147483647");
    expect(dt_admit(&t, "lim", "GCU"), "found");
    expect(dt_admit(&t, "req", "GCU"), "-");
}

/* TestGCUDevices_Fit "fit success" (the last card first: dev-1), "device already used",
 * TestGCUDevices_PatchAnnotations (both keys, type GCU). */
Test(enflame, gcu_fit)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(GCU_NODE("n", "2"));
    add(POD("a", "{}", "c", "{enflame.com/gcu: 1}"));
    add(POD("b", "{}", "c", "{enflame.com/gcu: 1}"));
    add(POD("c", "{}", "c", "{enflame.com/gcu: 1}"));
    expect(dt_filter(&t, "a"), "n hami.io/enflame-gcu-devices-allocated=n-GCU-1,GCU,100,100:; "
                               "hami.io/enflame-gcu-devices-to-allocate=n-GCU-1,GCU,100,100:;");
    expect(dt_filter(&t, "b"), "n hami.io/enflame-gcu-devices-allocated=n-GCU-0,GCU,100,100:; "
                               "hami.io/enflame-gcu-devices-to-allocate=n-GCU-0,GCU,100,100:;");
    expect(dt_filter(&t, "c"), "refused n: 2/2 ExclusiveDeviceAllocateConflict");
}

/* TestGCUDevices_Fit "partial allocation AllocatedCardsInsufficientRequest for multiple cards";
 * "insufficient devices" is NodeInsufficientDevice before Fit in HAMi's Filter too. */
Test(enflame, gcu_partial)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(GCU_NODE("n", "2"));
    add(POD("a", "{}", "c", "{enflame.com/gcu: 1}"));
    add(POD("two", "{}", "c", "{enflame.com/gcu: 2}"));
    add(POD("three", "{}", "c", "{enflame.com/gcu: 3}"));
    placed(dt_filter(&t, "a"), "n");
    expect(dt_filter(&t, "two"),
           "refused n: 1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict");
    expect(dt_filter(&t, "three"), "refused n: NodeInsufficientDevice");
}

/* ---------------------------------------------------------------- DRS */

/* TestGetNodeDevices_DRSAnnotation: count = capacity, devmem = largest profile GB x 1024. */
Test(enflame, drs_inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("node-a", ONE_CARD, PROFILES));
    expect(dt_cards(&t, "node-a"), "node-a-enflame-drs-0,Enflame,0,6,40960,100,0,true,");
}

/* The inventory's rules: an index that is not a number is the device's position, field names
 * match in any case, capacity may be a string or a number (truncated), memory falls back to the
 * largest slice count; what cannot be read fails the node, in HAMi's words where it has them. */
Test(enflame, drs_inventory_rules)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("pos",
                 "[{\"index\":\"x\",\"capacity\":\" 4 \"},{\"Index\":\"+7\",\"capacity\":2.9}]",
                 "{\"4G.X\":\"a\"}"));
    add(DRS_NODE("noprof", ONE_CARD, "{\"big\":\"0\"}"));
    add(DRS_NODE("nocap", "[{\"index\":\"0\"}]", PROFILES));
    add(DRS_NODE("zero", "[{\"capacity\":0.5}]", PROFILES));
    add(DRS_NODE("nodev", "[]", PROFILES));
    add(DRS_NODE("numidx", "[{\"index\":0}]", PROFILES));
    add(DRS_NODE("neg", "[{\"index\":\"-1\",\"capacity\":1}]", PROFILES));
    add(DRS_NODE("hugemem", ONE_CARD, "{\"2g.4294967299gb\":\"0\"}"));
    add(DRS_NODE("badid", ONE_CARD, "{\"1g.1gb\":1}"));
    add("- kind: Node\n  metadata:\n    name: junk\n    annotations:\n"
        "      enflame.com/gcu-drs-capacity: '[1]'\n");
    add("- kind: Node\n  metadata:\n    name: notjson\n    annotations:\n"
        "      enflame.com/gcu-drs-capacity: '{'\n");
    expect(dt_cards(&t, "pos"), "pos-enflame-drs-0,Enflame,0,4,4096,100,0,true,; "
                                "pos-enflame-drs-7,Enflame,7,2,4096,100,0,true,");
    expect(dt_cards(&t, "noprof"), "error: no valid drs profiles found on node noprof");
    expect(dt_cards(&t, "nocap"), "error: invalid drs capacity on node nocap");
    expect(dt_cards(&t, "zero"), "error: invalid drs capacity on node zero");
    expect(dt_cards(&t, "nodev"), "error: no drs devices found on node nodev");
    expect(dt_cards(&t, "numidx"), "error: invalid enflame.com/gcu-drs-capacity: devices[0]: "
                                   "expected a string, got number");
    expect(dt_cards(&t, "neg"),
           "error: invalid enflame.com/gcu-drs-capacity: devices[0]: index -1 out of range");
    expect(dt_cards(&t, "hugemem"), "error: invalid enflame.com/gcu-drs-capacity: profile memory "
                                    "4294967299 GB is too large");
    expect(dt_cards(&t, "badid"), "error: invalid enflame.com/gcu-drs-capacity: "
                                  "profiles[\"1g.1gb\"]: expected a string, got number");
    expect(dt_cards(&t, "junk"),
           "error: invalid enflame.com/gcu-drs-capacity: expected an object, got array");
    expect(dt_cards(&t, "notjson"), "error: invalid enflame.com/gcu-drs-capacity: "
                                    "string or '}' expected near end of file at offset 1");
}

/* TestGenerateResourceRequests (direct: slices) and _ByMemoryCore (spec mode, Pct -1); a
 * quantity HAMi's webhook refuses is a pod-level error. */
Test(enflame, drs_requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("direct", "{}", "c", "{enflame.com/drs-gcu: 3}"));
    add(POD("spec", "{}", "c", "{enflame.com/gcu-memory: 20480, enflame.com/gcu-core: 40}"));
    add(POD("memonly", "{}", "c", "{enflame.com/gcu-memory: 1.5}"));
    add(POD("core0", "{}", "c", "{enflame.com/gcu-core: 0}"));
    add(POD("drs0", "{}", "c", "{enflame.com/drs-gcu: 0}"));
    expect(dt_requests(&t, "direct"), "Enflame 1,3,0,0");
    expect(dt_requests(&t, "spec"), "Enflame 1,20480,-1,40");
    expect(dt_requests(&t, "memonly"), "Enflame 1,2,-1,0");
    expect(dt_requests(&t, "core0"), "error: invalid enflame.com/gcu-core \"0\" in container c: "
                                     "must be a whole number between 1 and 100");
    expect(dt_requests(&t, "drs0"), "error: invalid enflame.com/drs-gcu \"0\" in container c: "
                                    "must be a whole number between 1 and 2147483647");
}

/* TestMutateAdmission_ByMemoryCoreAPI and the webhook's rules: each amount is copied to
 * whichever of limits and requests lacks it; non-positive amounts deny the pod. */
Test(enflame, drs_admission)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(POD("spec", "{}", "c", "{enflame.com/gcu-memory: 20480, enflame.com/gcu-core: 50}"));
    add(POD("direct", "{}", "c", "{enflame.com/drs-gcu: 3}"));
    add(POD_REQ("reqonly", "{enflame.com/drs-gcu: 2}"));
    add(POD("drs0", "{}", "c", "{enflame.com/drs-gcu: 0}"));
    add(POD("mem0", "{}", "c", "{enflame.com/gcu-memory: 0}"));
    add(POD("core101", "{}", "c", "{enflame.com/gcu-core: 101}"));
    add(POD("cpu", "{}", "c", "{cpu: 1}"));
    expect(dt_admit(&t, "spec", "Enflame"),
           "found request enflame.com/gcu-memory=20480 request enflame.com/gcu-core=50");
    expect(dt_admit(&t, "direct", "Enflame"), "found request enflame.com/drs-gcu=3");
    expect(dt_admit(&t, "reqonly", "Enflame"), "found limit enflame.com/drs-gcu=2");
    expect(dt_admit(&t, "drs0", "Enflame"), "error: enflame.com/drs-gcu must be greater than 0");
    expect(dt_admit(&t, "mem0", "Enflame"), "error: enflame.com/gcu-memory must be greater than 0");
    expect(dt_admit(&t, "core101", "Enflame"),
           "error: enflame.com/gcu-core must be in range (0,100]");
    expect(dt_admit(&t, "cpu", "Enflame"), "-");
}

/* What TestFit_SelectProfileByRequest, TestFit_SelectProfileByMemoryCoreRequest (20480 MiB and
 * 40 %: 3g.20gb with 50 % of the cores) and TestPatchAnnotations_DRSFields expect. */
static const char drs_want[] =
    "node-a assigned-containers={\"pod-gcu-example1\":{\"allocated\":false,\"request\":3,"
    "\"profileID\":\"1\",\"profileName\":\"3g.20gb\"}} enflame.com/gcu-assigned=false "
    "enflame.com/gcu-assigned-id=0 enflame.com/gcu-assigned-index=0 "
    "enflame.com/gcu-assigned-minor=0 enflame.com/gcu-request-size=3 "
    "hami.io/enflame-vgpu-devices-allocated=node-a-enflame-drs-0,Enflame,20480,50:;";

Test(enflame, drs_fit_by_slices)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("node-a", ONE_CARD, PROFILES));
    add(POD("p", "{}", "pod-gcu-example1", "{enflame.com/drs-gcu: 3}"));
    expect(dt_filter(&t, "p"), drs_want);
}

Test(enflame, drs_fit_by_memory_and_core)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("node-a", ONE_CARD, PROFILES));
    add(POD("p", "{}", "pod-gcu-example1",
            "{enflame.com/gcu-memory: 20480, enflame.com/gcu-core: 40}"));
    expect(dt_filter(&t, "p"), drs_want);
}

/* TestFit_ProfileNotFound (only 1g.6gb, slice 3), and a spec request no profile meets. */
Test(enflame, drs_profile_not_found)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("node-a", ONE_CARD, "{\"1g.6gb\":\"0\"}"));
    add(POD("direct", "{}", "c", "{enflame.com/drs-gcu: 3}"));
    add(POD("spec", "{}", "c", "{enflame.com/gcu-memory: 7}"));
    expect(dt_filter(&t, "direct"), "refused node-a: 1/1 ModeNotFit");
    expect(dt_filter(&t, "spec"), "refused node-a: 1/1 ModeNotFit");
}

/* TestFit_OversizedProfileRejected: a profile of more than 2^31-1 slices is never chosen. */
Test(enflame, drs_oversized_profile)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("node-a", ONE_CARD, "{\"4294967299g.20gb\":\"0\"}"));
    add(POD("spec", "{}", "c", "{enflame.com/gcu-memory: 3}"));
    expect(dt_filter(&t, "spec"), "refused node-a: 1/1 ModeNotFit");
}

/* The section's probe: two cards, containers gcu-a (3 slices) and gcu-b (5 GB, 10 %): 3g.20gb
 * on card 1, then 1g.6gb (17 %) on card 0; the gcu-assigned-* keys come from the first. */
Test(enflame, drs_probe_two_containers)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("n9",
                 "[{\"index\":\"0\",\"minor\":\"0\",\"capacity\":6},"
                 "{\"index\":\"1\",\"minor\":\"1\",\"capacity\":6}]",
                 PROFILES));
    add("- kind: Pod\n  metadata: {name: p, namespace: default}\n  spec:\n    containers:\n"
        "    - name: gcu-a\n      resources: {limits: {enflame.com/drs-gcu: 3}}\n"
        "    - name: gcu-b\n"
        "      resources: {limits: {enflame.com/gcu-memory: 5, enflame.com/gcu-core: 10}}\n");
    expect(dt_filter(&t, "p"),
           "n9 assigned-containers={\"gcu-a\":{\"allocated\":false,\"request\":3,\"profileID\":"
           "\"1\",\"profileName\":\"3g.20gb\"},\"gcu-b\":{\"allocated\":false,\"request\":1,"
           "\"profileID\":\"0\",\"profileName\":\"1g.6gb\"}} enflame.com/gcu-assigned=false "
           "enflame.com/gcu-assigned-id=1 enflame.com/gcu-assigned-index=1 "
           "enflame.com/gcu-assigned-minor=1 enflame.com/gcu-request-size=3 "
           "hami.io/enflame-vgpu-devices-allocated=n9-enflame-drs-1,Enflame,20480,50:;"
           "n9-enflame-drs-0,Enflame,6144,17:;");
}

/* TestFit_MutexRejectsUsedDevice: under `mutex` a card with an instance is refused. */
Test(enflame, drs_mutex)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("node-a", "[{\"index\":\"0\",\"minor\":\"0\",\"capacity\":2}]", PROFILES));
    add(POD("a", "{}", "c", "{enflame.com/drs-gcu: 1}"));
    add(POD("b", "{hami.io/gpu-scheduler-policy: mutex}", "c", "{enflame.com/drs-gcu: 1}"));
    placed(dt_filter(&t, "a"), "node-a");
    expect(dt_filter(&t, "b"), "refused node-a: 1/1 ExclusiveDeviceAllocateConflict");
}

/* enflame.com/use-gpuuuid / nouse-gpuuuid pick among the cards. */
Test(enflame, drs_uuid_selectors)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("n", "[{\"index\":\"0\",\"capacity\":6},{\"index\":\"1\",\"capacity\":6}]",
                 PROFILES));
    add(POD("use", "{enflame.com/use-gpuuuid: n-enflame-drs-0}", "c", "{enflame.com/drs-gcu: 1}"));
    add(POD("none", "{enflame.com/nouse-gpuuuid: \"n-enflame-drs-0, n-enflame-drs-1\"}", "c",
            "{enflame.com/drs-gcu: 1}"));
    expect(dt_filter(&t, "use"),
           "n assigned-containers={\"c\":{\"allocated\":false,\"request\":1,\"profileID\":\"0\","
           "\"profileName\":\"1g.6gb\"}} enflame.com/gcu-assigned=false "
           "enflame.com/gcu-assigned-id=0 enflame.com/gcu-assigned-index=0 "
           "enflame.com/gcu-assigned-minor=0 enflame.com/gcu-request-size=1 "
           "hami.io/enflame-vgpu-devices-allocated=n-enflame-drs-0,Enflame,6144,17:;");
    expect(dt_filter(&t, "none"), "refused n: 2/2 CardUuidMismatch");
}

/* [quirk] Filter counts a placed instance's slices, the read-back one slot per container: after
 * two 3-slice pods on a 6-slice card the card shows 2 slots used, so a third is refused by the
 * card's memory, not its slices. */
Test(enflame, drs_read_back_counts_one_slot)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("n", ONE_CARD, PROFILES));
    add(POD("a", "{}", "c", "{enflame.com/drs-gcu: 3}"));
    add(POD("b", "{}", "c", "{enflame.com/drs-gcu: 3}"));
    add(POD("c", "{}", "c", "{enflame.com/drs-gcu: 3}"));
    placed(dt_filter(&t, "a"), "n");
    placed(dt_filter(&t, "b"), "n");
    expect(dt_filter(&t, "c"), "refused n: 1/1 CardInsufficientMemory");
    const struct vs_node *n = vs_model_node(t.m, "n");
    cr_assert_eq(n->cards[0].used, 2);
    cr_assert_eq(n->cards[0].usedmem, 40960);
}

/* Inside one Filter the slices count: two containers of 3 slices fill a 6-slice card and a
 * third container finds it exhausted (CardTimeSlicingExhausted). */
Test(enflame, drs_slices_within_one_filter)
{
    cr_assert(dt_init(&t, NULL, false, false));
    add(DRS_NODE("n", ONE_CARD, "{\"3g.1gb\":\"1\",\"6g.40gb\":\"2\"}"));
    add("- kind: Pod\n  metadata: {name: p, namespace: default}\n  spec:\n    containers:\n"
        "    - name: a\n      resources: {limits: {enflame.com/drs-gcu: 3}}\n"
        "    - name: b\n      resources: {limits: {enflame.com/drs-gcu: 3}}\n"
        "    - name: c\n      resources: {limits: {enflame.com/drs-gcu: 3}}\n");
    expect(dt_filter(&t, "p"), "refused n: 1/1 CardTimeSlicingExhausted");
}

/* Without an enflame section HAMi has no GCU resource name but DRS keeps its built-in names;
 * resourceNameVGCU stands in for an absent resourceNameDRSGCU. */
Test(enflame, config_section)
{
    cr_assert(dt_init(&t, "nvidia:\n  defaultCores: 0\n", false, false));
    add(POD("gcu", "{}", "c", "{enflame.com/gcu: 1}"));
    add(POD("drs", "{}", "c", "{enflame.com/drs-gcu: 2}"));
    expect(dt_requests(&t, "gcu"), "-");
    expect(dt_requests(&t, "drs"), "Enflame 1,2,0,0");
    dt_cleanup(&t);
    cr_assert(dt_init(&t,
                      "enflame:\n  resourceNameGCU: x.com/gcu\n  resourceNameVGCU: x.com/vgcu\n",
                      false, false));
    add(POD("gcu", "{}", "c", "{x.com/gcu: 1}"));
    add(POD("drs", "{}", "c", "{x.com/vgcu: 2}"));
    expect(dt_requests(&t, "gcu"), "GCU 1,100,100,100");
    expect(dt_requests(&t, "drs"), "Enflame 1,2,0,0");
}

/* The profile name grammar (HAMi's parseProfile). */
Test(enflame, profile_names)
{
    static const struct {
        const char *name;
        int64_t size, mem;
    } cases[] = {
        {"1g.6gb", 1, 6},   {" 3G.20GB ", 3, 20}, {"6.40", 6, 40},
        {"2g.x", 2, 0},     {"g.6gb", 0, 0},      {"12g.6gb.x", 12, 6},
        {"nodot", 0, 0},    {"+2g.-1gb", 2, -1},  {"2gg.6gb", 0, 0},
        {"2 g.6 gb", 0, 0}, {"", 0, 0},           {"9223372036854775808g.1gb", 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t s, m;
        vs_enflame_parse_profile(cases[i].name, &s, &m);
        cr_assert_eq(s, cases[i].size, "%s: size %lld", cases[i].name, (long long)s);
        cr_assert_eq(m, cases[i].mem, "%s: mem %lld", cases[i].name, (long long)m);
    }
}
