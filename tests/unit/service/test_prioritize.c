/* test_prioritize: the extender's prioritizeVerb through the real service against the fake API:
 * a pod asking for no GPU gets each node scored by how little the fragmentation of the
 * workload Filter has seen grows when its cpu goes there (hand-computed below); a GPU pod gets
 * 0 everywhere; both request forms (NodeNames, Nodes) give the same answer; bad bodies 400. */
#include "fakeapi.h"
#include "harness.h"
#include "serve.h"

#include "annot.h"

#include <criterion/criterion.h>

static struct vs_fakeapi *api;
static struct vs_service *svc;
static struct vs_harness h;

static void put(char *json)
{
    cr_assert_neq(vs_fakeapi_put(api, json), 0, "fake API refused %s", json);
    free(json);
}

/* A node with `cards` cards of 15360 MiB and `cpu` allocatable. */
static char *node(const char *name, int cards, const char *cpu)
{
    char *base = vs_harness_node(name, cards, 15360);
    json_t *n = json_loads(base, 0, NULL);
    free(base);
    cr_assert_not_null(n);
    json_object_set_new(json_object_get(json_object_get(n, "status"), "allocatable"), "cpu",
                        json_string(cpu));
    char *out = json_dumps(n, JSON_COMPACT);
    json_decref(n);
    return out;
}

/* A running pod bound to node with allocation alloc (no cpu request). */
static char *running(const char *name, const char *node, const char *alloc)
{
    json_t *p =
        json_pack("{s:s,s:{s:s,s:s,s:s,s:{s:s,s:s}},s:{s:s,s:[{s:s}]},s:{s:s}}", "kind", "Pod",
                  "metadata", "name", name, "namespace", "default", "uid", name, "annotations",
                  VS_ANNO_VGPU_NODE, node, VS_ANNO_ALLOCATED, alloc, "spec", "nodeName", node,
                  "containers", "name", "c", "status", "phase", "Running");
    char *out = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return out;
}

/* A pending pod requesting cpu; with gpu, one GPU of 7680 MiB and 50 % of the cores. */
static char *pending(const char *name, const char *cpu, bool gpu)
{
    json_t *res = json_pack("{s:{s:s,s:s}}", "requests", "cpu", cpu, "memory", "1Gi");
    if (gpu)
        json_object_set_new(res, "limits",
                            json_pack("{s:s,s:s,s:s}", "nvidia.com/gpu", "1", "nvidia.com/gpumem",
                                      "7680", "nvidia.com/gpucores", "50"));
    json_t *p = json_pack("{s:s,s:{s:s,s:s,s:s},s:{s:s,s:[{s:s,s:o}]},s:{s:s}}", "kind", "Pod",
                          "metadata", "name", name, "namespace", "default", "uid", name, "spec",
                          "schedulerName", "hami-scheduler", "containers", "name", "c", "resources",
                          res, "status", "phase", "Pending");
    char *out = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return out;
}

static void setup(void)
{
    api = vs_harness_fakeapi(&h);
    /* n1: card 0 holds 10000 of 15360 MiB (idle (1 + 5360/15360) / 2 = 0.6745), card 1 idle.
     * n2: two idle cards. n3: its one card full. n9: where Filter puts the GPU pod. */
    put(node("n1", 2, "8"));
    put(node("n2", 2, "8"));
    put(node("n3", 1, "8"));
    put(node("n9", 2, "64"));
    put(running("r1", "n1", "n1-gpu0,NVIDIA,10000,0:;"));
    put(running("r3", "n3", "n3-gpu0,NVIDIA,15360,100:;"));
    put(pending("g", "4", true));
    put(pending("c", "5", false));
    put(pending("tiny", "100m", false));
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    struct vs_errbuf eb;
    svc = vs_harness_service_start(&c, &eb);
    cr_assert_not_null(svc, "service start: %s", eb.msg);
}

static void teardown(void)
{
    vs_service_stop(svc);
    svc = NULL;
    vs_fakeapi_stop(api);
    api = NULL;
    vs_harness_cleanup(&h);
}

TestSuite(prioritize, .init = setup, .fini = teardown, .timeout = 120);

static long call(const char *verb, json_t *req, char **out)
{
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", verb, "application/json", text,
                              strlen(text), out);
    free(text);
    return st;
}

static char *prioritize(const char *pod_name, bool full_nodes)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", pod_name);
    cr_assert_not_null(pod);
    json_t *req =
        full_nodes
            ? json_pack("{s:o,s:{s:[{s:{s:s}},{s:{s:s}},{s:{s:s}}]},s:n}", "Pod", pod, "Nodes",
                        "items", "metadata", "name", "n1", "metadata", "name", "n2", "metadata",
                        "name", "n3", "NodeNames")
            : json_pack("{s:o,s:n,s:[s,s,s]}", "Pod", pod, "Nodes", "NodeNames", "n1", "n2", "n3");
    char *out;
    long st = call("/prioritize", req, &out);
    cr_assert_eq(st, 200, "%s", out);
    return out;
}

/* The GPU pod through Filter on n9 only: the workload is one shape, 1 card of 7680 MiB at 50 %
 * cores with 4 cpus. */
static void learn(void)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "g");
    char *out;
    cr_assert_eq(
        call("/filter", json_pack("{s:o,s:n,s:[s]}", "Pod", pod, "Nodes", "NodeNames", "n9"), &out),
        200);
    cr_assert(strstr(out, "\"NodeNames\":[\"n9\"]"), "%s", out);
    free(out);
}

/* Pod c takes 5 of the 8 cpus, leaving 3 < 4: every node that hosted the shape loses it.
 * n1 hosted it on card 1 and stranded card 0's 0.6745; now all of 1.6745: growth 1.0. n2
 * stranded nothing, now 2.0: growth 2.0. n3 never hosted it (no card fits): 0. n3 alone has the
 * least growth: 10; the others by growth, least 0, most 2.0: n1 ceil(4 * (2 - 1) / 2) = 2,
 * n2 0. */
Test(prioritize, cpu_pod_scored_by_fragmentation_growth)
{
    learn();
    char *s = prioritize("c", false);
    cr_assert_str_eq(s, "[{\"Host\":\"n1\",\"Score\":2},{\"Host\":\"n2\",\"Score\":0},{\"Host\":"
                        "\"n3\",\"Score\":10}]");
    free(s);
    s = prioritize("c", true);
    cr_assert_str_eq(s, "[{\"Host\":\"n1\",\"Score\":2},{\"Host\":\"n2\",\"Score\":0},{\"Host\":"
                        "\"n3\",\"Score\":10}]");
    free(s);
    /* 0.1 cpu leaves every node its 4 cpus: no growth anywhere, so the idle capacity decides:
     * n3 (0) 10, then 5 + ceil(4 * (2.0 - idle) / 2.0): n1 (1.6745) 6, n2 (2.0) 5. */
    s = prioritize("tiny", false);
    cr_assert_str_eq(s, "[{\"Host\":\"n1\",\"Score\":6},{\"Host\":\"n2\",\"Score\":5},{\"Host\":"
                        "\"n3\",\"Score\":10}]");
    free(s);
    /* A GPU pod: no opinion. */
    s = prioritize("g", false);
    cr_assert_str_eq(s, "[{\"Host\":\"n1\",\"Score\":0},{\"Host\":\"n2\",\"Score\":0},{\"Host\":"
                        "\"n3\",\"Score\":0}]");
    free(s);
}

/* Before any GPU pod was seen the workload is empty: nothing grows, the idle capacity alone
 * orders the nodes (as for pod tiny above). */
Test(prioritize, empty_workload_orders_by_idle_capacity)
{
    char *s = prioritize("c", false);
    cr_assert_str_eq(s, "[{\"Host\":\"n1\",\"Score\":6},{\"Host\":\"n2\",\"Score\":5},{\"Host\":"
                        "\"n3\",\"Score\":10}]");
    free(s);
}

Test(prioritize, bad_body_is_400)
{
    char *out;
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", "/prioritize", "application/json",
                              "{\"Nodes\":null}", 14, &out);
    cr_assert_eq(st, 400);
    cr_assert(strstr(out, "extender args missing pod"), "%s", out);
    free(out);
}
