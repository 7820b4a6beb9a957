/* stress_service: hundreds of pods filtered and bound at once from several client threads
 * against the real service (HTTPS) and the fake API, onto a small cluster; for every fifth pod a
 * second client filters and binds it again while its first Bind runs (kube-scheduler's retry
 * after its extender timeout). Afterwards, read from the API objects alone, no card may be over
 * its memory, cores or slots, every bound pod must be bound to the node its annotations name,
 * with cards of that node, and every pod must be bound or refused with a reason. A plain program
 * (not Criterion) so the TSan build can run it. Prints `stress: N passed, M failed` and exits
 * non-zero on any failure. */
#include "fakeapi.h"
#include "harness.h"
#include "serve.h"

#include "annot.h"

#include <pthread.h>
#include <stdbool.h>

#define N_PODS    240
#define N_THREADS 6
#define CARD_MEM  15360

static struct vs_fakeapi *api;
static struct vs_service *svc;
static struct vs_harness h;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int bound, refused, errors;

static void fail(const char *fmt, const char *a, const char *b)
{
    pthread_mutex_lock(&mu);
    errors++;
    fprintf(stderr, "stress: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    pthread_mutex_unlock(&mu);
}

static json_t *post(const char *path, json_t *req)
{
    char *text = json_dumps(req, JSON_COMPACT), *out;
    json_decref(req);
    long st = vs_harness_call(&h, vs_service_port(svc), "POST", path, "application/json", text,
                              strlen(text), &out);
    free(text);
    json_t *r = st == 200 ? json_loads(out, 0, NULL) : NULL;
    if (!r)
        fail("%s answered: %s", path, out);
    free(out);
    return r;
}

/* The device plugin releases the lock after allocation (spec §6.4). */
static void release_lock(const char *node)
{
    json_t *n = vs_fakeapi_get(api, "Node", NULL, node);
    json_t *ann = json_object_get(json_object_get(n, "metadata"), "annotations");
    if (json_object_get(ann, VS_ANNO_LOCK)) {
        json_object_del(ann, VS_ANNO_LOCK);
        char *t = json_dumps(n, JSON_COMPACT);
        vs_fakeapi_put(api, t);
        free(t);
    }
    json_decref(n);
}

/* kube-scheduler's retry of a pod whose Bind it gave up on: Filter again, then Bind to the
 * node answered, if any. */
struct retry {
    const char *name, *uid;
    bool bound;
    char node[32];
    pthread_t t;
};

static void *retry_main(void *arg)
{
    struct retry *rt = arg;
    json_t *pod = vs_fakeapi_get(api, "Pod", "default", rt->name);
    json_t *r = post("/filter",
                     json_pack("{s:o,s:n,s:[s,s]}", "Pod", pod, "Nodes", "NodeNames", "n2", "n1"));
    const char *node =
        r ? json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0)) : NULL;
    if (node)
        snprintf(rt->node, sizeof(rt->node), "%s", node);
    json_decref(r);
    if (!*rt->node)
        return NULL;
    r = post("/bind", json_pack("{s:s,s:s,s:s,s:s}", "PodName", rt->name, "PodNamespace", "default",
                                "PodUID", rt->uid, "Node", rt->node));
    const char *err = r ? json_string_value(json_object_get(r, "Error")) : NULL;
    rt->bound = err && !*err;
    json_decref(r);
    return NULL;
}

static void *storm(void *arg)
{
    long t = (long)arg;
    for (int i = (int)t; i < N_PODS; i += N_THREADS) {
        char name[32], uid[40];
        snprintf(name, sizeof(name), "s%d", i);
        snprintf(uid, sizeof(uid), "uid-%s", name);
        bool done = false;
        for (int attempt = 0; attempt < 60 && !done; attempt++) {
            json_t *pod = vs_fakeapi_get(api, "Pod", "default", name);
            json_t *r = post("/filter", json_pack("{s:o,s:n,s:[s,s]}", "Pod", pod, "Nodes",
                                                  "NodeNames", "n1", "n2"));
            if (!r)
                return NULL;
            const char *node =
                json_string_value(json_array_get(json_object_get(r, "NodeNames"), 0));
            char nodebuf[32] = "";
            if (node)
                snprintf(nodebuf, sizeof(nodebuf), "%s", node);
            bool refused_now = !node && json_object_size(json_object_get(r, "FailedNodes")) == 2;
            if (!node && !refused_now)
                fail("pod %s: filter answered neither a node nor reasons (%s)", name,
                     json_string_value(json_object_get(r, "Error")));
            json_decref(r);
            if (refused_now) {
                pthread_mutex_lock(&mu);
                refused++;
                pthread_mutex_unlock(&mu);
                done = true;
                break;
            }
            if (!*nodebuf)
                return NULL;
            struct retry rt = {.name = name, .uid = uid};
            bool racing = i % 5 == 0 && pthread_create(&rt.t, NULL, retry_main, &rt) == 0;
            r = post("/bind", json_pack("{s:s,s:s,s:s,s:s}", "PodName", name, "PodNamespace",
                                        "default", "PodUID", uid, "Node", nodebuf));
            if (racing)
                pthread_join(rt.t, NULL);
            if (!r)
                return NULL;
            const char *err = json_string_value(json_object_get(r, "Error"));
            bool first = err && !*err;
            if (first && rt.bound)
                fail("pod %s was bound by two Binds (%s)", name, rt.node);
            if (first || rt.bound) {
                release_lock(first ? nodebuf : rt.node);
                pthread_mutex_lock(&mu);
                bound++;
                pthread_mutex_unlock(&mu);
                done = true;
            } else {
                usleep(10 * 1000); /* lock contention: kube-scheduler retries after a backoff */
            }
            json_decref(r);
        }
        if (!done)
            fail("pod %s neither bound nor refused%s", name, "");
    }
    return NULL;
}

/* Sums, from the API objects only, what the bound pods were given per card. */
static int check_capacity(void)
{
    struct {
        char uuid[32];
        long mem, cores, slots;
    } cards[8];
    int nc = 0, total = 0, bad = 0;
    memset(cards, 0, sizeof(cards));
    for (int i = 0; i < N_PODS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "s%d", i);
        json_t *p = vs_fakeapi_get(api, "Pod", "default", name);
        const char *node =
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        const char *alloc = json_string_value(json_object_get(
            json_object_get(json_object_get(p, "metadata"), "annotations"), VS_ANNO_ALLOCATED));
        const char *vnode = json_string_value(json_object_get(
            json_object_get(json_object_get(p, "metadata"), "annotations"), VS_ANNO_VGPU_NODE));
        if (node && (!vnode || strcmp(vnode, node) != 0))
            fail("pod bound to %s but its hami.io/vgpu-node is %s", node, vnode ? vnode : "none");
        if (node && alloc) {
            struct vs_pod_devs d;
            struct vs_errbuf eb;
            if (vs_annot_parse_devices("x", alloc, &d, &eb)) {
                fail("bad allocation %s: %s", alloc, eb.msg);
                json_decref(p);
                continue;
            }
            for (size_t c = 0; c < d.n; c++) {
                for (size_t k = 0; k < d.ctrs[c].n; k++) {
                    const char *uuid = d.ctrs[c].devs[k].uuid;
                    if (strncmp(uuid, node, strlen(node)) != 0 || uuid[strlen(node)] != '-')
                        fail("pod bound to %s holds card %s", node, uuid);
                    int j;
                    for (j = 0; j < nc; j++)
                        if (strcmp(cards[j].uuid, d.ctrs[c].devs[k].uuid) == 0)
                            break;
                    if (j == nc && nc < 8)
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
    for (int j = 0; j < nc; j++) {
        printf("stress: card %-8s mem %5ld/%d cores %3ld/100 slots %2ld/10\n", cards[j].uuid,
               cards[j].mem, CARD_MEM, cards[j].cores, cards[j].slots);
        bad += cards[j].mem > CARD_MEM || cards[j].cores > 100 || cards[j].slots > 10;
        total += (int)cards[j].slots;
    }
    if (total != bound) {
        fprintf(stderr, "stress: %d bound pods but %d slots in use\n", bound, total);
        bad++;
    }
    return bad;
}

int main(void)
{
    api = vs_harness_fakeapi(&h);
    char *n1 = vs_harness_node("n1", 2, CARD_MEM), *n2 = vs_harness_node("n2", 1, CARD_MEM);
    vs_fakeapi_put(api, n1);
    vs_fakeapi_put(api, n2);
    free(n1);
    free(n2);
    for (int i = 0; i < N_PODS; i++) {
        char name[32], uid[40];
        snprintf(name, sizeof(name), "s%d", i);
        snprintf(uid, sizeof(uid), "uid-%s", name);
        char *p = vs_harness_pod(name, uid, i % 3 ? "1000" : "2500", i % 2 ? "10" : "5");
        if (i % 4 == 0) {
            /* A quarter under policy fragmentation: concurrent Filters share the nodes' memos
             * while the workload's shapes keep changing. */
            json_t *j = json_loads(p, 0, NULL);
            json_object_set_new(json_object_get(j, "metadata"), "annotations",
                                json_pack("{s:s,s:s}", VS_ANNO_NODE_POLICY, "fragmentation",
                                          VS_ANNO_GPU_POLICY, "fragmentation"));
            free(p);
            p = json_dumps(j, JSON_COMPACT);
            json_decref(j);
        }
        vs_fakeapi_put(api, p);
        free(p);
    }
    struct vs_service_config c;
    vs_service_config_defaults(&c);
    c.http_bind = "127.0.0.1:0";
    c.metrics_bind = "";
    c.cert_file = h.cert;
    c.key_file = h.key;
    c.kubeconfig = h.kubeconfig;
    c.lock_retry_ms = 0;
    int rc;
    struct vs_errbuf eb;
    if (!(svc = vs_service_start(&c, &rc, &eb))) {
        fprintf(stderr, "stress: service: %s\n", eb.msg);
        return 1;
    }
    for (int i = 0; i < 200 && !vs_service_synced(svc); i++)
        usleep(50 * 1000);
    pthread_t th[N_THREADS];
    for (long t = 0; t < N_THREADS; t++)
        pthread_create(&th[t], NULL, storm, (void *)t);
    for (int t = 0; t < N_THREADS; t++)
        pthread_join(th[t], NULL);
    int bad = check_capacity();
    printf("stress: %d pods, %d bound, %d refused, %d errors\n", N_PODS, bound, refused, errors);
    int failed = (bad > 0) + (errors > 0) + (bound + refused != N_PODS) + (bound == 0);
    vs_service_stop(svc);
    vs_fakeapi_stop(api);
    vs_harness_cleanup(&h);
    curl_global_cleanup();
    printf("stress: %d passed, %d failed\n", 4 - failed, failed);
    return failed ? 1 : 0;
}
