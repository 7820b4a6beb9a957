/* test_failover: leadership terms and what a crash leaves behind. The term monitor's hooks run
 * in order (start, ready until true, serving, end) and Filter/Bind see no term the moment the
 * Lease names another pod; a store resync drops the reservations of the old term and lists the
 * API again; the lock repair breaks locks whose owner is gone, terminated or already
 * allocated, breaks expired ones (reporting an owner stuck `allocating`) and keeps live ones. */
#include "fakeapi.h"
#include "harness.h"
#include "k8s_codec.h"
#include "kube.h"
#include "leader.h"
#include "nodelock.h"
#include "serve.h"
#include "store.h"

#include "annot.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <time.h>

/* ------------------------------------------------------------------ terms */

struct hooklog {
    char text[512];
    bool ready;
};

static void logf_(struct hooklog *h, const char *what, uint64_t term)
{
    char b[32];
    snprintf(b, sizeof(b), "%s%llu ", what, (unsigned long long)term);
    strcat(h->text, b);
}

static void h_start(void *ctx, uint64_t t)
{
    logf_(ctx, "start", t);
}

static bool h_ready(void *ctx, uint64_t t)
{
    struct hooklog *h = ctx;
    logf_(h, h->ready ? "ready" : "notready", t);
    return h->ready;
}

static void h_serving(void *ctx, uint64_t t)
{
    logf_(ctx, "serving", t);
}

static void h_end(void *ctx, uint64_t t)
{
    logf_(ctx, "end", t);
}

static enum vs_term_state state_of(struct vs_leader *l, uint64_t *term)
{
    enum vs_term_state st;
    *term = vs_leader_term(l, &st);
    return st;
}

Test(failover, term_hooks_in_order)
{
    struct vs_leader_opts o = {.enabled = true,
                               .lease_name = "hami-scheduler",
                               .lease_ns = "kube-system",
                               .pod_name = "sched-a"};
    struct vs_errbuf eb;
    struct vs_leader *l = vs_leader_new(NULL, &o, &eb);
    cr_assert_not_null(l, "%s", eb.msg);
    struct hooklog h = {.text = "", .ready = false};
    struct vs_leader_hooks hooks = {
        .ctx = &h, .start = h_start, .ready = h_ready, .serving = h_serving, .end = h_end};
    vs_leader_set_hooks(l, &hooks);
    long long now = (long long)time(NULL);
    uint64_t term;

    vs_leader_tick(l, now); /* no Lease yet */
    cr_assert_eq(state_of(l, &term), VS_TERM_FOLLOWER);
    cr_assert_eq(term, 0);

    /* A prefix of the holder is not enough (HAMi's bug): still a follower. */
    vs_leader_observe(l, "sched-ab_1", 15, now);
    vs_leader_tick(l, now);
    cr_assert_eq(state_of(l, &term), VS_TERM_FOLLOWER);

    vs_leader_observe(l, "sched-a_1", 15, now);
    vs_leader_tick(l, now);
    cr_assert_eq(state_of(l, &term), VS_TERM_STARTING);
    cr_assert_eq(term, 0);
    vs_leader_tick(l, now);
    cr_assert_eq(state_of(l, &term), VS_TERM_STARTING);
    h.ready = true;
    vs_leader_tick(l, now);
    cr_assert_eq(state_of(l, &term), VS_TERM_SERVING);
    cr_assert_eq(term, 1);
    vs_leader_tick(l, now);
    vs_leader_tick(l, now); /* serving runs once */

    /* The Lease moves on: refused at once, before the monitor's next step. */
    vs_leader_observe(l, "sched-b_2", 15, now);
    cr_assert_eq(state_of(l, &term), VS_TERM_FOLLOWER);
    cr_assert_eq(term, 0);
    vs_leader_tick(l, now);

    /* Back again: a new term, rebuilt again before it serves. */
    vs_leader_observe(l, "sched-a_3", 15, now);
    vs_leader_tick(l, now);
    cr_assert_eq(state_of(l, &term), VS_TERM_STARTING);
    vs_leader_tick(l, now);
    cr_assert_eq(state_of(l, &term), VS_TERM_SERVING);
    cr_assert_eq(term, 2);
    /* The Lease is not renewed within its duration: the term ends. */
    vs_leader_tick(l, now + 16);
    vs_leader_tick(l, now + 16);
    cr_assert_str_eq(h.text, "start1 notready1 ready1 serving1 end1 start2 ready2 end2 ");
    vs_leader_free(l);
}

Test(failover, no_leader_election_is_one_term)
{
    struct vs_leader_opts o = {.enabled = false};
    struct vs_leader *l = vs_leader_new(NULL, &o, NULL);
    cr_assert_not_null(l);
    struct hooklog h = {.text = "", .ready = true};
    struct vs_leader_hooks hooks = {
        .ctx = &h, .start = h_start, .ready = h_ready, .serving = h_serving, .end = h_end};
    vs_leader_set_hooks(l, &hooks);
    uint64_t term;
    cr_assert_eq(state_of(l, &term), VS_TERM_FOLLOWER); /* before the first step */
    for (int i = 0; i < 5; i++)
        vs_leader_tick(l, 1000 + i * 1000);
    cr_assert_eq(state_of(l, &term), VS_TERM_SERVING);
    cr_assert_eq(term, 1);
    cr_assert_str_eq(h.text, "start1 ready1 serving1 ");
    vs_leader_free(l);
    /* No leader object at all (tests, simulate): term 1 serving. */
    enum vs_term_state st;
    cr_assert_eq(vs_leader_term(NULL, &st), 1);
    cr_assert_eq(st, VS_TERM_SERVING);
}

/* ------------------------------------------------------------------ API-backed tests */

static struct vs_fakeapi *api;
static struct vs_kube *kube;
static struct vs_devcfg cfg;

static void setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct vs_fakeapi_opts o = {.port = 0, .quiet = true, .bookmark_ms = 200};
    api = vs_fakeapi_start(&o);
    cr_assert_not_null(api);
    struct vs_kube_config kc = {0};
    kc.server = (char *)vs_fakeapi_url(api);
    struct vs_kube_opts ko = {.qps = 0, .burst = 0, .timeout_s = 10};
    struct vs_errbuf eb;
    kube = vs_kube_new(&kc, &ko, &eb);
    cr_assert_not_null(kube, "%s", eb.msg);
    vs_devcfg_init(&cfg);
}

static void teardown(void)
{
    vs_kube_free(kube);
    vs_fakeapi_stop(api);
    vs_devcfg_cleanup(&cfg);
}

TestSuite(failover_api, .init = setup, .fini = teardown, .timeout = 60);

static void put(char *json)
{
    cr_assert_neq(vs_fakeapi_put(api, json), 0, "fake API refused %s", json);
    free(json);
}

static void find_in_model(void *ctx, const struct vs_model *m)
{
    *(bool *)ctx = vs_model_pod(m, "uid-r") != NULL;
}

Test(failover_api, resync_drops_reservations_and_lists_again)
{
    put(vs_harness_node("n1", 1, 16000));
    struct vs_store_opts so = {.cfg = &cfg, .reservation_ttl = 3600};
    struct vs_errbuf eb;
    struct vs_store *s = vs_store_new(kube, &so, &eb);
    cr_assert_not_null(s);
    cr_assert_eq(vs_store_start(s, &eb), VS_OK, "%s", eb.msg);
    for (int i = 0; i < 250 && !vs_store_synced(s); i++)
        usleep(20 * 1000);
    cr_assert(vs_store_synced(s));

    /* A Filter of this term reserves the card. */
    char *pj = vs_harness_pod("r", "uid-r", "16000", "100");
    json_t *pod_json = json_loads(pj, 0, NULL);
    free(pj);
    struct vs_pod pod;
    cr_assert_eq(vs_codec_pod_from_json(pod_json, &pod, &eb), VS_OK, "%s", eb.msg);
    json_decref(pod_json);
    const char *cands[] = {"n1"};
    struct vs_sched_opts opts = {.cfg = &cfg};
    struct vs_filter_result r;
    cr_assert_eq(vs_store_filter(s, &pod, cands, 1, &opts, (int64_t)time(NULL), &r), VS_OK);
    cr_assert_eq(r.best, 0);
    vs_filter_result_cleanup(&r);
    cr_assert_eq(vs_store_reservation(s, "uid-r"), VS_RES_OK);

    unsigned lists_before = vs_fakeapi_count(api, "list", "/api/v1/nodes");
    uint64_t req = vs_store_resync(s);
    cr_assert_eq(req, 1);
    /* The old term's reservation is gone at once... */
    cr_assert_eq(vs_store_reservation(s, "uid-r"), VS_RES_MISSING);
    bool present = true;
    vs_store_read(s, find_in_model, &present);
    cr_assert_not(present);
    /* ... and the card is free again for the new term once the lists are in. */
    for (int i = 0; i < 250 && !vs_store_resynced(s, req); i++)
        usleep(20 * 1000);
    cr_assert(vs_store_resynced(s, req));
    cr_assert_gt(vs_fakeapi_count(api, "list", "/api/v1/nodes"), lists_before);
    cr_assert_eq(vs_store_filter(s, &pod, cands, 1, &opts, (int64_t)time(NULL), &r), VS_OK);
    cr_assert_eq(r.best, 0);
    vs_filter_result_cleanup(&r);
    /* A term's end drops what it reserved, without a relist. */
    cr_assert_eq(vs_store_drop_reservations(s), 1);
    cr_assert_eq(vs_store_reservation(s, "uid-r"), VS_RES_MISSING);
    cr_assert_eq(vs_store_drop_reservations(s), 0);
    vs_pod_cleanup(&pod);
    vs_store_free(s);
}

static int64_t fixed_now(void)
{
    return 2000000000;
}

/* A node carrying a lock taken `age` seconds before fixed_now by default/<owner>. */
static void put_locked_node(const char *name, const char *owner, int64_t age)
{
    char *j = vs_harness_node(name, 1, 16000);
    json_t *n = json_loads(j, 0, NULL);
    free(j);
    if (owner) {
        char *v = vs_annot_format_lock(fixed_now() - age, "default", owner);
        json_t *md = json_object_get(n, "metadata");
        if (!json_object_get(md, "annotations"))
            json_object_set_new(md, "annotations", json_object());
        json_object_set_new(json_object_get(md, "annotations"), VS_ANNO_LOCK, json_string(v));
        free(v);
    }
    put(json_dumps(n, JSON_COMPACT));
    json_decref(n);
}

static void put_owner(const char *name, const char *bind_phase, const char *node)
{
    char *j = vs_harness_pod(name, name, "1000", "10");
    json_t *p = json_loads(j, 0, NULL);
    free(j);
    if (node)
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
    json_t *md = json_object_get(p, "metadata");
    if (!json_object_get(md, "annotations"))
        json_object_set_new(md, "annotations", json_object());
    json_object_set_new(json_object_get(md, "annotations"), VS_ANNO_BIND_PHASE,
                        json_string(bind_phase));
    put(json_dumps(p, JSON_COMPACT));
    json_decref(p);
}

static const char *lock_of(const char *node)
{
    static char buf[256];
    json_t *n = vs_fakeapi_get(api, "Node", NULL, node);
    cr_assert_not_null(n);
    const char *v = json_string_value(json_object_get(
        json_object_get(json_object_get(n, "metadata"), "annotations"), VS_ANNO_LOCK));
    snprintf(buf, sizeof(buf), "%s", v ? v : "(none)");
    json_decref(n);
    return buf;
}

Test(failover_api, repair_breaks_what_a_crash_left)
{
    put_owner("done", "success", "n-done");
    put_owner("stuck", "allocating", "n-stuck");
    put_owner("busy", "allocating", "n-busy");
    put_owner("orphan", "allocating", NULL);
    put_owner("fresh", "", NULL);
    put_locked_node("n-done", "done", 10);      /* owner allocated: broken */
    put_locked_node("n-stuck", "stuck", 600);   /* expired, owner still allocating: reported */
    put_locked_node("n-busy", "busy", 200);     /* bound, device plugin at work: kept */
    put_locked_node("n-ghost", "ghost", 10);    /* owner gone: broken */
    put_locked_node("n-free", NULL, 0);         /* no lock */
    put_locked_node("n-orphan", "orphan", 200); /* before the term, owner unbound: broken */
    put_locked_node("n-fresh", "fresh", 50);    /* this term's own Bind at work: kept */
    char busy_lock[256], fresh_lock[256];
    snprintf(busy_lock, sizeof(busy_lock), "%s", lock_of("n-busy"));
    snprintf(fresh_lock, sizeof(fresh_lock), "%s", lock_of("n-fresh"));

    struct vs_nodelock *l = vs_nodelock_new(kube, 300, fixed_now);
    struct vs_nodelock_repair r;
    struct vs_errbuf eb;
    cr_assert_eq(vs_nodelock_repair(l, fixed_now() - 100, &r, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(r.locked, 6);
    cr_assert_eq(r.broken, 4);
    cr_assert_eq(r.kept, 2);
    cr_assert_eq(r.stuck_allocating, 1);
    cr_assert_eq(r.failed, 0);
    cr_assert_str_eq(lock_of("n-done"), "(none)");
    cr_assert_str_eq(lock_of("n-stuck"), "(none)");
    cr_assert_str_eq(lock_of("n-ghost"), "(none)");
    cr_assert_str_eq(lock_of("n-busy"), busy_lock);
    cr_assert_str_eq(lock_of("n-free"), "(none)");
    cr_assert_str_eq(lock_of("n-orphan"), "(none)");
    cr_assert_str_eq(lock_of("n-fresh"), fresh_lock);
    struct vs_nodelock_stats st;
    vs_nodelock_stats(l, &st);
    cr_assert_eq(st.broken, 4);
    /* A second pass finds only the live locks. */
    cr_assert_eq(vs_nodelock_repair(l, fixed_now() - 100, &r, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(r.locked, 2);
    cr_assert_eq(r.broken, 0);
    cr_assert_eq(r.kept, 2);
    vs_nodelock_free(l);
}

/* An owner whose allocation failed (bind-phase=failed, not yet terminal): the device plugin is
 * done with the node, so a lock it still names (its release was lost) is broken by the next
 * acquire and by the repair; an owner still allocating within the timeout keeps its lock. */
Test(failover_api, lock_of_a_failed_allocation_is_broken)
{
    put_owner("bad", "failed", "n1");
    put_owner("bad2", "failed", "n2");
    put_owner("busy", "allocating", "n3");
    put_owner("p", "allocating", "n1");
    put_locked_node("n1", "bad", 10);
    put_locked_node("n2", "bad2", 10);
    put_locked_node("n3", "busy", 10);
    struct vs_nodelock *l = vs_nodelock_new(kube, 300, fixed_now);
    struct vs_errbuf eb;
    cr_assert_eq(vs_nodelock_acquire(l, "n1", "default", "p", &eb), VS_OK, "%s", eb.msg);
    char *want = vs_annot_format_lock(fixed_now(), "default", "p");
    cr_assert_str_eq(lock_of("n1"), want);
    free(want);
    cr_assert_eq(vs_nodelock_acquire(l, "n3", "default", "p", &eb), VS_ERR_CONFLICT);
    struct vs_nodelock_repair r;
    cr_assert_eq(vs_nodelock_repair(l, fixed_now() - 100, &r, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(r.locked, 3); /* n1 (now p's, bound and allocating), n2, n3 */
    cr_assert_eq(r.broken, 1);
    cr_assert_eq(r.kept, 2);
    cr_assert_str_eq(lock_of("n2"), "(none)");
    struct vs_nodelock_stats st;
    vs_nodelock_stats(l, &st);
    cr_assert_eq(st.broken, 2);
    vs_nodelock_free(l);
}

Test(failover_api, repair_reports_api_failure)
{
    put_locked_node("n1", "x", 10);
    vs_fakeapi_fault(api, "list", "/api/v1/nodes", 500, 20);
    struct vs_nodelock *l = vs_nodelock_new(kube, 300, fixed_now);
    struct vs_nodelock_repair r;
    struct vs_errbuf eb;
    cr_assert_eq(vs_nodelock_repair(l, fixed_now() - 100, &r, &eb), VS_ERR_KUBE);
    cr_assert(strstr(eb.msg, "500 injected fault"), "%s", eb.msg);
    cr_assert_eq(r.locked, 0);
    cr_assert_eq(r.broken, 0);
    cr_assert_neq(strcmp(lock_of("n1"), "(none)"), 0);
    vs_nodelock_free(l);
}

/* ------------------------------------------------------------------ a Bind outliving its term */

static void put_lease(const char *holder)
{
    char j[512];
    snprintf(
        j, sizeof(j),
        "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":"
        "\"hami-scheduler\",\"namespace\":\"kube-system\"},\"spec\":{\"holderIdentity\":\"%s\","
        "\"leaseDurationSeconds\":15}}",
        holder);
    cr_assert_neq(vs_fakeapi_put(api, j), 0);
}

struct bind_call {
    struct vs_harness *h;
    int port;
    char *out;
    long status;
};

static void *bind_thread(void *arg)
{
    struct bind_call *b = arg;
    const char *body = "{\"PodName\":\"p\",\"PodNamespace\":\"default\",\"PodUID\":\"uid-p\","
                       "\"Node\":\"n1\"}";
    b->status = vs_harness_call(b->h, b->port, "POST", "/bind", "application/json", body,
                                strlen(body), &b->out);
    return NULL;
}

Test(failover_api, bind_refused_when_its_term_ends)
{
    struct vs_harness h = {0};
    vs_harness_init(&h);
    vs_harness_kubeconfig(&h, vs_fakeapi_url(api));
    put(vs_harness_node("n1", 1, 16000));
    char *pod = vs_harness_pod("p", "uid-p", "1000", "10");
    cr_assert_neq(vs_fakeapi_put(api, pod), 0);
    put_lease("sched-a_1");
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.metrics_bind = "";
    c.lock_retry_ms = 0;
    c.leader_elect = true;
    c.lease_name = "hami-scheduler";
    c.lease_ns = "kube-system";
    c.pod_name = "sched-a";
    int rc;
    struct vs_errbuf eb;
    struct vs_service *svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
    int port = vs_service_port(svc);
    char *out = NULL, body[4096];
    snprintf(body, sizeof(body), "{\"Pod\":%s,\"NodeNames\":[\"n1\"]}", pod);
    bool placed = false;
    for (int i = 0; i < 100 && !placed; i++) {
        cr_assert_eq(vs_harness_call(&h, port, "POST", "/filter", "application/json", body,
                                     strlen(body), &out),
                     200);
        placed = strstr(out, "\"NodeNames\":[\"n1\"]") != NULL;
        free(out);
        if (!placed)
            usleep(50 * 1000);
    }
    cr_assert(placed, "the replica never served its term");
    /* The Bind's lock PATCH hangs for 3 s. */
    vs_fakeapi_delay(api, "PATCH", "/api/v1/nodes/n1", 3000);
    struct bind_call b = {.h = &h, .port = port};
    pthread_t t;
    pthread_create(&t, NULL, bind_thread, &b);
    /* Wait until the Bind is in its hanging lock PATCH (the API server logs it on arrival)... */
    bool locking = false;
    for (int i = 0; i < 500 && !locking; i++) {
        locking = vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/n1") > 0;
        if (!locking)
            usleep(20 * 1000);
    }
    cr_assert(locking, "the Bind never sent its lock PATCH");
    /* ... then the Lease moves to another replica, seen while the Bind still hangs. */
    put_lease("sched-b_2");
    bool refused = false;
    for (int i = 0; i < 100 && !refused; i++) {
        long st = vs_harness_call(&h, port, "GET", "/readyz", NULL, NULL, 0, &out);
        refused = st == 503 && strcmp(out, "{\"error\":\"not the leader\"}") == 0;
        free(out);
        if (!refused)
            usleep(20 * 1000);
    }
    cr_assert(refused, "the Lease change was not seen");
    pthread_join(t, NULL);
    cr_assert_eq(b.status, 200, "%s", b.out);
    cr_assert_str_eq(b.out, "{\"Error\":\"the leadership term of this vgpu-sched replica ended "
                            "during the bind; it does not bind\"}");
    free(b.out);
    /* Nothing half-done: the lock is released, the pod is neither bound nor given a bind-phase
     * (the binding carries it). */
    vs_fakeapi_delay(api, "PATCH", "/api/v1/nodes/n1", 0);
    cr_assert_str_eq(lock_of("n1"), "(none)");
    json_t *o = vs_fakeapi_get(api, "Pod", "default", "p");
    cr_assert_null(json_object_get(json_object_get(o, "spec"), "nodeName"));
    cr_assert_null(json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"),
                                   VS_ANNO_BIND_PHASE));
    json_decref(o);
    vs_service_stop(svc);
    free(pod);
    vs_harness_cleanup(&h);
}

/* ------------------------------------------------------------------ two replicas, one Lease */

static struct vs_service *start_replica(struct vs_harness *h, const char *pod_name,
                                        bool patch_at_filter)
{
    struct vs_service_config c;
    vs_service_config_defaults(&c);
    c.http_bind = "127.0.0.1:0";
    c.metrics_bind = "";
    c.cert_file = h->cert;
    c.key_file = h->key;
    c.kubeconfig = h->kubeconfig;
    c.lock_retry_ms = 0;
    c.bind_wait_ms = 5000;
    c.leader_elect = true;
    c.lease_name = "hami-scheduler";
    c.lease_ns = "kube-system";
    c.pod_name = pod_name;
    c.patch_at_filter = patch_at_filter;
    int rc;
    struct vs_errbuf eb;
    struct vs_service *s = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(s, "%s", eb.msg);
    return s;
}

/* Filter of stored pod `name` on n1 through replica `s`; returns the answer (new string). */
static char *filter_on(struct vs_harness *h, struct vs_service *s, const char *name)
{
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", name);
    cr_assert_not_null(pod);
    char *pj = json_dumps(pod, JSON_COMPACT);
    json_decref(pod);
    char body[8192], *out;
    snprintf(body, sizeof(body), "{\"Pod\":%s,\"NodeNames\":[\"n1\"]}", pj);
    free(pj);
    cr_assert_eq(vs_harness_call(h, vs_service_port(s), "POST", "/filter", "application/json", body,
                                 strlen(body), &out),
                 200);
    return out;
}

static char *bind_on(struct vs_harness *h, struct vs_service *s, const char *name)
{
    char body[512], *out;
    snprintf(body, sizeof(body),
             "{\"PodName\":\"%s\",\"PodNamespace\":\"default\",\"PodUID\":\"uid-%s\","
             "\"Node\":\"n1\"}",
             name, name);
    cr_assert_eq(vs_harness_call(h, vs_service_port(s), "POST", "/bind", "application/json", body,
                                 strlen(body), &out),
                 200);
    return out;
}

/* Filter until the replica serves (its answer is not a term refusal). */
static char *filter_when_serving(struct vs_harness *h, struct vs_service *s, const char *name)
{
    for (int i = 0; i < 200; i++) {
        char *out = filter_on(h, s, name);
        if (!strstr(out, "leader"))
            return out;
        free(out);
        usleep(50 * 1000);
    }
    cr_assert_fail("replica never served");
    return NULL;
}

static void wait_annotated(const char *name)
{
    for (int i = 0; i < 100; i++) {
        json_t *o = vs_fakeapi_get(api, "Pod", "default", name);
        bool done = json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"),
                                    VS_ANNO_VGPU_NODE) != NULL;
        json_decref(o);
        if (done)
            return;
        usleep(20 * 1000);
    }
    cr_assert_fail("pod %s never annotated", name);
}

/* Replica A serves, binds p1 and filters p2; the Lease moves to B before p2's Bind. With
 * --patch-at-filter p2's decision is on the pod, so B counts it and refuses p3; by default it
 * died with A's term (nothing was written), so B places p3 and then refuses p2. Either way A's
 * late Bind of p2 is refused and the card is never over-committed. */
static void hand_over(bool patch_at_filter)
{
    struct vs_harness h = {0};
    vs_harness_init(&h);
    vs_harness_kubeconfig(&h, vs_fakeapi_url(api));
    put(vs_harness_node("n1", 1, 16000));
    put(vs_harness_pod("p1", "uid-p1", "6000", "10"));
    put(vs_harness_pod("p2", "uid-p2", "6000", "10"));
    put(vs_harness_pod("p3", "uid-p3", "6000", "10"));
    put_lease("sched-a_1");
    struct vs_service *a = start_replica(&h, "sched-a", patch_at_filter),
                      *b = start_replica(&h, "sched-b", patch_at_filter);
    char *out = filter_when_serving(&h, a, "p1");
    cr_assert(strstr(out, "\"NodeNames\":[\"n1\"]"), "%s", out);
    free(out);
    out = filter_on(&h, b, "p1");
    cr_assert(strstr(out, "\"Error\":\"this vgpu-sched replica is not the leader and does not "
                          "schedule\""),
              "%s", out);
    free(out);
    out = bind_on(&h, a, "p1");
    cr_assert_str_eq(out, "{\"Error\":\"\"}");
    free(out);
    /* The device plugin takes p1 (the lock it left is then breakable). */
    json_t *p1 = vs_fakeapi_get(api, "Pod", "default", "p1");
    json_object_set_new(json_object_get(json_object_get(p1, "metadata"), "annotations"),
                        VS_ANNO_BIND_PHASE, json_string("success"));
    put(json_dumps(p1, JSON_COMPACT));
    json_decref(p1);
    /* A filters p2 (reserved and annotated) but the Lease moves before it binds. */
    out = filter_on(&h, a, "p2");
    cr_assert(strstr(out, "\"NodeNames\":[\"n1\"]"), "%s", out);
    free(out);
    if (patch_at_filter)
        wait_annotated("p2");
    put_lease("sched-b_2");
    /* B rebuilds from the API: p1 bound (and with --patch-at-filter p2 annotated) hold 12000 of
     * 16000 MiB, so p3 does not fit — the hand-over never double-books the card; by default p3
     * takes the room p2's void decision had. */
    out = filter_when_serving(&h, b, "p3");
    if (patch_at_filter)
        cr_assert(strstr(out, "CardInsufficientMemory"), "%s", out);
    else
        cr_assert(strstr(out, "\"NodeNames\":[\"n1\"]"), "%s", out);
    free(out);
    /* A refuses once its own Lease watch has shown the change (B serving says only that B's
     * did); B binds p2 after filtering it again (its entry replaced, not added). */
    bool follower = false;
    for (int i = 0; i < 500 && !follower; i++) {
        long st = vs_harness_call(&h, vs_service_port(a), "GET", "/readyz", NULL, NULL, 0, &out);
        follower = st == 503 && strcmp(out, "{\"error\":\"not the leader\"}") == 0;
        free(out);
        if (!follower)
            usleep(20 * 1000);
    }
    cr_assert(follower, "replica A never saw the Lease move");
    out = bind_on(&h, a, "p2");
    cr_assert_str_eq(out, "{\"Error\":\"this vgpu-sched replica is not the leader and does not "
                          "bind\"}");
    free(out);
    /* The pod placed second on B binds; the other one no longer fits. */
    const char *second = patch_at_filter ? "p2" : "p3", *left = patch_at_filter ? "p3" : "p2";
    if (patch_at_filter) { /* B filters p2 again (its entry replaced, not added) */
        out = filter_on(&h, b, "p2");
        cr_assert(strstr(out, "\"NodeNames\":[\"n1\"]"), "%s", out);
        free(out);
    }
    out = bind_on(&h, b, second);
    cr_assert_str_eq(out, "{\"Error\":\"\"}");
    free(out);
    out = filter_on(&h, b, left);
    cr_assert(strstr(out, "CardInsufficientMemory"), "%s", out);
    free(out);
    json_t *bound = vs_fakeapi_get(api, "Pod", "default", second);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(bound, "spec"), "nodeName")),
                     "n1");
    json_decref(bound);
    vs_service_stop(a);
    vs_service_stop(b);
    vs_harness_cleanup(&h);
}

Test(failover_api, two_replicas_hand_over)
{
    hand_over(false);
}

Test(failover_api, two_replicas_hand_over_with_patch_at_filter)
{
    hand_over(true);
}

Test(failover_api, queued_bind_fails_when_the_term_ends)
{
    struct vs_harness h = {0};
    vs_harness_init(&h);
    vs_harness_kubeconfig(&h, vs_fakeapi_url(api));
    /* n1's lock belongs to a bound pod the device plugin is still allocating: kept by the
     * repair, so a Bind for n1 waits in the queue. */
    put_owner("holder", "allocating", "n1");
    time_t now = time(NULL);
    char *lock = vs_annot_format_lock((int64_t)now, "default", "holder");
    char *nj = vs_harness_node("n1", 1, 16000);
    json_t *n = json_loads(nj, 0, NULL);
    free(nj);
    json_object_set_new(json_object_get(json_object_get(n, "metadata"), "annotations"),
                        VS_ANNO_LOCK, json_string(lock));
    put(json_dumps(n, JSON_COMPACT));
    json_decref(n);
    put(vs_harness_pod("p", "uid-p", "1000", "10"));
    put_lease("sched-a_1");
    struct vs_service_config c;
    vs_harness_service_config(&h, &c);
    c.lock_retry_ms = 60000;
    c.leader_elect = true;
    c.lease_name = "hami-scheduler";
    c.lease_ns = "kube-system";
    c.pod_name = "sched-a";
    int rc;
    struct vs_errbuf eb;
    struct vs_service *svc = vs_service_start(&c, &rc, &eb);
    cr_assert_not_null(svc, "%s", eb.msg);
    char *out = filter_when_serving(&h, svc, "p");
    cr_assert(strstr(out, "\"NodeNames\":[\"n1\"]"), "%s", out);
    free(out);
    struct bind_call b = {.h = &h, .port = vs_service_port(svc)};
    pthread_t t;
    pthread_create(&t, NULL, bind_thread, &b);
    struct vs_harness plain = h;
    plain.scheme = "http";
    bool queued = false;
    for (int i = 0; i < 200 && !queued; i++) {
        vs_harness_call(&plain, vs_service_metrics_port(svc), "GET", "/metrics", NULL, NULL, 0,
                        &out);
        queued = strstr(out, "\nvgpu_sched_binds_waiting 1\n") != NULL;
        free(out);
        if (!queued)
            usleep(20 * 1000);
    }
    cr_assert(queued, "the Bind never waited in the queue");
    put_lease("sched-b_2");
    pthread_join(t, NULL);
    cr_assert_eq(b.status, 200, "%s", b.out);
    cr_assert(strstr(b.out, "vgpu-sched lost leadership"), "%s", b.out);
    free(b.out);
    /* The holder's lock is untouched and p is not bound. */
    cr_assert_str_eq(lock_of("n1"), lock);
    json_t *o = vs_fakeapi_get(api, "Pod", "default", "p");
    cr_assert_null(json_object_get(json_object_get(o, "spec"), "nodeName"));
    json_decref(o);
    free(lock);
    vs_service_stop(svc);
    vs_harness_cleanup(&h);
}

static int64_t real_now(void)
{
    return (int64_t)time(NULL);
}

Test(failover_api, failed_release_is_retried)
{
    put(vs_harness_node("n1", 1, 16000));
    struct vs_nodelock *l = vs_nodelock_new(kube, 300, real_now);
    struct vs_errbuf eb;
    cr_assert_eq(vs_nodelock_acquire(l, "n1", "default", "p", &eb), VS_OK, "%s", eb.msg);
    cr_assert_neq(strcmp(lock_of("n1"), "(none)"), 0);
    /* The API refuses the release's every attempt (as while kube-apiserver is down). */
    vs_fakeapi_fault(api, "PATCH", "/api/v1/nodes/n1", 503, 5);
    cr_assert_eq(vs_nodelock_release(l, "n1", "default", "p", false, &eb), VS_ERR_KUBE);
    cr_assert(strstr(eb.msg, "503 injected fault"), "%s", eb.msg);
    cr_assert_neq(strcmp(lock_of("n1"), "(none)"), 0);
    /* The API is back: the release is retried in the background and the lock goes. The retry
     * thread counts the release after the API has applied it, so the test waits for both. */
    bool gone = false;
    struct vs_nodelock_stats st = {0};
    for (int i = 0; i < 250; i++) {
        gone = strcmp(lock_of("n1"), "(none)") == 0;
        vs_nodelock_stats(l, &st);
        if (gone && st.released == 1)
            break;
        usleep(20 * 1000);
    }
    cr_assert(gone, "the failed release was never retried");
    cr_assert_eq(st.released, 1);
    cr_assert_geq(st.release_retries, 1);
    vs_nodelock_free(l);
}

Test(failover_api, retried_release_leaves_a_lock_that_is_no_longer_ours)
{
    put(vs_harness_node("n1", 1, 16000));
    struct vs_nodelock *l = vs_nodelock_new(kube, 300, real_now);
    struct vs_errbuf eb;
    cr_assert_eq(vs_nodelock_acquire(l, "n1", "default", "p", &eb), VS_OK, "%s", eb.msg);
    vs_fakeapi_fault(api, "PATCH", "/api/v1/nodes/n1", 503, 5);
    cr_assert_eq(vs_nodelock_release(l, "n1", "default", "p", false, &eb), VS_ERR_KUBE);
    /* Meanwhile the lock expired and another pod took the node. */
    put_locked_node("n1", "other", 0);
    char other[256];
    snprintf(other, sizeof(other), "%s", lock_of("n1"));
    struct vs_nodelock_stats st = {0};
    for (int i = 0; i < 250 && st.release_retries == 0; i++) {
        usleep(20 * 1000);
        vs_nodelock_stats(l, &st);
    }
    cr_assert_geq(st.release_retries, 1);
    cr_assert_eq(st.released, 0);
    cr_assert_str_eq(lock_of("n1"), other);
    vs_nodelock_free(l);
}

static int64_t settable_now_v;
static int64_t settable_now(void)
{
    return settable_now_v;
}

static void put_raw_lock(const char *name, const char *value)
{
    char *j = vs_harness_node(name, 1, 16000);
    json_t *n = json_loads(j, 0, NULL);
    free(j);
    json_t *md = json_object_get(n, "metadata");
    if (!json_object_get(md, "annotations"))
        json_object_set_new(md, "annotations", json_object());
    json_object_set_new(json_object_get(md, "annotations"), VS_ANNO_LOCK, json_string(value));
    put(json_dumps(n, JSON_COMPACT));
    json_decref(n);
}

/* A lock value that does not parse blocks the node for the lock timeout from its first
 * sighting, then acquire and repair both break it. */
Test(failover_api, malformed_lock_is_broken_after_the_timeout)
{
    put_raw_lock("n-bad", "not-a-lock");
    put_raw_lock("n-bad2", "also,not");
    settable_now_v = 2000000000;
    struct vs_nodelock *l = vs_nodelock_new(kube, 300, settable_now);
    struct vs_errbuf eb;
    cr_assert_eq(vs_nodelock_acquire(l, "n-bad", "default", "p1", &eb), VS_ERR_CONFLICT);
    cr_assert(strncmp(eb.msg, "node n-bad has a malformed lock annotation (", 44) == 0, "%s",
              eb.msg);
    cr_assert(strstr(eb.msg, "); it is broken after the lock timeout: node lock contention"), "%s",
              eb.msg);
    struct vs_nodelock_repair r;
    cr_assert_eq(vs_nodelock_repair(l, settable_now_v, &r, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(r.locked, 2);
    cr_assert_eq(r.kept, 2);
    cr_assert_eq(r.broken, 0);
    cr_assert_str_eq(lock_of("n-bad"), "not-a-lock");

    settable_now_v += 300; /* not older than the timeout yet */
    cr_assert_eq(vs_nodelock_acquire(l, "n-bad", "default", "p1", &eb), VS_ERR_CONFLICT);
    settable_now_v += 1;
    cr_assert_eq(vs_nodelock_repair(l, settable_now_v, &r, &eb), VS_OK, "%s", eb.msg);
    cr_assert_eq(r.broken, 2, "broken=%zu kept=%zu", (size_t)r.broken, (size_t)r.kept);
    cr_assert_str_eq(lock_of("n-bad2"), "(none)");
    /* Written again after the break: a new sighting, blocked for the timeout again. */
    put_raw_lock("n-bad", "not-a-lock");
    cr_assert_eq(vs_nodelock_acquire(l, "n-bad", "default", "p1", &eb), VS_ERR_CONFLICT);
    settable_now_v += 301;
    cr_assert_eq(vs_nodelock_acquire(l, "n-bad", "default", "p1", &eb), VS_OK, "%s", eb.msg);
    char *want = vs_annot_format_lock(settable_now_v, "default", "p1");
    cr_assert_str_eq(lock_of("n-bad"), want);
    free(want);
    vs_nodelock_free(l);
}

/* Sets annotation key of node to value (NULL: removes it), as another writer of the node would. */
static void node_annotate(const char *node, const char *key, const char *value)
{
    json_t *n = vs_fakeapi_get(api, "Node", NULL, node);
    cr_assert_not_null(n);
    json_t *an = json_object_get(json_object_get(n, "metadata"), "annotations");
    cr_assert_not_null(an);
    if (value)
        json_object_set_new(an, key, json_string(value));
    else
        json_object_del(an, key);
    char *j = json_dumps(n, JSON_COMPACT);
    json_decref(n);
    cr_assert_neq(vs_fakeapi_put(api, j), 0);
    free(j);
}

/* vs_nodelock_acquire_seen: one JSON patch that tests the lock is as the watch showed it and sets
 * ours; other changes of the node do not refuse it; a release that came first costs one more
 * patch; any other state falls back to reading the node, with every rule of acquire. */
Test(failover_api, lock_taken_as_the_watch_showed_it)
{
    char *j = vs_harness_node("n1", 1, 16000);
    cr_assert_neq(vs_fakeapi_put(api, j), 0);
    free(j);
    put_owner("q", "allocating", "n1");
    struct vs_nodelock *l = vs_nodelock_new(kube, 300, fixed_now);
    struct vs_errbuf eb;
    /* Seen unlocked: taken by one PATCH, no read. */
    vs_fakeapi_reset_counts(api);
    cr_assert_eq(vs_nodelock_acquire_seen(l, "n1", NULL, "default", "p", &eb), VS_OK, "%s", eb.msg);
    char *p_lock = vs_annot_format_lock(fixed_now(), "default", "p");
    cr_assert_str_eq(lock_of("n1"), p_lock);
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes/n1"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/n1"), 1);
    /* p is allocated and the node changed meanwhile (another annotation): q takes p's lock over
     * by one PATCH, which a resourceVersion precondition would have refused. */
    node_annotate("n1", "hami.io/node-handshake", "Reported 2026-01-01 00:00:00");
    vs_fakeapi_reset_counts(api);
    cr_assert_eq(vs_nodelock_acquire_seen(l, "n1", p_lock, "default", "q", &eb), VS_OK, "%s",
                 eb.msg);
    char *q_lock = vs_annot_format_lock(fixed_now(), "default", "q");
    cr_assert_str_eq(lock_of("n1"), q_lock);
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes/n1"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/n1"), 1);
    /* q's device plugin released q's lock before r's Bind acted on the event that showed it:
     * the test fails, the lock is taken as none. */
    cr_assert_eq(vs_nodelock_release(l, "n1", "default", "q", false, &eb), VS_OK, "%s", eb.msg);
    vs_fakeapi_reset_counts(api);
    cr_assert_eq(vs_nodelock_acquire_seen(l, "n1", q_lock, "default", "r", &eb), VS_OK, "%s",
                 eb.msg);
    char *r_lock = vs_annot_format_lock(fixed_now(), "default", "r");
    cr_assert_str_eq(lock_of("n1"), r_lock);
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes/n1"), 0);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/n1"), 2);
    /* Another scheduler took the node for q (allocating) since: neither patch applies, the node
     * is read and q's live lock is contention, HAMi's words, left as it is. */
    node_annotate("n1", VS_ANNO_LOCK, q_lock);
    vs_fakeapi_reset_counts(api);
    cr_assert_eq(vs_nodelock_acquire_seen(l, "n1", r_lock, "default", "s", &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(eb.msg, "node n1 has been locked within 5m0s: node lock contention");
    cr_assert_str_eq(lock_of("n1"), q_lock);
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes/n1"), 1);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/n1"), 2);
    /* Seen unlocked, but locked now: one patch, then the read (no second patch). */
    vs_fakeapi_reset_counts(api);
    cr_assert_eq(vs_nodelock_acquire_seen(l, "n1", NULL, "default", "s", &eb), VS_ERR_CONFLICT);
    cr_assert_str_eq(lock_of("n1"), q_lock);
    cr_assert_eq(vs_fakeapi_count(api, "GET", "/api/v1/nodes/n1"), 1);
    cr_assert_eq(vs_fakeapi_count(api, "PATCH", "/api/v1/nodes/n1"), 1);
    struct vs_nodelock_stats st;
    vs_nodelock_stats(l, &st);
    cr_assert_eq(st.acquired, 3);
    cr_assert_eq(st.acquired_at, 3);
    cr_assert_eq(st.at_conflicts, 4);
    cr_assert_eq(st.contended, 2);
    free(p_lock);
    free(q_lock);
    free(r_lock);
    vs_nodelock_free(l);
}
