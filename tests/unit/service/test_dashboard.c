/* test_dashboard: the dashboard's HTTP contract against the real service in embedded mode
 * (tests/browser/cluster.json): every endpoint's status, content type, security headers, ETag
 * and 304, 404s, base path and redirects, body limits, hostile names escaped, totals equal to
 * /metrics, --dashboard=false, and docs/dashboard-api.json: every routed endpoint is described
 * (and nothing else), and every answer has the fields its schema requires, of their types. */
#include "dashboard.h"
#include "harness.h"
#include "testutil.h"
#include "whatif.h"

#include <ctype.h>

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>

#define CLUSTER "tests/browser/cluster.json"

static const char *CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                         "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action "
                         "'none'; frame-ancestors 'none'";

struct resp {
    long status;
    char *body;
    char *ctype, *etag, *csp, *location, *nosniff;
};

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct resp *r = ud;
    size_t len = sz * n;
    struct {
        const char *name;
        char **dst;
    } want[] = {{"content-type:", &r->ctype},
                {"etag:", &r->etag},
                {"content-security-policy:", &r->csp},
                {"location:", &r->location},
                {"x-content-type-options:", &r->nosniff}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        size_t k = strlen(want[i].name);
        if (len > k && strncasecmp(p, want[i].name, k) == 0) {
            const char *v = p + k;
            size_t vl = len - k;
            while (vl && (*v == ' '))
                v++, vl--;
            while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
                vl--;
            free(*want[i].dst);
            *want[i].dst = strndup(v, vl);
        }
    }
    return len;
}

static void resp_free(struct resp *r)
{
    free(r->body);
    free(r->ctype);
    free(r->etag);
    free(r->csp);
    free(r->location);
    free(r->nosniff);
    memset(r, 0, sizeof(*r));
}

/* One plain HTTP request; inm: If-None-Match (may be NULL); ctype + body for POST. */
static struct resp req(int port, const char *method, const char *path, const char *inm,
                       const char *ctype, const char *body, size_t len)
{
    struct resp r = {0};
    struct vs_harness_body b = {0};
    CURL *c = curl_easy_init();
    char url[1024];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    struct curl_slist *h = NULL;
    char line[512];
    if (inm) {
        snprintf(line, sizeof(line), "If-None-Match: %s", inm);
        h = curl_slist_append(h, line);
    }
    if (ctype) {
        snprintf(line, sizeof(line), "Content-Type: %s", ctype);
        h = curl_slist_append(h, line);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, vs_harness_collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    cr_assert_eq(curl_easy_perform(c), CURLE_OK, "%s %s", method, path);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    r.body = b.data ? b.data : strdup("");
    return r;
}

static struct resp get(int port, const char *path)
{
    return req(port, "GET", path, NULL, NULL, NULL, 0);
}

static struct vs_service *svc;
static int mport, port;

static struct vs_service *start(const char *base, const char *ancestors, bool on)
{
    struct vs_service_config c;
    vs_service_config_defaults(&c);
    c.http_bind = "127.0.0.1:0";
    c.metrics_bind = "127.0.0.1:0";
    c.cluster = CLUSTER;
    c.scheduler_name = "hami-scheduler";
    c.dashboard = on;
    c.dashboard_base = base;
    c.dashboard_ancestors = ancestors;
    struct vs_errbuf eb;
    struct vs_service *s = vs_harness_service_start(&c, &eb);
    cr_assert_not_null(s, "%s", eb.msg);
    return s;
}

static void setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    svc = start(NULL, NULL, true);
    mport = vs_service_metrics_port(svc);
    port = vs_service_port(svc);
}

static void teardown(void)
{
    vs_service_stop(svc);
}

TestSuite(dashboard, .init = setup, .fini = teardown, .timeout = 60);

static json_t *body_json(const struct resp *r)
{
    json_error_t je;
    json_t *d = json_loads(r->body, 0, &je);
    cr_assert_not_null(d, "not JSON (%s): %.200s", je.text, r->body);
    return d;
}

/* Sends the cluster file's unplaced pods to Filter over every node, as kube-scheduler would. */
static void refuse_pending(void)
{
    size_t len;
    char *text = vs_test_read_file(CLUSTER, &len);
    json_t *cl = json_loads(text, 0, NULL);
    free(text);
    json_t *names = json_array(), *item;
    size_t i;
    json_array_foreach(json_object_get(cl, "items"), i, item)
    {
        if (strcmp(json_string_value(json_object_get(item, "kind")), "Node") == 0)
            json_array_append(names, json_object_get(json_object_get(item, "metadata"), "name"));
    }
    json_array_foreach(json_object_get(cl, "items"), i, item)
    {
        if (strcmp(json_string_value(json_object_get(item, "kind")), "Pod") != 0 ||
            json_object_get(json_object_get(item, "spec"), "nodeName"))
            continue;
        json_t *args = json_pack("{s:O,s:n,s:O}", "Pod", item, "Nodes", "NodeNames", names);
        char *b = json_dumps(args, JSON_COMPACT);
        struct resp r = req(port, "POST", "/filter", NULL, "application/json", b, strlen(b));
        cr_assert_eq(r.status, 200);
        json_t *d = body_json(&r);
        cr_assert(json_is_null(json_object_get(d, "NodeNames")), "%s", r.body); /* refused */
        json_decref(d);
        resp_free(&r);
        free(b);
        json_decref(args);
    }
    json_decref(names);
    json_decref(cl);
}

Test(dashboard, page_and_assets)
{
    struct resp r = get(mport, "/");
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.ctype, "text/html; charset=utf-8");
    cr_assert_str_eq(r.csp, CSP);
    cr_assert_str_eq(r.nosniff, "nosniff");
    cr_assert_not_null(strstr(r.body, "<script src=\"app.js\" defer></script>"));
    cr_assert_null(strstr(r.body, "<script>"), "no inline script");
    cr_assert_null(strstr(r.body, "style="), "no inline style");
    cr_assert_null(strstr(r.body, "http"), "no absolute URL: %s", r.body);
    cr_assert_not_null(r.etag);
    struct resp again = req(mport, "GET", "/", r.etag, NULL, NULL, 0);
    cr_assert_eq(again.status, 304);
    cr_assert_str_eq(again.body, "");
    resp_free(&again);
    resp_free(&r);
    static const char *const assets[][2] = {{"/app.js", "text/javascript; charset=utf-8"},
                                            {"/app.css", "text/css; charset=utf-8"},
                                            {"/favicon.svg", "image/svg+xml"},
                                            {"/index.html", "text/html; charset=utf-8"},
                                            {"/api/v1/openapi.json", "application/json"}};
    for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++) {
        r = get(mport, assets[i][0]);
        cr_assert_eq(r.status, 200, "%s", assets[i][0]);
        cr_assert_str_eq(r.ctype, assets[i][1], "%s", assets[i][0]);
        cr_assert_str_eq(r.csp, CSP);
        cr_assert_gt(strlen(r.body), 100);
        resp_free(&r);
    }
    /* the served description is the repository's file */
    size_t len;
    char *file = vs_test_read_file("docs/dashboard-api.json", &len);
    r = get(mport, "/api/v1/openapi.json");
    cr_assert_str_eq(r.body, file);
    resp_free(&r);
    free(file);
    /* the script builds the page from text nodes only */
    r = get(mport, "/app.js");
    cr_assert_null(strstr(r.body, "innerHTML"));
    cr_assert_null(strstr(r.body, "insertAdjacentHTML"));
    cr_assert_null(strstr(r.body, "eval("));
    resp_free(&r);
}

Test(dashboard, not_found_and_methods)
{
    static const char *const paths[] = {"/nope",          "/api/v1/nope",      "/api/v2/snapshot",
                                        "/api/v1/nodes/", "/api/v1/nodes/a/b", "/api/v1/pods/x",
                                        "/app.js/x",      "/api/v1/snapshot/x"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct resp r = get(mport, paths[i]);
        cr_assert_eq(r.status, 404, "%s", paths[i]);
        cr_assert_str_eq(r.ctype, "application/json", "%s", paths[i]);
        cr_assert_str_eq(r.csp, CSP);
        resp_free(&r);
    }
    struct resp r = get(mport, "/api/v1/nodes/nope");
    cr_assert_eq(r.status, 404);
    cr_assert_str_eq(r.body, "{\"error\":\"no node nope\"}");
    resp_free(&r);
    r = get(mport, "/api/v1/pods/team-a/nope");
    cr_assert_eq(r.status, 404);
    cr_assert_str_eq(r.body, "{\"error\":\"no pod team-a/nope\"}");
    resp_free(&r);
    r = get(mport, "/api/v1/pending/team-a/nope");
    cr_assert_eq(r.status, 404);
    cr_assert_str_eq(r.body, "{\"error\":\"no pending pod team-a/nope\"}");
    resp_free(&r);
    r = get(mport, "/api/v1/whatif");
    cr_assert_eq(r.status, 405);
    resp_free(&r);
    r = req(mport, "POST", "/api/v1/snapshot", NULL, "application/json", "{}", 2);
    cr_assert_eq(r.status, 405);
    resp_free(&r);
    /* the metrics listener's own routes stay */
    r = get(mport, "/metrics");
    cr_assert_eq(r.status, 200);
    resp_free(&r);
    r = get(mport, "/healthz");
    cr_assert_eq(r.status, 200);
    resp_free(&r);
}

Test(dashboard, snapshot_etag_and_304)
{
    struct resp r = get(mport, "/api/v1/snapshot");
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.ctype, "application/json");
    cr_assert_str_eq(r.csp, CSP);
    cr_assert_not_null(r.etag);
    json_t *d = body_json(&r);
    char quoted[256];
    snprintf(quoted, sizeof(quoted), "\"%s\"", json_string_value(json_object_get(d, "version")));
    cr_assert_str_eq(r.etag, quoted);
    json_decref(d);
    struct resp n = req(mport, "GET", "/api/v1/snapshot", r.etag, NULL, NULL, 0);
    cr_assert_eq(n.status, 304);
    cr_assert_str_eq(n.etag, r.etag);
    cr_assert_str_eq(n.body, "");
    resp_free(&n);
    char list[512];
    snprintf(list, sizeof(list), "\"x\", W/%s", r.etag);
    n = req(mport, "GET", "/api/v1/snapshot", list, NULL, NULL, 0);
    cr_assert_eq(n.status, 304);
    resp_free(&n);
    n = req(mport, "GET", "/api/v1/snapshot", "\"other\"", NULL, NULL, 0);
    cr_assert_eq(n.status, 200);
    resp_free(&n);
    /* a change of the state (a refused pod is listed) makes a new version */
    refuse_pending();
    n = req(mport, "GET", "/api/v1/snapshot", r.etag, NULL, NULL, 0);
    cr_assert_eq(n.status, 200);
    cr_assert_str_neq(n.etag, r.etag);
    d = body_json(&n);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(d, "summary"), "pending")), 4);
    json_decref(d);
    resp_free(&n);
    resp_free(&r);
}

/* The sum of a /metrics family's samples (optionally only those whose line contains `with`). */
static double metric_sum(const char *text, const char *family, const char *with)
{
    double sum = 0;
    size_t fl = strlen(family);
    for (const char *l = text; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        if (len > fl && strncmp(l, family, fl) == 0 && l[fl] == '{') {
            char line[2048];
            snprintf(line, sizeof(line), "%.*s", (int)len, l);
            if (!with || strstr(line, with))
                sum += strtod(strrchr(line, ' ') + 1, NULL);
        }
        l = end ? end + 1 : NULL;
    }
    return sum;
}

Test(dashboard, totals_equal_metrics)
{
    struct resp r = get(mport, "/api/v1/snapshot");
    struct resp m = get(mport, "/metrics");
    json_t *d = body_json(&r);
    json_t *s = json_object_get(d, "summary");
    const double MiB = 1048576;
    cr_assert_eq(json_integer_value(json_object_get(s, "memTotalMiB")),
                 (json_int_t)(metric_sum(m.body, "hami_gpu_memory_limit_bytes", NULL) / MiB));
    cr_assert_eq(json_integer_value(json_object_get(s, "memUsedMiB")),
                 (json_int_t)(metric_sum(m.body, "hami_gpu_memory_allocated_bytes", NULL) / MiB));
    cr_assert_eq(json_integer_value(json_object_get(s, "coresTotalPct")),
                 (json_int_t)metric_sum(m.body, "hami_gpu_core_limit_ratio", NULL));
    cr_assert_eq(json_integer_value(json_object_get(s, "coresUsedPct")),
                 (json_int_t)metric_sum(m.body, "hami_gpu_core_allocated_ratio", NULL));
    cr_assert_eq(json_integer_value(json_object_get(s, "slotsUsed")),
                 (json_int_t)metric_sum(m.body, "hami_gpu_shared_count", NULL));
    cr_assert_eq(json_integer_value(json_object_get(s, "memUsedMiB")), 507000);
    json_t *ns;
    size_t i;
    json_array_foreach(json_object_get(d, "namespaces"), i, ns)
    {
        char with[300];
        snprintf(with, sizeof(with), "namespace=\"%s\",quota_name=\"nvidia.com/gpumem\"",
                 json_string_value(json_object_get(ns, "name")));
        cr_assert_eq(json_integer_value(json_object_get(ns, "memUsedMiB")),
                     (json_int_t)metric_sum(m.body, "hami_resource_quota_used", with), "%s", with);
        json_t *lim = json_object_get(ns, "memLimitMiB");
        if (json_is_integer(lim))
            cr_assert_eq(json_integer_value(lim),
                         (json_int_t)metric_sum(m.body, "hami_resource_quota_limit", with));
    }
    json_decref(d);
    resp_free(&r);
    resp_free(&m);
}

Test(dashboard, hostile_names_are_escaped)
{
    refuse_pending();
    static const char *const paths[] = {"/api/v1/snapshot", "/api/v1/pending", "/api/v1/pods?q=img",
                                        "/api/v1/nodes/gpu-t4-1"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct resp r = get(mport, paths[i]);
        cr_assert_eq(r.status, 200, "%s", paths[i]);
        cr_assert_null(strstr(r.body, "<img"), "%s", paths[i]);
        cr_assert_null(strstr(r.body, "<script"), "%s", paths[i]);
        resp_free(&r);
    }
    struct resp r = get(mport, "/api/v1/snapshot");
    cr_assert_not_null(strstr(r.body, "\"name\":\"\\u003cimg src=x onerror=alert(1)\\u003e\""));
    resp_free(&r);
    r = get(mport, "/api/v1/pending");
    cr_assert_not_null(strstr(
        r.body, "\"name\":\"\\\"\\u003e\\u003cscript\\u003ealert(2)\\u003c/script\\u003e\""));
    resp_free(&r);
    /* the pod's own page, by its (escaped) path */
    char *e = curl_easy_escape(NULL, "<img src=x onerror=alert(1)>", 0);
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/pods/sandbox/%s", e);
    curl_free(e);
    r = get(mport, path);
    cr_assert_eq(r.status, 200, "%s", r.body);
    json_t *d = body_json(&r);
    cr_assert_str_eq(json_string_value(json_object_get(d, "name")), "<img src=x onerror=alert(1)>");
    cr_assert_str_eq(json_string_value(json_object_get(d, "node")), "gpu-t4-1");
    json_decref(d);
    resp_free(&r);
}

Test(dashboard, pending_pods)
{
    struct resp r = get(mport, "/api/v1/pending");
    cr_assert_eq(r.status, 200);
    json_t *d = body_json(&r);
    cr_assert_eq(json_array_size(json_object_get(d, "pods")), 0);
    json_decref(d);
    resp_free(&r);
    refuse_pending();
    r = get(mport, "/api/v1/pending");
    d = body_json(&r);
    json_t *pods = json_object_get(d, "pods");
    cr_assert_eq(json_array_size(pods), 4);
    json_t *p, *big = NULL, *bad = NULL;
    size_t i;
    json_array_foreach(pods, i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "name")), "too-big") == 0)
            big = p;
        if (strcmp(json_string_value(json_object_get(p, "name")), "bad-quantity") == 0)
            bad = p;
    }
    cr_assert_not_null(big);
    cr_assert_eq(json_integer_value(json_object_get(big, "attempts")), 1);
    cr_assert_eq(json_integer_value(json_object_get(big, "nodesRefused")), 7);
    json_t *w0 = json_array_get(json_object_get(big, "reasons"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(w0, "reason")), "CardInsufficientMemory");
    cr_assert_eq(json_integer_value(json_object_get(w0, "nodes")), 6);
    json_t *miss = json_object_get(big, "nearestMiss");
    cr_assert_str_eq(json_string_value(json_object_get(miss, "text")),
                     "gpu-h100-1 card 6 lacks 17.7 GiB");
    cr_assert_str_eq(json_string_value(json_object_get(big, "nearestMissStatus")), "found");
    cr_assert_str_eq(json_string_value(json_object_get(bad, "error")),
                     "invalid nvidia.com/gpumem \"8Gi\" in container main: must be a whole number "
                     "of MiB between 0 and 2147483647");
    cr_assert_str_eq(json_string_value(json_object_get(bad, "nearestMissStatus")), "none");
    cr_assert_not_null(r.etag);
    struct resp n = req(mport, "GET", "/api/v1/pending", r.etag, NULL, NULL, 0);
    cr_assert_eq(n.status, 304);
    resp_free(&n);
    json_decref(d);
    resp_free(&r);
    /* again: attempts 2, first refusal kept */
    refuse_pending();
    r = get(mport, "/api/v1/pending/research/too-big");
    cr_assert_eq(r.status, 200);
    d = body_json(&r);
    p = json_object_get(d, "pod");
    cr_assert_eq(json_integer_value(json_object_get(p, "attempts")), 2);
    json_t *nodes = json_object_get(p, "nodes");
    cr_assert_eq(json_array_size(nodes), 7);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(nodes, 0), "node")),
                     "gpu-a100-1");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(nodes, 0), "reason")),
                     "1/4 CardCordoned, 3/4 CardInsufficientMemory");
    cr_assert_eq(json_integer_value(json_object_get(p, "nodesNotKept")), 0);
    json_decref(d);
    resp_free(&r);
    /* the pod's page shows it pending, with its reasons */
    r = get(mport, "/api/v1/pods/research/too-big");
    d = body_json(&r);
    cr_assert_str_eq(json_string_value(json_object_get(d, "state")), "pending");
    cr_assert(json_is_object(json_object_get(d, "pending")));
    json_decref(d);
    resp_free(&r);
}

Test(dashboard, find_and_pod)
{
    struct resp r = get(mport, "/api/v1/pods?q=LLAMA");
    cr_assert_eq(r.status, 200);
    json_t *d = body_json(&r);
    json_t *pods = json_object_get(d, "pods");
    cr_assert_eq(json_array_size(pods), 2);
    cr_assert_not(json_is_true(json_object_get(d, "truncated")));
    json_decref(d);
    resp_free(&r);
    r = get(mport, "/api/v1/pods");
    cr_assert_eq(r.status, 400);
    cr_assert_str_eq(r.body, "{\"error\":\"the query parameter q (part of a pod's name or "
                             "namespace) is required\"}");
    resp_free(&r);
    char path[300];
    snprintf(path, sizeof(path), "/api/v1/pods?q=%0129d", 0);
    r = get(mport, path);
    cr_assert_eq(r.status, 400);
    cr_assert_str_eq(r.body, "{\"error\":\"q is longer than 128 bytes\"}");
    resp_free(&r);
    r = get(mport, "/api/v1/pods/inference/serve-llm");
    cr_assert_eq(r.status, 200);
    d = body_json(&r);
    cr_assert_str_eq(json_string_value(json_object_get(d, "node")), "gpu-h100-1");
    cr_assert_str_eq(json_string_value(json_object_get(d, "state")), "bound");
    cr_assert_str_eq(json_string_value(json_object_get(d, "mode")), "hami-core");
    cr_assert_str_eq(json_string_value(json_object_get(d, "bindPhase")), "success");
    cr_assert_eq(json_integer_value(json_object_get(d, "bindTime")), 1764000000);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "policies"), "gpu")),
                     "spread");
    json_t *card = json_array_get(json_object_get(d, "cards"), 0);
    cr_assert_eq(json_integer_value(json_object_get(card, "index")), 4);
    cr_assert_str_eq(json_string_value(json_object_get(card, "uuid")), "GPU-h1-4");
    cr_assert_eq(json_integer_value(json_object_get(card, "memMiB")), 48000);
    cr_assert_eq(json_integer_value(json_object_get(card, "slots")), 2);
    json_t *ctrs = json_object_get(d, "containers");
    cr_assert_eq(json_array_size(ctrs), 2);
    json_t *dev = json_array_get(json_object_get(json_array_get(ctrs, 1), "devices"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(ctrs, 1), "name")),
                     "sidecar");
    cr_assert_eq(json_integer_value(json_object_get(dev, "memMiB")), 8000);
    cr_assert_eq(json_integer_value(json_object_get(dev, "index")), 4);
    json_decref(d);
    resp_free(&r);
}

Test(dashboard, node_fragmentation_health)
{
    struct resp r = get(mport, "/api/v1/nodes/gpu-a100-1");
    cr_assert_eq(r.status, 200);
    cr_assert_not_null(r.etag);
    json_t *d = body_json(&r);
    json_t *n = json_object_get(d, "node");
    cr_assert_eq(json_integer_value(json_object_get(n, "memUsedMiB")), 72000);
    json_t *c3 = json_array_get(json_object_get(n, "cards"), 3);
    cr_assert(json_is_true(json_object_get(c3, "cordoned")));
    json_decref(d);
    resp_free(&r);
    r = get(mport, "/api/v1/fragmentation");
    cr_assert_eq(r.status, 200);
    d = body_json(&r);
    /* before any GPU pod was evaluated there is no workload to measure against */
    cr_assert(json_is_null(json_object_get(json_object_get(d, "total"), "strandedCards")));
    json_decref(d);
    resp_free(&r);
    refuse_pending();
    r = get(mport, "/api/v1/fragmentation");
    d = body_json(&r);
    cr_assert(json_is_number(json_object_get(json_object_get(d, "total"), "strandedCards")));
    cr_assert_eq(json_array_size(json_object_get(d, "nodes")), 6);
    json_decref(d);
    resp_free(&r);
    r = get(mport, "/api/v1/health");
    cr_assert_eq(r.status, 200);
    d = body_json(&r);
    json_t *f = json_object_get(json_object_get(d, "filter"), "results");
    cr_assert_eq(json_integer_value(json_object_get(f, "unschedulable")), 3);
    cr_assert_eq(json_integer_value(json_object_get(f, "error")), 1);
    json_t *cards = json_object_get(d, "cards");
    cr_assert_eq(json_array_size(cards), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(cards, 0), "problem")),
                     "cordoned");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(cards, 1), "problem")),
                     "unhealthy");
    cr_assert(json_is_null(json_object_get(d, "handshake")));
    json_decref(d);
    resp_free(&r);
}

Test(dashboard, whatif_limits_and_answers)
{
    const char *ok = "{\"shape\":{\"cards\":1,\"memMiB\":20000,\"coresPct\":30}}";
    struct resp r = req(mport, "POST", "/api/v1/whatif", NULL, "application/json", ok, strlen(ok));
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_str_eq(r.ctype, "application/json");
    json_t *d = body_json(&r);
    json_t *r0 = json_array_get(json_object_get(d, "results"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(r0, "node")), "gpu-h100-1");
    json_decref(d);
    resp_free(&r);
    /* nothing was reserved */
    r = get(mport, "/api/v1/snapshot");
    d = body_json(&r);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(d, "summary"), "memUsedMiB")),
                 507000);
    json_decref(d);
    resp_free(&r);
    r = req(mport, "POST", "/api/v1/whatif", NULL, "text/plain", ok, strlen(ok));
    cr_assert_eq(r.status, 415);
    resp_free(&r);
    const char *bad = "{\"shape\":{\"cards\":0}}";
    r = req(mport, "POST", "/api/v1/whatif", NULL, "application/json", bad, strlen(bad));
    cr_assert_eq(r.status, 400);
    cr_assert_str_eq(r.body, "{\"error\":\"shape.cards must be a whole number from 1 to 64\"}");
    resp_free(&r);
    size_t big = VS_WHATIF_MAX_BODY + 1;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    huge[0] = '{';
    huge[big - 1] = '}';
    huge[big] = '\0';
    r = req(mport, "POST", "/api/v1/whatif", NULL, "application/json", huge, big);
    cr_assert_eq(r.status, 413);
    cr_assert_str_eq(r.ctype, "application/json");
    resp_free(&r);
    huge[big - 2] = '}';
    r = req(mport, "POST", "/api/v1/whatif", NULL, "application/json", huge, big - 1);
    cr_assert_eq(r.status, 400, "%s", r.body); /* at the limit: read, then refused as empty */
    resp_free(&r);
    free(huge);
}

/* ------------------------------------------------------------------ the OpenAPI description */

static json_t *api_doc(void)
{
    json_error_t je;
    json_t *d = json_load_file("docs/dashboard-api.json", 0, &je);
    cr_assert_not_null(d, "docs/dashboard-api.json: %s", je.text);
    return d;
}

static json_t *resolve(json_t *doc, json_t *schema)
{
    const char *ref = json_string_value(json_object_get(schema, "$ref"));
    if (!ref)
        return schema;
    cr_assert_eq(strncmp(ref, "#/components/schemas/", 21), 0, "%s", ref);
    json_t *s =
        json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"), ref + 21);
    cr_assert_not_null(s, "no schema %s", ref);
    return s;
}

/* v against schema: types, nullability, enums, the required fields of objects, recursively. */
static void validate(json_t *doc, json_t *schema, json_t *v, const char *where)
{
    schema = resolve(doc, schema);
    if (json_is_null(v)) {
        cr_assert(json_is_true(json_object_get(schema, "nullable")), "%s: null not allowed", where);
        return;
    }
    json_t *all = json_object_get(schema, "allOf"), *one;
    size_t ai;
    json_array_foreach(all, ai, one) validate(doc, one, v, where);
    const char *type = json_string_value(json_object_get(schema, "type"));
    if (!type)
        return;
    bool ok = (strcmp(type, "object") == 0 && json_is_object(v)) ||
              (strcmp(type, "array") == 0 && json_is_array(v)) ||
              (strcmp(type, "string") == 0 && json_is_string(v)) ||
              (strcmp(type, "integer") == 0 && json_is_integer(v)) ||
              (strcmp(type, "number") == 0 && json_is_number(v)) ||
              (strcmp(type, "boolean") == 0 && json_is_boolean(v));
    cr_assert(ok, "%s: not of type %s", where, type);
    json_t *en = json_object_get(schema, "enum"), *e;
    size_t i;
    if (en) {
        bool found = false;
        json_array_foreach(en, i, e) found |= json_equal(e, v);
        cr_assert(found, "%s: %s not in the enum", where, json_string_value(v));
    }
    char sub[512];
    if (json_is_array(v)) {
        json_array_foreach(v, i, e)
        {
            snprintf(sub, sizeof(sub), "%s[%zu]", where, i);
            validate(doc, json_object_get(schema, "items"), e, sub);
        }
    } else if (json_is_object(v)) {
        json_t *req_ = json_object_get(schema, "required"),
               *props = json_object_get(schema, "properties");
        json_array_foreach(req_, i, e)
        {
            cr_assert_not_null(json_object_get(v, json_string_value(e)), "%s: no field %s", where,
                               json_string_value(e));
        }
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            json_t *ps = json_object_get(props, k);
            cr_assert(ps || !props || json_object_size(props) == 0, "%s: field %s is not described",
                      where, k);
            snprintf(sub, sizeof(sub), "%s.%s", where, k);
            if (ps)
                validate(doc, ps, x, sub);
        }
    }
}

/* The 200 schema of method on path (a template of the description). */
static json_t *ok_schema(json_t *doc, const char *path, const char *method)
{
    json_t *op = json_object_get(json_object_get(json_object_get(doc, "paths"), path), method);
    cr_assert_not_null(op, "%s %s is not described", method, path);
    json_t *s = json_object_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(op, "responses"), "200"), "content"),
            "application/json"),
        "schema");
    cr_assert_not_null(s, "%s %s has no JSON 200 answer", method, path);
    return s;
}

Test(dashboard, openapi_describes_every_endpoint)
{
    json_t *doc = api_doc();
    json_t *paths = json_object_get(doc, "paths");
    for (size_t i = 0; i < vs_dash_n_endpoints; i++) {
        char m[8];
        snprintf(m, sizeof(m), "%s", vs_dash_endpoints[i].method);
        for (char *p = m; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        cr_assert_not_null(json_object_get(json_object_get(paths, vs_dash_endpoints[i].path), m),
                           "%s %s is routed but not described", vs_dash_endpoints[i].method,
                           vs_dash_endpoints[i].path);
    }
    const char *k;
    json_t *ops;
    json_object_foreach(paths, k, ops)
    {
        if (strcmp(k, "/") == 0)
            continue; /* the page */
        const char *m;
        json_t *op;
        json_object_foreach(ops, m, op)
        {
            bool routed = false;
            for (size_t i = 0; i < vs_dash_n_endpoints && !routed; i++)
                routed = strcmp(vs_dash_endpoints[i].path, k) == 0 &&
                         strcasecmp(vs_dash_endpoints[i].method, m) == 0;
            cr_assert(routed, "%s %s is described but not routed", m, k);
        }
    }
    json_decref(doc);
}

Test(dashboard, answers_follow_the_description)
{
    refuse_pending();
    json_t *doc = api_doc();
    static const char *const cases[][2] = {
        {"/api/v1/snapshot", "/api/v1/snapshot"},
        {"/api/v1/nodes/gpu-h100-1", "/api/v1/nodes/{name}"},
        {"/api/v1/nodes/cpu-1", "/api/v1/nodes/{name}"},
        {"/api/v1/pending", "/api/v1/pending"},
        {"/api/v1/pending/research/too-big", "/api/v1/pending/{namespace}/{name}"},
        {"/api/v1/pending/team-b/bad-quantity", "/api/v1/pending/{namespace}/{name}"},
        {"/api/v1/pods?q=a", "/api/v1/pods"},
        {"/api/v1/pods/research/train-llama", "/api/v1/pods/{namespace}/{name}"},
        {"/api/v1/pods/research/too-big", "/api/v1/pods/{namespace}/{name}"},
        {"/api/v1/fragmentation", "/api/v1/fragmentation"},
        {"/api/v1/health", "/api/v1/health"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct resp r = get(mport, cases[i][0]);
        cr_assert_eq(r.status, 200, "%s: %s", cases[i][0], r.body);
        json_t *d = body_json(&r);
        validate(doc, ok_schema(doc, cases[i][1], "get"), d, cases[i][0]);
        json_decref(d);
        resp_free(&r);
    }
    static const char *const posts[] = {
        "{\"shape\":{\"cards\":1,\"memMiB\":20000}}", "{\"shape\":{\"cards\":4,\"memMiB\":90000}}",
        "{\"pod\":\"{\\\"kind\\\":\\\"Pod\\\",\\\"metadata\\\":{\\\"name\\\":\\\"p\\\"},"
        "\\\"spec\\\":{\\\"containers\\\":[{\\\"name\\\":\\\"c\\\",\\\"resources\\\":{"
        "\\\"limits\\\":{\\\"nvidia.com/gpumem\\\":\\\"8Gi\\\"}}}]}}\"}"};
    for (size_t i = 0; i < sizeof(posts) / sizeof(posts[0]); i++) {
        struct resp r = req(mport, "POST", "/api/v1/whatif", NULL, "application/json", posts[i],
                            strlen(posts[i]));
        cr_assert_eq(r.status, 200, "%s: %s", posts[i], r.body);
        json_t *d = body_json(&r);
        validate(doc, ok_schema(doc, "/api/v1/whatif", "post"), d, posts[i]);
        json_decref(d);
        resp_free(&r);
    }
    json_decref(doc);
}

/* ------------------------------------------------------------------ options */

Test(dashboard_opts, base_path_and_ancestors, .timeout = 60)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct vs_service *s = start("/vgpu", "'self' https://portal.example.com", true);
    int mp = vs_service_metrics_port(s);
    struct resp r = get(mp, "/");
    cr_assert_eq(r.status, 302);
    cr_assert_str_eq(r.location, "/vgpu/");
    resp_free(&r);
    r = get(mp, "/vgpu");
    cr_assert_eq(r.status, 302);
    cr_assert_str_eq(r.location, "/vgpu/");
    resp_free(&r);
    r = get(mp, "/vgpu/");
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.ctype, "text/html; charset=utf-8");
    cr_assert_str_eq(r.csp,
                     "default-src 'self'; script-src 'self'; style-src 'self'; img-src "
                     "'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                     "form-action 'none'; frame-ancestors 'self' https://portal.example.com");
    resp_free(&r);
    r = get(mp, "/vgpu/api/v1/snapshot");
    cr_assert_eq(r.status, 200);
    resp_free(&r);
    const char *ok = "{\"shape\":{}}";
    r = req(mp, "POST", "/vgpu/api/v1/whatif", NULL, "application/json", ok, strlen(ok));
    cr_assert_eq(r.status, 200, "%s", r.body);
    resp_free(&r);
    r = get(mp, "/api/v1/snapshot");
    cr_assert_eq(r.status, 404);
    resp_free(&r);
    r = get(mp, "/metrics");
    cr_assert_eq(r.status, 200);
    resp_free(&r);
    vs_service_stop(s);
}

Test(dashboard_opts, off_and_bad_values, .timeout = 60)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct vs_service *s = start(NULL, NULL, false);
    int mp = vs_service_metrics_port(s);
    struct resp r = get(mp, "/");
    cr_assert_eq(r.status, 404);
    resp_free(&r);
    r = get(mp, "/api/v1/snapshot");
    cr_assert_eq(r.status, 404);
    resp_free(&r);
    r = get(mp, "/metrics");
    cr_assert_eq(r.status, 200);
    resp_free(&r);
    cr_assert_null(vs_service_dashboard_base(s));
    vs_service_stop(s);
    static const char *const bad[][3] = {
        {"vgpu", NULL,
         "invalid --dashboard-base-path \"vgpu\": want an absolute path of letters, digits and "
         "-._~ such as /vgpu-sched/"},
        {"/a/../b", NULL,
         "invalid --dashboard-base-path \"/a/../b\": want an absolute path of letters, digits "
         "and -._~ such as /vgpu-sched/"},
        {"/a<b>", NULL,
         "invalid --dashboard-base-path \"/a<b>\": want an absolute path of letters, digits and "
         "-._~ such as /vgpu-sched/"},
        {NULL, "'self'; script-src *",
         "invalid --dashboard-frame-ancestors \"'self'; script-src *\": want 'none', 'self' or "
         "sources like https://portal.example.com, separated by spaces"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct vs_service_config c;
        vs_service_config_defaults(&c);
        c.http_bind = "127.0.0.1:0";
        c.metrics_bind = "127.0.0.1:0";
        c.cluster = CLUSTER;
        c.dashboard_base = bad[i][0];
        c.dashboard_ancestors = bad[i][1];
        int rc;
        struct vs_errbuf eb;
        cr_assert_null(vs_service_start(&c, &rc, &eb));
        cr_assert_eq(rc, 2);
        cr_assert_str_eq(eb.msg, bad[i][2]);
    }
}
