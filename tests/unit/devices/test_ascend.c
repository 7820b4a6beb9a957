/* test_ascend: the Huawei Ascend backends against spec/hami-vendors.md §2.1 and the vectors of
 * HAMi's pkg/device/ascend/device_test.go and device_910c_pairing_test.go (test names cited),
 * with our deviations: a quantity that is not acceptable is a pod-level error (design.md §4), a
 * card belongs to the chip that registered it (910B4 requests never see 910B4-1 cards), groups
 * of equal size keep the walk's order, and the webhook sets an env variable once per container. */
#include <criterion/criterion.h>

#include "devtest.h"
#include "jsonpatch.h"
#include "webhook.h"

static struct dt t;

static void fini(void)
{
    dt_cleanup(&t);
}

/* A node with annotations (YAML lines made with REG and ANNO). */
#define NODE(name, annos)                                                                          \
    "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: " name "\n    annotations:\n" annos
#define REG(word, json) "      hami.io/node-register-" word ": '[" json "]'\n"
#define ANNO(k, v)      "      " k ": \"" v "\"\n"
/* One register entry: id, index, slots, MiB, cores, type; extra JSON members after. */
#define CARD(id, idx, count, mem, core, type, extra)                                               \
    "{\"id\":\"" id "\",\"index\":" #idx ",\"count\":" #count ",\"devmem\":" #mem                  \
    ",\"devcore\":" #core ",\"type\":\"" type "\",\"health\":true" extra "}"
#define NET(n) ",\"custominfo\":{\"NetworkID\":" #n "}"
/* A pod with one container c; annos and res are YAML flow mappings ("" for none). */
#define POD(name, annos, limits)                                                                   \
    "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n"     \
    "    uid: " name "\n    annotations: {" annos "}\n  spec:\n    containers:\n    - name: c\n"   \
    "      resources:\n        limits: {" limits "}\n"

static void expect(char *got, const char *want)
{
    cr_assert_str_eq(got, want);
    free(got);
}

/* The node scores of a Filter of pod `name` (no commit): "<node>=<score>" or "<node>=-" per
 * candidate, joined with " ". */
static char *scores(struct dt *x, const char *name)
{
    const struct vs_pod *p = dt_pod(x, name);
    const char *cands[16];
    for (size_t i = 0; i < x->set.n_nodes; i++)
        cands[i] = x->set.nodes[i].name;
    struct vs_sched_opts o = {.cfg = &x->cfg};
    struct vs_filter_result r;
    cr_assert_eq(vs_sched_filter(x->m, p, cands, x->set.n_nodes, &o, &r), VS_OK);
    struct vs_buf b;
    vs_buf_init(&b);
    for (size_t i = 0; i < r.n; i++) {
        if (r.nodes[i].fit)
            vs_buf_printf(&b, "%s%s=%.4f", i ? " " : "", r.nodes[i].node, r.nodes[i].score);
        else
            vs_buf_printf(&b, "%s%s=-", i ? " " : "", r.nodes[i].node);
    }
    vs_filter_result_cleanup(&r);
    return vs_buf_steal(&b);
}

TestSuite(ascend, .fini = fini);

/* ------------------------------------------------------------------ configuration */

/* Without --enable-ascend there is no Ascend backend: an Ascend pod is not HAMi's. */
Test(ascend, needs_enable_ascend)
{
    cr_assert(dt_init(&t, NULL, false, false));
    cr_assert_null(vs_devices_find(t.cfg.devices, "Ascend910B3"));
    dt_load(&t, "items:\n" POD("p", "", "huawei.com/Ascend910B3: 1"));
    expect(dt_filter(&t, "p"), "unmanaged");
}

/* The chart's seven chips with their resource names, keys, lock and managed resources. */
Test(ascend, chart_defaults)
{
    cr_assert(dt_init(&t, NULL, true, false));
    const char *words[] = {"Ascend310P",  "Ascend910A",    "Ascend910B2", "Ascend910B3",
                           "Ascend910B4", "Ascend910B4-1", "Ascend910C"};
    for (size_t i = 0; i < 7; i++) {
        const struct vs_device *d = vs_devices_find(t.cfg.devices, words[i]);
        cr_assert_not_null(d, "%s", words[i]);
        char want[96];
        snprintf(want, sizeof(want), "huawei.com/%s", words[i]);
        cr_assert_str_eq(d->res_count, want);
        cr_assert_eq(d->n_managed, 3);
        cr_assert_str_eq(d->managed[0], want);
        snprintf(want, sizeof(want), "huawei.com/%s-memory", words[i]);
        cr_assert_str_eq(d->res_mem, want);
        cr_assert_str_eq(d->managed[1], want);
        snprintf(want, sizeof(want), "huawei.com/%s-core", words[i]);
        cr_assert_str_eq(d->res_cores, want);
        cr_assert_str_eq(d->managed[2], want);
        snprintf(want, sizeof(want), "hami.io/%s-devices-to-allocate", words[i]);
        cr_assert_str_eq(d->to_allocate_key, want);
        snprintf(want, sizeof(want), "hami.io/%s-devices-allocated", words[i]);
        cr_assert_str_eq(d->allocated_key, want);
        snprintf(want, sizeof(want), "hami.io/use-%s-uuid", words[i]);
        cr_assert_str_eq(d->rules.use_uuid, want);
        snprintf(want, sizeof(want), "hami.io/no-use-%s-uuid", words[i]);
        cr_assert_str_eq(d->rules.nouse_uuid, want);
        cr_assert_eq(d->lock, VS_LOCK_SHARED);
        cr_assert_eq(d->mem_factor, 1);
    }
}

/* A device-config file: its vnpus entries only; a file without the section has no chip. */
Test(ascend, config_section)
{
    cr_assert(dt_init(&t,
                      "vnpus:\n  configs:\n  - commonWord: Ascend910B3\n"
                      "    resourceName: x.com/npu\n    resourceMemoryName: x.com/npu-mem\n"
                      "    memoryAllocatable: 65536\n    memoryCapacity: 65536\n"
                      "    memoryFactor: 4\n",
                      true, false));
    const struct vs_device *d = vs_devices_find(t.cfg.devices, "Ascend910B3");
    cr_assert_not_null(d);
    cr_assert_null(d->res_cores);
    cr_assert_eq(d->mem_factor, 4);
    cr_assert_null(vs_devices_find(t.cfg.devices, "Ascend910A"));
    dt_load(&t, "items:\n" POD("p", "", "x.com/npu: 1, x.com/npu-mem: 100"));
    expect(dt_requests(&t, "p"), "Ascend910B3 1,400,0,0");
    dt_cleanup(&t);
    cr_assert(dt_init(&t, "hygon:\n  resourceCountName: hygon.com/dcunum\n", true, false));
    cr_assert_null(vs_devices_find(t.cfg.devices, "Ascend910B3"));
}

/* A bad vnpus section is refused with the key named. */
Test(ascend, config_errors)
{
    cr_assert_not(dt_init(&t, "vnpus:\n  configs: 3\n", true, false));
    cr_assert_str_eq(t.err, "cfg: vnpus.configs: expected a list");
    dt_cleanup(&t);
    cr_assert_not(dt_init(&t, "vnpus:\n  configs:\n  - resourceName: a\n", true, false));
    cr_assert_str_eq(t.err, "cfg: vnpus.configs[0].commonWord: missing");
    dt_cleanup(&t);
    cr_assert_not(dt_init(&t,
                          "vnpus:\n  configs:\n  - commonWord: A\n"
                          "    memoryCapacity: lots\n",
                          true, false));
    cr_assert_str_eq(t.err, "cfg: vnpus.configs[0].memoryCapacity: expected an integer");
    dt_cleanup(&t);
    cr_assert_not(dt_init(&t,
                          "vnpus:\n  configs:\n  - commonWord: A\n"
                          "    templates:\n    - {name: v, memory: x}\n",
                          true, false));
    cr_assert_str_eq(t.err, "cfg: vnpus.configs[0].templates[0].memory: expected an integer");
    dt_cleanup(&t);
    cr_assert_not(dt_init(&t, "vnpus:\n  hamiVnpuCore: \"yes\"\n  configs: []\n", true, false));
    cr_assert_str_eq(t.err, "cfg: vnpus.hamiVnpuCore: expected true or false");
    dt_cleanup(&t);
    cr_assert_not(
        dt_init(&t, "vnpus:\n  configs:\n  - commonWord: A\n  - commonWord: A\n", true, false));
    cr_assert_str_eq(t.err, "cfg: two device backends use the word A");
}

/* ------------------------------------------------------------------ inventory */

/* Test_GetNodeDevices: the JSON register of the mock device plugin; an empty list and bad JSON
 * make the node unusable for that chip with the reason. */
Test(ascend, inventory)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t,
            "items:\n" NODE(
                "a", REG("Ascend910B4", CARD("MOCK-0", 0, 4, 32768, 20, "Ascend910B4", "") "," CARD(
                                            "MOCK-1", 1, 4, 32768, 20, "Ascend910B4", "")))
                NODE("b", "      hami.io/node-register-Ascend910B4: '[]'\n")
                    NODE("c", "      hami.io/node-register-Ascend910B4: '[{'\n"));
    expect(dt_cards(&t, "a"), "MOCK-0,Ascend910B4,0,4,32768,20,0,true,; "
                              "MOCK-1,Ascend910B4,1,4,32768,20,0,true,");
    expect(dt_cards(&t, "b"),
           "error: invalid hami.io/node-register-Ascend910B4 \"[]\": no gpu found on node");
    expect(dt_cards(&t, "c"), "error: invalid hami.io/node-register-Ascend910B4 \"[{\": "
                              "string or '}' expected near end of file at offset 2");
}

/* ------------------------------------------------------------------ requests */

/* Test_GenerateResourceRequests: count and memory in limits and requests; count only (the whole
 * card's memory); neither. */
Test(ascend, requests)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(
        &t,
        "items:\n" POD("both", "", "huawei.com/Ascend910A: 2, huawei.com/Ascend910A-memory: 8738")
            POD("count", "", "huawei.com/Ascend910A: 2") POD("none", "", "cpu: 1")
                POD("cores", "", "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-core: 1500m")
                    POD("zero", "", "huawei.com/Ascend910B3: 0"));
    expect(dt_requests(&t, "both"), "Ascend910A 2,8738,0,0");
    expect(dt_requests(&t, "count"), "Ascend910A 2,0,100,0");
    expect(dt_requests(&t, "none"), "-");
    /* Test_GenerateResourceRequests_VNPUCoreMode: cores are read rounded up. */
    expect(dt_requests(&t, "cores"), "Ascend910B3 1,0,100,2");
    expect(dt_requests(&t, "zero"), "-");
}

/* Test_GenerateResourceRequestsFactor: memory x memoryFactor; a factor of 0 (or 1) is none. */
Test(ascend, requests_factor)
{
    const char *factor[] = {"10", "100", "0"};
    const char *want[] = {"Ascend910A 1,1280,0,0", "Ascend910A 1,12800,0,0",
                          "Ascend910A 1,128,0,0"};
    for (size_t i = 0; i < 3; i++) {
        char cfg[512];
        snprintf(cfg, sizeof(cfg),
                 "vnpus:\n  configs:\n  - commonWord: Ascend910A\n"
                 "    resourceName: huawei.com/Ascend910A\n"
                 "    resourceMemoryName: huawei.com/Ascend910A-memory\n"
                 "    memoryFactor: %s\n",
                 factor[i]);
        cr_assert(dt_init(&t, cfg, true, false));
        dt_load(&t, "items:\n" POD("p", "",
                                   "huawei.com/Ascend910A: 1, huawei.com/Ascend910A-memory: 128"));
        expect(dt_requests(&t, "p"), want[i]);
        dt_cleanup(&t);
    }
    memset(&t, 0, sizeof(t));
}

/* Test_GenerateResourceRequests_OutOfRangeValues and _MemoryFactorOverflow: HAMi drops the
 * request; we refuse the pod naming the quantity. */
Test(ascend, requests_out_of_range)
{
    cr_assert(dt_init(&t,
                      "vnpus:\n  configs:\n  - commonWord: Ascend910B3\n"
                      "    resourceName: huawei.com/Ascend910B3\n"
                      "    resourceMemoryName: huawei.com/Ascend910B3-memory\n"
                      "    resourceCoreName: huawei.com/Ascend910B3-core\n"
                      "    memoryFactor: 1024\n",
                      true, false));
    dt_load(
        &t,
        "items:\n" POD("gi", "", "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 16Gi")
            POD("negfrac", "", "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: -1m")
                POD("neg", "", "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: -100")
                    POD("count", "", "huawei.com/Ascend910B3: 2200000000") POD(
                        "core", "", "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-core: -1")
                        POD("bigcore", "",
                            "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-core: "
                            "3000000000") POD("overflow", "",
                                              "huawei.com/Ascend910B3: 1, "
                                              "huawei.com/Ascend910B3-memory: 2097152"));
    expect(dt_requests(&t, "gi"),
           "error: invalid huawei.com/Ascend910B3-memory \"16Gi\" in container c: must be a "
           "whole number between 0 and 2097151");
    expect(dt_requests(&t, "negfrac"),
           "error: invalid huawei.com/Ascend910B3-memory \"-1m\" in container c: must be a "
           "whole number between 0 and 2097151");
    expect(dt_requests(&t, "neg"),
           "error: invalid huawei.com/Ascend910B3-memory \"-100\" in container c: must be a "
           "whole number between 0 and 2097151");
    expect(dt_requests(&t, "count"),
           "error: invalid huawei.com/Ascend910B3 \"2200000000\" in container c: must be a "
           "whole number between 0 and 2147483647");
    expect(dt_requests(&t, "core"),
           "error: invalid huawei.com/Ascend910B3-core \"-1\" in container c: must be a whole "
           "number between 0 and 2147483647");
    expect(dt_requests(&t, "bigcore"),
           "error: invalid huawei.com/Ascend910B3-core \"3000000000\" in container c: must be a "
           "whole number between 0 and 2147483647");
    expect(dt_requests(&t, "overflow"),
           "error: invalid huawei.com/Ascend910B3-memory \"2097152\" in container c: must be a "
           "whole number between 0 and 2097151");
    expect(dt_filter(&t, "gi"), "error: invalid huawei.com/Ascend910B3-memory \"16Gi\" in "
                                "container c: must be a whole number between 0 and 2097151");
}

/* ------------------------------------------------------------------ Fit */

#define B3(id, idx, extra) CARD(id, idx, 4, 65536, 20, "Ascend910B3", extra)

/* TestDevices_Fit "fit success": two idle cards, the walk from the end takes dev-1; the
 * annotations of §2.1.7 (no predicate-time without a clock). */
Test(ascend, fit_success)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t,
            "items:\n" NODE("n", REG("Ascend910B3", B3("dev-0", 0, "") "," B3("dev-1", 1, "")))
                POD("p", "", "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 16384"));
    expect(dt_filter(&t, "p"),
           "n hami.io/Ascend910B3-devices-allocated=dev-1,Ascend910B3,16384,0:; "
           "hami.io/Ascend910B3-devices-to-allocate=dev-1,Ascend910B3,16384,0:; "
           "huawei.com/Ascend910B3=[{\"UUID\":\"dev-1\",\"temp\":\"vir05_1c_"
           "16g\",\"memory\":16384}]");
}

/* The per-card refusals of TestDevices_Fit: memory, core (via a placed pod), uuid selectors,
 * slots, exclusive cores, compute exhausted, mutex, unhealthy, too few cards. */
Test(ascend, fit_refusals)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(
        &t,
        "items:\n" NODE("n", REG("Ascend910B3", CARD("dev-0", 0, 2, 1280, 100, "Ascend910B3", "")))
            POD("mem", "", "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 2048") POD(
                "use", "hami.io/use-Ascend910B3-uuid: other",
                "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 512")
                POD("nouse", "hami.io/no-use-Ascend910B3-uuid: \"dev-0, x\"",
                    "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 512")
                    POD("two", "", "huawei.com/Ascend910B3: 2, huawei.com/Ascend910B3-memory: 512")
                        POD("a", "",
                            "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: "
                            "100") POD("mutex", "hami.io/gpu-scheduler-policy: mutex",
                                       "huawei.com/Ascend910B3: 1, "
                                       "huawei.com/Ascend910B3-memory: 100")
                            POD("b", "",
                                "huawei.com/Ascend910B3: 1, "
                                "huawei.com/Ascend910B3-memory: 100")
                                POD("c", "",
                                    "huawei.com/Ascend910B3: 1, "
                                    "huawei.com/Ascend910B3-memory: 100"));
    expect(dt_filter(&t, "mem"), "refused n: 1/1 CardInsufficientMemory");
    expect(dt_filter(&t, "use"), "refused n: 1/1 CardUuidMismatch");
    expect(dt_filter(&t, "nouse"), "refused n: 1/1 CardUuidMismatch");
    expect(dt_filter(&t, "two"), "refused n: NodeInsufficientDevice");
    free(dt_filter(&t, "a"));
    expect(dt_filter(&t, "mutex"), "refused n: 1/1 ExclusiveDeviceAllocateConflict");
    free(dt_filter(&t, "b"));
    expect(dt_filter(&t, "c"), "refused n: 1/1 CardTimeSlicingExhausted");
}

/* A pod already on `node` holding `alloc` (hami.io/<word>-devices-allocated). */
#define PLACED_W(name, node, word, alloc)                                                          \
    "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n"     \
    "    uid: " name "\n    annotations: {hami.io/vgpu-node: " node ", hami.io/" word              \
    "-devices-allocated: \"" alloc "\"}\n  spec:\n    nodeName: " node                             \
    "\n    containers:\n    - name: c\n"
#define PLACED(name, node, alloc) PLACED_W(name, node, "Ascend910B3", alloc)
#define HC                        "huawei.com/vnpu-mode: hami-core"
#define HC_CFG                                                                                     \
    "vnpus:\n  hamiVnpuCore: true\n  configs:\n  - commonWord: Ascend910B3\n"                      \
    "    resourceName: huawei.com/Ascend910B3\n"                                                   \
    "    resourceMemoryName: huawei.com/Ascend910B3-memory\n"                                      \
    "    resourceCoreName: huawei.com/Ascend910B3-core\n"
#define B3_CORES(name, mem, cores)                                                                 \
    POD(name, HC,                                                                                  \
        "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: " #mem                          \
        ", huawei.com/Ascend910B3-core: " #cores)

/* TestDevices_Fit "core not enough" and "CardComputeUnitsExhausted": a card whose cores are all
 * taken (usage read back from a placed pod's allocated key). */
Test(ascend, fit_cores_exhausted)
{
    cr_assert(dt_init(&t, HC_CFG, true, false));
    dt_load(&t, "items:\n" NODE(
                    "n", REG("Ascend910B3", CARD("d0", 0, 100, 1024, 100, "Ascend910B3", "")))
                    PLACED("old", "n", "d0,Ascend910B3,0,100:;") B3_CORES("half", 512, 50)
                        B3_CORES("zero", 512, 0));
    expect(dt_filter(&t, "half"), "refused n: 1/1 CardInsufficientCore");
    expect(dt_filter(&t, "zero"), "refused n: 1/1 CardComputeUnitsExhausted");
}

/* TestDevices_Fit "card exclusively" (100 cores on a used card) and "core limit can't exceed
 * 100" (120 counts as 100, recorded as 100). */
Test(ascend, fit_cores_exclusive)
{
    cr_assert(dt_init(&t, HC_CFG, true, false));
    dt_load(&t, "items:\n" NODE(
                    "n", REG("Ascend910B3", CARD("d0", 0, 100, 1280, 100, "Ascend910B3", "")))
                    NODE("m", REG("Ascend910B3", CARD("d1", 0, 100, 1280, 100, "Ascend910B3", "")))
                        PLACED("old", "n", "d0,Ascend910B3,0,0:;") B3_CORES("excl", 512, 100)
                            B3_CORES("over", 512, 120));
    expect(dt_filter(&t, "over"), "m hami.io/Ascend910B3-devices-allocated=d1,Ascend910B3,512,100:"
                                  "; hami.io/Ascend910B3-devices-to-allocate=d1,Ascend910B3,512,"
                                  "100:; huawei.com/Ascend910B3=[{\"UUID\":\"d1\",\"memory\":512,"
                                  "\"core\":100}]");
    expect(dt_filter(&t, "excl"), "refused n: 1/1 ExclusiveDeviceAllocateConflict; m: 1/1 "
                                  "CardInsufficientCore");
}

/* (probe) hami-core pods count a card as 100 cores whatever it advertises: devcore 150 with 90
 * used refuses 20 more cores to a hami-core pod and gives them to a template-mode pod. */
Test(ascend, hami_core_total_cores)
{
    cr_assert(dt_init(&t, HC_CFG, true, false));
    dt_load(&t, "items:\n" NODE(
                    "n", REG("Ascend910B3", CARD("d0", 0, 100, 65536, 150, "Ascend910B3", "")))
                    PLACED("old", "n", "d0,Ascend910B3,1024,90:;") B3_CORES("hc", 1024, 20)
                        POD("tm", "",
                            "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 1024, "
                            "huawei.com/Ascend910B3-core: 20"));
    expect(dt_filter(&t, "hc"), "refused n: 1/1 CardInsufficientCore");
    expect(dt_filter(&t, "tm"), "n hami.io/Ascend910B3-devices-allocated=d0,Ascend910B3,1024,20:; "
                                "hami.io/Ascend910B3-devices-to-allocate=d0,Ascend910B3,1024,20:; "
                                "huawei.com/Ascend910B3=[{\"UUID\":\"d0\",\"memory\":1024,"
                                "\"core\":20}]");
}

/* TestDevices_Fit hami-core cases: a hami-core pod needs a node running hami-vnpu-core (its
 * annotation, else vnpus.hamiVnpuCore) or the node answers 1/<cards> ModeNotFit; a pod without
 * the annotation goes on either kind of node. */
Test(ascend, mode_not_fit)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t,
            "items:\n" NODE("legacy", REG("Ascend910B3", B3("l0", 0, "") "," B3("l1", 1, "")))
                NODE("off", ANNO("hami-vnpu-core", "false") REG("Ascend910B3", B3("o0", 0, "")))
                    POD("hc", HC, "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 15360")
                        POD("whole", HC, "huawei.com/Ascend910B3: 1")
                            POD("plain", "",
                                "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 8738"));
    expect(dt_filter(&t, "hc"), "refused legacy: 1/2 ModeNotFit; off: 1/1 ModeNotFit");
    expect(dt_filter(&t, "whole"), "refused legacy: 1/2 ModeNotFit; off: 1/1 ModeNotFit");
    dt_load(&t, "items:\n" NODE("on", ANNO("hami-vnpu-core", "true")
                                          REG("Ascend910B3", B3("h0", 0, ""))));
    expect(dt_filter(&t, "hc"), "on hami.io/Ascend910B3-devices-allocated=h0,Ascend910B3,15360,0:; "
                                "hami.io/Ascend910B3-devices-to-allocate=h0,Ascend910B3,15360,0:; "
                                "huawei.com/Ascend910B3=[{\"UUID\":\"h0\",\"memory\":15360}]");
    expect(dt_filter(&t, "plain"), "on hami.io/Ascend910B3-devices-allocated=h0,Ascend910B3,8738,0:"
                                   "; hami.io/Ascend910B3-devices-to-allocate=h0,Ascend910B3,8738,"
                                   "0:; huawei.com/Ascend910B3=[{\"UUID\":\"h0\",\"temp\":\"vir05_"
                                   "1c_16g\",\"memory\":8738}]");
}

/* vnpus.hamiVnpuCore: true makes every node without the annotation a hami-core node; the
 * annotation still decides where present. */
Test(ascend, mode_global_default)
{
    cr_assert(dt_init(&t, HC_CFG, true, false));
    dt_load(&t, "items:\n" NODE("plain", REG("Ascend910B3", B3("p0", 0, "")))
                    NODE("off", ANNO("hami-vnpu-core", "no") REG("Ascend910B3", B3("o0", 0, "")))
                        B3_CORES("hc", 1024, 10));
    expect(dt_filter(&t, "hc"), "plain hami.io/Ascend910B3-devices-allocated=p0,Ascend910B3,1024,"
                                "10:; hami.io/Ascend910B3-devices-to-allocate=p0,Ascend910B3,1024,"
                                "10:; huawei.com/Ascend910B3=[{\"UUID\":\"p0\",\"memory\":1024,"
                                "\"core\":10}]");
}

/* ------------------------------------------------------------------ NetworkID groups */

#define NB3(id, idx, net) B3(id, idx, NET(net))
#define TWO_B3(name)      POD(name, "", "huawei.com/Ascend910B3: 2, huawei.com/Ascend910B3-memory: 64")

/* TestDevices_Fit "fit success. schedule by NetworkID": dev-0 (0), dev-1 (1), dev-2 (1), two
 * cards → the NetworkID 1 pair in walk order, [dev-2, dev-1]. */
Test(ascend, network_id_groups)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", REG("Ascend910B3", NB3("dev-0", 0, 0) "," NB3(
                                                            "dev-1", 1, 1) "," NB3("dev-2", 2, 1)))
                    TWO_B3("p"));
    expect(dt_filter(&t, "p"),
           "n hami.io/Ascend910B3-devices-allocated=dev-2,Ascend910B3,64,0:dev-1,Ascend910B3,64,"
           "0:; hami.io/Ascend910B3-devices-to-allocate=dev-2,Ascend910B3,64,0:dev-1,Ascend910B3,"
           "64,0:; huawei.com/Ascend910B3=[{\"UUID\":\"dev-2\",\"temp\":\"vir05_1c_16g\","
           "\"memory\":64},{\"UUID\":\"dev-1\",\"temp\":\"vir05_1c_16g\",\"memory\":64}]");
}

/* Groups of equal size (HAMi: Go's map order) keep the order the walk met them: the walk goes
 * from the policy's last card, so the NetworkID 1 group (dev-3, dev-2) comes first, then
 * NetworkID 0's first card. */
Test(ascend, network_id_tie_order)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE(
                    "n", REG("Ascend910B3", NB3("dev-0", 0, 0) "," NB3("dev-1", 1, 0) "," NB3(
                                                "dev-2", 2, 1) "," NB3("dev-3", 3, 1)))
                    POD("p", "", "huawei.com/Ascend910B3: 3, huawei.com/Ascend910B3-memory: 64"));
    expect(dt_filter(&t, "p"),
           "n hami.io/Ascend910B3-devices-allocated=dev-3,Ascend910B3,64,0:dev-2,Ascend910B3,64,"
           "0:dev-1,Ascend910B3,64,0:; hami.io/Ascend910B3-devices-to-allocate=dev-3,Ascend910B3,"
           "64,0:dev-2,Ascend910B3,64,0:dev-1,Ascend910B3,64,0:; huawei.com/Ascend910B3=[{\"UUID\":"
           "\"dev-3\",\"temp\":\"vir05_1c_16g\",\"memory\":64},{\"UUID\":\"dev-2\",\"temp\":"
           "\"vir05_1c_16g\",\"memory\":64},{\"UUID\":\"dev-1\",\"temp\":\"vir05_1c_16g\","
           "\"memory\":64}]");
}

/* Without a numeric NetworkID on every candidate the walk's first cards are taken (a string
 * NetworkID counts as none; HAMi would enter its topology mode and then drop that card). */
Test(ascend, network_id_missing)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE(
                    "n", REG("Ascend910B3", NB3("dev-0", 0, 1) "," NB3("dev-1", 1, "\"x\"") "," NB3(
                                                "dev-2", 2, 1))) TWO_B3("p"));
    expect(dt_filter(&t, "p"),
           "n hami.io/Ascend910B3-devices-allocated=dev-2,Ascend910B3,64,0:dev-1,Ascend910B3,64,"
           "0:; hami.io/Ascend910B3-devices-to-allocate=dev-2,Ascend910B3,64,0:dev-1,Ascend910B3,"
           "64,0:; huawei.com/Ascend910B3=[{\"UUID\":\"dev-2\",\"temp\":\"vir05_1c_16g\","
           "\"memory\":64},{\"UUID\":\"dev-1\",\"temp\":\"vir05_1c_16g\",\"memory\":64}]");
}

/* TestDevices_Fit "partial allocation AllocatedCardsInsufficientRequest for multiple cards":
 * too few cards pass; each card counts under its reason, the passing ones as allocated (910
 * chips collect every passing card, 310P walks plainly: the same words). */
Test(ascend, partial_allocation)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", REG("Ascend910B3", NB3("dev-0", 0, 0) "," NB3(
                                                            "dev-1", 1, 0) "," NB3("dev-2", 2, 0)))
                    PLACED("old", "n", "dev-0,Ascend910B3,65536,0:;")
                        POD("p", "", "huawei.com/Ascend910B3: 3, huawei.com/Ascend910B3-memory: 64")
                            NODE("m", REG("Ascend310P",
                                          CARD("p0", 0, 4, 21527, 8, "Ascend310P", "") "," CARD(
                                              "p1", 1, 4, 21527, 8, "Ascend310P", "")))
                                PLACED_W("old2", "m", "Ascend310P", "p1,Ascend310P,21527,0:;")
                                    POD("q", "",
                                        "huawei.com/Ascend310P: 2, huawei.com/Ascend310P-memory: "
                                        "12288"));
    expect(dt_filter(&t, "p"), "refused n: 1/3 CardInsufficientMemory, 2/3 "
                               "AllocatedCardsInsufficientRequest; m: NodeInsufficientDevice");
    expect(dt_filter(&t, "q"), "refused n: NodeInsufficientDevice; m: 1/2 "
                               "AllocatedCardsInsufficientRequest, 1/2 CardInsufficientMemory");
}

/* ------------------------------------------------------------------ 910C modules */

#define C(id, idx)     CARD(id, idx, 4, 65536, 20, "Ascend910C", NET(0))
#define C_POD(name, n) POD(name, "", "huawei.com/Ascend910C: " #n)

/* TestAscend910C_FitPartialAllocationBug: NPUs 0, 1, 2, 4, 6 and four asked: only module {0,1}
 * is whole; HAMi's reason counts over the request, 2/4 (probe). */
Test(ascend, c910_partial_modules)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE(
                    "n", REG("Ascend910C", C("dev-0", 0) "," C("dev-1", 1) "," C("dev-2", 2) "," C(
                                               "dev-4", 4) "," C("dev-6", 6))) C_POD("p", 4));
    expect(dt_filter(&t, "p"), "refused n: 2/4 AllocatedCardsInsufficientRequest");
}

/* TestAscend910C_FitExactCountBypassBug: NPUs 0 and 2 (two half modules) for two: 0 taken, and
 * HAMi writes the zero; TestAscend910C_FitWithoutNetworkID_ValidatesPairing: the same without
 * NetworkIDs. */
Test(ascend, c910_half_modules)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", REG("Ascend910C", C("dev-0", 0) "," C("dev-2", 2)))
                    NODE("m", REG("Ascend910C",
                                  CARD("dev-0", 0, 4, 65536, 20, "Ascend910C", "") "," CARD(
                                      "dev-2", 2, 4, 65536, 20, "Ascend910C", ""))) C_POD("p", 2));
    expect(dt_filter(&t, "p"), "refused n: 0/2 AllocatedCardsInsufficientRequest; m: 0/2 "
                               "AllocatedCardsInsufficientRequest");
    /* Two NPUs registered with the same index are not a module (HAMi would pick one twice). */
    dt_load(&t, "items:\n" NODE("k", REG("Ascend910C", C("dup-a", 0) "," C("dup-b", 0))));
    expect(dt_filter(&t, "p"), "refused n: 0/2 AllocatedCardsInsufficientRequest; m: 0/2 "
                               "AllocatedCardsInsufficientRequest; k: 0/2 "
                               "AllocatedCardsInsufficientRequest");
}

/* TestAscend910C_FitFullPairSucceeds and TestDevices_Fit_910C: a whole module, in walk order;
 * with NPUs 0, 1, 2 the whole module {0,1} wins over the larger walk position of NPU 2. */
Test(ascend, c910_whole_module)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", REG("Ascend910C", C("dev-0", 0) "," C("dev-1", 1) "," C(
                                                           "dev-2", 2))) C_POD("p", 2));
    expect(dt_filter(&t, "p"),
           "n hami.io/Ascend910C-devices-allocated=dev-1,Ascend910C,65536,0:dev-0,Ascend910C,65536,"
           "0:; hami.io/Ascend910C-devices-to-allocate=dev-1,Ascend910C,65536,0:dev-0,Ascend910C,"
           "65536,0:; huawei.com/Ascend910C=[{\"UUID\":\"dev-1\",\"memory\":65536},{\"UUID\":"
           "\"dev-0\",\"memory\":65536}]");
}

/* The denominator is the request for every item of a 910C refusal, and a count that pairs
 * cannot meet exactly (3, possible with superPod false) always fails (4 taken of 3). */
Test(ascend, c910_denominator)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", REG("Ascend910C", C("dev-0", 0) "," C("dev-1", 1) "," C(
                                                           "dev-2", 2) ",{\"id\":\"dev-3\","
                                                                       "\"index\":3,\"count\":4,"
                                                                       "\"devmem\":65536,"
                                                                       "\"devcore\":20,\"type\":"
                                                                       "\"Ascend910C\","
                                                                       "\"health\":false}"))
                    C_POD("four", 4) C_POD("three", 3));
    expect(dt_filter(&t, "four"),
           "refused n: 1/4 CardNotHealth, 2/4 AllocatedCardsInsufficientRequest");
    expect(dt_filter(&t, "three"),
           "refused n: 1/3 CardNotHealth, 2/3 AllocatedCardsInsufficientRequest");
    dt_cleanup(&t);
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", REG("Ascend910C", C("dev-0", 0) "," C("dev-1", 1) "," C(
                                                           "dev-2", 2) "," C("dev-3", 3)))
                    C_POD("three", 3));
    expect(dt_filter(&t, "three"), "refused n: 4/3 AllocatedCardsInsufficientRequest");
}

/* ------------------------------------------------------------------ annotations */

/* Calls the chip's annotate hook on a one-container device list (HAMi's PatchAnnotations
 * vectors hand it device entries directly) and renders the result as dt_filter does. */
static char *annotate(const char *word, const char *pod, struct vs_cdev *devs, size_t n,
                      int64_t now_ns)
{
    const struct vs_device *d = vs_devices_find(t.cfg.devices, word);
    cr_assert_not_null(d);
    struct vs_ctr_devs ctr = {.devs = devs, .n = n};
    struct vs_pod_devs pd = {.ctrs = &ctr, .n = 1};
    json_t *out = json_object();
    cr_assert_eq(d->ops->annotate(d, dt_pod(&t, pod), NULL, &pd, NULL, now_ns, out), VS_OK);
    const char *keys[8], *k;
    size_t nk = 0;
    json_t *v;
    json_object_foreach(out, k, v) keys[nk++] = k;
    qsort(keys, nk, sizeof(keys[0]), dt_key_cmp);
    struct vs_buf b;
    vs_buf_init(&b);
    for (size_t i = 0; i < nk; i++)
        vs_buf_printf(&b, "%s%s=%s", i ? " " : "", keys[i],
                      json_string_value(json_object_get(out, keys[i])));
    json_decref(out);
    return vs_buf_steal(&b);
}

/* Test_PatchAnnotations, _ZeroCore and _VNPUCoreMode: the device list as given (type field
 * included), predicate-time in Unix seconds, the runtime JSON with the template of the card's
 * memory (none in hami-core mode), empty members left out. */
Test(ascend, patch_annotations)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" POD("p", "", "cpu: 1") POD("hc", HC, "cpu: 1"));
    struct vs_cdev dev = {.uuid = "device-0", .type = "Ascend", .usedmem = 8738, .usedcores = 1};
    expect(annotate("Ascend910A", "p", &dev, 1, 1700000000999999999LL),
           "hami.io/Ascend910A-devices-allocated=device-0,Ascend,8738,1:; "
           "hami.io/Ascend910A-devices-to-allocate=device-0,Ascend,8738,1:; "
           "huawei.com/Ascend910A=[{\"UUID\":\"device-0\",\"temp\":\"vir08\",\"memory\":8738,"
           "\"core\":1}] predicate-time=1700000000");
    struct vs_cdev zero = {.uuid = "device-zero-core", .type = "Ascend", .usedmem = 8738};
    expect(annotate("Ascend910A", "p", &zero, 1, 0),
           "hami.io/Ascend910A-devices-allocated=device-zero-core,Ascend,8738,0:; "
           "hami.io/Ascend910A-devices-to-allocate=device-zero-core,Ascend,8738,0:; "
           "huawei.com/Ascend910A=[{\"UUID\":\"device-zero-core\",\"temp\":\"vir08\","
           "\"memory\":8738}]");
    struct vs_cdev hc = {
        .uuid = "ascend-uuid-1", .type = "Ascend", .usedmem = 8192, .usedcores = 5};
    expect(annotate("Ascend910B3", "hc", &hc, 1, 0),
           "hami.io/Ascend910B3-devices-allocated=ascend-uuid-1,Ascend,8192,5:; "
           "hami.io/Ascend910B3-devices-to-allocate=ascend-uuid-1,Ascend,8192,5:; "
           "huawei.com/Ascend910B3=[{\"UUID\":\"ascend-uuid-1\",\"memory\":8192,\"core\":5}]");
    /* A whole card (above every template) has no template; Go's escaping of <, >, &. */
    struct vs_cdev two[2] = {{.uuid = "a<b>&c", .type = "Ascend910B3", .usedmem = 65536},
                             {.uuid = "d", .type = "Ascend910B3", .usedmem = 32768}};
    expect(annotate("Ascend910B3", "p", two, 2, 0),
           "hami.io/Ascend910B3-devices-allocated=a<b>&c,Ascend910B3,65536,0:d,Ascend910B3,32768,"
           "0:; hami.io/Ascend910B3-devices-to-allocate=a<b>&c,Ascend910B3,65536,0:d,Ascend910B3,"
           "32768,0:; huawei.com/Ascend910B3=[{\"UUID\":\"a\\u003cb\\u003e\\u0026c\",\"memory\":"
           "65536},{\"UUID\":\"d\",\"temp\":\"vir10_3c_32g\",\"memory\":32768}]");
}

/* The runtime JSON runs over every container in order; an empty container keeps its entry in
 * the device lists (HAMi pads Ascend lists correctly too, §1.8). */
Test(ascend, annotations_two_containers)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(
        &t,
        "items:\n" NODE(
            "n",
            REG("Ascend910B3",
                B3("npu-0", 0, "") "," B3(
                    "npu-1", 1,
                    ""))) "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: "
                          "default}\n"
                          "  spec:\n    containers:\n    - name: a\n      resources:\n        "
                          "limits: "
                          "{huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 16384}\n"
                          "    - name: none\n    - name: b\n      resources:\n        limits: "
                          "{huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 32768}\n");
    expect(dt_filter(&t, "p"),
           "n hami.io/Ascend910B3-devices-allocated=npu-1,Ascend910B3,16384,0:;;npu-0,Ascend910B3,"
           "32768,0:; hami.io/Ascend910B3-devices-to-allocate=npu-1,Ascend910B3,16384,0:;;npu-0,"
           "Ascend910B3,32768,0:; huawei.com/Ascend910B3=[{\"UUID\":\"npu-1\",\"temp\":\"vir05_"
           "1c_16g\",\"memory\":16384},{\"UUID\":\"npu-0\",\"temp\":\"vir10_3c_32g\",\"memory\":"
           "32768}]");
}

/* ------------------------------------------------------------------ score */

/* (probe) One 910B3 card with NetworkID 0 chosen: +10 on the node score (an idle node's own
 * score is 0); a chosen card without a NetworkID makes the term 0; 310P has none. */
Test(ascend, score)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t,
            "items:\n" NODE("net", REG("Ascend910B3", NB3("a0", 0, 0)))
                NODE("plain", REG("Ascend910B3", B3("b0", 0, "")))
                    NODE("mixed", REG("Ascend910B3", NB3("c0", 0, 0) "," B3("c1", 1, ""))) NODE(
                        "p310", REG("Ascend310P", CARD("d0", 0, 4, 21527, 8, "Ascend310P", NET(0))))
                        POD("one", "",
                            "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 65536")
                            POD("q", "", "huawei.com/Ascend310P: 1"));
    expect(scores(&t, "one"), "net=10.0000 plain=0.0000 mixed=0.0000 p310=-");
    expect(scores(&t, "q"), "net=- plain=- mixed=- p310=0.0000");
}

/* A container's share of its largest NetworkID group: 2 of 3 → 6.6667 on top of the node's
 * score before the pod (1/16 slots + 1/4 memory → 3.125). */
Test(ascend, score_share)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", REG("Ascend910B3", NB3("a0", 0, 0) "," NB3("a1", 1, 1) "," NB3(
                                                            "a2", 2, 1) "," NB3("a3", 3, 1)))
                    PLACED("old", "n", "a3,Ascend910B3,65536,0:;")
                        POD("three", "",
                            "huawei.com/Ascend910B3: 3, "
                            "huawei.com/Ascend910B3-memory: 1024"));
    expect(scores(&t, "three"), "n=9.7917");
}

/* ------------------------------------------------------------------ word collision */

/* Our deviation (docs/vendors.md): a card belongs to the chip that registered it. HAMi offers
 * Ascend910B4-1 cards to Ascend910B4 requests because the word is a substring of the type
 * (probe: it writes npu-0,Ascend910B4,8192,0:;); here the 910B4 request does not see them. */
Test(ascend, b4_never_lands_on_b4_1)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", REG("Ascend910B4-1",
                                         CARD("npu-0", 0, 4, 65536, 20, "Ascend910B4-1", NET(0))))
                    POD("b4", "", "huawei.com/Ascend910B4: 1, huawei.com/Ascend910B4-memory: 8192")
                        POD("b41", "",
                            "huawei.com/Ascend910B4-1: 1, huawei.com/Ascend910B4-1-memory: 16384"));
    expect(dt_filter(&t, "b4"), "refused n: NodeInsufficientDevice");
    expect(dt_filter(&t, "b41"),
           "n hami.io/Ascend910B4-1-devices-allocated=npu-0,Ascend910B4-1,16384,0:; "
           "hami.io/Ascend910B4-1-devices-to-allocate=npu-0,Ascend910B4-1,16384,0:; "
           "huawei.com/Ascend910B4-1=[{\"UUID\":\"npu-0\",\"temp\":\"vir05_1c_16g\",\"memory\":"
           "16384}]");
}

/* ------------------------------------------------------------------ mixed clusters */

#define NV_REG(id)                                                                                 \
    "      hami.io/node-nvidia-register: '[{\"id\":\"" id "\",\"count\":10,\"devmem\":24576,"      \
    "\"devcore\":100,\"type\":\"NVIDIA A10\",\"health\":true}]'\n"

/* One container asking NVIDIA and Ascend on a node with both: both backends' annotations; when
 * both would fail, the first backend in word order (Ascend910B3 < NVIDIA) gives the reason. */
Test(ascend, mixed_vendors)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE("n", NV_REG("GPU-0") REG("Ascend910B3", B3("npu-0", 0, "")))
                    POD("both", "",
                        "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, huawei.com/Ascend910B3: 1, "
                        "huawei.com/Ascend910B3-memory: 8192")
                        POD("neither", "nvidia.com/use-gputype: H100",
                            "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, "
                            "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 99999")
                            POD("nv", "nvidia.com/use-gputype: H100",
                                "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, "
                                "huawei.com/Ascend910B3: 1, huawei.com/Ascend910B3-memory: 8192"));
    expect(
        dt_filter(&t, "both"),
        "n hami.io/Ascend910B3-devices-allocated=npu-0,Ascend910B3,8192,0:; "
        "hami.io/Ascend910B3-devices-to-allocate=npu-0,Ascend910B3,8192,0:; "
        "hami.io/vgpu-devices-allocated=GPU-0,NVIDIA,1000,0:; "
        "hami.io/vgpu-devices-to-allocate=GPU-0,NVIDIA,1000,0:; hami.io/vgpu-mig-allocations=null "
        "huawei.com/Ascend910B3=[{\"UUID\":\"npu-0\",\"temp\":\"vir05_1c_16g\",\"memory\":"
        "8192}]");
    expect(dt_filter(&t, "neither"), "refused n: 1/1 CardInsufficientMemory");
    expect(dt_filter(&t, "nv"), "refused n: 1/1 CardTypeMismatch");
}

/* (probe, §1.8) Containers asking different vendors: each vendor's list keeps one entry per
 * container (HAMi pads Ascend lists correctly: ";npu-0,Ascend910B3,16384,0:;"). A pod asking only
 * NVIDIA gets no Ascend keys (HAMi writes all-empty Ascend lists, predicate-time and
 * "huawei.com/Ascend910B3: null" on a node that also has Ascend cards: our deviation). */
Test(ascend, containers_of_two_vendors)
{
    cr_assert(dt_init(&t, NULL, true, false));
    dt_load(&t, "items:\n" NODE(
                    "n", NV_REG("GPU-a") REG(
                             "Ascend910B3",
                             B3("npu-0", 0,
                                ""))) "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, "
                                      "namespace: default}\n"
                                      "  spec:\n    containers:\n    - name: c0\n      "
                                      "resources:\n        limits: "
                                      "{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}\n    - name: "
                                      "c1\n      resources:\n"
                                      "        limits: {huawei.com/Ascend910B3: 1, "
                                      "huawei.com/Ascend910B3-memory: "
                                      "16384}\n" POD("nv", "",
                                                     "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000"));
    expect(
        dt_filter(&t, "p"),
        "n hami.io/Ascend910B3-devices-allocated=;npu-0,Ascend910B3,16384,0:; "
        "hami.io/Ascend910B3-devices-to-allocate=;npu-0,Ascend910B3,16384,0:; "
        "hami.io/vgpu-devices-allocated=GPU-a,NVIDIA,1000,0:;; "
        "hami.io/vgpu-devices-to-allocate=GPU-a,NVIDIA,1000,0:;; hami.io/vgpu-mig-allocations=null "
        "huawei.com/Ascend910B3=[{\"UUID\":\"npu-0\",\"temp\":\"vir05_1c_16g\",\"memory\":"
        "16384}]");
    expect(dt_filter(&t, "nv"), "n hami.io/vgpu-devices-allocated=GPU-a,NVIDIA,1000,0:; "
                                "hami.io/vgpu-devices-to-allocate=GPU-a,NVIDIA,1000,0:; "
                                "hami.io/vgpu-mig-allocations=null");
}

/* ------------------------------------------------------------------ admission */

/* The webhook's answer for a pod with `annos` (a JSON object) and `ctrs` (a JSON array of
 * containers) on configuration x: "allowed" and the patch ops as "<op> <path> <value>" joined
 * with "; ", or "denied <code>: <message>". */
static char *admit(struct dt *x, const char *annos, const char *ctrs)
{
    char body[4096];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
             "{\"uid\":\"u1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
             "\"namespace\":\"default\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":"
             "\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"default\","
             "\"annotations\":%s},\"spec\":{\"containers\":%s}}}}",
             annos, ctrs);
    struct vs_webhook_opts o = {
        .scheduler_name = "hami-scheduler", .force_overwrite_default = true, .cfg = &x->cfg};
    char *resp = NULL;
    cr_assert_eq(vs_webhook_handle(&o, body, strlen(body), &resp), 200, "%s", resp);
    json_t *root = json_loads(resp, 0, NULL), *r = json_object_get(root, "response");
    cr_assert_not_null(r, "%s", resp);
    struct vs_buf b;
    vs_buf_init(&b);
    if (!json_is_true(json_object_get(r, "allowed"))) {
        const json_t *st = json_object_get(r, "status");
        vs_buf_printf(&b, "denied %lld: %s", json_integer_value(json_object_get(st, "code")),
                      json_string_value(json_object_get(st, "message")));
    } else {
        vs_buf_puts(&b, "allowed");
        const char *p64 = json_string_value(json_object_get(r, "patch"));
        size_t n;
        char *text = p64 ? tjp_b64_decode(p64, &n) : NULL;
        json_t *ops = text ? json_loadb(text, n, 0, NULL) : NULL;
        if (ops) {
            /* The patch applies to the pod, as the API server would apply it. */
            json_t *req = json_loads(body, 0, NULL);
            json_t *obj = json_object_get(json_object_get(req, "request"), "object");
            char err[256] = "";
            cr_assert_eq(tjp_apply(obj, ops, err, sizeof(err)), 0, "%s", err);
            json_decref(req);
        }
        size_t i;
        json_t *op;
        json_array_foreach(ops, i, op)
        {
            char *v = json_dumps(json_object_get(op, "value"), JSON_COMPACT | JSON_ENCODE_ANY);
            vs_buf_printf(&b, "%s%s %s %s", i ? "; " : ": ",
                          json_string_value(json_object_get(op, "op")),
                          json_string_value(json_object_get(op, "path")), v);
            free(v);
        }
        json_decref(ops);
        free(text);
    }
    json_decref(root);
    free(resp);
    return vs_buf_steal(&b);
}

#define CTR(limits) "[{\"name\":\"c\",\"resources\":{\"limits\":{" limits "}}}]"
#define CTR2(lim, req)                                                                             \
    "[{\"name\":\"c\",\"resources\":{\"limits\":{" lim "},\"requests\":{" req "}}}]"
#define A910A(n)        "\"huawei.com/Ascend910A\":\"" #n "\""
#define A910A_MEM(m)    "\"huawei.com/Ascend910A-memory\":\"" #m "\""
#define MEM_PATH(w, lr) "/spec/containers/0/resources/" lr "/huawei.com~1" w "-memory"
#define ROUTE           "add /spec/schedulerName \"hami-scheduler\""

/* Test_MutateAdmission (910A, the chart's templates): no Ascend limit: not ours; 2 x 8738 is
 * found but multi-NPU vNPUs are refused; 2 x 40000 fits no template nor the card; 1 x 20000 is
 * rounded to the whole card (32768) in limits and requests. */
Test(ascend, admission_templates)
{
    cr_assert(dt_init(&t, NULL, true, false));
    expect(admit(&t, "{}", "[{\"name\":\"c\"}]"), "allowed");
    expect(admit(&t, "{}", CTR(A910A(2) "," A910A_MEM(8738))),
           "denied 500: vNPU not supported for multiple devices");
    expect(admit(&t, "{}", CTR(A910A(2) "," A910A_MEM(40000))),
           "denied 500: huawei.com/Ascend910A-memory 40000 is invalid");
    expect(admit(&t, "{}", CTR2(A910A(1) "," A910A_MEM(20000), A910A_MEM(20000))),
           "allowed: add " MEM_PATH("Ascend910A", "limits") " \"32768\"; add " MEM_PATH(
               "Ascend910A", "requests") " \"32768\"; " ROUTE);
    /* A template is kept as is; a value below one is rounded up to it. */
    expect(admit(&t, "{}", CTR(A910A(1) "," A910A_MEM(3000))),
           "allowed: add " MEM_PATH(
               "Ascend910A", "limits") " \"4369\"; add "
                                       "/spec/containers/0/resources/requests {}; add " MEM_PATH(
                                           "Ascend910A", "requests") " \"4369\"; " ROUTE);
    /* Whole cards may be many. */
    expect(admit(&t, "{}", CTR(A910A(4))),
           "allowed: add " MEM_PATH(
               "Ascend910A", "limits") " \"32768\"; add "
                                       "/spec/containers/0/resources/requests {}; add " MEM_PATH(
                                           "Ascend910A", "requests") " \"32768\"; " ROUTE);
}

/* Test_MutateAdmission_NilRequests: a container without requests gets them; a count alone gets
 * the whole card's memory. */
Test(ascend, admission_nil_requests)
{
    cr_assert(dt_init(&t, NULL, true, false));
    expect(admit(&t, "{}", CTR(A910A(1))),
           "allowed: add " MEM_PATH(
               "Ascend910A", "limits") " \"32768\"; add "
                                       "/spec/containers/0/resources/requests {}; add " MEM_PATH(
                                           "Ascend910A", "requests") " \"32768\"; " ROUTE);
    expect(admit(&t, "{}", CTR(A910A(1) "," A910A_MEM(8738))),
           "allowed: add " MEM_PATH(
               "Ascend910A", "limits") " \"8738\"; add "
                                       "/spec/containers/0/resources/requests {}; add " MEM_PATH(
                                           "Ascend910A", "requests") " \"8738\"; " ROUTE);
}

#define C910(n)       "\"huawei.com/Ascend910C\":\"" #n "\""
#define C910_PATH(lr) "/spec/containers/0/resources/" lr "/huawei.com~1Ascend910C"

/* Test_MutateAdmission910C (superPod, the chart's default): 1 becomes 2 in limits and requests;
 * 3 is refused; 4 is kept. */
Test(ascend, admission_910c_super_pod)
{
    cr_assert(dt_init(&t, NULL, true, false));
    expect(
        admit(&t, "{}", CTR2(C910(1), C910(1))),
        "allowed: add " C910_PATH("limits") " \"2\"; add " MEM_PATH(
            "Ascend910C",
            "limits") " \"65536\"; add " C910_PATH("requests") " \"2\"; add " MEM_PATH("Ascend91"
                                                                                       "0C",
                                                                                       "request"
                                                                                       "s") " \""
                                                                                            "655"
                                                                                            "36"
                                                                                            "\";"
                                                                                            " " ROUTE);
    expect(admit(&t, "{}", CTR2(C910(3), C910(3))),
           "denied 500: Ascend910C device request must be 1 or 2*n, got 3");
    expect(admit(&t, "{}", CTR2(C910(4), C910(4))),
           "allowed: add " MEM_PATH("Ascend910C", "limits") " \"65536\"; add " MEM_PATH(
               "Ascend910C", "requests") " \"65536\"; " ROUTE);
    /* The quirk the chart default brings: a vNPU request of 1 also becomes a module. */
    expect(admit(&t, "{}", CTR(C910(1) ",\"huawei.com/Ascend910C-memory\":\"16384\"")),
           "allowed: add " C910_PATH("limits") " \"2\"; add " MEM_PATH(
               "Ascend910C", "limits") " \"16384\"; add /spec/containers/0/resources/requests "
                                       "{}; add " MEM_PATH("Ascend910C",
                                                           "requests") " \"16384\"; " ROUTE);
}

/* Test_MutateAdmission910C_VNPUSplit (superPod false): 1 x 16384 stays a vNPU; 3 is allowed. */
Test(ascend, admission_910c_split)
{
    cr_assert(dt_init(&t,
                      "vnpus:\n  configs:\n  - commonWord: Ascend910C\n"
                      "    resourceName: huawei.com/Ascend910C\n"
                      "    resourceMemoryName: huawei.com/Ascend910C-memory\n"
                      "    memoryAllocatable: 65536\n    memoryCapacity: 65536\n"
                      "    templates:\n    - {name: vir05_1c_16g, memory: 16384}\n"
                      "    - {name: vir10_3c_32g, memory: 32768}\n",
                      true, false));
    expect(admit(&t, "{}", CTR2(C910(1) ",\"huawei.com/Ascend910C-memory\":\"16384\"", C910(1))),
           "allowed: add " MEM_PATH("Ascend910C", "limits") " \"16384\"; add " MEM_PATH(
               "Ascend910C", "requests") " \"16384\"; " ROUTE);
    expect(admit(&t, "{}", CTR2(C910(3), C910(3))),
           "allowed: add " MEM_PATH("Ascend910C", "limits") " \"65536\"; add " MEM_PATH(
               "Ascend910C", "requests") " \"65536\"; " ROUTE);
}

#define B3_CFG                                                                                     \
    "vnpus:\n  configs:\n  - commonWord: Ascend910B3\n"                                            \
    "    resourceName: huawei.com/Ascend910B3\n"                                                   \
    "    resourceMemoryName: huawei.com/Ascend910B3-memory\n"                                      \
    "    resourceCoreName: huawei.com/Ascend910B3-core\n"                                          \
    "    memoryAllocatable: 32768\n    memoryCapacity: 32768\n"
#define B3L(n, mem)                                                                                \
    "\"huawei.com/Ascend910B3\":\"" #n "\",\"huawei.com/Ascend910B3-memory\":\"" #mem "\""
#define B3CORE(c) ",\"huawei.com/Ascend910B3-core\":\"" #c "\""
#define HC_ANNO   "{\"huawei.com/vnpu-mode\":\"hami-core\"}"

/* Test_MutateAdmission_VNPUCoreMode: hami-core keeps the raw memory; without the annotation it
 * is rounded (no templates here: the whole card). */
Test(ascend, admission_hami_core)
{
    cr_assert(dt_init(&t, B3_CFG, true, false));
    expect(admit(&t, HC_ANNO, CTR2(B3L(1, 15360) B3CORE(20), B3L(1, 15360) B3CORE(20))),
           "allowed: add " MEM_PATH("Ascend910B3", "limits") " \"15360\"; add " MEM_PATH(
               "Ascend910B3", "requests") " \"15360\"; " ROUTE);
    expect(admit(&t, "{}", CTR2(B3L(1, 15360), B3L(1, 15360))),
           "allowed: add " MEM_PATH("Ascend910B3", "limits") " \"32768\"; add " MEM_PATH(
               "Ascend910B3", "requests") " \"32768\"; " ROUTE);
    /* hami-core pods may ask several NPUs with any memory. */
    expect(admit(&t, HC_ANNO, CTR(B3L(2, 1000))),
           "allowed: add " MEM_PATH(
               "Ascend910B3", "limits") " \"1000\"; add "
                                        "/spec/containers/0/resources/requests {}; add " MEM_PATH(
                                            "Ascend910B3", "requests") " \"1000\"; " ROUTE);
}

/* Test_MutateAdmission_HardSplitCoreRejected: -core is hami-core's only. */
Test(ascend, admission_core_needs_hami_core)
{
    cr_assert(dt_init(&t, B3_CFG, true, false));
    expect(admit(&t, "{}", CTR2(B3L(1, 8738) B3CORE(10), B3L(1, 8738) B3CORE(10))),
           "denied 500: huawei.com/Ascend910B3-core is only supported in hami-core (soft split) "
           "mode");
    expect(admit(&t, "{}", CTR2(B3L(1, 8738) B3CORE(25), B3L(1, 8738) B3CORE(25))),
           "denied 500: huawei.com/Ascend910B3-core is only supported in hami-core (soft split) "
           "mode");
    expect(admit(&t, "{}", CTR2(B3L(1, 8738) B3CORE(0), B3L(1, 8738) B3CORE(0))),
           "allowed: add " MEM_PATH("Ascend910B3", "limits") " \"32768\"; add " MEM_PATH(
               "Ascend910B3", "requests") " \"32768\"; " ROUTE);
    expect(admit(&t, HC_ANNO, CTR2(B3L(1, 8738) B3CORE(10), B3L(1, 8738) B3CORE(10))),
           "allowed: add " MEM_PATH("Ascend910B3", "limits") " \"8738\"; add " MEM_PATH(
               "Ascend910B3", "requests") " \"8738\"; " ROUTE);
    /* Only in requests counts too. */
    expect(admit(&t, "{}", CTR2(B3L(1, 8738), "\"huawei.com/Ascend910B3-core\":\"5\"")),
           "denied 500: huawei.com/Ascend910B3-core is only supported in hami-core (soft split) "
           "mode");
}

/* overwriteEnv hides the NPUs of a container that asks for none, once however many chips say
 * so (HAMi appends one copy per chip, and also to a container asking for another chip, which
 * would override that chip's device plugin); runtimeClassName is set when the pod has none. */
Test(ascend, admission_env_and_runtime)
{
    cr_assert(dt_init(&t,
                      "vnpus:\n  configs:\n  - commonWord: Ascend910B3\n"
                      "    resourceName: huawei.com/Ascend910B3\n"
                      "    resourceMemoryName: huawei.com/Ascend910B3-memory\n"
                      "    memoryAllocatable: 65536\n    memoryCapacity: 65536\n"
                      "    runtimeClassName: ascend\n    overwriteEnv: true\n"
                      "  - commonWord: Ascend310P\n    resourceName: huawei.com/Ascend310P\n"
                      "    overwriteEnv: true\n",
                      true, false));
    expect(admit(&t, "{}", "[{\"name\":\"cpu\"}]"),
           "allowed: add /spec/containers/0/env [{\"name\":\"ASCEND_VISIBLE_DEVICES\","
           "\"value\":\"\"}]");
    expect(
        admit(&t, "{}",
              "[{\"name\":\"npu\",\"resources\":{\"limits\":{\"huawei.com/Ascend910B3\":\"1\"}}},"
              "{\"name\":\"cpu\",\"env\":[{\"name\":\"X\",\"value\":\"1\"}]}]"),
        "allowed: add " MEM_PATH(
            "Ascend910B3",
            "limits") " \"65536\"; add "
                      "/spec/containers/0/resources/requests {}; add " MEM_PATH(
                          "Ascend910B3",
                          "requests") " \"65536\"; add /spec/containers/1/env/- "
                                      "{\"name\":\"ASCEND_VISIBLE_DEVICES\",\"value\":\"\"}; "
                                      "add /spec/runtimeClassName \"ascend\"; " ROUTE);
}
