/* test_dra_guard: the DRA guard against the real service and the fake API. A DeviceClass whose
 * extendedResourceName is a resource vgpu-sched counts (nvidia.com/gpu, hygon.com/dcunum) gives
 * exactly one log line, the vgpu_sched_dra_extended_resource_conflict sample, /readyz's
 * draConflicts, the dashboard health view's draConflicts and an admission warning on every pod
 * created asking that resource — and nothing else (no patch of its own, no pod rewritten); a
 * class mapping something else changes nothing; deleting the class clears every one of them. */
#include "fakeapi.h"
#include "harness.h"
#include "log.h"
#include "serve.h"

#include <criterion/criterion.h>
#include <fcntl.h>

static struct vs_fakeapi *api;
static struct vs_service *svc;
static struct vs_harness h;
static char logpath[200];

static void put(char *json)
{
    cr_assert_neq(vs_fakeapi_put(api, json), 0, "fake API refused %s", json);
    free(json);
}

static void put_class(const char *name, const char *ext)
{
    json_t *c = json_pack("{s:s,s:s,s:{s:s},s:{s:[]}}", "apiVersion", "resource.k8s.io/v1", "kind",
                          "DeviceClass", "metadata", "name", name, "spec", "selectors");
    if (ext)
        json_object_set_new(json_object_get(c, "spec"), "extendedResourceName", json_string(ext));
    put(json_dumps(c, JSON_COMPACT));
    json_decref(c);
}

static void setup(void)
{
    api = vs_harness_fakeapi(&h);
    snprintf(logpath, sizeof(logpath), "%s/service.log", h.dir);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    cr_assert_geq(fd, 0);
    vs_log_setup(VS_LOG_INFO, false, fd);
    put(vs_harness_node("n1", 1, 15360));
}

static void teardown(void)
{
    vs_service_stop(svc);
    svc = NULL;
    vs_fakeapi_stop(api);
    api = NULL;
    vs_harness_cleanup(&h);
}

TestSuite(dra_guard, .init = setup, .fini = teardown, .timeout = 120);

/* The log lines containing `what`, each from "level=" on, joined with '\n'. New string. */
static char *log_lines(const char *what)
{
    return vs_harness_log_lines(logpath, what);
}

static size_t count_lines(const char *what)
{
    char *l = log_lines(what);
    size_t n = *l ? 1 : 0;
    for (const char *p = l; *p; p++)
        n += *p == '\n';
    free(l);
    return n;
}

/* Waits (10 s at most) until the log has n lines containing `what`. */
static void wait_lines(const char *what, size_t n)
{
    for (int i = 0; i < 500; i++) {
        if (count_lines(what) >= n)
            return;
        usleep(20 * 1000);
    }
    cr_assert_fail("fewer than %zu log lines with %s", n, what);
}

static long get(int port, bool plain, const char *path, char **out)
{
    struct vs_harness hh = h;
    if (plain)
        hh.scheme = "http";
    long st = vs_harness_call(&hh, port, "GET", path, NULL, NULL, 0, out);
    cr_assert_neq(st, 0, "GET %s: %s", path, *out);
    return st;
}

static char *readyz(void)
{
    char *out = NULL;
    cr_assert_eq(get(vs_service_port(svc), false, "/readyz", &out), 200, "%s", out);
    return out;
}

/* The lines of /metrics that start with `prefix`, joined with '\n'. New string. */
static char *metric_lines(const char *prefix)
{
    char *m;
    cr_assert_eq(get(vs_service_metrics_port(svc), true, "/metrics", &m), 200);
    char *out = calloc(1, strlen(m) + 1);
    size_t len = 0;
    for (char *l = strtok(m, "\n"); l; l = strtok(NULL, "\n")) {
        if (strncmp(l, prefix, strlen(prefix)) != 0)
            continue;
        len += (size_t)sprintf(out + len, "%s%s", len ? "\n" : "", l);
    }
    free(m);
    return out;
}

/* The dashboard health view's draConflicts, compact JSON. New string. */
static char *health_conflicts(void)
{
    char *body;
    cr_assert_eq(get(vs_service_metrics_port(svc), true, "/api/v1/health", &body), 200);
    json_error_t je;
    json_t *o = json_loads(body, 0, &je);
    cr_assert_not_null(o, "%s: %s", je.text, body);
    free(body);
    char *out = json_dumps(json_object_get(o, "draConflicts"), JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(o);
    return out;
}

/* An AdmissionReview of a pod CREATE whose one container has `limits` (JSON object text);
 * returns the response object (new reference). */
static json_t *admit(const char *limits)
{
    char body[2048];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"r1\",\"operation\":\"CREATE\",\"namespace\":\"default\",\"object\":{"
             "\"metadata\":{\"name\":\"w\",\"namespace\":\"default\"},\"spec\":{\"containers\":"
             "[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":%s}}]}}}}",
             limits);
    char *out;
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", "/webhook", "application/json",
                              body, strlen(body), &out);
    cr_assert_eq(st, 200, "%s", out);
    json_t *o = json_loads(out, 0, NULL);
    cr_assert_not_null(o, "%s", out);
    free(out);
    json_t *r = json_incref(json_object_get(o, "response"));
    json_decref(o);
    cr_assert(json_is_true(json_object_get(r, "allowed")));
    return r;
}

static char *warnings_of(const char *limits)
{
    json_t *r = admit(limits);
    char *w = json_dumps(json_object_get(r, "warnings"), JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(r);
    return w ? w : strdup("none");
}

static void start(void)
{
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    struct vs_errbuf eb;
    svc = vs_harness_service_start(&c, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
}

#define WARN_GPU                                                                                   \
    "\"DeviceClass gpu.nvidia.com maps nvidia.com/gpu to DRA: kube-scheduler will refuse this "    \
    "pod "                                                                                         \
    "before vgpu-sched sees it\""
#define LINE_GPU                                                                                   \
    "level=warn event=dra_extended_resource_conflict deviceclass=gpu.nvidia.com "                  \
    "resource=nvidia.com/gpu effect=\"kube-scheduler refuses every pod asking nvidia.com/gpu "     \
    "before vgpu-sched sees it\""

Test(dra_guard, class_mapping_a_counted_resource)
{
    put_class("gpu.nvidia.com", "nvidia.com/gpu");
    put_class("fpga.example.com", "example.com/fpga"); /* not ours */
    put_class("plain.example.com", NULL);
    start();
    wait_lines("event=dra_extended_resource_conflict ", 1);
    char *l = log_lines("dra_extended_resource");
    cr_assert_str_eq(l, LINE_GPU);
    free(l);
    l = readyz();
    cr_assert_str_eq(l, "{\"status\":\"ok\",\"degraded\":[],\"draConflicts\":[{\"deviceclass\":"
                        "\"gpu.nvidia.com\",\"resource\":\"nvidia.com/gpu\",\"effect\":"
                        "\"kube-scheduler refuses every pod asking nvidia.com/gpu before "
                        "vgpu-sched sees it\"}]}");
    free(l);
    l = metric_lines("vgpu_sched_dra_extended_resource_conflict");
    cr_assert_str_eq(l, "vgpu_sched_dra_extended_resource_conflict{deviceclass=\"gpu.nvidia.com\","
                        "resource=\"nvidia.com/gpu\"} 1");
    free(l);
    l = health_conflicts();
    cr_assert_str_eq(l, "[{\"deviceclass\":\"gpu.nvidia.com\",\"resource\":\"nvidia.com/gpu\"}]");
    free(l);

    /* Every pod asking nvidia.com/gpu is warned; the others are not. */
    l = warnings_of("{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"1000\"}");
    cr_assert_str_eq(l, "[" WARN_GPU "]");
    free(l);
    l = warnings_of("{\"cpu\":\"1\"}");
    cr_assert_str_eq(l, "none");
    free(l);
    l = warnings_of("{\"example.com/fpga\":\"1\"}");
    cr_assert_str_eq(l, "none");
    free(l);

    /* A second class on a vendor's count resource, then the first one deleted. */
    put_class("dcu.example.com", "hygon.com/dcunum");
    wait_lines("event=dra_extended_resource_conflict ", 2);
    l = metric_lines("vgpu_sched_dra_extended_resource_conflict");
    cr_assert_str_eq(l, "vgpu_sched_dra_extended_resource_conflict{deviceclass=\"dcu.example.com\","
                        "resource=\"hygon.com/dcunum\"} 1\n"
                        "vgpu_sched_dra_extended_resource_conflict{deviceclass=\"gpu.nvidia.com\","
                        "resource=\"nvidia.com/gpu\"} 1");
    free(l);
    cr_assert_eq(vs_fakeapi_delete(api, "DeviceClass", NULL, "gpu.nvidia.com"), 0);
    wait_lines("event=dra_extended_resource_conflict_resolved", 1);
    l = log_lines("dra_extended_resource");
    cr_assert_str_eq(l, LINE_GPU
                     "\n"
                     "level=warn event=dra_extended_resource_conflict deviceclass=dcu.example.com "
                     "resource=hygon.com/dcunum effect=\"kube-scheduler refuses every pod asking "
                     "hygon.com/dcunum before vgpu-sched sees it\"\n"
                     "level=info event=dra_extended_resource_conflict_resolved "
                     "deviceclass=gpu.nvidia.com resource=nvidia.com/gpu");
    free(l);
    l = warnings_of("{\"nvidia.com/gpu\":\"1\"}");
    cr_assert_str_eq(l, "none");
    free(l);
    l = health_conflicts();
    cr_assert_str_eq(l,
                     "[{\"deviceclass\":\"dcu.example.com\",\"resource\":\"hygon.com/dcunum\"}]");
    free(l);

    /* The last one edited away: nothing left anywhere. */
    put_class("dcu.example.com", NULL);
    wait_lines("event=dra_extended_resource_conflict_resolved", 2);
    l = readyz();
    cr_assert_str_eq(l, "{\"status\":\"ok\",\"degraded\":[]}");
    free(l);
    l = metric_lines("vgpu_sched_dra_extended_resource_conflict");
    cr_assert_str_eq(l, "");
    free(l);
    l = metric_lines("# HELP vgpu_sched_dra");
    cr_assert_str_eq(l, "");
    free(l);
    l = health_conflicts();
    cr_assert_str_eq(l, "[]");
    free(l);
}

/* A cluster without DRA (the API is not served): the guard is off, said once; nothing else. */
Test(dra_guard, not_served_is_said_once)
{
    cr_assert_eq(vs_fakeapi_unserve(api, "DeviceClass", true), 0);
    start();
    wait_lines("event=optional_api_missing", 1);
    char *l = log_lines("deviceclasses");
    cr_assert_str_eq(l, "level=warn event=optional_api_missing api=deviceclasses.resource.k8s.io "
                        "permission=\"list, watch deviceclasses.resource.k8s.io\" "
                        "reason=not_served feature=dra-guard effect=\"DeviceClasses that map a "
                        "GPU resource to DRA are not reported\" retry_s=60");
    free(l);
    l = warnings_of("{\"nvidia.com/gpu\":\"1\"}");
    cr_assert_str_eq(l, "none");
    free(l);
}

/* ---- the DRA ledger: ResourceSlices and ResourceClaims from the API ---- */

/* POST /filter of pod default/p over n1; the response body. New string. */
static char *filter_n1(void)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "p");
    cr_assert_not_null(pod);
    json_t *req = json_pack("{s:o,s:n,s:[s]}", "Pod", pod, "Nodes", "NodeNames", "n1");
    char *text = json_dumps(req, JSON_COMPACT), *out;
    json_decref(req);
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", "/filter", "application/json", text,
                              strlen(text), &out);
    free(text);
    cr_assert_eq(st, 200, "%s", out);
    return out;
}

static char *filter_n1_get(void *ctx)
{
    (void)ctx;
    return filter_n1();
}

/* Filters until the answer is `want` (10 s at most: the informers apply events on their own). */
static void wait_filter(const char *want)
{
    char *out = vs_harness_poll(filter_n1_get, NULL, want);
    cr_assert_str_eq(out, want);
    free(out);
}

/* Waits (10 s at most) for a FilteringFailed Event of pod default/p with this message. */
static void wait_failed_event(const char *message)
{
    cr_assert(vs_harness_wait_event(&h, vs_fakeapi_port(api), "FilteringFailed", message),
              "no FilteringFailed event \"%s\"", message);
}

#define FILTER_OK                                                                                  \
    "{\"Nodes\":null,\"NodeNames\":[\"n1\"],\"FailedNodes\":null,"                                 \
    "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}"

/* A claim allocated on the node's one card (its slice device's uuid is the card's id) makes
 * Filter refuse the node naming the claim; deleting the claim frees the card. */
Test(dra_guard, ledger_claim_holds_the_card)
{
    put(strdup("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{"
               "\"name\":\"n1-gpu\"},\"spec\":{\"nodeName\":\"n1\",\"driver\":\"gpu.nvidia.com\","
               "\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":"
               "[{\"name\":\"gpu-0\",\"attributes\":{\"uuid\":{\"string\":\"n1-gpu0\"}}}]}}"));
    put(strdup("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
               "\"name\":\"train\",\"namespace\":\"ml\",\"uid\":\"uid-claim\"},\"spec\":{},"
               "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
               "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}}}}"));
    put(vs_harness_pod("p", "uid-p", "1000", "10"));
    start();
    wait_filter("{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{\"n1\":\"1/1 "
                "CardTimeSlicingExhausted (held by DRA claim ml/train)\"},"
                "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    /* HAMi's per-word event keeps the refusal and the claim's name. */
    wait_failed_event("1 nodes CardTimeSlicingExhausted(n1) (held by DRA claim ml/train)");
    wait_failed_event("no available node, 1 nodes do not meet");
    cr_assert_eq(vs_fakeapi_delete(api, "ResourceClaim", "ml", "train"), 0);
    wait_filter(FILTER_OK);
    char *l = log_lines("optional_api");
    cr_assert_str_eq(l, "");
    free(l);
}

/* ResourceClaims not served: the ledger is off, said once; Filter places as before. */
Test(dra_guard, ledger_not_served_is_said_once)
{
    cr_assert_eq(vs_fakeapi_unserve(api, "ResourceClaim", true), 0);
    put(vs_harness_pod("p", "uid-p", "1000", "10"));
    start();
    wait_lines("api=resourceclaims", 1);
    char *l = log_lines("optional_api_missing");
    cr_assert_str_eq(l, "level=warn event=optional_api_missing api=resourceclaims.resource.k8s.io "
                        "permission=\"list, watch resourceclaims.resource.k8s.io\" "
                        "reason=not_served feature=dra-ledger effect=\"DRA claims on HAMi cards "
                        "are not counted\" retry_s=60");
    free(l);
    wait_filter(FILTER_OK);
}

/* Embedded mode (serve --cluster FILE): the file's ResourceSlices, ResourceClaims and
 * DeviceClasses are loaded like its nodes and pods: the claim holds the card, the class is
 * reported. */
Test(dra_guard, embedded_cluster_file_has_the_ledger_and_the_guard)
{
    put(vs_harness_pod("p", "uid-p", "1000", "10")); /* the Filter request's copy */
    char path[256];
    snprintf(path, sizeof(path), "%s/cluster.json", h.dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    char *node = vs_harness_node("n1", 1, 15360), *pod = vs_harness_pod("p", "uid-p", "1000", "10");
    fprintf(f,
            "{\"kind\":\"List\",\"items\":[%s,%s,"
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{"
            "\"name\":\"n1-gpu\"},\"spec\":{\"nodeName\":\"n1\",\"driver\":\"gpu.nvidia.com\","
            "\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":"
            "[{\"name\":\"gpu-0\",\"attributes\":{\"uuid\":{\"string\":\"n1-gpu0\"}}}]}},"
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
            "\"name\":\"train\",\"namespace\":\"ml\",\"uid\":\"uid-claim\"},\"spec\":{},"
            "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
            "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"}]}}}},"
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{"
            "\"name\":\"gpu.nvidia.com\"},\"spec\":{\"extendedResourceName\":"
            "\"nvidia.com/gpu\"}}]}",
            node, pod);
    free(node);
    free(pod);
    fclose(f);
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.kubeconfig = NULL;
    c.cluster = path;
    int rc = 0;
    struct vs_errbuf eb;
    svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
    wait_filter("{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{\"n1\":\"1/1 "
                "CardTimeSlicingExhausted (held by DRA claim ml/train)\"},"
                "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    wait_lines("event=dra_extended_resource_conflict ", 1);
    char *l = readyz();
    cr_assert_str_eq(l, "{\"status\":\"ok\",\"degraded\":[],\"draConflicts\":[{\"deviceclass\":"
                        "\"gpu.nvidia.com\",\"resource\":\"nvidia.com/gpu\",\"effect\":"
                        "\"kube-scheduler refuses every pod asking nvidia.com/gpu before "
                        "vgpu-sched sees it\"}]}");
    free(l);
    l = log_lines("cluster_file");
    cr_assert_str_eq(l, "");
    free(l);
}

/* A DeviceClass the guard cannot read stops the embedded start, naming the file and field. */
Test(dra_guard, embedded_cluster_file_bad_class_is_an_error)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/cluster.json", h.dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"kind\":\"List\",\"items\":[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
               "\"DeviceClass\",\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{"
               "\"extendedResourceName\":5}}]}");
    fclose(f);
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.kubeconfig = NULL;
    c.cluster = path;
    int rc = 0;
    struct vs_errbuf eb;
    cr_assert_null(vs_service_start(&c, &rc, &eb));
    char want[400];
    snprintf(want, sizeof(want),
             "%s: DeviceClass gpu.nvidia.com: spec.extendedResourceName is not a string", path);
    cr_assert_str_eq(eb.msg, want);
}
