/* test_server: the real service (store, extender, node lock, HTTPS server) started on port 0
 * against the in-repo fake API server, driven with libcurl over HTTPS. Covers the exact
 * annotations Filter writes, Bind's lock protocol and every failure path, reservation expiry,
 * follower refusal, malformed requests, and a concurrent filter+bind storm after which no card
 * may be over capacity. */
#include "fakeapi.h"
#include "serve.h"

#include "annot.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct vs_fakeapi *api;
static struct vs_service *svc;
static char tmpdir[64];
static char ca_path[128], cert_path[128], key_path[128], kubeconfig[128];

/* Throwaway CA and serving certificate for 127.0.0.1 (openssl CLI). */
static void make_certs(void)
{
    strcpy(tmpdir, "/tmp/vs-srv-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    snprintf(ca_path, sizeof(ca_path), "%s/ca.pem", tmpdir);
    snprintf(cert_path, sizeof(cert_path), "%s/tls.pem", tmpdir);
    snprintf(key_path, sizeof(key_path), "%s/tls.key", tmpdir);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
             "-days 1 -subj /CN=test-ca >/dev/null 2>&1 && "
             "openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj "
             "/CN=127.0.0.1 >/dev/null 2>&1 && "
             "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext.cnf && "
             "openssl x509 -req -in tls.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out "
             "tls.pem -days 1 -extfile ext.cnf >/dev/null 2>&1",
             tmpdir);
    cr_assert_eq(system(cmd), 0, "openssl failed");
}

static void write_kubeconfig(const char *url)
{
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", tmpdir);
    FILE *f = fopen(kubeconfig, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: c\n  "
            "cluster:\n    server: %s\ncontexts:\n- name: t\n  context:\n    cluster: c\n    "
            "user: u\nusers:\n- name: u\n  user: {}\n",
            url);
    fclose(f);
}

static const char *node_json(const char *name, int cards, int mem)
{
    static char buf[4096];
    char reg[2048] = "[";
    for (int i = 0; i < cards; i++) {
        char c[256];
        snprintf(c, sizeof(c),
                 "%s{\\\"id\\\":\\\"%s-gpu%d\\\",\\\"index\\\":%d,\\\"count\\\":10,\\\"devmem\\\":%d,"
                 "\\\"devcore\\\":100,\\\"type\\\":\\\"NVIDIA-Tesla T4\\\",\\\"health\\\":true}",
                 i ? "," : "", name, i, i, mem);
        strcat(reg, c);
    }
    strcat(reg, "]");
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"annotations\":{"
             "\"hami.io/node-nvidia-register\":\"%s\"}},\"status\":{\"allocatable\":"
             "{\"nvidia.com/gpu\":\"%d\"}}}",
             name, reg, cards * 10);
    return buf;
}

static const char *pod_json(const char *name, const char *uid, const char *mem,
                            const char *cores, const char *extra_meta)
{
    static char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
             "\"uid\":\"%s\"%s},\"spec\":{\"schedulerName\":\"hami-scheduler\",\"containers\":"
             "[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\","
             "\"nvidia.com/gpumem\":\"%s\",\"nvidia.com/gpucores\":\"%s\"}}}]},\"status\":"
             "{\"phase\":\"Pending\"}}",
             name, uid, extra_meta ? extra_meta : "", mem, cores);
    return buf;
}

static void start_service(bool leader_elect, long long ttl_ms)
{
    struct vs_service_config c;
    vs_service_config_defaults(&c);
    c.http_bind = "127.0.0.1:0";
    c.metrics_bind = "127.0.0.1:0";
    c.cert_file = cert_path;
    c.key_file = key_path;
    c.kubeconfig = kubeconfig;
    c.scheduler_name = "hami-scheduler";
    c.lock_retry_ms = 0;
    c.bind_wait_ms = 5000;
    if (ttl_ms)
        c.reservation_ttl_ms = ttl_ms;
    if (leader_elect) {
        c.leader_elect = true;
        c.lease_name = "hami-scheduler";
        c.lease_ns = "kube-system";
        c.pod_name = "sched-a";
        c.pod_ns = "kube-system";
    }
    int rc;
    struct vs_errbuf eb;
    svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "service start: %s", eb.msg);
    for (int i = 0; i < 100 && !vs_service_synced(svc); i++)
        usleep(50 * 1000);
    cr_assert(vs_service_synced(svc), "store never synced");
}

static void setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    make_certs();
    struct vs_fakeapi_opts o = {.port = 0, .quiet = true};
    api = vs_fakeapi_start(&o);
    cr_assert_not_null(api);
    write_kubeconfig(vs_fakeapi_url(api));
    vs_fakeapi_put(api, node_json("n1", 2, 15360));
    vs_fakeapi_put(api, node_json("n2", 1, 15360));
}

static void teardown(void)
{
    vs_service_stop(svc);
    svc = NULL;
    vs_fakeapi_stop(api);
    api = NULL;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
}

TestSuite(server, .init = setup, .fini = teardown, .timeout = 120);

struct body {
    char *data;
    size_t len;
};

static size_t collect(char *p, size_t sz, size_t n, void *ud)
{
    struct body *b = ud;
    char *g = realloc(b->data, b->len + sz * n + 1);
    if (!g)
        return 0;
    b->data = g;
    memcpy(b->data + b->len, p, sz * n);
    b->len += sz * n;
    b->data[b->len] = '\0';
    return sz * n;
}

/* One HTTPS request to the service; returns the status and the body (new string). */
static long call(const char *method, const char *path, const char *ctype, const char *body,
                 size_t len, char **out)
{
    CURL *h = curl_easy_init();
    char url[256];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", vs_service_port(svc), path);
    struct body b = {0};
    struct curl_slist *hdr = NULL;
    if (ctype) {
        char ct[128];
        snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
        hdr = curl_slist_append(hdr, ct);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca_path);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
    *out = b.data ? b.data : strdup("");
    return status;
}

static json_t *post_json(const char *path, json_t *req, long *status)
{
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char *out;
    *status = call("POST", path, "application/json", text, strlen(text), &out);
    free(text);
    json_error_t je;
    json_t *r = json_loads(out, 0, &je);
    cr_assert_not_null(r, "not JSON: %s", out);
    free(out);
    return r;
}

/* Filter the stored pod on the given candidates; returns the ExtenderFilterResult. */
static json_t *filter(const char *name, const char *const *cands, size_t n)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", name);
    cr_assert_not_null(pod);
    json_t *names = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(names, json_string(cands[i]));
    long st;
    json_t *r = post_json("/filter", json_pack("{s:o,s:n,s:o}", "Pod", pod, "Nodes", "NodeNames",
                                               names),
                          &st);
    cr_assert_eq(st, 200);
    return r;
}

static const char *bind_pod(const char *name, const char *uid, const char *node, char *err,
                            size_t errlen)
{
    long st;
    json_t *r = post_json("/bind",
                          json_pack("{s:s,s:s,s:s,s:s}", "PodName", name, "PodNamespace",
                                    "default", "PodUID", uid, "Node", node),
                          &st);
    cr_assert_eq(st, 200);
    snprintf(err, errlen, "%s", json_string_value(json_object_get(r, "Error")));
    json_decref(r);
    return err;
}

static const char *anno(json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

/* Waits until the pod carries annotation key (the async patch landed). */
static json_t *wait_anno(const char *kind, const char *ns, const char *name, const char *key)
{
    for (int i = 0; i < 100; i++) {
        json_t *o = vs_fakeapi_get(api, kind, ns, name);
        if (o && anno(o, key))
            return o;
        json_decref(o);
        usleep(20 * 1000);
    }
    cr_assert_fail("%s %s never got %s", kind, name, key);
    return NULL;
}

Test(server, filter_writes_decision_and_bind_takes_lock)
{
    start_service(false, 0);
    vs_fakeapi_put(api, pod_json("p1", "uid-p1", "3000", "30", NULL));
    const char *cands[] = {"n1", "n2"};
    json_t *r = filter("p1", cands, 2);
    char *text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
    /* binpack default: both nodes idle (score 0), first candidate wins; spread card policy:
     * the later idle card is tried first. */
    cr_assert_str_eq(text, "{\"Nodes\":null,\"NodeNames\":[\"n1\"],\"FailedNodes\":null,"
                           "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    free(text);
    json_decref(r);
    json_t *pod = wait_anno("Pod", "default", "p1", VS_ANNO_ALLOCATED);
    cr_assert_str_eq(anno(pod, VS_ANNO_VGPU_NODE), "n1");
    cr_assert_str_eq(anno(pod, VS_ANNO_ALLOCATED), "n1-gpu1,NVIDIA,3000,30:;");
    cr_assert_str_eq(anno(pod, VS_ANNO_TO_ALLOCATE), "n1-gpu1,NVIDIA,3000,30:;");
    cr_assert_not_null(anno(pod, VS_ANNO_VGPU_TIME));
    cr_assert_null(anno(pod, VS_ANNO_MIG_ALLOC));
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(pod, "metadata"), "labels"),
                         VS_LABEL_VGPU_NODE)),
                     "n1");
    json_decref(pod);
    char err[512];
    cr_assert_str_eq(bind_pod("p1", "uid-p1", "n1", err, sizeof(err)), "");
    pod = vs_fakeapi_get(api, "Pod", "default", "p1");
    cr_assert_str_eq(anno(pod, VS_ANNO_BIND_PHASE), "allocating");
    cr_assert_not_null(anno(pod, VS_ANNO_BIND_TIME));
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
                     "n1");
    json_decref(pod);
    /* The lock stays for the device plugin, in HAMi's format. */
    json_t *node = vs_fakeapi_get(api, "Node", NULL, "n1");
    const char *lock = anno(node, VS_ANNO_LOCK);
    cr_assert_not_null(lock);
    struct vs_lock l;
    struct vs_errbuf eb;
    cr_assert_eq(vs_annot_parse_lock(lock, &l, &eb), VS_OK);
    cr_assert_str_eq(l.ns, "default");
    cr_assert_str_eq(l.name, "p1");
    vs_lock_cleanup(&l);
    json_decref(node);
}

Test(server, no_fit_reasons_and_lock_contention)
{
    start_service(false, 0);
    vs_fakeapi_put(api, pod_json("big", "uid-big", "20000", "10", NULL));
    const char *cands[] = {"n1", "n2", "ghost"};
    json_t *r = filter("big", cands, 3);
    char *text = json_dumps(json_object_get(r, "FailedNodes"), JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(text, "{\"ghost\":\"node unregistered\",\"n1\":\"2/2 "
                           "CardInsufficientMemory\",\"n2\":\"1/1 CardInsufficientMemory\"}");
    cr_assert(json_is_null(json_object_get(r, "NodeNames")));
    free(text);
    json_decref(r);
    /* A live pod holds n2's lock: another bind to n2 is refused with HAMi's message. */
    vs_fakeapi_put(api, pod_json("owner", "uid-owner", "100", "1", NULL));
    char lockv[256];
    char *v = vs_annot_format_lock(time(NULL), "default", "owner");
    snprintf(lockv, sizeof(lockv), "%s", v);
    free(v);
    json_t *n2 = vs_fakeapi_get(api, "Node", NULL, "n2");
    json_object_set_new(json_object_get(json_object_get(n2, "metadata"), "annotations"),
                        VS_ANNO_LOCK, json_string(lockv));
    char *n2t = json_dumps(n2, JSON_COMPACT);
    vs_fakeapi_put(api, n2t);
    free(n2t);
    json_decref(n2);
    vs_fakeapi_put(api, pod_json("p2", "uid-p2", "1000", "10", NULL));
    const char *only2[] = {"n2"};
    r = filter("p2", only2, 1);
    json_decref(r);
    wait_anno("Pod", "default", "p2", VS_ANNO_ALLOCATED);
    char err[512];
    cr_assert_str_eq(bind_pod("p2", "uid-p2", "n2", err, sizeof(err)),
                     "node n2 has been locked within 5m0s: node lock contention");
    n2 = vs_fakeapi_get(api, "Node", NULL, "n2");
    cr_assert_str_eq(anno(n2, VS_ANNO_LOCK), lockv); /* untouched */
    json_decref(n2);
    /* The owner goes away: its lock is broken and the bind succeeds. */
    vs_fakeapi_delete(api, "Pod", "default", "owner");
    cr_assert_str_eq(bind_pod("p2", "uid-p2", "n2", err, sizeof(err)), "");
    n2 = vs_fakeapi_get(api, "Node", NULL, "n2");
    cr_assert(strstr(anno(n2, VS_ANNO_LOCK), ",default,p2") != NULL);
    json_decref(n2);
}

Test(server, failed_binding_releases_lock)
{
    start_service(false, 0);
    vs_fakeapi_put(api, pod_json("p3", "uid-p3", "1000", "10", NULL));
    const char *cands[] = {"n2"};
    json_decref(filter("p3", cands, 1));
    wait_anno("Pod", "default", "p3", VS_ANNO_ALLOCATED);
    vs_fakeapi_fault(api, "POST", "/api/v1/namespaces/default/pods/p3/binding", 500, 1);
    char err[512];
    bind_pod("p3", "uid-p3", "n2", err, sizeof(err));
    cr_assert(strncmp(err, "bind pod default/p3 to n2: POST "
                           "/api/v1/namespaces/default/pods/p3/binding: 500",
                      strlen("bind pod default/p3 to n2: POST "
                             "/api/v1/namespaces/default/pods/p3/binding: 500")) == 0,
              "%s", err);
    json_t *n2 = vs_fakeapi_get(api, "Node", NULL, "n2");
    cr_assert_null(anno(n2, VS_ANNO_LOCK), "lock left behind: %s", anno(n2, VS_ANNO_LOCK));
    json_decref(n2);
    /* kube-scheduler retries: the bind now succeeds. */
    cr_assert_str_eq(bind_pod("p3", "uid-p3", "n2", err, sizeof(err)), "");
}

Test(server, reservation_expires)
{
    start_service(false, 1000);
    /* A pod that passes Filter but never binds and whose patch never lands (the pod is gone
     * from the API by the time the patch is sent). */
    vs_fakeapi_put(api, pod_json("ghost", "uid-ghost", "15000", "10", NULL));
    const char *cands[] = {"n2"};
    json_t *pj = vs_fakeapi_get(api, "Pod", "default", "ghost");
    vs_fakeapi_delete(api, "Pod", "default", "ghost");
    long st;
    json_t *r = post_json("/filter",
                          json_pack("{s:o,s:[s]}", "Pod", pj, "NodeNames", cands[0]), &st);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n2");
    json_decref(r);
    /* The failed patch drops the reservation at once: capacity is back. */
    vs_fakeapi_put(api, pod_json("next", "uid-next", "15000", "10", NULL));
    for (int i = 0; i < 50; i++) {
        r = filter("next", cands, 1);
        bool ok = json_array_size(json_object_get(r, "NodeNames")) == 1;
        json_decref(r);
        if (ok)
            return;
        usleep(100 * 1000);
    }
    cr_assert_fail("capacity of a failed reservation never returned");
}

Test(server, unbound_reservation_ttl)
{
    start_service(false, 1000);
    vs_fakeapi_put(api, pod_json("a", "uid-a", "15000", "10", NULL));
    vs_fakeapi_put(api, pod_json("b", "uid-b", "15000", "10", NULL));
    const char *cands[] = {"n2"};
    json_t *r = filter("a", cands, 1);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n2");
    json_decref(r);
    json_decref(wait_anno("Pod", "default", "a", VS_ANNO_ALLOCATED));
    r = filter("b", cands, 1);
    cr_assert(json_is_null(json_object_get(r, "NodeNames")), "capacity double-booked");
    json_decref(r);
    /* Pod a is never bound: after the TTL its capacity returns ... */
    usleep(4000 * 1000);
    r = filter("b", cands, 1);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n2");
    json_decref(r);
    /* ... and a late bind of a is refused instead of over-committing the card. */
    char err[512];
    cr_assert_str_eq(bind_pod("a", "uid-a", "n2", err, sizeof(err)),
                     "the reservation of pod default/a expired before it was bound; the pod "
                     "will be filtered again");
}

Test(server, follower_refuses)
{
    vs_fakeapi_put(api, "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\","
                        "\"metadata\":{\"name\":\"hami-scheduler\",\"namespace\":\"kube-system\"},"
                        "\"spec\":{\"holderIdentity\":\"sched-b_1234\",\"leaseDurationSeconds\":15}}");
    start_service(true, 0);
    vs_fakeapi_put(api, pod_json("p", "uid-p", "1000", "10", NULL));
    const char *cands[] = {"n1"};
    json_t *r = filter("p", cands, 1);
    cr_assert_str_eq(json_string_value(json_object_get(r, "Error")),
                     "this vgpu-sched replica is not the leader and does not schedule");
    json_decref(r);
    char *out;
    cr_assert_eq(call("GET", "/readyz", NULL, NULL, 0, &out), 503);
    free(out);
    cr_assert_eq(call("GET", "/healthz", NULL, NULL, 0, &out), 200);
    free(out);
    /* The lease moves to this pod: it schedules. */
    vs_fakeapi_put(api, "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\","
                        "\"metadata\":{\"name\":\"hami-scheduler\",\"namespace\":\"kube-system\"},"
                        "\"spec\":{\"holderIdentity\":\"sched-a_5678\",\"leaseDurationSeconds\":15}}");
    for (int i = 0; i < 50; i++) {
        r = filter("p", cands, 1);
        bool ok = json_array_size(json_object_get(r, "NodeNames")) == 1;
        json_decref(r);
        if (ok)
            return;
        usleep(100 * 1000);
    }
    cr_assert_fail("never became leader");
}

Test(server, malformed_requests)
{
    start_service(false, 0);
    char *out;
    cr_assert_eq(call("POST", "/filter", "application/json", "{nope", 5, &out), 400);
    cr_assert(strstr(out, "invalid ExtenderArgs") != NULL, "%s", out);
    free(out);
    cr_assert_eq(call("POST", "/filter", "application/json", "{\"NodeNames\":[]}", 16, &out), 400);
    cr_assert_str_eq(out, "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":null,"
                          "\"FailedAndUnresolvableNodes\":null,\"Error\":\"extender args missing "
                          "pod\"}");
    free(out);
    cr_assert_eq(call("POST", "/bind", "application/json", "[]", 2, &out), 400);
    free(out);
    cr_assert_eq(call("GET", "/filter", NULL, NULL, 0, &out), 405);
    cr_assert_str_eq(out, "{\"error\":\"method GET not allowed on /filter\"}");
    free(out);
    cr_assert_eq(call("GET", "/nope", NULL, NULL, 0, &out), 404);
    free(out);
    cr_assert_eq(call("POST", "/filter", "text/plain", "{}", 2, &out), 415);
    free(out);
    size_t big = 9u << 20;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    cr_assert_eq(call("POST", "/filter", "application/json", huge, big, &out), 413);
    free(out);
    free(huge);
    /* Still serving. */
    cr_assert_eq(call("GET", "/healthz", NULL, NULL, 0, &out), 200);
    free(out);
    /* Case-insensitive keys and a pod without GPU requests: NodeNames pass through. */
    const char *plain = "{\"pod\":{\"metadata\":{\"name\":\"x\",\"namespace\":\"d\"},\"spec\":"
                        "{\"containers\":[{\"name\":\"c\"}]}},\"nodenames\":[\"a\",\"b\"],"
                        "\"Nodes\":null}";
    cr_assert_eq(call("POST", "/filter", "application/json", plain, strlen(plain), &out), 200);
    cr_assert_str_eq(out, "{\"Nodes\":null,\"NodeNames\":[\"a\",\"b\"],\"FailedNodes\":null,"
                          "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    free(out);
}

/* ---- concurrency ---- */

#define N_PODS 240
#define N_THREADS 6

static void emulate_device_plugin(const char *node)
{
    /* The plugin releases the lock after allocation (§6.4). */
    for (int attempt = 0; attempt < 20; attempt++) {
        json_t *n = vs_fakeapi_get(api, "Node", NULL, node);
        json_t *ann = json_object_get(json_object_get(n, "metadata"), "annotations");
        if (!json_object_get(ann, VS_ANNO_LOCK)) {
            json_decref(n);
            return;
        }
        json_object_del(ann, VS_ANNO_LOCK);
        char *t = json_dumps(n, JSON_COMPACT);
        vs_fakeapi_put(api, t);
        free(t);
        json_decref(n);
        return;
    }
}

static int bound_count, refused_count;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;

static void *storm(void *arg)
{
    long t = (long)arg;
    const char *cands[] = {"n1", "n2"};
    for (int i = (int)t; i < N_PODS; i += N_THREADS) {
        char name[32];
        snprintf(name, sizeof(name), "s%d", i);
        bool done = false;
        for (int attempt = 0; attempt < 40 && !done; attempt++) {
            json_t *r = filter(name, cands, 2);
            const char *node = json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0));
            if (!node) {
                cr_assert_not_null(json_object_get(r, "FailedNodes"));
                json_decref(r);
                pthread_mutex_lock(&count_mu);
                refused_count++;
                pthread_mutex_unlock(&count_mu);
                done = true;
                break;
            }
            char nodebuf[32], err[512], uid[40];
            snprintf(nodebuf, sizeof(nodebuf), "%s", node);
            json_decref(r);
            snprintf(uid, sizeof(uid), "uid-%s", name);
            bind_pod(name, uid, nodebuf, err, sizeof(err));
            if (!*err) {
                emulate_device_plugin(nodebuf);
                pthread_mutex_lock(&count_mu);
                bound_count++;
                pthread_mutex_unlock(&count_mu);
                done = true;
            } else {
                usleep(10 * 1000); /* contention: kube-scheduler would retry after backoff */
            }
        }
        cr_assert(done, "pod %s neither bound nor refused", name);
    }
    return NULL;
}

Test(server, concurrent_filter_and_bind)
{
    start_service(false, 0);
    for (int i = 0; i < N_PODS; i++) {
        char name[32], uid[40];
        snprintf(name, sizeof(name), "s%d", i);
        snprintf(uid, sizeof(uid), "uid-%s", name);
        vs_fakeapi_put(api, pod_json(name, uid, i % 3 ? "1000" : "2500", i % 2 ? "10" : "5",
                                     NULL));
    }
    pthread_t th[N_THREADS];
    for (long t = 0; t < N_THREADS; t++)
        pthread_create(&th[t], NULL, storm, (void *)t);
    for (int t = 0; t < N_THREADS; t++)
        pthread_join(th[t], NULL);
    cr_assert_eq(bound_count + refused_count, N_PODS);
    cr_assert_gt(bound_count, 0);
    /* Independent check from the API objects: per card, what bound pods were given. */
    struct {
        char uuid[32];
        long mem, cores, slots;
    } cards[8] = {{{0}}};
    int nc = 0;
    for (int i = 0; i < N_PODS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "s%d", i);
        json_t *p = vs_fakeapi_get(api, "Pod", "default", name);
        const char *node =
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        const char *alloc = anno(p, VS_ANNO_ALLOCATED);
        if (node && alloc) {
            struct vs_pod_devs d;
            struct vs_errbuf eb;
            cr_assert_eq(vs_annot_parse_devices("x", alloc, &d, &eb), VS_OK);
            for (size_t c = 0; c < d.n; c++) {
                for (size_t k = 0; k < d.ctrs[c].n; k++) {
                    int j;
                    for (j = 0; j < nc; j++)
                        if (strcmp(cards[j].uuid, d.ctrs[c].devs[k].uuid) == 0)
                            break;
                    if (j == nc)
                        snprintf(cards[nc++].uuid, sizeof(cards[0].uuid), "%s",
                                 d.ctrs[c].devs[k].uuid);
                    cards[j].mem += d.ctrs[c].devs[k].usedmem;
                    cards[j].cores += d.ctrs[c].devs[k].usedcores;
                    cards[j].slots++;
                }
            }
            vs_pod_devs_cleanup(&d);
        }
        json_decref(p);
    }
    int total_slots = 0;
    for (int j = 0; j < nc; j++) {
        cr_assert_leq(cards[j].mem, 15360, "%s over memory: %ld", cards[j].uuid, cards[j].mem);
        cr_assert_leq(cards[j].cores, 100, "%s over cores: %ld", cards[j].uuid, cards[j].cores);
        cr_assert_leq(cards[j].slots, 10, "%s over slots: %ld", cards[j].uuid, cards[j].slots);
        total_slots += (int)cards[j].slots;
    }
    cr_assert_eq(total_slots, bound_count);
}
