/* stress_bindq: many concurrent Binds over a few nodes through the bind queue, with an emulated
 * node lock (one owner per node, a resourceVersion per node) and device plugin (after a short
 * hold it either releases the lock, or reports the pod allocated — the next Bind may then take
 * the lock over at the watched version — and releases later, owner-checked), while a chaos
 * thread deletes pods, replays stale and relist events and asks for rechecks. Checks: never two
 * allocations in flight on one node, every
 * Bind ends (taken or with a reason), no queue entry or expected pod left behind, and the
 * busy list empties. Plain program (no Criterion) so it also runs under TSan. */
#include "annot.h"
#include "bindq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NODES            6
#define THREADS          48
#define BINDS_PER_THREAD 40

static struct vs_bindq *q;
static pthread_mutex_t api_mu = PTHREAD_MUTEX_INITIALIZER;
static char owner[NODES][64];
static unsigned ver[NODES];       /* the node's resourceVersion: bumped by every lock change */
static atomic_int holders[NODES]; /* allocations in flight: lock taken, device plugin not done */
static atomic_int handovers;
static atomic_int max_holders_total, holders_total;
static atomic_int ok, deleted, other, violations;
static atomic_bool stop_chaos;

struct bind {
    int node;
    char uid[32], ns[8], name[32];
};

static void node_name(int i, char *out)
{
    snprintf(out, 8, "n%d", i);
}

static void watch_as(int i, bool relist)
{
    char name[8];
    node_name(i, name);
    pthread_mutex_lock(&api_mu);
    char *value = NULL, rv[16];
    snprintf(rv, sizeof(rv), "%u", ver[i]);
    if (owner[i][0]) {
        char ns[64];
        snprintf(ns, sizeof(ns), "%s", owner[i]);
        char *slash = strchr(ns, '/');
        *slash = '\0';
        value = vs_annot_format_lock(1767225600, ns, slash + 1);
    }
    pthread_mutex_unlock(&api_mu);
    vs_bindq_node_event_rv(q, name, value, rv, false, relist);
    free(value);
}

static void watch(int i)
{
    watch_as(i, false);
}

/* Caller holds api_mu. */
static void set_owner(struct bind *b)
{
    snprintf(owner[b->node], sizeof(owner[b->node]), "%s/%s", b->ns, b->name);
    ver[b->node]++;
    if (atomic_fetch_add(&holders[b->node], 1) != 0)
        atomic_fetch_add(&violations, 1);
    int t = atomic_fetch_add(&holders_total, 1) + 1;
    int m = atomic_load(&max_holders_total);
    while (t > m && !atomic_compare_exchange_weak(&max_holders_total, &m, t))
        ;
}

static enum vs_err take(void *ctx, struct vs_errbuf *eb)
{
    struct bind *b = ctx;
    pthread_mutex_lock(&api_mu);
    if (owner[b->node][0]) {
        pthread_mutex_unlock(&api_mu);
        return vs_err_set(eb, VS_ERR_CONFLICT, "node n%d has been locked within 5m0s", b->node);
    }
    set_owner(b);
    pthread_mutex_unlock(&api_mu);
    return VS_OK;
}

/* As nodelock's acquire_seen: the lock is replaced when its owner is still the one of `seen`
 * (none for NULL), or taken when there is none; otherwise nodelock reads the node (take). */
static enum vs_err take_seen(void *ctx, const char *seen, struct vs_errbuf *eb)
{
    struct bind *b = ctx;
    char want[64] = "";
    const char *c1 = seen ? strchr(seen, ',') : NULL, *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (c2)
        snprintf(want, sizeof(want), "%.*s/%s", (int)(c2 - c1 - 1), c1 + 1, c2 + 1);
    pthread_mutex_lock(&api_mu);
    if (strcmp(owner[b->node], want) == 0 || !owner[b->node][0]) {
        if (owner[b->node][0])
            atomic_fetch_add(&handovers, 1);
        set_owner(b);
        pthread_mutex_unlock(&api_mu);
        return VS_OK;
    }
    pthread_mutex_unlock(&api_mu);
    return take(ctx, eb);
}

static enum vs_err check(void *ctx, struct vs_errbuf *eb)
{
    (void)ctx;
    (void)eb;
    return VS_OK;
}

/* The allocation of b ends (the device plugin answered or the Bind failed). */
static void done(const struct bind *b)
{
    pthread_mutex_lock(&api_mu);
    atomic_fetch_sub(&holders[b->node], 1);
    atomic_fetch_sub(&holders_total, 1);
    pthread_mutex_unlock(&api_mu);
}

/* HAMi's owner-checked release: a lock taken over by the next pod is left alone. */
static void release(const struct bind *b, bool relist)
{
    char key[64];
    snprintf(key, sizeof(key), "%s/%s", b->ns, b->name);
    pthread_mutex_lock(&api_mu);
    bool ours = strcmp(owner[b->node], key) == 0;
    if (ours) {
        owner[b->node][0] = '\0';
        ver[b->node]++;
    }
    pthread_mutex_unlock(&api_mu);
    if (ours)
        watch_as(b->node, relist);
}

static void *binder(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg, id = seed % 100000;
    for (int k = 0; k < BINDS_PER_THREAD; k++) {
        struct bind b;
        b.node = (int)(rand_r(&seed) % NODES);
        snprintf(b.uid, sizeof(b.uid), "u-%u-%d", id, k);
        snprintf(b.ns, sizeof(b.ns), "ns");
        snprintf(b.name, sizeof(b.name), "p-%u-%d", id, k);
        char node[8];
        node_name(b.node, node);
        vs_bindq_expect(q, node, b.uid, false); /* Filter chose the node */
        struct vs_bindq_req r = {.node = node,
                                 .uid = b.uid,
                                 .ns = b.ns,
                                 .name = b.name,
                                 .take = take,
                                 .take_seen = take_seen,
                                 .check = check,
                                 .ctx = &b};
        struct vs_errbuf eb;
        enum vs_err err = vs_bindq_lock(q, &r, NULL, &eb);
        if (err == VS_OK) {
            atomic_fetch_add(&ok, 1);
            /* The watch shows our own lock, or a relist later shows only its release. */
            bool seen = rand_r(&seed) % 8 != 0;
            if (seen)
                watch(b.node);
            usleep(100 + rand_r(&seed) % 300); /* device plugin hold */
            unsigned path = rand_r(&seed) % 10;
            if (path == 0) {
                /* the Bind failed after the lock: released by the scheduler itself */
                done(&b);
                pthread_mutex_lock(&api_mu);
                owner[b.node][0] = '\0';
                ver[b.node]++;
                pthread_mutex_unlock(&api_mu);
                vs_bindq_released(q, node, b.uid);
                watch_as(b.node, !seen); /* the release's own watch event follows */
            } else if (path < 6) {
                /* bind-phase=success seen first; the plugin's release comes later */
                done(&b);
                vs_bindq_pod_allocated(q, b.ns, b.name);
                usleep(rand_r(&seed) % 300);
                release(&b, !seen);
            } else {
                done(&b);
                release(&b, !seen);
            }
            if (rand_r(&seed) % 8 == 0)
                watch_as(b.node, true); /* a relist after the release */
        } else if (err == VS_ERR_NOTFOUND) {
            atomic_fetch_add(&deleted, 1);
        } else {
            atomic_fetch_add(&other, 1);
            fprintf(stderr, "stress: unexpected bind error: %s\n", eb.msg);
        }
    }
    return NULL;
}

static void *chaos(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&stop_chaos)) {
        int i = (int)(rand_r(&seed) % NODES);
        char node[8];
        node_name(i, node);
        switch (rand_r(&seed) % 4) {
        case 0: { /* delete a pod that may be waiting */
            char uid[32], name[32];
            unsigned s = rand_r(&seed) % THREADS + 1;
            int k = (int)(rand_r(&seed) % BINDS_PER_THREAD);
            snprintf(uid, sizeof(uid), "u-%u-%d", (s * 7919u) % 100000, k);
            snprintf(name, sizeof(name), "p-%u-%d", (s * 7919u) % 100000, k);
            vs_bindq_pod_event(q, uid, "ns", name, true);
            break;
        }
        case 1: /* a stale "no lock" event */
            vs_bindq_node_event(q, node, NULL, false, false);
            break;
        case 2: /* a relist shows the current state */
            watch_as(i, true);
            break;
        default:
            vs_bindq_recheck(q);
        }
        usleep(1000);
    }
    return NULL;
}

int main(void)
{
    struct vs_bindq_opts o = {.wait_ms = 120000, .depth = 3, .expect_ttl_s = 300};
    q = vs_bindq_new(&o);
    if (!q)
        return 1;
    pthread_t t[THREADS], c;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, binder, (void *)(uintptr_t)((unsigned)(i + 1) * 7919u));
    pthread_create(&c, NULL, chaos, (void *)(uintptr_t)4242u);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&stop_chaos, true);
    pthread_join(c, NULL);
    int total = THREADS * BINDS_PER_THREAD;
    size_t left = 0;
    for (int i = 0; i < NODES; i++) {
        char node[8];
        node_name(i, node);
        left += vs_bindq_load(q, node);
    }
    char **busy;
    size_t nbusy = vs_bindq_busy(q, &busy, NULL);
    free(busy);
    printf("stress: binds=%d ok=%d deleted=%d other=%d violations=%d max_concurrent_holders=%d "
           "handovers=%d left=%zu waiting=%zu busy=%zu\n",
           total, atomic_load(&ok), atomic_load(&deleted), atomic_load(&other),
           atomic_load(&violations), atomic_load(&max_holders_total), atomic_load(&handovers), left,
           vs_bindq_waiting(q), nbusy);
    int rc = 0;
    if (atomic_load(&violations) || atomic_load(&other) ||
        atomic_load(&ok) + atomic_load(&deleted) != total || left || vs_bindq_waiting(q) || nbusy ||
        !atomic_load(&handovers)) {
        fprintf(stderr, "stress: FAILED\n");
        rc = 1;
    }
    vs_bindq_free(q);
    return rc;
}
