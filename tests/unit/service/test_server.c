/* test_server: the real service (store, extender, node lock, HTTPS server) started on port 0
 * against the in-repo fake API server, driven with libcurl over HTTPS. Covers the exact
 * annotations Filter writes, Bind's lock protocol and every failure path, reservation expiry,
 * follower refusal and malformed requests. The concurrent filter+bind storm lives in
 * tests/stress/stress_service.c (a plain program, so it can also run under TSan). */
#include "fakeapi.h"
#include "harness.h"
#include "serve.h"

#include "annot.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static struct vs_fakeapi *api;
static struct vs_service *svc;
static struct vs_harness h;
static long long retry_ms;   /* --node-lock-retry-timeout of start_service (0: fail fast) */
static bool patch_at_filter; /* --patch-at-filter of start_service */

static void put(char *json)
{
    cr_assert_neq(vs_fakeapi_put(api, json), 0, "fake API refused %s", json);
    free(json);
}

static void start_service(bool leader_elect, long long ttl_ms)
{
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.lock_retry_ms = retry_ms;
    c.patch_at_filter = patch_at_filter;
    if (ttl_ms)
        c.reservation_ttl_ms = ttl_ms;
    if (leader_elect) {
        c.leader_elect = true;
        c.lease_name = "hami-scheduler";
        c.lease_ns = "kube-system";
        c.pod_name = "sched-a";
        c.pod_ns = "kube-system";
    }
    struct vs_errbuf eb;
    svc = vs_harness_service_start(&c, &eb);
    cr_assert_not_null(svc, "service start: %s", eb.msg);
}

static void setup(void)
{
    patch_at_filter = false;
    api = vs_harness_fakeapi(&h);
    put(vs_harness_node("n1", 2, 15360));
    put(vs_harness_node("n2", 1, 15360));
}

static void teardown(void)
{
    vs_service_stop(svc);
    svc = NULL;
    vs_fakeapi_stop(api);
    api = NULL;
    vs_harness_cleanup(&h);
}

TestSuite(server, .init = setup, .fini = teardown, .timeout = 120);

static long call(const char *method, const char *path, const char *ctype, const char *body,
                 size_t len, char **out)
{
    long st = vs_harness_call(&h, vs_service_port(svc), method, path, ctype, body, len, out);
    cr_assert_neq(st, 0, "%s %s: %s", method, path, *out);
    return st;
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
    json_t *r = post_json("/filter",
                          json_pack("{s:o,s:n,s:o}", "Pod", pod, "Nodes", "NodeNames", names), &st);
    cr_assert_eq(st, 200);
    return r;
}

static const char *bind_pod(const char *name, const char *uid, const char *node, char *err,
                            size_t errlen)
{
    long st;
    json_t *r = post_json("/bind",
                          json_pack("{s:s,s:s,s:s,s:s}", "PodName", name, "PodNamespace", "default",
                                    "PodUID", uid, "Node", node),
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

/* Waits until the object carries annotation key, with value `want` unless that is NULL (the
 * async patch landed). */
static json_t *wait_anno_value(const char *kind, const char *ns, const char *name, const char *key,
                               const char *want, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        json_t *o = vs_fakeapi_get(api, kind, ns, name);
        const char *v = o ? anno(o, key) : NULL;
        if (v && (!want || strcmp(v, want) == 0))
            return o;
        json_decref(o);
        usleep(20 * 1000);
    }
    cr_assert_fail("%s %s never got %s=%s", kind, name, key, want ? want : "*");
    return NULL;
}

static json_t *wait_anno_ms(const char *kind, const char *ns, const char *name, const char *key,
                            int timeout_ms)
{
    return wait_anno_value(kind, ns, name, key, NULL, timeout_ms);
}

static json_t *wait_anno(const char *kind, const char *ns, const char *name, const char *key)
{
    return wait_anno_ms(kind, ns, name, key, 2000);
}

/* Waits (10 s at most) for an Event in namespace default with this reason and message. */
static void wait_event(const char *reason, const char *message)
{
    cr_assert(vs_harness_wait_event(&h, vs_fakeapi_port(api), reason, message),
              "no %s event \"%s\"", reason, message);
}

/* The lock stays for the device plugin, in HAMi's format, owned by default/<name>. */
static void assert_locked_by(const char *node_name, const char *pod_name)
{
    json_t *node = vs_fakeapi_get(api, "Node", NULL, node_name);
    const char *lock = anno(node, VS_ANNO_LOCK);
    cr_assert_not_null(lock);
    struct vs_lock l;
    struct vs_errbuf eb;
    cr_assert_eq(vs_annot_parse_lock(lock, &l, &eb), VS_OK);
    cr_assert_str_eq(l.ns, "default");
    cr_assert_str_eq(l.name, pod_name);
    vs_lock_cleanup(&l);
    json_decref(node);
}

static const char *label(json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), key));
}

/* The decision's annotations and label as HAMi writes them for p1 on n1 (n1's later idle card:
 * binpack default, both nodes idle, first candidate wins; spread card policy). */
static void assert_decision_of_p1(json_t *pod)
{
    cr_assert_str_eq(anno(pod, VS_ANNO_VGPU_NODE), "n1");
    cr_assert_str_eq(anno(pod, VS_ANNO_ALLOCATED), "n1-gpu1,NVIDIA,3000,30:;");
    cr_assert_str_eq(anno(pod, VS_ANNO_TO_ALLOCATE), "n1-gpu1,NVIDIA,3000,30:;");
    cr_assert_not_null(anno(pod, VS_ANNO_VGPU_TIME));
    cr_assert_null(anno(pod, VS_ANNO_MIG_ALLOC));
    cr_assert_str_eq(label(pod, VS_LABEL_VGPU_NODE), "n1");
}

static void filter_p1_onto_n1(void)
{
    put(vs_harness_pod("p1", "uid-p1", "3000", "30"));
    const char *cands[] = {"n1", "n2"};
    json_t *r = filter("p1", cands, 2);
    char *text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_assert_str_eq(text, "{\"Nodes\":null,\"NodeNames\":[\"n1\"],\"FailedNodes\":null,"
                           "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    free(text);
    json_decref(r);
    /* HAMi's FilteringSucceed: every fitting node with its score (both idle). */
    wait_event("FilteringSucceed",
               "find fit node(n1), 0 nodes not fit, 2 nodes fit(n1:0.00,n2:0.00)");
}

/* Binds p1 to n1 and checks the bound pod: the decision of p1, bind-phase and bind-time, the
 * node, and n1 locked by p1. Returns the pod (the caller's). */
static json_t *bind_p1_onto_n1(void)
{
    char err[512];
    cr_assert_str_eq(bind_pod("p1", "uid-p1", "n1", err, sizeof(err)), "");
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "p1");
    assert_decision_of_p1(pod);
    cr_assert_str_eq(anno(pod, VS_ANNO_BIND_PHASE), "allocating");
    cr_assert_not_null(anno(pod, VS_ANNO_BIND_TIME));
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
                     "n1");
    assert_locked_by("n1", "p1");
    return pod;
}

/* By default Filter writes nothing: its decision rides in the Binding (annotations and label),
 * which the API server copies onto the pod with spec.nodeName and bind-phase; Bind takes the
 * node lock. No pod PATCH at all, and Bind reads no pod. */
Test(server, filter_writes_nothing_and_the_binding_carries_the_decision)
{
    start_service(false, 0);
    vs_fakeapi_reset_counts(api);
    filter_p1_onto_n1(); /* its Event is posted: any patch would have been queued before it */
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "p1");
    cr_assert_null(anno(pod, VS_ANNO_VGPU_NODE));
    cr_assert_null(anno(pod, VS_ANNO_ALLOCATED));
    cr_assert_null(label(pod, VS_LABEL_VGPU_NODE));
    json_decref(pod);
    pod = bind_p1_onto_n1();
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/namespaces/default/pods/p1"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/namespaces/default/pods/p1"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/pods/p1/binding"), 1);
    /* The decision's removal of a MIG record the pod never had does not ride along. */
    cr_assert_null(json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                                   VS_ANNO_MIG_ALLOC));
    json_decref(pod);
}

/* A pod carrying a stale MIG record (an earlier Filter patch left it) must lose it, and a
 * Binding's annotations only add: that pod is patched at Filter, as HAMi does, and its Bind
 * reads the patched pod. */
Test(server, a_decision_removing_a_stale_annotation_is_patched_at_filter)
{
    start_service(false, 0);
    char *pj = vs_harness_pod("p1", "uid-p1", "3000", "30");
    json_t *o = json_loads(pj, 0, NULL);
    free(pj);
    json_t *md = json_object_get(o, "metadata");
    if (!json_object_get(md, "annotations"))
        json_object_set_new(md, "annotations", json_object());
    json_object_set_new(json_object_get(md, "annotations"), VS_ANNO_MIG_ALLOC,
                        json_string("[{\"UUID\":\"stale\"}]"));
    put(json_dumps(o, JSON_COMPACT));
    json_decref(o);
    const char *cands[] = {"n1", "n2"};
    json_decref(filter("p1", cands, 2));
    json_t *pod = wait_anno("Pod", "default", "p1", VS_ANNO_ALLOCATED);
    assert_decision_of_p1(pod);
    cr_assert_null(anno(pod, VS_ANNO_MIG_ALLOC), "stale MIG record kept: %s",
                   anno(pod, VS_ANNO_MIG_ALLOC));
    json_decref(pod);
    json_decref(bind_p1_onto_n1());
}

/* An API server that does not copy a Binding's labels (before 1.35, or PodTopologyLabelsAdmission
 * off): once the pod watch shows the pod bound without hami.io/vgpu-node, one label patch. */
Test(server, the_label_is_patched_when_the_binding_did_not_carry_it)
{
    start_service(false, 0);
    vs_fakeapi_binding_labels(api, false);
    vs_fakeapi_reset_counts(api);
    filter_p1_onto_n1();
    char err[512];
    cr_assert_str_eq(bind_pod("p1", "uid-p1", "n1", err, sizeof(err)), "");
    json_t *pod = NULL;
    for (int waited = 0; waited <= 5000; waited += 20) {
        json_decref(pod);
        pod = vs_fakeapi_get(api, "Pod", "default", "p1");
        if (label(pod, VS_LABEL_VGPU_NODE))
            break;
        usleep(20 * 1000);
    }
    assert_decision_of_p1(pod);
    json_decref(pod);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/namespaces/default/pods/p1"), 1);
}

/* --patch-at-filter: HAMi's way — Filter patches the decision onto the pod, Bind waits for that
 * patch and binds with bind-phase only. */
Test(server, patch_at_filter_writes_the_decision_at_filter)
{
    patch_at_filter = true;
    start_service(false, 0);
    filter_p1_onto_n1();
    json_t *pod = wait_anno("Pod", "default", "p1", VS_ANNO_ALLOCATED);
    assert_decision_of_p1(pod);
    cr_assert_null(anno(pod, VS_ANNO_BIND_PHASE));
    json_decref(pod);
    json_decref(bind_p1_onto_n1());
}

/* A request the decoder's fast path leaves to the general one (an extra member): the same
 * answer and the same FilteringSucceed wording. */
Test(server, filter_general_decode_path)
{
    start_service(false, 0);
    put(vs_harness_pod("p2", "uid-p2", "1000", "10"));
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "p2");
    long st;
    json_t *r = post_json(
        "/filter",
        json_pack("{s:o,s:[s,s,s],s:b}", "Pod", pod, "NodeNames", "n2", "ghost", "n1", "Extra", 1),
        &st);
    cr_assert_eq(st, 200);
    char *text = json_dumps(json_object_get(r, "NodeNames"), JSON_COMPACT);
    cr_assert_str_eq(text, "[\"n2\"]");
    free(text);
    json_decref(r);
    wait_event("FilteringSucceed",
               "find fit node(n2), 1 nodes not fit, 2 nodes fit(n2:0.00,n1:0.00)");
}

Test(server, no_fit_reasons_and_lock_contention)
{
    start_service(false, 0);
    put(vs_harness_pod("big", "uid-big", "20000", "10"));
    const char *cands[] = {"n1", "n2", "ghost"};
    json_t *r = filter("big", cands, 3);
    char *text = json_dumps(json_object_get(r, "FailedNodes"), JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(text, "{\"ghost\":\"node unregistered\",\"n1\":\"2/2 "
                           "CardInsufficientMemory\",\"n2\":\"1/1 CardInsufficientMemory\"}");
    cr_assert(json_is_null(json_object_get(r, "NodeNames")));
    free(text);
    json_decref(r);
    /* HAMi's FilteringFailed events: one per reason word, then the summary. */
    const char *want[] = {"2 nodes CardInsufficientMemory(n1,n2)",
                          "no available node, 3 nodes do not meet"};
    for (size_t w = 0; w < 2; w++)
        wait_event("FilteringFailed", want[w]);
    /* A live pod holds n2's lock: another bind to n2 is refused with HAMi's message. */
    put(vs_harness_pod("owner", "uid-owner", "100", "1"));
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
    put(vs_harness_pod("p2", "uid-p2", "1000", "10"));
    const char *only2[] = {"n2"};
    r = filter("p2", only2, 1);
    json_decref(r);
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
    put(vs_harness_pod("p3", "uid-p3", "1000", "10"));
    const char *cands[] = {"n2"};
    json_decref(filter("p3", cands, 1));
    vs_fakeapi_fault(api, "POST", "/api/v1/namespaces/default/pods/p3/binding", 500, 1);
    char err[512];
    bind_pod("p3", "uid-p3", "n2", err, sizeof(err));
    cr_assert(strncmp(err,
                      "bind pod default/p3 to n2: POST "
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

/* Filters pod `name` on n2 alone until Filter places it there (the service learns of capacity
 * freed from its watch); fails after 5 s. */
static void wait_fits_n2(const char *name)
{
    const char *cands[] = {"n2"};
    for (int waited = 0; waited <= 5000; waited += 50) {
        json_t *r = filter(name, cands, 1);
        const char *got = json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0));
        bool ok = got && strcmp(got, "n2") == 0;
        json_decref(r);
        if (ok)
            return;
        usleep(50 * 1000);
    }
    cr_assert_fail("%s never fit on n2", name);
}

/* A pod deleted after its Filter: the DELETED event frees its reservation (the TTL is the
 * default 300 s, so nothing else can). kube-scheduler may filter a pod it had begun to schedule
 * after the deletion (e2e soak: refused pods retried while the wave deleted them): that Filter
 * is refused and reserves nothing, so the capacity stays free. */
Test(server, reservation_of_a_deleted_pod_is_freed)
{
    start_service(false, 0);
    put(vs_harness_pod("ghost", "uid-ghost", "15000", "10"));
    const char *cands[] = {"n2"};
    json_t *pj = vs_fakeapi_get(api, "Pod", "default", "ghost");
    long st;
    json_t *r =
        post_json("/filter", json_pack("{s:O,s:[s]}", "Pod", pj, "NodeNames", cands[0]), &st);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n2");
    json_decref(r);
    vs_fakeapi_delete(api, "Pod", "default", "ghost");
    put(vs_harness_pod("next", "uid-next", "15000", "10"));
    wait_fits_n2("next"); /* the deletion was seen */

    r = post_json("/filter", json_pack("{s:o,s:[s]}", "Pod", pj, "NodeNames", cands[0]), &st);
    cr_assert_eq(st, 200);
    char *text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_assert_str_eq(text, "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":null,"
                           "\"FailedAndUnresolvableNodes\":null,"
                           "\"Error\":\"pod default/ghost was deleted\"}");
    free(text);
    json_decref(r);
    r = filter("next", cands, 1); /* ghost holds nothing */
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n2");
    json_decref(r);
}

Test(server, unbound_reservation_ttl)
{
    start_service(false, 1000);
    put(vs_harness_pod("a", "uid-a", "15000", "10"));
    put(vs_harness_pod("b", "uid-b", "15000", "10"));
    const char *cands[] = {"n2"};
    json_t *r = filter("a", cands, 1);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n2");
    json_decref(r);
    r = filter("b", cands, 1);
    cr_assert(json_is_null(json_object_get(r, "NodeNames")), "capacity double-booked");
    json_decref(r);
    /* Pod a is never bound: after the TTL (1 s) its capacity returns ... */
    bool placed = false;
    for (int waited = 0; waited <= 10000 && !placed; waited += 100) {
        r = filter("b", cands, 1);
        const char *got = json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0));
        placed = got != NULL;
        if (placed)
            cr_assert_str_eq(got, "n2");
        json_decref(r);
        if (!placed)
            usleep(100 * 1000);
    }
    cr_assert(placed, "a's reservation never expired");
    /* ... and a late bind of a is refused instead of over-committing the card. */
    char err[512];
    cr_assert_str_eq(bind_pod("a", "uid-a", "n2", err, sizeof(err)),
                     "the reservation of pod default/a is gone; the pod will be filtered again");
}

Test(server, follower_refuses)
{
    vs_fakeapi_put(api,
                   "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\","
                   "\"metadata\":{\"name\":\"hami-scheduler\",\"namespace\":\"kube-system\"},"
                   "\"spec\":{\"holderIdentity\":\"sched-b_1234\",\"leaseDurationSeconds\":15}}");
    start_service(true, 0);
    put(vs_harness_pod("p", "uid-p", "1000", "10"));
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
    vs_fakeapi_put(api,
                   "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\","
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

Test(server, metrics_after_filter)
{
    start_service(false, 0);
    put(vs_harness_pod("m1", "uid-m1", "3000", "30"));
    const char *cands[] = {"n2"};
    json_decref(filter("m1", cands, 1));
    struct vs_harness plain = h;
    plain.scheme = "http";
    char *out;
    cr_assert_eq(vs_harness_call(&plain, vs_service_metrics_port(svc), "GET", "/metrics", NULL,
                                 NULL, 0, &out),
                 200);
    cr_assert(strstr(out, "hami_gpu_memory_allocated_bytes{node=\"n2\",device_uuid=\"n2-gpu0\","
                          "device_index=\"0\",device_cores=\"100\",device_type=\"NVIDIA-Tesla "
                          "T4\",zone=\"vGPU\"} 3145728000\n"),
              "%s", out);
    cr_assert(strstr(out, "vgpu_sched_filter_total{result=\"scheduled\"} 1\n"), "%s", out);
    cr_assert(strstr(out, "vgpu_sched_filter_duration_seconds_count 1\n"), "%s", out);
    free(out);
}

Test(server, tls_certificate_rotation)
{
    start_service(false, 0);
    char *out;
    cr_assert_eq(call("GET", "/healthz", NULL, NULL, 0, &out), 200);
    free(out);
    /* A new CA and certificate replace the files, as a rotated Secret does. */
    vs_harness_sh(&h, "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca2.key -out ca2.pem "
                      "-days 1 -subj /CN=test-ca2 && openssl req -newkey rsa:2048 -nodes "
                      "-keyout tls2.key -out tls2.csr -subj /CN=127.0.0.1 && openssl x509 -req "
                      "-in tls2.csr -CA ca2.pem -CAkey ca2.key -CAcreateserial -out tls2.pem "
                      "-days 1 -extfile ext.cnf && cp tls2.key tls.key && cp tls2.pem tls.pem");
    /* Once the service has reloaded them (a handshake looks at most once a second), the old CA
     * no longer verifies the served certificate; the new one does. */
    long st = 200;
    for (int waited = 0; waited <= 10000 && st != 0; waited += 100) {
        st = vs_harness_call(&h, vs_service_port(svc), "GET", "/healthz", NULL, NULL, 0, &out);
        free(out);
        if (st != 0)
            usleep(100 * 1000);
    }
    cr_assert_eq(st, 0, "the rotated certificate was never served");
    struct vs_harness h2 = h;
    snprintf(h2.ca, sizeof(h2.ca), "%s/ca2.pem", h.dir);
    cr_assert_eq(vs_harness_call(&h2, vs_service_port(svc), "GET", "/healthz", NULL, NULL, 0, &out),
                 200);
    free(out);
}

Test(server, client_certificates_required)
{
    vs_harness_sh(&h, "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr "
                      "-subj /CN=kube-scheduler && openssl x509 -req -in client.csr -CA ca.pem "
                      "-CAkey ca.key -CAcreateserial -out client.pem -days 1");
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.metrics_bind = "";
    char ca[160];
    snprintf(ca, sizeof(ca), "%s", h.ca);
    c.client_ca_file = ca;
    int rc;
    struct vs_errbuf eb;
    svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
    char *out;
    cr_assert_eq(call("GET", "/healthz", NULL, NULL, 0, &out), 403);
    cr_assert_str_eq(out, "{\"error\":\"a valid client certificate is required\"}");
    free(out);
    char cc[160], ck[160];
    snprintf(cc, sizeof(cc), "%s/client.pem", h.dir);
    snprintf(ck, sizeof(ck), "%s/client.key", h.dir);
    h.client_cert = cc;
    h.client_key = ck;
    cr_assert_eq(call("GET", "/healthz", NULL, NULL, 0, &out), 200);
    free(out);
    h.client_cert = h.client_key = NULL;
}

/* ------------------------------------------------------------------ the bind queue */

struct bg_bind {
    const char *name, *uid, *node;
    long status;
    char *out;
    atomic_bool done;
    pthread_t t;
};

static void *bg_bind_main(void *arg)
{
    struct bg_bind *b = arg;
    char body[512];
    snprintf(body, sizeof(body),
             "{\"PodName\":\"%s\",\"PodNamespace\":\"default\",\"PodUID\":\"%s\","
             "\"Node\":\"%s\"}",
             b->name, b->uid, b->node);
    b->status = vs_harness_call(&h, vs_service_port(svc), "POST", "/bind", "application/json", body,
                                strlen(body), &b->out);
    atomic_store(&b->done, true);
    return NULL;
}

static char *metrics_text(void)
{
    struct vs_harness plain = h;
    plain.scheme = "http";
    char *out;
    cr_assert_eq(vs_harness_call(&plain, vs_service_metrics_port(svc), "GET", "/metrics", NULL,
                                 NULL, 0, &out),
                 200);
    return out;
}

static void set_lock(const char *node, const char *value)
{
    json_t *n = vs_fakeapi_get(api, "Node", NULL, node);
    json_t *an = json_object_get(json_object_get(n, "metadata"), "annotations");
    if (value)
        json_object_set_new(an, VS_ANNO_LOCK, json_string(value));
    else
        json_object_del(an, VS_ANNO_LOCK);
    char *t = json_dumps(n, JSON_COMPACT);
    vs_fakeapi_put(api, t);
    free(t);
    json_decref(n);
}

/* Polls /metrics until it contains `line` (the suite's timeout bounds this). */
static void wait_metric(const char *line)
{
    for (;;) {
        char *m = metrics_text();
        bool found = strstr(m, line) != NULL;
        free(m);
        if (found)
            return;
        usleep(10 * 1000);
    }
}

/* The set-up of the node-queue tests: the service with --node-lock-retry-timeout `retry`, n2
 * locked by a live pod `owner` (the lock's value into lockv), and pod `name` filtered onto n2. */
static void filtered_onto_locked_n2(long long retry, const char *name, const char *uid, char *lockv,
                                    size_t cap)
{
    retry_ms = retry;
    start_service(false, 0);
    put(vs_harness_pod("owner", "uid-owner", "100", "1"));
    char *v = vs_annot_format_lock(time(NULL), "default", "owner");
    if (lockv)
        snprintf(lockv, cap, "%s", v);
    set_lock("n2", v);
    free(v);
    put(vs_harness_pod(name, uid, "1000", "10"));
    const char *only2[] = {"n2"};
    json_decref(filter(name, only2, 1));
}

/* A Bind for a locked node waits in the node's queue; meanwhile Filter answers and other nodes
 * bind; the release seen by the node watch lets it take the lock (no BindingFailed). */
Test(server, bind_waits_in_the_node_queue_without_blocking_others)
{
    filtered_onto_locked_n2(60000, "q1", "uid-q1", NULL, 0);
    const char *only1[] = {"n1"};
    struct bg_bind b = {.name = "q1", .uid = "uid-q1", .node = "n2"};
    cr_assert_eq(pthread_create(&b.t, NULL, bg_bind_main, &b), 0);
    wait_metric("\nvgpu_sched_binds_waiting 1\n"); /* q1 is in n2's queue */
    /* Filter and a Bind to another node are answered while q1 waits. */
    put(vs_harness_pod("q2", "uid-q2", "1000", "10"));
    json_t *r = filter("q2", only1, 1);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n1");
    json_decref(r);
    char err[512];
    cr_assert_str_eq(bind_pod("q2", "uid-q2", "n1", err, sizeof(err)), "");
    cr_assert(!atomic_load(&b.done), "q1's Bind returned while n2 was locked: %s", b.out);
    json_t *n2 = vs_fakeapi_get(api, "Node", NULL, "n2");
    cr_assert(strstr(anno(n2, VS_ANNO_LOCK), ",default,owner") != NULL);
    json_decref(n2);
    /* The device plugin releases owner's lock: q1 takes it and is bound. */
    set_lock("n2", NULL);
    pthread_join(b.t, NULL);
    cr_assert_eq(b.status, 200);
    cr_assert_str_eq(b.out, "{\"Error\":\"\"}");
    free(b.out);
    n2 = vs_fakeapi_get(api, "Node", NULL, "n2");
    cr_assert(strstr(anno(n2, VS_ANNO_LOCK), ",default,q1") != NULL);
    json_decref(n2);
    char *m = metrics_text();
    cr_assert(strstr(m, "\nvgpu_sched_binds_waiting 0\n"), "%s", m);
    cr_assert(strstr(m, "\nvgpu_sched_bind_queue_wait_seconds_count 2\n"), "%s", m);
    free(m);
}

/* The wait is bounded: a lock that is never released fails the Bind with HAMi's message. */
Test(server, bind_wait_times_out_with_hamis_message)
{
    char lockv[256];
    filtered_onto_locked_n2(1000, "t1", "uid-t1", lockv, sizeof(lockv));
    char err[512];
    cr_assert_str_eq(bind_pod("t1", "uid-t1", "n2", err, sizeof(err)),
                     "timed out after 1s waiting for node n2 to be unlocked: node lock contention");
    json_t *n2 = vs_fakeapi_get(api, "Node", NULL, "n2");
    cr_assert_str_eq(anno(n2, VS_ANNO_LOCK), lockv); /* untouched */
    json_decref(n2);
    /* bind-phase and bind-time are not on the pod: only a binding carries them. */
    json_t *t1 = vs_fakeapi_get(api, "Pod", "default", "t1");
    cr_assert_null(json_object_get(json_object_get(json_object_get(t1, "metadata"), "annotations"),
                                   VS_ANNO_BIND_PHASE));
    cr_assert_null(json_object_get(json_object_get(json_object_get(t1, "metadata"), "annotations"),
                                   VS_ANNO_BIND_TIME));
    json_decref(t1);
}

/* A Bind waiting for the node's lock writes nothing to the pod: bind-phase and bind-time travel
 * in the binding, so a Bind that gives up (here its wait times out) has nothing to undo. */
Test(server, a_waiting_bind_writes_nothing_to_the_pod)
{
    filtered_onto_locked_n2(2000, "t2", "uid-t2", NULL, 0);
    vs_fakeapi_reset_counts(api);
    struct bg_bind b = {.name = "t2", .uid = "uid-t2", .node = "n2"};
    cr_assert_eq(pthread_create(&b.t, NULL, bg_bind_main, &b), 0);
    wait_metric("\nvgpu_sched_binds_waiting 1\n");
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/namespaces/default/pods/t2"), 0);
    pthread_join(b.t, NULL);
    cr_assert_eq(b.status, 200);
    cr_assert_str_eq(b.out, "{\"Error\":\"timed out after 2s waiting for node n2 to be unlocked: "
                            "node lock contention\"}");
    free(b.out);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/namespaces/default/pods/t2"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/pods/t2/binding"), 0);
}

/* kube-scheduler retries a Bind whose call timed out while the first one is still queued here:
 * the retry is refused at once (the first holds the pod's reservation) and touches nothing; the
 * first binds the pod; a retry after that finds the pod bound and leaves it alone — no
 * bind-phase written over the device plugin's answer, no binding, no lock left. (Found by e2e
 * chaos-ha: a retry queued behind the first overwrote bind-phase=success with allocating and the
 * device plugin failed the pod.) */
Test(server, second_bind_of_a_bound_pod_leaves_it_alone)
{
    filtered_onto_locked_n2(60000, "d1", "uid-d1", NULL, 0);
    struct bg_bind b1 = {.name = "d1", .uid = "uid-d1", .node = "n2"};
    cr_assert_eq(pthread_create(&b1.t, NULL, bg_bind_main, &b1), 0);
    wait_metric("\nvgpu_sched_binds_waiting 1\n");
    vs_fakeapi_reset_counts(api);
    char err[512];
    cr_assert_str_eq(bind_pod("d1", "uid-d1", "n2", err, sizeof(err)),
                     "pod default/d1 is being bound to node n2 by an earlier Bind; this Bind to "
                     "n2 touches nothing");
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/namespaces/default/pods/d1"), 0);
    char *m = metrics_text();
    cr_assert(strstr(m, "\nvgpu_sched_binds_waiting 1\n"), "the retry queued: %s", m);
    free(m);
    set_lock("n2", NULL); /* owner's allocation ends: the first Bind binds d1 */
    pthread_join(b1.t, NULL);
    cr_assert_str_eq(b1.out, "{\"Error\":\"\"}");
    free(b1.out);
    /* The device plugin answers the first Bind: success, lock released. */
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "d1");
    json_object_set_new(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                        VS_ANNO_BIND_PHASE, json_string("success"));
    char *t = json_dumps(pod, JSON_COMPACT);
    vs_fakeapi_put(api, t);
    free(t);
    json_decref(pod);
    set_lock("n2", NULL);
    cr_assert_str_eq(bind_pod("d1", "uid-d1", "n2", err, sizeof(err)),
                     "pod default/d1 is already bound (an earlier Bind of it succeeded)");
    pod = vs_fakeapi_get(api, "Pod", "default", "d1");
    cr_assert_str_eq(anno(pod, VS_ANNO_BIND_PHASE), "success");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
                     "n2");
    json_decref(pod);
    json_t *n2 = vs_fakeapi_get(api, "Node", NULL, "n2");
    cr_assert_null(anno(n2, VS_ANNO_LOCK), "lock left behind: %s", anno(n2, VS_ANNO_LOCK));
    json_decref(n2);
}

/* The race e2e burst-large found: a Bind waits (here for n2's lock), kube-scheduler gives up on
 * it and filters the pod again. The pod is not moved: a Filter without n2 among its candidates
 * is refused, one with n2 answers n2, neither reserves nor patches anything; the first Bind then
 * binds the pod to n2, where its annotations put it. (Before the hold, the new Filter moved the
 * reservation to n1 and wrote n1's cards on the pod while the first Bind, past its last check,
 * bound it to n2.) */
Test(server, filter_again_while_a_bind_holds_the_pod_keeps_its_node)
{
    filtered_onto_locked_n2(60000, "m1", "uid-m1", NULL, 0);
    struct bg_bind b = {.name = "m1", .uid = "uid-m1", .node = "n2"};
    cr_assert_eq(pthread_create(&b.t, NULL, bg_bind_main, &b), 0);
    wait_metric("\nvgpu_sched_binds_waiting 1\n");
    vs_fakeapi_reset_counts(api);
    const char *only1[] = {"n1"}, *both[] = {"n1", "n2"};
    json_t *r = filter("m1", only1, 1);
    cr_assert_str_eq(json_string_value(json_object_get(r, "Error")),
                     "pod default/m1 is being bound to node n2; it is not moved while that Bind "
                     "is under way");
    cr_assert(json_is_null(json_object_get(r, "NodeNames")));
    json_decref(r);
    r = filter("m1", both, 2);
    json_t *names = json_object_get(r, "NodeNames");
    cr_assert_eq(json_array_size(names), 1);
    cr_assert_str_eq(json_string_value(json_array_get(names, 0)), "n2");
    cr_assert_str_eq(json_string_value(json_object_get(r, "Error")), "");
    json_decref(r);
    set_lock("n2", NULL);
    pthread_join(b.t, NULL);
    cr_assert_eq(b.status, 200);
    cr_assert_str_eq(b.out, "{\"Error\":\"\"}");
    free(b.out);
    /* No decision patch from the two Filters: only the Bind's binding changed the pod, with
     * the first decision's cards. */
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/namespaces/default/pods/m1"), 0);
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "m1");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
                     "n2");
    cr_assert_str_eq(anno(pod, VS_ANNO_VGPU_NODE), "n2");
    cr_assert_str_eq(anno(pod, VS_ANNO_ALLOCATED), "n2-gpu0,NVIDIA,1000,10:;");
    json_decref(pod);
}

/* A pod filtered again onto another node before any Bind held it: the Bind to the old node is
 * stale and refused before it writes anything; the Bind to the new node binds it. */
Test(server, stale_bind_after_the_pod_moved_leaves_it_alone)
{
    start_service(false, 0);
    put(vs_harness_pod("m2", "uid-m2", "1000", "10"));
    const char *only1[] = {"n1"}, *only2[] = {"n2"};
    json_decref(filter("m2", only2, 1));
    json_t *r =
        filter("m2", only1, 1); /* the first answer got lost; kube-scheduler filters again */
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n1");
    json_decref(r);
    vs_fakeapi_reset_counts(api);
    char err[512];
    cr_assert_str_eq(bind_pod("m2", "uid-m2", "n2", err, sizeof(err)),
                     "pod default/m2 was filtered again onto another node; this Bind to n2 is "
                     "stale");
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/namespaces/default/pods/m2"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/n2"), 0);
    cr_assert_str_eq(bind_pod("m2", "uid-m2", "n1", err, sizeof(err)), "");
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "m2");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
                     "n1");
    cr_assert_str_eq(anno(pod, VS_ANNO_VGPU_NODE), "n1");
    json_decref(pod);
}

/* A Bind that fails gives its hold back: kube-scheduler's next Filter of the pod may place it
 * anywhere again. */
Test(server, failed_bind_lets_filter_move_the_pod)
{
    filtered_onto_locked_n2(0, "f1", "uid-f1", NULL, 0); /* retry 0: a held lock fails at once */
    char err[512];
    cr_assert_str_eq(bind_pod("f1", "uid-f1", "n2", err, sizeof(err)),
                     "node n2 has been locked within 5m0s: node lock contention");
    const char *only1[] = {"n1"};
    json_t *r = filter("f1", only1, 1);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n1");
    json_decref(r);
    cr_assert_str_eq(bind_pod("f1", "uid-f1", "n1", err, sizeof(err)), "");
}

/* --patch-at-filter: a Bind reads the pod from the answer to Filter's patch: no GET of it. A second
 * Bind of the same pod (that answer given out already) is refused as bound, from the store or from
 * a GET, whichever sees the binding first. */
Test(server, bind_reads_the_pod_from_filters_patch_answer)
{
    patch_at_filter = true;
    start_service(false, 0);
    put(vs_harness_pod("g1", "uid-g1", "1000", "10"));
    const char *only1[] = {"n1"};
    json_decref(filter("g1", only1, 1));
    json_decref(wait_anno("Pod", "default", "g1", VS_ANNO_ALLOCATED));
    vs_fakeapi_reset_counts(api);
    char err[512];
    cr_assert_str_eq(bind_pod("g1", "uid-g1", "n1", err, sizeof(err)), "");
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/namespaces/default/pods/g1"), 0);
    cr_assert_str_eq(bind_pod("g1", "uid-g1", "n1", err, sizeof(err)),
                     "pod default/g1 is already bound (an earlier Bind of it succeeded)");
}

/* bind-phase=allocating and bind-time travel in the Binding's annotations (the API server copies
 * them onto the pod with spec.nodeName): the Bind sends no pod PATCH. A binding refused leaves
 * the pod without them and releases the lock. */
Test(server, bind_phase_travels_in_the_binding)
{
    start_service(false, 0);
    put(vs_harness_pod("c1", "uid-c1", "1000", "10"));
    put(vs_harness_pod("c2", "uid-c2", "1000", "10"));
    const char *only1[] = {"n1"};
    json_decref(filter("c1", only1, 1));
    vs_fakeapi_reset_counts(api);
    char err[512];
    cr_assert_str_eq(bind_pod("c1", "uid-c1", "n1", err, sizeof(err)), "");
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/namespaces/default/pods/c1"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "POST", "/api/v1/namespaces/default/pods/c1/binding"), 1);
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", "c1");
    cr_assert_str_eq(anno(pod, VS_ANNO_BIND_PHASE), "allocating");
    cr_assert_not_null(anno(pod, VS_ANNO_BIND_TIME));
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
                     "n1");
    json_decref(pod);
    set_lock("n1", NULL); /* the device plugin's handoff */
    json_decref(filter("c2", only1, 1));
    vs_fakeapi_fault(api, "POST", "/api/v1/namespaces/default/pods/c2/binding", 500, 1);
    cr_assert_str_eq(bind_pod("c2", "uid-c2", "n1", err, sizeof(err)),
                     "bind pod default/c2 to n1: POST /api/v1/namespaces/default/pods/c2/binding: "
                     "500 injected fault");
    pod = vs_fakeapi_get(api, "Pod", "default", "c2");
    cr_assert_null(anno(pod, VS_ANNO_BIND_PHASE));
    cr_assert_null(anno(pod, VS_ANNO_BIND_TIME));
    cr_assert_null(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    json_decref(pod);
    json_t *n1 = vs_fakeapi_get(api, "Node", NULL, "n1");
    cr_assert_null(anno(n1, VS_ANNO_LOCK), "lock left behind: %s", anno(n1, VS_ANNO_LOCK));
    json_decref(n1);
}

Test(server_config, bind_queue_saturation_must_be_a_share)
{
    const double bad[] = {-0.5, NAN, INFINITY};
    const char *want[] = {"invalid --bind-queue-saturation -0.5 (want 0 or a positive share)",
                          "invalid --bind-queue-saturation nan (want 0 or a positive share)",
                          "invalid --bind-queue-saturation inf (want 0 or a positive share)"};
    for (int i = 0; i < 3; i++) {
        struct vs_service_config c;
        vs_service_config_defaults(&c);
        c.bind_queue_saturation = bad[i];
        int rc;
        struct vs_errbuf eb;
        cr_assert_null(vs_service_start(&c, &rc, &eb));
        cr_assert_eq(rc, 2);
        cr_assert_str_eq(eb.msg, want[i]);
    }
}

Test(server_config, kube_qps_must_be_a_number)
{
    const double bad[] = {NAN, INFINITY, -INFINITY};
    const char *want[] = {"invalid --kube-qps nan (want a number of requests per second)",
                          "invalid --kube-qps inf (want a number of requests per second)",
                          "invalid --kube-qps -inf (want a number of requests per second)"};
    for (int i = 0; i < 3; i++) {
        struct vs_service_config c;
        vs_service_config_defaults(&c);
        c.kube_qps = bad[i];
        int rc;
        struct vs_errbuf eb;
        cr_assert_null(vs_service_start(&c, &rc, &eb));
        cr_assert_eq(rc, 2);
        cr_assert_str_eq(eb.msg, want[i]);
    }
}

/* --patch-at-filter: kube-scheduler filters a pod again while the patch of its first decision is
 * still out (its Bind timed out waiting for it), and the second decision is the same card. When the
 * first patch then fails, only the first reservation may go: the second still holds the card, so
 * another pod is refused it (the soak double-booked a card when the failure dropped both). */
Test(server, a_failed_patch_of_an_earlier_identical_decision_keeps_the_current_one)
{
    patch_at_filter = true;
    start_service(false, 0);
    put(vs_harness_pod("a", "uid-a", "15000", "10"));
    put(vs_harness_pod("b", "uid-b", "1000", "10"));
    const char *only2[] = {"n2"};
    const char *path = "/api/v1/namespaces/default/pods/a";
    vs_fakeapi_fault(api, "PATCH", path, 500, 1);
    vs_fakeapi_delay(api, "PATCH", path, 4000);
    json_t *r = filter("a", only2, 1);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n2");
    json_decref(r);
    r = filter("a", only2, 1); /* the same decision again */
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)), "n2");
    json_decref(r);
    /* The second patch reaches the API once the first has failed (one pod's patches go in
     * order); it is then held 4 s, and the pod shows no allocation yet. */
    for (int i = 0; i < 200 && vs_fakeapi_count(api, "PATCH", path) < 2; i++)
        usleep(50 * 1000);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", path), 2);
    /* The first failure's callback has run: a pod's next patch starts only once the worker is
     * done with the one before (async.c), callback included. */
    r = filter("b", only2, 1);
    char *text = json_dumps(json_object_get(r, "NodeNames"), JSON_ENCODE_ANY);
    cr_assert_str_eq(text, "null", "b was given n2 (%s): a's card was freed", text);
    free(text);
    json_decref(r);
    json_t *pod = wait_anno_ms("Pod", "default", "a", VS_ANNO_ALLOCATED, 10000);
    cr_assert_str_eq(anno(pod, VS_ANNO_ALLOCATED), "n2-gpu0,NVIDIA,15000,10:;");
    json_decref(pod);
}
