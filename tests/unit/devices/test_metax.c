/* test_metax: the MetaX backends against spec/hami-vendors.md §2.4 and the vectors of HAMi's
 * pkg/device/metax/{device,sdevice,protocol}_test.go (test names cited), with our deviations: a
 * quantity that is not acceptable is a pod-level error (design.md §4), a node without the
 * capacity or the annotation has no cards of the backend (no error), a backend's node-score term
 * counts only for pods that ask for it, fixed orders where HAMi's are random. */
#include <criterion/criterion.h>
#include <math.h>

#include "admittest.h"
#include "devtest.h"

static struct dt t;

static void fini(void)
{
    dt_cleanup(&t);
}

TestSuite(metax, .fini = fini);

static void expect(const char *got, const char *want)
{
    cr_assert_str_eq(got, want);
    free((void *)got);
}

static void starts(const char *got, const char *prefix)
{
    cr_assert(strncmp(got, prefix, strlen(prefix)) == 0, "%s", got);
    free((void *)got);
}

/* ================================================================= Metax-GPU (§2.4.1) */

#define GNODE(name, cards, annos)                                                                  \
    "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: " name "\n    annotations: {" annos    \
    "}\n  status:\n    capacity: {metax-tech.com/gpu: \"" cards "\"}\n"

#define POD(name, limits)                                                                          \
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name   \
    "}\n  spec:\n    containers:\n    - name: c\n      resources:\n        limits: " limits "\n"

#define POD2(name, l0, l1)                                                                         \
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: " name ", namespace: default, uid: " name   \
    "}\n  spec:\n    containers:\n    - name: c0\n      resources:\n        limits: " l0           \
    "\n    - name: c1\n      resources:\n        limits: " l1 "\n"

/* The node-score of pod on node under node policy np less the node's default score: the
 * backends' terms. */
static double term_of(const char *pod, const char *node, const char *np)
{
    const char *cands[] = {node};
    struct vs_sched_opts o = {.cfg = &t.cfg, .node_policy = np};
    struct vs_filter_result r;
    cr_assert_eq(vs_sched_filter(t.m, dt_pod(&t, pod), cands, 1, &o, &r), VS_OK);
    cr_assert(r.best == 0, "%s", r.nodes[0].reason ? r.nodes[0].reason : "(error)");
    double d = (double)r.nodes[0].score - (double)vs_sched_node_score(vs_model_node(t.m, node));
    vs_filter_result_cleanup(&r);
    return d;
}

/* TestGetNodeDevices: one card per unit of metax-tech.com/gpu capacity, ids <node>-metax-<i>,
 * count 1 (HAMi's test expects 100 but does not check it; the code writes 1), 65536 MiB, 100
 * cores. */
Test(metax, gpu_inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" GNODE("test", "2", "") GNODE("none", "0", ""));
    expect(dt_cards(&t, "test"), "test-metax-0,Metax-GPU,0,1,65536,100,0,true,; "
                                 "test-metax-1,Metax-GPU,1,1,65536,100,0,true,");
    expect(dt_cards(&t, "none"), "");
}

/* Test_GenerateResourceRequests: whole cards from the count (limits, then requests). */
Test(metax, gpu_requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" POD("one", "{metax-tech.com/gpu: 1}")
                    POD("three",
                        "{metax-tech.com/gpu: 3}") "- apiVersion: v1\n  kind: Pod\n  metadata: "
                                                   "{name: req, namespace: default}\n"
                                                   "  spec:\n    containers:\n    - name: c\n      "
                                                   "resources:\n        requests: "
                                                   "{metax-tech.com/gpu: 1}\n" POD(
                                                       "half", "{metax-tech.com/gpu: 500m}"));
    expect(dt_requests(&t, "one"), "Metax-GPU 1,0,100,100");
    expect(dt_requests(&t, "three"), "Metax-GPU 3,0,100,100");
    expect(dt_requests(&t, "req"), "Metax-GPU 1,0,100,100");
    expect(dt_requests(&t, "half"), "error: invalid metax-tech.com/gpu \"500m\" in container c: "
                                    "must be a whole number between 0 and 2147483647");
}

/* HAMi's probes (§2.4.1): capacity 2, one container asking 2 -> both cards, walked from the end;
 * Test_CustomFilterRule: two containers of one card each -> the second finds the first's card
 * full and the other card refused by the custom rule. */
Test(metax, gpu_fit_and_custom_rule)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" GNODE("x1", "2", "") POD("two", "{metax-tech.com/gpu: 2}")
                    POD2("split", "{metax-tech.com/gpu: 1}", "{metax-tech.com/gpu: 1}"));
    expect(dt_filter(&t, "split"),
           "refused x1: 1/2 CardNotFoundCustomFilterRule, 1/2 CardTimeSlicingExhausted");
    expect(dt_filter(&t, "two"),
           "x1 hami.io/metax-gpu-devices-allocated=x1-metax-1,Metax-GPU,65536,100:x1-metax-0,"
           "Metax-GPU,65536,100:; hami.io/metax-gpu-devices-to-allocate=x1-metax-1,Metax-GPU,"
           "65536,100:x1-metax-0,Metax-GPU,65536,100:;");
}

/* Test_ScoreNode and TestParseMetaxAnnos: losses {"1":100,"2":200}, 2 cards, binpack -> 1800;
 * scores, 1 card, spread -> 1900; a missing entry or a table that does not decode counts 0
 * (2000); no table, or another node policy -> no term. */
Test(metax, gpu_score)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" GNODE("l", "4",
                                 "metax-tech.com/gpu.topology.losses: '{\"1\":100,\"2\":200}'")
                    GNODE("s", "4", "metax-tech.com/gpu.topology.scores: '{\"1\":100,\"+2\":200}'")
                        GNODE("bad", "4", "metax-tech.com/gpu.topology.losses: '{\"1\":1.5}'")
                            GNODE("plain", "4", "") POD("one", "{metax-tech.com/gpu: 1}")
                                POD("two", "{metax-tech.com/gpu: 2}")
                                    POD("three", "{metax-tech.com/gpu: 3}"));
    cr_assert_eq(lround(term_of("two", "l", "binpack")), 1800);
    cr_assert_eq(lround(term_of("one", "l", "binpack")), 1900);
    cr_assert_eq(lround(term_of("three", "l", "binpack")), 2000);
    cr_assert_eq(lround(term_of("one", "l", "spread")), 0);
    cr_assert_eq(lround(term_of("one", "s", "spread")), 1900);
    cr_assert_eq(lround(term_of("two", "s", "spread")), 1800);
    cr_assert_eq(lround(term_of("two", "s", "binpack")), 0);
    cr_assert_eq(lround(term_of("one", "bad", "binpack")), 2000);
    cr_assert_eq(lround(term_of("one", "plain", "binpack")), 0);
    /* Under binpack the node with the lower loss wins. */
    dt_cleanup(&t);
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" GNODE("hi", "4", "metax-tech.com/gpu.topology.losses: '{\"2\":900}'")
                    GNODE("lo", "4", "metax-tech.com/gpu.topology.losses: '{\"2\":110}'")
                        POD("two", "{metax-tech.com/gpu: 2}"));
    expect(dt_filter_with(&t, "two", "binpack", NULL),
           "lo hami.io/metax-gpu-devices-allocated=lo-metax-3,Metax-GPU,65536,100:lo-metax-2,"
           "Metax-GPU,65536,100:; hami.io/metax-gpu-devices-to-allocate=lo-metax-3,Metax-GPU,"
           "65536,100:lo-metax-2,Metax-GPU,65536,100:;");
}

/* No lock; only the count is the extender's; no quota names. */
Test(metax, gpu_wiring)
{
    cr_assert(dt_init(&t, NULL, false, false));
    const struct vs_device *d = vs_devices_find(t.cfg.devices, "Metax-GPU");
    cr_assert_not_null(d);
    cr_assert_eq(d->lock, VS_LOCK_NONE);
    cr_assert_null(d->res_mem);
    cr_assert_null(d->res_cores);
    cr_assert_eq(d->n_managed, 1);
    cr_assert_str_eq(d->managed[0], "metax-tech.com/gpu");
    /* Test_MutateAdmission: found when the count is in the limits, no change. */
    expect(at_admit(&t.cfg, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                            "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                            "\"resources\":{\"limits\":{\"metax-tech.com/gpu\":\"1\"}}}]}}"),
           "allowed | add /spec/schedulerName \"hami-scheduler\"");
}

/* ================================================================= Metax-SGPU (§2.4.2) */

/* A card of the vendor JSON: uuid, totalDevCount, totalCompute, totalVRam, healthy, qosPolicy,
 * linkZone. */
#define CARD(uuid, count, compute, vram, healthy, qos, zone)                                       \
    "{\"uuid\":\"" uuid "\",\"totalDevCount\":" #count ",\"totalCompute\":" #compute               \
    ",\"totalVRam\":" #vram ",\"healthy\":" #healthy ",\"qosPolicy\":\"" qos                       \
    "\",\"linkZone\":" #zone "}"

#define SNODE(name, cards)                                                                         \
    "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: " name "\n    annotations:\n"          \
    "      metax-tech.com/node-gpu-devices: '" cards "'\n"

/* A pod on node n with its sGPU usage (alloc) and annotations (extra, a YAML mapping body). */
#define PLACED(name, node, alloc, extra)                                                           \
    "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n"     \
    "    uid: " name "\n    annotations: {hami.io/vgpu-node: " node                                \
    ", hami.io/metax-sgpu-devices-allocated: \"" alloc "\"" extra                                  \
    "}\n  spec:\n    nodeName: " node "\n    containers:\n    - name: c\n"

/* A pending pod with annotations (a YAML mapping body) and limits. */
#define APOD(name, annos, limits)                                                                  \
    "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " name "\n    namespace: default\n"     \
    "    uid: " name "\n    annotations: {" annos "}\n  spec:\n    containers:\n    - name: c\n"   \
    "      resources:\n        limits: " limits "\n"

/* Replaces node objects of the model (a later version of a node). */
static void update_nodes(const char *yaml)
{
    struct vs_objset set = {0};
    struct vs_errbuf eb;
    cr_assert_eq(vs_loader_load_buf(yaml, strlen(yaml), "update", &set, dt_warn, NULL, &eb), VS_OK,
                 "%s", eb.msg);
    for (size_t i = 0; i < set.n_nodes; i++)
        cr_assert_neq(vs_model_upsert_node(t.m, &set.nodes[i], &eb), VS_ERR_NOMEM);
    vs_objset_cleanup(&set);
}

/* TestGetMetaxSDevices and protocol_test.go TestConvertMetaxSDeviceToHAMIDevice: one entry; index
 * = position, count totalDevCount, memory totalVRam, cores totalCompute, numa kept (-1 too),
 * custominfo {QosPolicy, Model, LinkZone}; "" and [] are errors; Go's decoding rules (keys
 * ignoring case, integers only). */
Test(metax, sgpu_inventory)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" SNODE("n", "[{\"uuid\":\"GPU-123\",\"model\":\"sgpu\",\"totalDevCount\":16,"
                                  "\"totalCompute\":100,\"bdf\":\"0000:44:00.0\",\"totalVRam\":"
                                  "32768,\"numa\":1,\"healthy\":true,\"qosPolicy\":\"fixed-"
                                  "share\"},{\"UUID\":\"GPU-124\",\"TotalVRam\":8,\"numa\":-1,"
                                  "\"linkZone\":3}]") SNODE("empty", "") SNODE("none", "[]")
                SNODE("real", "[{\"uuid\":\"a\","
                              "\"totalVRam\":1.0}]") SNODE("nul", "[null]"));
    expect(dt_cards(&t, "n"), "GPU-123,Metax-SGPU,0,16,32768,100,1,true,; "
                              "GPU-124,Metax-SGPU,1,0,8,0,-1,false,");
    const struct vs_node *n = vs_model_node(t.m, "n");
    char *c0 = json_dumps(n->cards[0].custom, JSON_COMPACT | JSON_SORT_KEYS);
    char *c1 = json_dumps(n->cards[1].custom, JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(c0, "{\"LinkZone\":0,\"Model\":\"sgpu\",\"QosPolicy\":\"fixed-share\"}");
    cr_assert_str_eq(c1, "{\"LinkZone\":3,\"Model\":\"\",\"QosPolicy\":\"\"}");
    free(c0);
    free(c1);
    expect(dt_cards(&t, "empty"), "error: invalid metax-tech.com/node-gpu-devices \"\": "
                                  "unexpected token near end of file at offset 0");
    expect(dt_cards(&t, "none"),
           "error: invalid metax-tech.com/node-gpu-devices \"[]\": no sdevice found on node");
    expect(
        dt_cards(&t, "real"),
        "error: invalid metax-tech.com/node-gpu-devices \"[{\"uuid\":\"a\",\"totalVRam\":1.0}]\": "
        "device 0: field totalVRam: expected an integer, got 1.0");
    expect(dt_cards(&t, "nul"),
           "error: invalid metax-tech.com/node-gpu-devices \"[null]\": device 0: not an object");
}

/* TestGenerateResourceRequests: limits only; vcore 100 when absent; vmemory in GiB, or in bytes
 * when its canonical text has a letter. */
Test(metax, sgpu_requests)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" POD("one", "{metax-tech.com/sgpu: 1}") POD("two", "{metax-tech.com/sgpu: 2}")
                POD("core", "{metax-tech.com/sgpu: 1, metax-tech.com/vcore: 30}") POD(
                    "gib", "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: 16}")
                    POD("mi", "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: 1024Mi}") POD(
                        "gi", "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: 16Gi}")
                        POD("k", "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: 1000}") POD(
                            "bin", "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: "
                                   "1536Mi}") POD("over", "{metax-tech.com/sgpu: 1, "
                                                          "metax-tech.com/vmemory: 2100001}")
                            POD("many",
                                "{metax-tech.com/sgpu: 2200000000}") "- apiVersion: v1\n  kind: "
                                                                     "Pod\n  metadata: {name: "
                                                                     "req, namespace: default}\n  "
                                                                     "spec:\n    "
                                                                     "containers:\n    - name: c\n "
                                                                     "     resources:\n  "
                                                                     "      requests: "
                                                                     "{metax-tech.com/sgpu: 1}\n");
    expect(dt_requests(&t, "one"), "Metax-SGPU 1,0,100,100");
    expect(dt_requests(&t, "two"), "Metax-SGPU 2,0,100,100");
    expect(dt_requests(&t, "core"), "Metax-SGPU 1,0,100,30");
    expect(dt_requests(&t, "gib"), "Metax-SGPU 1,16384,0,100");
    expect(dt_requests(&t, "mi"), "Metax-SGPU 1,1024,0,100");
    expect(dt_requests(&t, "gi"), "Metax-SGPU 1,16384,0,100");
    /* HAMi's rule as it is: 1000 is "1k" canonically, so bytes, under 1 MiB: the whole card. */
    expect(dt_requests(&t, "k"), "Metax-SGPU 1,0,100,100");
    expect(dt_requests(&t, "bin"), "Metax-SGPU 1,1536,0,100");
    expect(dt_requests(&t, "over"), "error: invalid metax-tech.com/vmemory \"2100001\" in "
                                    "container c: must be a whole number between 0 and 2097151");
    expect(dt_requests(&t, "many"), "error: invalid metax-tech.com/sgpu \"2200000000\" in "
                                    "container c: must be a whole number between 0 and "
                                    "2147483647");
    expect(dt_requests(&t, "req"), "-");
}

static char *admit_pod(const char *annos, const char *limits)
{
    char pod[1024];
    snprintf(pod, sizeof(pod),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
             "\"default\"%s%s%s},\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{"
             "\"limits\":%s}}]}}",
             annos ? ",\"annotations\":" : "", annos ? annos : "", "", limits);
    return at_admit(&t.cfg, pod);
}

/* TestMutateAdmission: the app class must be online or offline and then one card; a pod that
 * is not online gets QoS best-effort when it has none, and its QoS must be one of three. */
Test(metax, sgpu_admission)
{
    cr_assert(dt_init(&t, NULL, false, false));
    /* "no sgpu resource" */
    expect(admit_pod("{\"metax-tech.com/sgpu-qos-policy\":\"best-effort\"}", "{}"), "allowed");
    /* "qos policy error" */
    expect(admit_pod("{\"metax-tech.com/sgpu-qos-policy\":\"best-effortx\"}",
                     "{\"metax-tech.com/sgpu\":\"1\"}"),
           "denied 500: metax-tech.com/sgpu-qos-policy must be set one of [best-effort, "
           "fixed-share, burst-share]");
    /* "no qos policy", "pod annotation nil" */
    expect(admit_pod("{}", "{\"metax-tech.com/sgpu\":\"1\"}"),
           "allowed | add /metadata/annotations/metax-tech.com~1sgpu-qos-policy \"best-effort\" | "
           "add /spec/schedulerName \"hami-scheduler\"");
    expect(admit_pod(NULL, "{\"metax-tech.com/sgpu\":\"1\"}"),
           "allowed | add /metadata/annotations {} | add "
           "/metadata/annotations/metax-tech.com~1sgpu-qos-policy \"best-effort\" | add "
           "/spec/schedulerName \"hami-scheduler\"");
    /* "qos policy fit" */
    expect(admit_pod("{\"metax-tech.com/sgpu-qos-policy\":\"burst-share\"}",
                     "{\"metax-tech.com/sgpu\":\"1\"}"),
           "allowed | add /spec/schedulerName \"hami-scheduler\"");
    /* "app class task must allocate single device" */
    expect(admit_pod("{\"metax-tech.com/sgpu-app-class\":\"online\"}",
                     "{\"metax-tech.com/sgpu\":\"2\"}"),
           "denied 500: app-class pod must request single device");
    /* "app class task verify error" */
    expect(admit_pod("{\"metax-tech.com/sgpu-app-class\":\"oNLine\"}",
                     "{\"metax-tech.com/sgpu\":\"1\"}"),
           "denied 500: metax-tech.com/sgpu-app-class must be set one of [online, offline]");
    /* "offline task with qos" */
    expect(admit_pod("{\"metax-tech.com/sgpu-app-class\":\"offline\","
                     "\"metax-tech.com/sgpu-qos-policy\":\"best-effortx\"}",
                     "{\"metax-tech.com/sgpu\":\"1\"}"),
           "denied 500: metax-tech.com/sgpu-qos-policy must be set one of [best-effort, "
           "fixed-share, burst-share]");
    /* "online task with qos": not checked */
    expect(admit_pod("{\"metax-tech.com/sgpu-app-class\":\"online\","
                     "\"metax-tech.com/sgpu-qos-policy\":\"best-effortx\"}",
                     "{\"metax-tech.com/sgpu\":\"1\"}"),
           "allowed | add /spec/schedulerName \"hami-scheduler\"");
}

/* HAMi's probe (§2.4.2): GPU-1 (best-effort, unused) and GPU-2 (no QoS); a fixed-share pod of
 * 30 cores and 4 GiB goes on GPU-2, walked from the end; metax-tech.com/gpu-devices-allocated
 * per container. */
Test(metax, sgpu_probe_annotations)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" SNODE("n", "[" CARD("GPU-1", 16, 100, 16384, true, "best-effort",
                                           0) "," CARD("GPU-2", 16, 100, 16384, true, "", 0) "]")
                APOD("p", "metax-tech.com/sgpu-qos-policy: fixed-share",
                     "{metax-tech.com/sgpu: 1, metax-tech.com/vcore: 30, "
                     "metax-tech.com/vmemory: 4}") "- apiVersion: v1\n  kind: Pod\n  metadata: "
                                                   "{name: lead, namespace: default, uid: "
                                                   "lead}\n  spec:\n    containers:\n    - "
                                                   "name: c0\n    - name: c1\n      "
                                                   "resources:\n        limits: "
                                                   "{metax-tech.com/sgpu: 1, "
                                                   "metax-tech.com/vcore: 100}\n");
    expect(dt_filter(&t, "p"),
           "n hami.io/metax-sgpu-devices-allocated=GPU-2,Metax-SGPU,4096,30:; "
           "hami.io/metax-sgpu-devices-to-allocate=GPU-2,Metax-SGPU,4096,30:; "
           "metax-tech.com/gpu-devices-allocated=[[{\"uuid\":\"GPU-2\",\"compute\":30,"
           "\"vRam\":4096}]]");
    /* An empty container keeps its entry, [] in the JSON. */
    expect(dt_filter(&t, "lead"),
           "n hami.io/metax-sgpu-devices-allocated=;GPU-1,Metax-SGPU,16384,100:; "
           "hami.io/metax-sgpu-devices-to-allocate=;GPU-1,Metax-SGPU,16384,100:; "
           "metax-tech.com/gpu-devices-allocated=[[],[{\"uuid\":\"GPU-1\",\"compute\":100,"
           "\"vRam\":16384}]]");
    /* The time is Unix nanoseconds when the caller gives one. */
    const struct vs_device *d = vs_devices_find(t.cfg.devices, "Metax-SGPU");
    struct vs_pod_devs devs = {0};
    struct vs_errbuf eb;
    cr_assert_eq(vs_annot_parse_devices("k", "GPU-2,Metax-SGPU,0,0:;", &devs, &eb), VS_OK);
    json_t *out = json_object();
    cr_assert_eq(
        d->ops->annotate(d, dt_pod(&t, "p"), vs_model_node(t.m, "n"), &devs, NULL, 42, out), VS_OK);
    cr_assert_str_eq(json_string_value(json_object_get(out, "metax-tech.com/predicate-time")),
                     "42");
    cr_assert_str_eq(
        json_string_value(json_object_get(out, "metax-tech.com/gpu-devices-allocated")),
        "[[{\"uuid\":\"GPU-2\"}]]");
    json_decref(out);
    vs_pod_devs_cleanup(&devs);
}

/* TestCheckDeviceQos: an unused card takes any QoS; a used card takes a pod of its QoS, any pod
 * when it has none, and any exclusive (100-core) request; else CardQosPolicyMismatch (also the
 * §3.3 probe: best-effort card, fixed-share pod, 30 cores). */
Test(metax, sgpu_qos)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(
        &t,
        "items:\n" SNODE("burst", "[" CARD("B", 16, 200, 16384, true, "burst-share", 0) "]") SNODE(
            "be", "[" CARD("E", 16, 100, 16384, true, "best-effort", 0) "]")
            SNODE("free", "[" CARD("F", 16, 100, 16384, true, "burst-share", 0) "]") PLACED(
                "q1", "burst", "B,Metax-SGPU,1024,50:;", "")
                PLACED("q2", "be", "E,Metax-SGPU,1024,10:;", "") APOD(
                    "be50", "metax-tech.com/sgpu-qos-policy: best-effort",
                    "{metax-tech.com/sgpu: 1, metax-tech.com/vcore: 50, metax-tech.com/vmemory: 1}")
                    APOD("be100", "metax-tech.com/sgpu-qos-policy: best-effort",
                         "{metax-tech.com/sgpu: 1, metax-tech.com/vcore: 100, "
                         "metax-tech.com/vmemory: 1}")
                        APOD("fs30", "metax-tech.com/sgpu-qos-policy: fixed-share",
                             "{metax-tech.com/sgpu: 1, metax-tech.com/vcore: "
                             "30}"));
    const char *burst[] = {"burst"}, *be[] = {"be"}, *fr[] = {"free"};
    struct vs_sched_opts o = {.cfg = &t.cfg};
    struct vs_filter_result r;
    const struct {
        const char *pod;
        const char **node;
        const char *want;
    } cases[] = {
        {"be50", burst, "1/1 CardQosPolicyMismatch"}, {"be100", burst, NULL}, {"be50", be, NULL},
        {"fs30", be, "1/1 CardQosPolicyMismatch"},    {"be50", fr, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(vs_sched_filter(t.m, dt_pod(&t, cases[i].pod), cases[i].node, 1, &o, &r),
                     VS_OK);
        if (cases[i].want)
            cr_assert_str_eq(r.nodes[0].reason, cases[i].want, "case %zu", i);
        else
            cr_assert(r.nodes[0].fit, "case %zu: %s", i, r.nodes[0].reason);
        vs_filter_result_cleanup(&r);
    }
}

/* The QoS expectation cache (HAMi's JitteryQosCache): a fixed-share pod placed on a card
 * registered without QoS makes the card fixed-share for later Filters until the plugin reports
 * it so; a report of the expected QoS ends the expectation. */
Test(metax, sgpu_qos_expectation)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" SNODE("n", "[" CARD("X", 16, 100, 16384, true, "", 0) "]") APOD(
                    "fs", "metax-tech.com/sgpu-qos-policy: fixed-share",
                    "{metax-tech.com/sgpu: 1, metax-tech.com/vcore: 30, metax-tech.com/vmemory: 1}")
                    APOD("be", "metax-tech.com/sgpu-qos-policy: best-effort",
                         "{metax-tech.com/sgpu: 1, metax-tech.com/vcore: 30, "
                         "metax-tech.com/vmemory: 1}"));
    starts(dt_filter(&t, "fs"), "n ");
    /* The card is registered without QoS, but the expectation says fixed-share. */
    expect(dt_filter(&t, "be"), "refused n: 1/1 CardQosPolicyMismatch");
    /* The plugin reports the card fixed-share: the expectation is met and dropped... */
    update_nodes("items:\n" SNODE("n", "[" CARD("X", 16, 100, 16384, true, "fixed-share", 0) "]"));
    expect(dt_filter(&t, "be"), "refused n: 1/1 CardQosPolicyMismatch");
    /* ... so a later report without QoS lets a best-effort pod on. */
    update_nodes("items:\n" SNODE("n", "[" CARD("X", 16, 100, 16384, true, "", 0) "]"));
    expect(dt_filter(&t, "be"), "n hami.io/metax-sgpu-devices-allocated=X,Metax-SGPU,1024,30:; "
                                "hami.io/metax-sgpu-devices-to-allocate=X,Metax-SGPU,1024,30:; "
                                "metax-tech.com/gpu-devices-allocated=[[{\"uuid\":\"X\","
                                "\"compute\":30,\"vRam\":1024}]]");
}

/* HAMi's AddResourceUsage rewrites the card's QoS for the pod's later containers: an exclusive
 * (100-core) container clears it, so a later container of the pod passes the QoS check on a card
 * registered with another QoS. */
Test(metax, sgpu_qos_in_request)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" SNODE("n", "[" CARD("X", 16, 300, 16384, true, "best-effort", 0) "]") PLACED(
                "q", "n", "X,Metax-SGPU,1024,10:;",
                ", metax-tech.com/sgpu-qos-policy: best-effort") "- apiVersion: v1\n  "
                                                                 "kind: Pod\n  "
                                                                 "metadata:\n    name: "
                                                                 "p\n    namespace: "
                                                                 "default\n    uid: p\n"
                                                                 "    annotations: "
                                                                 "{metax-tech.com/"
                                                                 "sgpu-qos-policy: "
                                                                 "fixed-share}\n  spec:"
                                                                 "\n    containers:\n  "
                                                                 "  - name: c0\n      "
                                                                 "resources:\n        "
                                                                 "limits: "
                                                                 "{metax-tech.com/sgpu: "
                                                                 "1, metax-tech.com/"
                                                                 "vcore: 100, "
                                                                 "metax-tech.com/"
                                                                 "vmemory: 1}\n    - "
                                                                 "name: c1\n      "
                                                                 "resources:\n        "
                                                                 "limits: "
                                                                 "{metax-tech.com/sgpu: "
                                                                 "1, metax-tech.com/"
                                                                 "vcore: 10, "
                                                                 "metax-tech.com/"
                                                                 "vmemory: 1}\n" APOD(
                                                                     "be",
                                                                     "metax-tech.com/"
                                                                     "sgpu-qos-policy: best-effort",
                                                                     "{metax-tech.com/sgpu: 1, "
                                                                     "metax-tech.com/vcore: 10, "
                                                                     "metax-tech.com/vmemory: 1}"));
    expect(dt_filter(&t, "p"),
           "n hami.io/metax-sgpu-devices-allocated=X,Metax-SGPU,1024,100:;X,Metax-SGPU,1024,10:; "
           "hami.io/metax-sgpu-devices-to-allocate=X,Metax-SGPU,1024,100:;X,Metax-SGPU,1024,10:; "
           "metax-tech.com/gpu-devices-allocated=[[{\"uuid\":\"X\",\"compute\":100,\"vRam\":1024}"
           "],[{\"uuid\":\"X\",\"compute\":10,\"vRam\":1024}]]");
    /* The decision expects the card to become fixed-share (its last container's QoS). */
    expect(dt_filter(&t, "be"), "refused n: 1/1 CardQosPolicyMismatch");
}

/* TestMetaxSDevices_Fit and TestCheckAppClass: an online pod on a card used by a pod without a
 * class, and the reverse -> CardAppClassMismatch; an offline pod stays off a card with an online
 * pod; an unhealthy card -> CardUnhealthy; cores are not clamped to 100. */
Test(metax, sgpu_fit)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" SNODE("plain", "[" CARD("P", 16, 100, 16384, true, "", 0) "]")
                SNODE("on", "[" CARD("O", 16, 100, 16384, true, "", 0) "]")
                    SNODE("off", "[" CARD("F", 16, 100, 16384, true, "", 0) "]")
                        SNODE("sick", "[" CARD("S", 16, 100, 16384, false, "", 0) "]")
                            PLACED("a", "plain", "P,Metax-SGPU,1024,10:;",
                                   "") PLACED("b", "on", "O,Metax-SGPU,1024,0:;",
                                              ", metax-tech.com/sgpu-app-class: online")
                                PLACED("c", "off", "F,Metax-SGPU,1024,10:;",
                                       ", metax-tech.com/sgpu-app-class: offline")
                                    APOD("online", "metax-tech.com/sgpu-app-class: online",
                                         "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: 1}")
                                        APOD("offline", "metax-tech.com/sgpu-app-class: offline",
                                             "{metax-tech.com/sgpu: 1, metax-tech.com/vcore: 10, "
                                             "metax-tech.com/vmemory: 1}")
                                            APOD("none", "",
                                                 "{metax-tech.com/sgpu: 1, "
                                                 "metax-tech.com/vcore: 10, "
                                                 "metax-tech.com/vmemory: 1}")
                                                APOD("big", "",
                                                     "{metax-tech.com/sgpu: 1, "
                                                     "metax-tech.com/vcore: 120, "
                                                     "metax-tech.com/vmemory: 1}"));
    struct vs_sched_opts o = {.cfg = &t.cfg};
    struct vs_filter_result r;
    const struct {
        const char *pod, *node, *want;
    } cases[] = {
        {"online", "plain", "1/1 CardAppClassMismatch"},
        {"none", "on", "1/1 CardAppClassMismatch"},
        {"offline", "on", "1/1 CardAppClassMismatch"},
        {"none", "off", "1/1 CardAppClassMismatch"},
        {"online", "off", NULL},
        {"offline", "off", NULL},
        {"online", "on", NULL},
        {"none", "plain", NULL},
        {"none", "sick", "1/1 CardUnhealthy"},
        {"big", "sick", "1/1 CardUnhealthy"},
        {"big", "plain", "1/1 CardInsufficientCore"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *cands[] = {cases[i].node};
        cr_assert_eq(vs_sched_filter(t.m, dt_pod(&t, cases[i].pod), cands, 1, &o, &r), VS_OK);
        if (cases[i].want)
            cr_assert_str_eq(r.nodes[0].reason, cases[i].want, "case %zu", i);
        else
            cr_assert(r.nodes[0].fit, "case %zu: %s", i, r.nodes[0].reason);
        vs_filter_result_cleanup(&r);
    }
    /* An online pod's cards record no cores, and its QoS is not checked; of the nodes it fits,
     * the card with an online pod (-20) beats the card with an offline one (-100). */
    expect(dt_filter(&t, "online"),
           "on hami.io/metax-sgpu-devices-allocated=O,Metax-SGPU,1024,0:; "
           "hami.io/metax-sgpu-devices-to-allocate=O,Metax-SGPU,1024,0:; "
           "metax-tech.com/gpu-devices-allocated=[[{\"uuid\":\"O\",\"vRam\":1024}]]");
}

/* A tracked pod's class follows its annotations (the model re-tags it without a new
 * allocation). */
Test(metax, sgpu_class_follows_the_pod)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" SNODE("n", "[" CARD("P", 16, 100, 16384, true, "", 0) "]")
                    PLACED("a", "n", "P,Metax-SGPU,1024,0:;", "")
                        APOD("online", "metax-tech.com/sgpu-app-class: online",
                             "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: 1}"));
    expect(dt_filter(&t, "online"), "refused n: 1/1 CardAppClassMismatch");
    struct vs_objset set = {0};
    struct vs_errbuf eb;
    const char *y = "items:\n" PLACED("a", "n", "P,Metax-SGPU,1024,0:;",
                                      ", metax-tech.com/sgpu-app-class: online");
    cr_assert_eq(vs_loader_load_buf(y, strlen(y), "u", &set, dt_warn, NULL, &eb), VS_OK);
    cr_assert_eq(vs_model_upsert_pod(t.m, &set.pods[0], &eb), VS_OK);
    vs_objset_cleanup(&set);
    starts(dt_filter(&t, "online"), "n ");
}

/* TestPrioritizeOnlineDevices: among the cards an online pod may take, those with only offline
 * pods last, then fewer online pods, then fewer offline pods. */
Test(metax, sgpu_online_choice)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(
        &t,
        "items:\n" SNODE("n", "[" CARD("A", 16, 100, 16384, true, "", 0) "," CARD(
                                  "B", 16, 100, 16384, true, "",
                                  0) "," CARD("C", 16, 100, 16384, true, "",
                                              0) "," CARD("D", 16, 100, 16384, true, "", 0) "]")
            PLACED("a1", "n", "A,Metax-SGPU,1024,0:;", ", metax-tech.com/sgpu-app-class: offline")
                PLACED("b1", "n", "B,Metax-SGPU,1024,0:;",
                       ", metax-tech.com/sgpu-app-class: online")
                    PLACED("b2", "n", "B,Metax-SGPU,1024,0:;",
                           ", metax-tech.com/sgpu-app-class: online")
                        PLACED("c1", "n", "C,Metax-SGPU,1024,0:;",
                               ", metax-tech.com/sgpu-app-class: online")
                            PLACED("c2", "n", "C,Metax-SGPU,1024,0:;",
                                   ", metax-tech.com/sgpu-app-class: offline")
                                PLACED("d1", "n", "D,Metax-SGPU,1024,0:;",
                                       ", metax-tech.com/sgpu-app-class: online")
                                    PLACED("d2", "n", "D,Metax-SGPU,1024,0:;",
                                           ", metax-tech.com/sgpu-app-class: online")
                                        APOD(
                                            "online", "metax-tech.com/sgpu-app-class: online",
                                            "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: 1}"));
    /* C: one online pod (B and D have two, A only offline ones). */
    expect(dt_filter(&t, "online"),
           "n hami.io/metax-sgpu-devices-allocated=C,Metax-SGPU,1024,0:; "
           "hami.io/metax-sgpu-devices-to-allocate=C,Metax-SGPU,1024,0:; "
           "metax-tech.com/gpu-devices-allocated=[[{\"uuid\":\"C\",\"vRam\":1024}]]");
}

/* TestPrioritizeExclusiveDevices: an exclusive request (100 cores, no app class) with more
 * candidates than cards asked takes the smallest MetaLink zone that has enough cards; else fills
 * across zones (by size), then cards without a zone. */
Test(metax, sgpu_metalink_choice)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t, "items:\n" SNODE(
                    "n", "[" CARD("G1", 16, 100, 16384, true, "", 1) "," CARD(
                             "G2", 16, 100, 16384, true, "",
                             1) "," CARD("G3", 16, 100, 16384, true, "",
                                         1) "," CARD("G4", 16, 100, 16384, true, "",
                                                     2) "," CARD("G5", 16, 100, 16384, true, "",
                                                                 2) "," CARD("G6", 16, 100, 16384,
                                                                             true, "", 0) "]")
                    POD("two", "{metax-tech.com/sgpu: 2}") POD("four", "{metax-tech.com/sgpu: 4}")
                        POD("five", "{metax-tech.com/sgpu: 5}"));
    const char *cands[] = {"n"};
    struct vs_sched_opts o = {.cfg = &t.cfg};
    struct vs_filter_result r;
    const struct {
        const char *pod, *want;
    } cases[] = {
        /* walk order G6..G1: zone 2 (2 cards) is the smallest with 2 */
        {"two", "G5,Metax-SGPU,16384,100:G4,Metax-SGPU,16384,100:;"},
        /* no zone has 4: zone 2, then zone 1 */
        {"four", "G5,Metax-SGPU,16384,100:G4,Metax-SGPU,16384,100:G3,Metax-SGPU,16384,100:G2,"
                 "Metax-SGPU,16384,100:;"},
        {"five", "G5,Metax-SGPU,16384,100:G4,Metax-SGPU,16384,100:G3,Metax-SGPU,16384,100:G2,"
                 "Metax-SGPU,16384,100:G1,Metax-SGPU,16384,100:;"},
    };
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(vs_sched_filter(t.m, dt_pod(&t, cases[i].pod), cands, 1, &o, &r), VS_OK);
        cr_assert_eq(r.best, 0);
        json_t *an = json_object();
        cr_assert_eq(vs_sched_annotations(t.cfg.devices, dt_pod(&t, cases[i].pod),
                                          vs_model_node(t.m, "n"), &r.nodes[0], 0, an),
                     VS_OK);
        cr_assert_str_eq(
            json_string_value(json_object_get(an, "hami.io/metax-sgpu-devices-allocated")),
            cases[i].want);
        json_decref(an);
        vs_filter_result_cleanup(&r);
    }
}

/* TestScoreExclusiveDevices (the term times 10000): 4 unused cards of zone 1, a pod taking two
 * of them whole -> 60; one -> -30; 3 already used, taking the fourth -> 0. Topology awareness
 * from the pod's annotation (the global switch is off by default); under spread the term is
 * inverted. */
Test(metax, sgpu_score_exclusive)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(
        &t,
        "items:\n" SNODE("n", "[" CARD("GPU-1", 16, 100, 16384, true, "", 1) "," CARD(
                                  "GPU-2", 16, 100, 16384, true, "",
                                  1) "," CARD("GPU-3", 16, 100, 16384, true, "",
                                              1) "," CARD("GPU-4", 16, 100, 16384, true, "", 1) "]")
            SNODE("u", "[" CARD("GPU-1", 16, 100, 16384, true, "", 1) "," CARD(
                           "GPU-2", 16, 100, 16384, true, "",
                           1) "," CARD("GPU-3", 16, 100, 16384, true, "",
                                       1) "," CARD("GPU-4", 16, 100, 16384, true, "", 1) "]")
                PLACED("x", "u",
                       "GPU-1,Metax-SGPU,1,1:GPU-2,Metax-SGPU,1,1:GPU-3,Metax-"
                       "SGPU,1,1:;",
                       "") APOD("two",
                                "metax-tech.com/sgpu-topology-aware: \"true\", "
                                "metax-tech.com/use-gpuuuid: \"GPU-3,GPU-4\"",
                                "{metax-tech.com/sgpu: 2}")
                    APOD("one",
                         "metax-tech.com/sgpu-topology-aware: \"true\", "
                         "metax-tech.com/use-gpuuuid: GPU-4",
                         "{metax-tech.com/sgpu: 1}")
                        APOD("off", "metax-tech.com/use-gpuuuid: \"GPU-3,GPU-4\"",
                             "{metax-tech.com/sgpu: 2}"));
    cr_assert_eq(lround(term_of("two", "n", "binpack") / 10000), 60);
    cr_assert_eq(lround(term_of("one", "n", "binpack") / 10000), -30);
    cr_assert_eq(lround(term_of("one", "u", "binpack") / 10000), 0);
    cr_assert_eq(lround(term_of("two", "n", "spread") / 10000), -60);
    cr_assert_eq(lround(term_of("off", "n", "binpack")), 0);
    dt_cleanup(&t);
    /* sgpuTopologyAware in the metax section switches it on for every pod. */
    cr_assert(dt_init(&t,
                      "metax:\n  resourceVCountName: metax-tech.com/sgpu\n"
                      "  sgpuTopologyAware: true\n",
                      false, false));
    dt_load(
        &t,
        "items:\n" SNODE("n", "[" CARD("GPU-1", 16, 100, 16384, true, "", 1) "," CARD(
                                  "GPU-2", 16, 100, 16384, true, "",
                                  1) "," CARD("GPU-3", 16, 100, 16384, true, "",
                                              1) "," CARD("GPU-4", 16, 100, 16384, true, "", 1) "]")
            APOD("off", "metax-tech.com/use-gpuuuid: \"GPU-3,GPU-4\"", "{metax-tech.com/sgpu: 2}")
                APOD("no",
                     "metax-tech.com/sgpu-topology-aware: \"false\", "
                     "metax-tech.com/use-gpuuuid: \"GPU-3,GPU-4\"",
                     "{metax-tech.com/sgpu: 2}"));
    cr_assert_eq(lround(term_of("off", "n", "binpack") / 10000), 60);
    cr_assert_eq(lround(term_of("no", "n", "binpack")), 0);
}

/* TestScoreOnlineDevices: idle 0; two online pods -40; two offline -200; two of each -44. */
Test(metax, sgpu_score_online)
{
    cr_assert(dt_init(&t, NULL, false, false));
    dt_load(&t,
            "items:\n" SNODE("idle", "[" CARD("I", 16, 100, 16384, true, "", 0) "]") SNODE(
                "on", "[" CARD("O", 16, 100, 16384, true, "", 0) "]")
                SNODE("off", "[" CARD("F", 16, 100, 16384, true, "", 0) "]") SNODE(
                    "mix", "[" CARD("M", 16, 100, 16384, true, "", 0) "]")
#define CLS(c) ", metax-tech.com/sgpu-app-class: " c
                    PLACED("o1", "on", "O,Metax-SGPU,1,0:;",
                           CLS("online")) PLACED("o2", "on", "O,Metax-SGPU,1,0:;", CLS("online"))
                        PLACED("f1", "off", "F,Metax-SGPU,1,0:;", CLS("offline")) PLACED(
                            "f2", "off", "F,Metax-SGPU,1,0:;",
                            CLS("offline")) PLACED("m1", "mix", "M,Metax-SGPU,1,0:;", CLS("online"))
                            PLACED("m2", "mix", "M,Metax-SGPU,1,0:;", CLS("online"))
                                PLACED("m3", "mix", "M,Metax-SGPU,1,0:;", CLS("offline"))
                                    PLACED("m4", "mix", "M,Metax-SGPU,1,0:;", CLS("offline")) APOD(
                                        "p", "metax-tech.com/sgpu-app-class: online",
                                        "{metax-tech.com/sgpu: 1, metax-tech.com/vmemory: 1}"));
#undef CLS
    cr_assert_eq(lround(term_of("p", "idle", "binpack") / 10000), 0);
    cr_assert_eq(lround(term_of("p", "on", "binpack") / 10000), -40);
    cr_assert_eq(lround(term_of("p", "off", "binpack") / 10000), -200);
    cr_assert_eq(lround(term_of("p", "mix", "binpack") / 10000), -44);
    /* Higher is better: the idle node wins under binpack, and also under spread (inverted). */
    expect(dt_filter_with(&t, "p", "binpack", NULL),
           "idle hami.io/metax-sgpu-devices-allocated=I,Metax-SGPU,1024,0:; "
           "hami.io/metax-sgpu-devices-to-allocate=I,Metax-SGPU,1024,0:; "
           "metax-tech.com/gpu-devices-allocated=[[{\"uuid\":\"I\",\"vRam\":1024}]]");
}

/* Shared lock; the three names are the extender's; quota memory factor 1024 (GiB). */
Test(metax, sgpu_wiring)
{
    cr_assert(dt_init(&t, NULL, false, false));
    const struct vs_device *d = vs_devices_find(t.cfg.devices, "Metax-SGPU");
    cr_assert_not_null(d);
    cr_assert_eq(d->lock, VS_LOCK_SHARED);
    cr_assert_eq(d->mem_factor, 1024);
    cr_assert_eq(d->n_managed, 3);
    cr_assert_str_eq(d->managed[0], "metax-tech.com/sgpu");
    cr_assert_str_eq(d->managed[1], "metax-tech.com/vmemory");
    cr_assert_str_eq(d->managed[2], "metax-tech.com/vcore");
    dt_cleanup(&t);
    cr_assert_not(dt_init(&t, "metax:\n  sgpuTopologyAware: maybe\n", false, false));
    cr_assert_str_eq(t.err, "cfg: metax.sgpuTopologyAware: expected a bool");
}
