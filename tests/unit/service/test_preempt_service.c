/* test_preempt_service: filter-time GPU preemption (--gpu-preemption=filter) through the real
 * service against the fake API: the plan's victims are evicted through pods/eviction, Filter's
 * reason for the node ends with "preempting ns/a", the freed capacity is held for the preemptor
 * (a lower-priority pod does not get it), a 429 moves to the next plan, `Never` evicts nothing,
 * and `auto` picks the mode from the API server's /version. */
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

static void start_service(const char *mode)
{
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.lock_retry_ms = 0;
    c.gpu_preemption = mode;
    struct vs_errbuf eb;
    svc = vs_harness_service_start(&c, &eb);
    cr_assert_not_null(svc, "service start: %s", eb.msg);
}

/* A running pod bound to node, holding mem MiB on card, priority 0, started at minute start. */
static char *running(const char *name, const char *node, int card, int mem, int start)
{
    char alloc[128], ts[32];
    snprintf(alloc, sizeof(alloc), "%s-gpu%d,NVIDIA,%d,10:;", node, card, mem);
    snprintf(ts, sizeof(ts), "2026-01-01T00:%02d:00Z", start);
    json_t *p = json_pack("{s:s,s:{s:s,s:s,s:s,s:{s:s,s:s}},s:{s:s,s:i,s:[{s:s}]},s:{s:s,s:s}}",
                          "kind", "Pod", "metadata", "name", name, "namespace", "default", "uid",
                          name, "annotations", VS_ANNO_VGPU_NODE, node, VS_ANNO_ALLOCATED, alloc,
                          "spec", "nodeName", node, "priority", 0, "containers", "name", "c",
                          "status", "phase", "Running", "startTime", ts);
    char *out = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return out;
}

/* A pending pod asking for one GPU with mem MiB at priority prio. */
static char *pending(const char *name, int mem, int prio, const char *policy)
{
    char m[16];
    snprintf(m, sizeof(m), "%d", mem);
    json_t *p = json_pack("{s:s,s:{s:s,s:s,s:s},s:{s:s,s:i,s:[{s:s,s:{s:{s:s,s:s}}}]},s:{s:s}}",
                          "kind", "Pod", "metadata", "name", name, "namespace", "default", "uid",
                          name, "spec", "schedulerName", "hami-scheduler", "priority", prio,
                          "containers", "name", "c", "resources", "limits", "nvidia.com/gpu", "1",
                          "nvidia.com/gpumem", m, "status", "phase", "Pending");
    if (policy)
        json_object_set_new(json_object_get(p, "spec"), "preemptionPolicy", json_string(policy));
    char *out = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return out;
}

static void setup(void)
{
    api = vs_harness_fakeapi(&h);
    /* Every card full of priority-0 pods: n1's card 1 holds one pod, the others two. */
    put(vs_harness_node("n1", 2, 15360));
    put(vs_harness_node("n2", 1, 15360));
    put(running("l0a", "n1", 0, 8000, 1));
    put(running("l0b", "n1", 0, 7360, 2));
    put(running("l1a", "n1", 1, 15360, 3));
    put(running("l2a", "n2", 0, 8000, 4));
    put(running("l2b", "n2", 0, 7360, 5));
}

static void teardown(void)
{
    vs_service_stop(svc);
    svc = NULL;
    vs_fakeapi_stop(api);
    api = NULL;
    vs_harness_cleanup(&h);
}

TestSuite(preempt_service, .init = setup, .fini = teardown, .timeout = 120);

/* FailedNodes (as compact JSON) or NodeNames of a Filter of the stored pod on n1, n2. */
static char *filter(const char *name)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", name);
    cr_assert_not_null(pod);
    json_t *req = json_pack("{s:o,s:n,s:[s,s]}", "Pod", pod, "Nodes", "NodeNames", "n1", "n2");
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char *out;
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", "/filter", "application/json", text,
                              strlen(text), &out);
    free(text);
    cr_assert_eq(st, 200, "%s", out);
    json_t *r = json_loads(out, 0, NULL);
    free(out);
    cr_assert_not_null(r);
    json_t *f = json_object_get(r, "FailedNodes");
    char *s = json_dumps(json_is_null(f) ? json_object_get(r, "NodeNames") : f,
                         JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(r);
    return s;
}

static char *metrics(void)
{
    struct vs_harness plain = h;
    plain.scheme = "http";
    char *out;
    cr_assert_eq(vs_harness_call(&plain, vs_service_metrics_port(svc), "GET", "/metrics", NULL,
                                 NULL, 0, &out),
                 200);
    return out;
}

static bool terminating(const char *name)
{
    json_t *p = vs_fakeapi_get(api, "Pod", "default", name);
    bool t = p && json_object_get(json_object_get(p, "metadata"), "deletionTimestamp");
    json_decref(p);
    return t;
}

#define EVICTIONS(name)                                                                            \
    vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/pods/" name "/eviction")

Test(preempt_service, evicts_the_cheapest_plan_and_holds_the_card)
{
    start_service("filter");
    put(pending("hi", 15000, 1000, NULL));
    char *s = filter("hi");
    /* n1's card 1 frees with one victim; n2 needs two. */
    cr_assert_str_eq(s, "{\"n1\":\"2/2 CardInsufficientMemory; preempting default/l1a\","
                        "\"n2\":\"1/1 CardInsufficientMemory\"}");
    free(s);
    cr_assert_eq(EVICTIONS("l1a"), 1);
    cr_assert(terminating("l1a"));
    cr_assert_not(terminating("l0a") || terminating("l2a") || terminating("l2b"));
    /* While l1a terminates: the same answer, no second eviction. */
    s = filter("hi");
    cr_assert_str_eq(s, "{\"n1\":\"2/2 CardInsufficientMemory; preempting default/l1a\","
                        "\"n2\":\"1/1 CardInsufficientMemory\"}");
    free(s);
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/pods/"), 1);
    /* l1a is gone: a lower-priority pod does not get the freed card... */
    char *m0 = metrics();
    cr_assert(strstr(m0, "pod=\"l1a\""), "%s", m0);
    free(m0);
    cr_assert_eq(vs_fakeapi_delete(api, "Pod", "default", "l1a"), 0);
    put(pending("lo", 10000, 0, NULL));
    /* Wait until the store applied the DELETED event (l1a leaves the per-pod gauges). */
    bool gone = false;
    for (int i = 0; i < 250 && !gone; i++) {
        char *m = metrics();
        gone = !strstr(m, "pod=\"l1a\"");
        free(m);
        if (!gone)
            usleep(20 * 1000);
    }
    cr_assert(gone, "the store never saw l1a's deletion");
    s = filter("lo");
    cr_assert_str_eq(s, "{\"n1\":\"2/2 CardInsufficientMemory\",\"n2\":\"1/1 "
                        "CardInsufficientMemory\"}");
    free(s);
    /* ... the preemptor does, and binds. */
    s = filter("hi");
    cr_assert_str_eq(s, "[\"n1\"]");
    free(s);
    char *out;
    const char *bind = "{\"PodName\":\"hi\",\"PodNamespace\":\"default\",\"PodUID\":\"hi\","
                       "\"Node\":\"n1\"}";
    cr_assert_eq(vs_harness_call(&h, vs_service_port(svc), "POST", "/bind", "application/json",
                                 bind, strlen(bind), &out),
                 200);
    cr_assert_str_eq(out, "{\"Error\":\"\"}");
    free(out);
    char *m = metrics();
    cr_assert(strstr(m, "vgpu_sched_preemptions_total{mode=\"filter\",outcome=\"planned\"} 1\n"),
              "%s", m);
    cr_assert(strstr(m, "vgpu_sched_preemption_victims_total 1\n"));
    cr_assert(strstr(m, "vgpu_sched_preemptor_bind_seconds_count 1\n"));
    free(m);
}

Test(preempt_service, eviction_refused_moves_to_the_next_plan)
{
    start_service("filter");
    vs_fakeapi_fault(api, "POST", "/api/v1/namespaces/default/pods/l1a/eviction", 429, 1);
    put(pending("hi", 15000, 1000, NULL));
    char *s = filter("hi");
    cr_assert_str_eq(s, "{\"n1\":\"2/2 CardInsufficientMemory\",\"n2\":\"1/1 "
                        "CardInsufficientMemory; preempting default/l2a, default/l2b\"}");
    free(s);
    cr_assert(terminating("l2a") && terminating("l2b"));
    cr_assert_not(terminating("l1a"));
}

/* A PodDisruptionBudget that allows no disruption of l1a: the plan on n2 (two victims, no
 * violation) ranks before n1's (one victim, one violation). */
Test(preempt_service, pdb_protected_pod_spared_when_another_plan_exists)
{
    put(strdup("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"l1a\",\"namespace\":\"default\","
               "\"uid\":\"l1a\",\"labels\":{\"app\":\"db\"},\"annotations\":{"
               "\"hami.io/vgpu-node\":\"n1\",\"hami.io/vgpu-devices-allocated\":"
               "\"n1-gpu1,NVIDIA,15360,10:;\"}},\"spec\":{\"nodeName\":\"n1\",\"priority\":0,"
               "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\","
               "\"startTime\":\"2026-01-01T00:03:00Z\"}}"));
    put(strdup("{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{"
               "\"name\":\"db\",\"namespace\":\"default\"},\"spec\":{\"selector\":{"
               "\"matchLabels\":{\"app\":\"db\"}}},\"status\":{\"disruptionsAllowed\":0}}"));
    start_service("filter");
    put(pending("hi", 15000, 1000, NULL));
    char *s = filter("hi");
    cr_assert_str_eq(s, "{\"n1\":\"2/2 CardInsufficientMemory\",\"n2\":\"1/1 "
                        "CardInsufficientMemory; preempting default/l2a, default/l2b\"}");
    free(s);
    cr_assert_not(terminating("l1a"));
}

Test(preempt_service, never_and_equal_priority_evict_nothing)
{
    start_service("filter");
    put(pending("never", 15000, 1000, "Never"));
    put(pending("peer", 15000, 0, NULL));
    put(pending("huge", 20000, 1000, NULL));
    const char *plain = "{\"n1\":\"2/2 CardInsufficientMemory\",\"n2\":\"1/1 "
                        "CardInsufficientMemory\"}";
    const char *names[] = {"never", "peer", "huge"};
    for (int i = 0; i < 3; i++) {
        char *s = filter(names[i]);
        cr_assert_str_eq(s, plain, "%s: %s", names[i], s);
        free(s);
    }
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/pods/"), 0);
    char *m = metrics();
    cr_assert(strstr(m, "vgpu_sched_preemptions_total{mode=\"filter\",outcome=\"no_plan\"} 2\n"),
              "%s", m);
    free(m);
}

Test(preempt_service, auto_mode_follows_the_api_server_version)
{
    vs_fakeapi_set_version(api, "v1.38.0-beta.0");
    start_service("auto");
    put(pending("hi", 15000, 1000, NULL));
    /* verb mode: Filter only refuses; kube-scheduler's preemption asks /preempt. */
    char *s = filter("hi");
    cr_assert_str_eq(s, "{\"n1\":\"2/2 CardInsufficientMemory\",\"n2\":\"1/1 "
                        "CardInsufficientMemory\"}");
    free(s);
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/pods/"), 0);
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "hi");
    json_t *req = json_pack("{s:o,s:{s:{s:[]},s:{s:[]}}}", "Pod", pod, "NodeNameToMetaVictims",
                            "n1", "Pods", "n2", "Pods");
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char *out;
    cr_assert_eq(vs_harness_call(&h, vs_service_port(svc), "POST", "/preempt", "application/json",
                                 text, strlen(text), &out),
                 200);
    free(text);
    json_t *r = json_loads(out, 0, NULL);
    free(out);
    s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n1\":{\"NumPDBViolations\":0,\"Pods\":[{"
                        "\"UID\":\"l1a\"}]},\"n2\":{\"NumPDBViolations\":0,\"Pods\":[{\"UID\":"
                        "\"l2a\"},{\"UID\":\"l2b\"}]}}}");
    free(s);
    json_decref(r);
}

/* verb mode watches PodDisruptionBudgets too: on n1 the plan evicting l0a and l0b (no violation)
 * is chosen over l1a's (protected), and on n2 NumPDBViolations counts the protected l2a, so
 * kube-scheduler, which ranks candidates by it, prefers n1. */
Test(preempt_service, verb_mode_reports_pdb_violations)
{
    put(strdup("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"l1a\",\"namespace\":\"default\","
               "\"uid\":\"l1a\",\"labels\":{\"app\":\"db\"},\"annotations\":{"
               "\"hami.io/vgpu-node\":\"n1\",\"hami.io/vgpu-devices-allocated\":"
               "\"n1-gpu1,NVIDIA,15360,10:;\"}},\"spec\":{\"nodeName\":\"n1\",\"priority\":0,"
               "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\","
               "\"startTime\":\"2026-01-01T00:03:00Z\"}}"));
    put(strdup("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"l2a\",\"namespace\":\"default\","
               "\"uid\":\"l2a\",\"labels\":{\"app\":\"db\"},\"annotations\":{"
               "\"hami.io/vgpu-node\":\"n2\",\"hami.io/vgpu-devices-allocated\":"
               "\"n2-gpu0,NVIDIA,8000,10:;\"}},\"spec\":{\"nodeName\":\"n2\",\"priority\":0,"
               "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\","
               "\"startTime\":\"2026-01-01T00:04:00Z\"}}"));
    put(strdup("{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{"
               "\"name\":\"db\",\"namespace\":\"default\"},\"spec\":{\"selector\":{"
               "\"matchLabels\":{\"app\":\"db\"}}},\"status\":{\"disruptionsAllowed\":0}}"));
    start_service("verb");
    put(pending("hi", 15000, 1000, NULL));
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "hi");
    json_t *req = json_pack("{s:o,s:{s:{s:[]},s:n}}", "Pod", pod, "NodeNameToMetaVictims", "n1",
                            "Pods", "n2");
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char *out;
    cr_assert_eq(vs_harness_call(&h, vs_service_port(svc), "POST", "/preempt", "application/json",
                                 text, strlen(text), &out),
                 200);
    free(text);
    json_t *r = json_loads(out, 0, NULL);
    free(out);
    char *s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(s, "{\"NodeNameToMetaVictims\":{\"n1\":{\"NumPDBViolations\":0,\"Pods\":[{"
                        "\"UID\":\"l0a\"},{\"UID\":\"l0b\"}]},\"n2\":{\"NumPDBViolations\":1,"
                        "\"Pods\":[{\"UID\":\"l2a\"},{\"UID\":\"l2b\"}]}}}");
    free(s);
    json_decref(r);
}

Test(preempt_service, bad_mode_is_a_configuration_error)
{
    struct vs_service_config c;
    vs_service_config_defaults(&c);
    c.gpu_preemption = "sometimes";
    int rc;
    struct vs_errbuf eb;
    cr_assert_null(vs_service_start(&c, &rc, &eb));
    cr_assert_eq(rc, 2);
    cr_assert_str_eq(eb.msg, "invalid --gpu-preemption \"sometimes\" (want auto, verb, filter or "
                             "off)");
}
