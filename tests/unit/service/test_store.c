/* test_store: the live cluster source against the fake API — initial sync, add/modify/delete of
 * nodes and pods reflected in per-card usage, recovery from dropped watches and from 410 (HTTP
 * and ERROR-event forms) without losing or double-counting usage (the model is compared with a
 * fresh store listing the same API), malformed allocations reported and failing their node
 * closed, and a long run of updates (leak-checked under ASan). */
#include "fakeapi.h"
#include "harness.h"
#include "kube.h"
#include "store.h"

#include "annot.h"

#include <criterion/criterion.h>
#include <pthread.h>

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
    for (int n = 0; n < 3; n++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", n);
        char *j = vs_harness_node(name, 2, 16000);
        vs_fakeapi_put(api, j);
        free(j);
    }
}

static void teardown(void)
{
    vs_kube_free(kube);
    vs_fakeapi_stop(api);
    vs_devcfg_cleanup(&cfg);
}

TestSuite(store, .init = setup, .fini = teardown, .timeout = 60);

static struct vs_store *start_store(void)
{
    struct vs_store_opts so = {.cfg = &cfg, .reservation_ttl = 3600};
    struct vs_errbuf eb;
    struct vs_store *s = vs_store_new(kube, &so, &eb);
    cr_assert_not_null(s);
    cr_assert_eq(vs_store_start(s, &eb), VS_OK, "%s", eb.msg);
    for (int i = 0; i < 200 && !vs_store_synced(s); i++)
        usleep(20 * 1000);
    cr_assert(vs_store_synced(s));
    return s;
}

/* A running pod placed on `node` with allocation `alloc` (NULL = annotation absent). */
static void put_pod(const char *name, const char *node, const char *alloc)
{
    json_t *p =
        json_pack("{s:s,s:{s:s,s:s,s:s,s:{}},s:{s:s,s:[{s:s}]},s:{s:s}}", "kind", "Pod", "metadata",
                  "name", name, "namespace", "default", "uid", name, "annotations", "spec",
                  "nodeName", node, "containers", "name", "c", "status", "phase", "Running");
    json_t *ann = json_object_get(json_object_get(p, "metadata"), "annotations");
    json_object_set_new(ann, VS_ANNO_VGPU_NODE, json_string(node));
    if (alloc)
        json_object_set_new(ann, VS_ANNO_ALLOCATED, json_string(alloc));
    char *t = json_dumps(p, JSON_COMPACT);
    cr_assert_neq(vs_fakeapi_put(api, t), 0);
    free(t);
    json_decref(p);
}

struct usage {
    char text[4096];
};

static void dump(void *ctx, const struct vs_model *m)
{
    struct usage *u = ctx;
    u->text[0] = '\0';
    const char *nodes[] = {"n0", "n1", "n2", "n3"};
    for (size_t i = 0; i < 4; i++) {
        const struct vs_node *n = vs_model_node(m, nodes[i]);
        if (!n || !n->present)
            continue;
        for (size_t k = 0; k < n->n_cards; k++) {
            char line[160];
            snprintf(line, sizeof(line), "%s:%lld/%lld/%lld%s ", n->cards[k].uuid,
                     (long long)n->cards[k].used, (long long)n->cards[k].usedmem,
                     (long long)n->cards[k].usedcores, n->n_bad_pods ? "!" : "");
            strcat(u->text, line);
        }
    }
}

static const char *usage_of(struct vs_store *s, struct usage *u)
{
    vs_store_read(s, dump, u);
    return u->text;
}

/* Waits until the store shows `want` (events are asynchronous). */
static void expect(struct vs_store *s, const char *want)
{
    struct usage u;
    for (int i = 0; i < 250; i++) {
        if (strcmp(usage_of(s, &u), want) == 0)
            return;
        usleep(20 * 1000);
    }
    cr_assert_str_eq(u.text, want);
}

/* A fresh store listing the same API must see exactly what the long-running one sees. */
static void expect_fresh_equal(struct vs_store *s)
{
    struct vs_store *fresh = start_store();
    struct usage a, b;
    usage_of(fresh, &b);
    expect(s, b.text);
    usage_of(s, &a);
    cr_assert_str_eq(a.text, b.text);
    vs_store_free(fresh);
}

#define IDLE "n0-gpu0:0/0/0 n0-gpu1:0/0/0 n1-gpu0:0/0/0 n1-gpu1:0/0/0 n2-gpu0:0/0/0 n2-gpu1:0/0/0 "

Test(store, sync_add_modify_delete)
{
    put_pod("a", "n0", "n0-gpu0,NVIDIA,1000,10:;");
    struct vs_store *s = start_store();
    expect(s, "n0-gpu0:1/1000/10 n0-gpu1:0/0/0 n1-gpu0:0/0/0 n1-gpu1:0/0/0 n2-gpu0:0/0/0 "
              "n2-gpu1:0/0/0 ");
    put_pod("b", "n1", "n1-gpu1,NVIDIA,2000,20:;");
    put_pod("a", "n0", "n0-gpu1,NVIDIA,3000,30:;"); /* modified */
    expect(s, "n0-gpu0:0/0/0 n0-gpu1:1/3000/30 n1-gpu0:0/0/0 n1-gpu1:1/2000/20 n2-gpu0:0/0/0 "
              "n2-gpu1:0/0/0 ");
    vs_fakeapi_delete(api, "Pod", "default", "a");
    expect(s, "n0-gpu0:0/0/0 n0-gpu1:0/0/0 n1-gpu0:0/0/0 n1-gpu1:1/2000/20 n2-gpu0:0/0/0 "
              "n2-gpu1:0/0/0 ");
    /* A node re-registered with a third card keeps its pod's usage; a deleted node goes. */
    char *j = vs_harness_node("n1", 3, 16000);
    vs_fakeapi_put(api, j);
    free(j);
    vs_fakeapi_delete(api, "Node", NULL, "n2");
    expect(s, "n0-gpu0:0/0/0 n0-gpu1:0/0/0 n1-gpu0:0/0/0 n1-gpu1:1/2000/20 n1-gpu2:0/0/0 ");
    expect_fresh_equal(s);
    vs_store_free(s);
}

Test(store, dropped_watch_recovers)
{
    struct vs_store *s = start_store();
    expect(s, IDLE);
    cr_assert(vs_fakeapi_wait_watchers(api, 3, 5000));
    vs_fakeapi_drop_watches(api);
    put_pod("a", "n0", "n0-gpu0,NVIDIA,1000,10:;");
    put_pod("b", "n2", "n2-gpu1,NVIDIA,500,5:;");
    expect(s, "n0-gpu0:1/1000/10 n0-gpu1:0/0/0 n1-gpu0:0/0/0 n1-gpu1:0/0/0 n2-gpu0:0/0/0 "
              "n2-gpu1:1/500/5 ");
    vs_fakeapi_drop_watches(api);
    vs_fakeapi_delete(api, "Pod", "default", "b");
    expect_fresh_equal(s);
    vs_store_free(s);
}

static void expire_case(bool as_event)
{
    put_pod("a", "n0", "n0-gpu0,NVIDIA,1000,10:;");
    struct vs_store *s = start_store();
    cr_assert(vs_fakeapi_wait_watchers(api, 3, 5000));
    struct vs_store_stats before;
    vs_store_stats(s, &before);
    /* Changes that happen while the watch is broken and its resourceVersion becomes too old:
     * only a relist can see them, and it must neither lose nor double-count usage. */
    vs_fakeapi_drop_watches(api);
    put_pod("b", "n1", "n1-gpu0,NVIDIA,2000,20:;");
    vs_fakeapi_delete(api, "Pod", "default", "a");
    if (as_event)
        vs_fakeapi_expire_event(api, "pods");
    else
        vs_fakeapi_expire(api, "pods");
    expect(s, "n0-gpu0:0/0/0 n0-gpu1:0/0/0 n1-gpu0:1/2000/20 n1-gpu1:0/0/0 n2-gpu0:0/0/0 "
              "n2-gpu1:0/0/0 ");
    struct vs_store_stats after;
    vs_store_stats(s, &after);
    cr_assert_gt(after.relists, before.relists, "no relist happened");
    expect_fresh_equal(s);
    vs_store_free(s);
}

Test(store, expired_410_status_relists)
{
    expire_case(false);
}

Test(store, expired_410_event_relists)
{
    expire_case(true);
}

Test(store, malformed_allocation_fails_node_closed)
{
    struct vs_store *s = start_store();
    put_pod("bad", "n2", "n2-gpu0,NVIDIA,1000;");
    expect(s, "n0-gpu0:0/0/0 n0-gpu1:0/0/0 n1-gpu0:0/0/0 n1-gpu1:0/0/0 n2-gpu0:0/0/0! "
              "n2-gpu1:0/0/0! ");
    struct vs_store_stats st;
    vs_store_stats(s, &st);
    cr_assert_eq(st.malformed_pods, 1);
    put_pod("bad", "n2", "n2-gpu0,NVIDIA,1000,10:;"); /* fixed by hand */
    expect(s, "n0-gpu0:0/0/0 n0-gpu1:0/0/0 n1-gpu0:0/0/0 n1-gpu1:0/0/0 n2-gpu0:1/1000/10 "
              "n2-gpu1:0/0/0 ");
    vs_store_free(s);
}

Test(store, long_watch_many_updates)
{
    struct vs_store *s = start_store();
    for (int i = 0; i < 600; i++) {
        char name[16], alloc[64];
        snprintf(name, sizeof(name), "p%d", i % 40);
        snprintf(alloc, sizeof(alloc), "n%d-gpu%d,NVIDIA,%d,%d:;", i % 3, (i / 3) % 2, 10 + i % 7,
                 i % 5);
        put_pod(name, (const char[]){'n', (char)('0' + i % 3), 0}, alloc);
        if (i % 97 == 0)
            vs_fakeapi_drop_watches(api);
        if (i % 13 == 0) {
            snprintf(name, sizeof(name), "p%d", (i + 7) % 40);
            vs_fakeapi_delete(api, "Pod", "default", name);
        }
    }
    expect_fresh_equal(s);
    vs_store_free(s);
}

/* A pod with cpu/memory requests on `node`; `gpu_node` non-NULL adds hami.io/vgpu-node (then
 * the informer decodes it whole), phase e.g. "Running". */
static void put_plain(const char *name, const char *node, const char *cpu, const char *mem,
                      const char *gpu_node, const char *phase)
{
    json_t *p =
        json_pack("{s:s,s:{s:s,s:s,s:s,s:{}},s:{s:s,s:[{s:s,s:{s:{s:s,s:s}}}]},s:{s:s}}", "kind",
                  "Pod", "metadata", "name", name, "namespace", "default", "uid", name,
                  "annotations", "spec", "nodeName", node, "containers", "name", "c", "resources",
                  "requests", "cpu", cpu, "memory", mem, "status", "phase", phase);
    if (gpu_node)
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "annotations"),
                            VS_ANNO_VGPU_NODE, json_string(gpu_node));
    char *t = json_dumps(p, JSON_COMPACT);
    cr_assert_neq(vs_fakeapi_put(api, t), 0);
    free(t);
    json_decref(p);
}

static void dump_res(void *ctx, const struct vs_model *m)
{
    struct usage *u = ctx;
    u->text[0] = '\0';
    const char *nodes[] = {"n0", "n1", "n2"};
    for (size_t i = 0; i < 3; i++) {
        const struct vs_node *n = vs_model_node(m, nodes[i]);
        char line[160];
        snprintf(line, sizeof(line), "%s:%lldm/%lldMi/%lld ", nodes[i],
                 n ? (long long)n->res.cpu : 0LL, n ? (long long)(n->res.mem >> 20) : 0LL,
                 n ? (long long)n->res.pods : 0LL);
        strcat(u->text, line);
    }
}

static void expect_res(struct vs_store *s, const char *want)
{
    struct usage u;
    for (int i = 0; i < 250; i++) {
        vs_store_read(s, dump_res, &u);
        if (strcmp(u.text, want) == 0)
            return;
        usleep(20 * 1000);
    }
    cr_assert_str_eq(u.text, want);
}

/* Every pod bound to a node counts its requests there, GPU or not: from LIST pages (pods
 * without hami.io/vgpu-node through the lean text path), watch events, and a relist after 410
 * that sweeps pods deleted meanwhile. */
Test(store, node_requests_of_all_pods)
{
    put_plain("web", "n0", "1", "1Gi", NULL, "Running");
    put_plain("gpu", "n0", "500m", "2Gi", "n0", "Running");
    put_plain("done", "n1", "4", "4Gi", NULL, "Succeeded");
    struct vs_store *s = start_store();
    expect_res(s, "n0:1500m/3072Mi/2 n1:0m/0Mi/0 n2:0m/0Mi/0 ");
    cr_assert(vs_fakeapi_wait_watchers(api, 3, 5000));
    put_plain("web2", "n1", "2", "512Mi", NULL, "Running");
    put_plain("web", "n0", "1", "1Gi", NULL, "Failed");
    expect_res(s, "n0:500m/2048Mi/1 n1:2000m/512Mi/1 n2:0m/0Mi/0 ");
    vs_fakeapi_delete(api, "Pod", "default", "gpu");
    expect_res(s, "n0:0m/0Mi/0 n1:2000m/512Mi/1 n2:0m/0Mi/0 ");
    /* Changes only a relist can see. */
    vs_fakeapi_drop_watches(api);
    vs_fakeapi_delete(api, "Pod", "default", "web2");
    put_plain("late", "n2", "250m", "256Mi", NULL, "Running");
    vs_fakeapi_expire(api, "pods");
    expect_res(s, "n0:0m/0Mi/0 n1:0m/0Mi/0 n2:250m/256Mi/1 ");
    vs_store_free(s);
}

Test(store, apply_pod_text_counts_requests_only)
{
    struct vs_store_opts so = {.cfg = &cfg, .reservation_ttl = 3600};
    struct vs_errbuf eb;
    struct vs_store *s = vs_store_new(NULL, &so, &eb);
    cr_assert_not_null(s);
    const char *pod = "{\"metadata\":{\"name\":\"p\",\"uid\":\"u1\"},\"spec\":{\"nodeName\":\"n0\","
                      "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"3\","
                      "\"memory\":\"1Gi\"}}}]}}";
    cr_assert_eq(vs_store_apply_pod_text(s, pod, strlen(pod), &eb), VS_OK, "%s", eb.msg);
    expect_res(s, "n0:3000m/1024Mi/1 n1:0m/0Mi/0 n2:0m/0Mi/0 ");
    cr_assert_eq(vs_store_apply_pod_text(s, "{\"metadata\":", 12, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "invalid JSON in a pod: unexpected token near end of file");
    const char *bad = "{\"metadata\":{\"name\":\"q\",\"uid\":\"u2\"},\"spec\":{\"nodeName\":\"n0\","
                      "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
                      "\"x\"}}}]}}";
    cr_assert_eq(vs_store_apply_pod_text(s, bad, strlen(bad), &eb), VS_OK); /* logged, skipped */
    cr_assert_eq(vs_store_apply_pod_text(s, "{\"spec\":[]}", 11, &eb), VS_ERR_PARSE);
    cr_assert_str_eq(eb.msg, "spec: expected an object, got array");
    expect_res(s, "n0:3000m/1024Mi/1 n1:0m/0Mi/0 n2:0m/0Mi/0 ");
    vs_store_free(s);
}

/* ------------------------------------------------------------------ device plugin answered */

struct answered {
    pthread_mutex_t mu;
    char names[256];
};

static void on_allocated(void *ctx, const char *ns, const char *name)
{
    struct answered *a = ctx;
    pthread_mutex_lock(&a->mu);
    strcat(a->names, ns);
    strcat(a->names, "/");
    strcat(a->names, name);
    strcat(a->names, " ");
    pthread_mutex_unlock(&a->mu);
}

static void put_phase_pod(const char *name, const char *bind_phase)
{
    json_t *p =
        json_pack("{s:s,s:{s:s,s:s,s:s,s:{s:s,s:s}},s:{s:s,s:[{s:s}]},s:{s:s}}", "kind", "Pod",
                  "metadata", "name", name, "namespace", "default", "uid", name, "annotations",
                  VS_ANNO_VGPU_NODE, "n0", VS_ANNO_BIND_PHASE, bind_phase, "spec", "nodeName", "n0",
                  "containers", "name", "c", "status", "phase", "Pending");
    char *t = json_dumps(p, JSON_COMPACT);
    cr_assert_neq(vs_fakeapi_put(api, t), 0);
    free(t);
    json_decref(p);
}

/* The device plugin answered a pod (bind-phase success, or failed: HAMi's plugin releases the
 * node lock in both cases): the pod_allocated hook hears of it, so the bind queue can stop
 * waiting for a release that was lost. A pod still allocating is not reported. */
Test(store, pod_allocated_hook_for_success_and_failed)
{
    struct answered a = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct vs_store_opts so = {.cfg = &cfg, .reservation_ttl = 3600};
    struct vs_errbuf eb;
    struct vs_store *s = vs_store_new(kube, &so, &eb);
    cr_assert_not_null(s);
    struct vs_store_hooks h = {.pod_allocated = on_allocated, .ctx = &a};
    vs_store_set_hooks(s, &h);
    cr_assert_eq(vs_store_start(s, &eb), VS_OK, "%s", eb.msg);
    for (int i = 0; i < 200 && !vs_store_synced(s); i++)
        usleep(20 * 1000);
    cr_assert(vs_store_synced(s));
    put_phase_pod("busy", "allocating");
    put_phase_pod("ok", "success");
    put_phase_pod("bad", "failed");
    char got[256] = "";
    for (int i = 0; i < 250; i++) {
        pthread_mutex_lock(&a.mu);
        snprintf(got, sizeof(got), "%s", a.names);
        pthread_mutex_unlock(&a.mu);
        if (strstr(got, "default/bad "))
            break;
        usleep(20 * 1000);
    }
    cr_assert_str_eq(got, "default/ok default/bad ");
    vs_store_free(s);
}
