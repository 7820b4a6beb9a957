/* bindq: one mutex over the table of nodes (each with its FIFO of waiters, the lock owner last
 * seen by the watch and the lock this process holds there) and the table of expected pods. Each
 * waiter sleeps on its own condition variable until its deadline. Only the head of a node's queue
 * acts on the node's lock, so a change of the lock (the node's watch events, the holder seen
 * allocated, a release) wakes the head alone, not every Bind queued behind it (a burst queues
 * tens per node, and waking them all at every hand-off delayed the head's lock patch); a
 * waiter is also woken by a failure aimed at it, when it becomes the head, or for a recheck.
 * take() and check() run with the mutex released. */
#include "bindq.h"

#include "annot.h"
#include "buf.h"
#include "log.h"
#include "metrics.h"
#include "nodelock.h"
#include "sched.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uthash.h>

/* The allocation time's moving average: each new sample moves it by this share. */
#define SERVICE_ALPHA 0.25

struct waiter {
    struct waiter *prev, *next;
    struct qnode *node; /* whose queue it is in */
    pthread_cond_t cv;  /* its own: see the top of the file */
    const struct vs_bindq_req *r;
    bool failed, recheck, tried;
    bool behind; /* it joined while the node was held or others waited */
    uint64_t tried_gen;
    enum vs_err err;
    char msg[VS_ERRBUF_SIZE];
};

struct qnode;

struct expect {
    char *uid;
    struct qnode *node;
    double since;
    bool active; /* waiting or holding: not swept by the TTL */
    bool whole;  /* the pod takes cards to itself (counted in nwhole) */
    struct expect *older, *newer;
    UT_hash_handle hh;
};

struct qnode {
    char *name;
    struct waiter *head, *tail;
    size_t nwait;
    uint64_t gen;     /* bumped on every change of the lock seen by the watch */
    char *owner;      /* "ns/name" of the lock's owner as last seen, raw value if malformed */
    bool owner_done;  /* that owner was seen allocated (bind-phase success or failed) */
    double owner_at;  /* monotonic: when that owner was first seen (vs_bindq_nodes) */
    char rv[64];      /* the node's resourceVersion in that event ("": unknown) */
    char *seen_lock;  /* the lock's value in that event, NULL when none */
    bool unseen;      /* made for a Filter's or a Bind's pod before any event of the node: the
                       * watch has shown no lock here (it makes an entry for every lock it sees) */
    char *holder_uid; /* the pod whose Bind took the lock here, until its release is seen */
    char *holder_key; /* its "ns/name" */
    bool holder_seen; /* the watch showed the holder's own lock */
    double taken_at;  /* monotonic seconds */
    double done_at;   /* monotonic: the holder was seen allocated; 0 = not yet */
    size_t expected;  /* expect entries on this node */
    size_t name_len;  /* strlen(name) */
    bool busy;        /* expected >= depth: in q->busyv */
    char *ix[2];      /* the pod keys it is filed under in q->by_key: owner, holder_key */
    UT_hash_handle hh;
};

/* A string's entries in a multimap (struct vs_bindq's by_key and by_uid): what a pod event
 * looks up instead of a pass over every node (a wave at 1,000 nodes has hundreds locked at once,
 * each allocated pod brings several events, and a deleted namespace thousands of deletions).
 * Usually one entry per string. */
struct keyref {
    char *key;
    void **v;
    size_t n, cap;
    UT_hash_handle hh;
};

struct vs_bindq {
    struct vs_bindq_opts o;
    pthread_mutex_t mu;
    struct qnode *nodes;
    struct expect *expects, *oldest, *newest;
    /* The busy nodes, sorted by name (strcmp): each Filter copies them in this order, so no
     * Filter sorts them (hundreds to thousands in a large burst). */
    struct qnode **busyv;
    size_t nbusy, busycap;
    struct keyref *by_key; /* pod "ns/name" -> the nodes whose lock owner or holder it is */
    struct keyref *by_uid; /* pod UID -> its waiting Binds (struct waiter) */
    bool keys_broken;      /* out of memory once: pod events look through every node instead */
    bool closed;
    char close_msg[VS_ERRBUF_SIZE];
    double service_s; /* moving average of a node's time per allocation (0: none seen yet) */
    atomic_size_t waiting, nexpect, nwhole;
    atomic_size_t held; /* nodes whose holder_uid is set (vs_bindq_active) */
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct vs_bindq *vs_bindq_new(const struct vs_bindq_opts *o)
{
    struct vs_bindq *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->o = *o;
    if (q->o.expect_ttl_s <= 0)
        q->o.expect_ttl_s = 300;
    pthread_mutex_init(&q->mu, NULL);
    return q;
}

static void expect_unlink(struct vs_bindq *q, struct expect *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else if (q->oldest == e)
        q->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else if (q->newest == e)
        q->newest = e->older;
    e->older = e->newer = NULL;
}

static void expect_push(struct vs_bindq *q, struct expect *e)
{
    e->older = q->newest;
    e->newer = NULL;
    if (q->newest)
        q->newest->newer = e;
    else
        q->oldest = e;
    q->newest = e;
}

/* Caller holds mu. Where a node named `name` is, or would go, in q->busyv. */
static size_t busy_pos(const struct vs_bindq *q, const char *name)
{
    size_t lo = 0, hi = q->nbusy;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(q->busyv[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Caller holds mu: after any change of n->expected. Out of memory, a node that became busy
 * stays out of the set (it is then ranked as not busy: placement, not correctness). */
static void busy_update(struct vs_bindq *q, struct qnode *n)
{
    bool busy = q->o.depth > 0 && n->expected >= (size_t)q->o.depth;
    if (busy == n->busy)
        return;
    if (busy) {
        if (q->nbusy == q->busycap) {
            size_t cap = q->busycap ? q->busycap * 2 : 64;
            struct qnode **g = realloc(q->busyv, cap * sizeof(*g));
            if (!g)
                return;
            q->busyv = g;
            q->busycap = cap;
        }
        size_t i = busy_pos(q, n->name);
        memmove(&q->busyv[i + 1], &q->busyv[i], (q->nbusy - i) * sizeof(q->busyv[0]));
        q->busyv[i] = n;
        q->nbusy++;
    } else {
        size_t i = busy_pos(q, n->name);
        if (i < q->nbusy && q->busyv[i] == n) {
            memmove(&q->busyv[i], &q->busyv[i + 1], (q->nbusy - i - 1) * sizeof(q->busyv[0]));
            q->nbusy--;
        }
    }
    n->busy = busy;
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Caller holds mu: key's entry goes. */
static void key_del(struct keyref **tab, struct keyref *k)
{
    HASH_DEL(*tab, k);
    free(k->key);
    free(k->v);
    free(k);
}

/* Caller holds mu: p leaves key's entry (the entry goes with its last one). */
static void key_drop(struct keyref **tab, const char *key, const void *p)
{
    struct keyref *k = NULL;
    HASH_FIND_STR(*tab, key, k);
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        if (k->v[i] == p) {
            k->v[i] = k->v[--k->n];
            break;
        }
    }
    if (k->n == 0)
        key_del(tab, k);
}

/* Caller holds mu: p joins key's entry. False when out of memory. */
static bool key_add(struct keyref **tab, const char *key, void *p)
{
    struct keyref *k = NULL;
    HASH_FIND_STR(*tab, key, k);
    if (!k) {
        if (!(k = calloc(1, sizeof(*k))) || !(k->key = strdup(key))) {
            free(k);
            return false;
        }
        HASH_ADD_KEYPTR(hh, *tab, k->key, strlen(k->key), k);
    }
    if (!vs_grow_one((void **)&k->v, k->n, &k->cap, sizeof(k->v[0]))) {
        if (k->n == 0)
            key_del(tab, k);
        return false;
    }
    k->v[k->n++] = p;
    return true;
}

/* Caller holds mu: a copy of key's entries (*few when they fit, else malloc'd: free it when it
 * is not few); *n 0 when none. False when out of memory (then keys_broken is set). */
static bool key_copy(struct vs_bindq *q, struct keyref *tab, const char *key, void **few,
                     size_t nfew, void ***out, size_t *n)
{
    struct keyref *k = NULL;
    HASH_FIND_STR(tab, key, k);
    *out = few;
    *n = k ? k->n : 0;
    if (*n > nfew && !(*out = malloc(*n * sizeof(**out)))) {
        *out = few;
        *n = 0;
        q->keys_broken = true;
        return false;
    }
    if (*n)
        memcpy(*out, k->v, *n * sizeof(**out));
    return true;
}

/* Caller holds mu: after any change of n->owner or n->holder_key, so q->by_key files n under
 * each of them (once when they are equal). */
static void keys_update(struct vs_bindq *q, struct qnode *n)
{
    const char *want[2] = {n->owner, same(n->holder_key, n->owner) ? NULL : n->holder_key};
    for (int i = 0; i < 2; i++) {
        if (n->ix[i] && !same(n->ix[i], want[0]) && !same(n->ix[i], want[1])) {
            key_drop(&q->by_key, n->ix[i], n);
            free(n->ix[i]);
            n->ix[i] = NULL;
        }
    }
    for (int i = 0; i < 2; i++) {
        if (!want[i] || same(want[i], n->ix[0]) || same(want[i], n->ix[1]))
            continue;
        int slot = n->ix[0] ? 1 : 0;
        char *dup = strdup(want[i]);
        if (!dup || !key_add(&q->by_key, dup, n)) {
            free(dup);
            q->keys_broken = true;
            continue;
        }
        n->ix[slot] = dup;
    }
}

static void expect_del(struct vs_bindq *q, struct expect *e)
{
    HASH_DEL(q->expects, e);
    expect_unlink(q, e);
    e->node->expected--;
    busy_update(q, e->node);
    atomic_fetch_sub(&q->nexpect, 1);
    if (e->whole)
        atomic_fetch_sub(&q->nwhole, 1);
    free(e->uid);
    free(e);
}

void vs_bindq_free(struct vs_bindq *q)
{
    if (!q)
        return;
    struct expect *e, *et;
    HASH_ITER(hh, q->expects, e, et)
    {
        HASH_DEL(q->expects, e);
        free(e->uid);
        free(e);
    }
    struct qnode *n, *t;
    HASH_ITER(hh, q->nodes, n, t)
    {
        HASH_DEL(q->nodes, n);
        free(n->name);
        free(n->owner);
        free(n->seen_lock);
        free(n->holder_uid);
        free(n->holder_key);
        free(n->ix[0]);
        free(n->ix[1]);
        free(n);
    }
    struct keyref *k, *kt;
    HASH_ITER(hh, q->by_key, k, kt)
    {
        key_del(&q->by_key, k);
    }
    HASH_ITER(hh, q->by_uid, k, kt)
    {
        key_del(&q->by_uid, k);
    }
    free(q->busyv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* Caller holds mu. */
static void service_sample(struct vs_bindq *q, double s)
{
    q->service_s = q->service_s > 0 ? q->service_s + SERVICE_ALPHA * (s - q->service_s) : s;
}

void vs_bindq_service_sample(struct vs_bindq *q, double seconds)
{
    pthread_mutex_lock(&q->mu);
    service_sample(q, seconds);
    pthread_mutex_unlock(&q->mu);
}

double vs_bindq_service_s(struct vs_bindq *q)
{
    pthread_mutex_lock(&q->mu);
    double v = q->service_s;
    pthread_mutex_unlock(&q->mu);
    return v;
}

static struct qnode *node_get(struct vs_bindq *q, const char *name)
{
    struct qnode *n = NULL;
    HASH_FIND_STR(q->nodes, name, n);
    if (n)
        return n;
    n = calloc(1, sizeof(*n));
    if (!n || !(n->name = strdup(name))) {
        free(n);
        return NULL;
    }
    n->name_len = strlen(name);
    n->unseen = true;
    HASH_ADD_KEYPTR(hh, q->nodes, n->name, n->name_len, n);
    return n;
}

/* Drops expectations older than the TTL that no Bind is using. */
static void expect_sweep(struct vs_bindq *q, double now)
{
    while (q->oldest && now - q->oldest->since > (double)q->o.expect_ttl_s)
        expect_del(q, q->oldest);
}

/* whole: the pod takes cards to itself (1), not (0), or as recorded before (-1; new: not). */
static struct expect *expect_set(struct vs_bindq *q, struct qnode *n, const char *uid, double now,
                                 int whole)
{
    struct expect *e = NULL;
    HASH_FIND_STR(q->expects, uid, e);
    if (e && e->node != n) {
        e->node->expected--;
        busy_update(q, e->node);
        e->node = n;
        n->expected++;
        busy_update(q, n);
    }
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e || !(e->uid = strdup(uid))) {
            free(e);
            return NULL;
        }
        e->node = n;
        HASH_ADD_KEYPTR(hh, q->expects, e->uid, strlen(e->uid), e);
        atomic_fetch_add(&q->nexpect, 1);
        n->expected++;
        busy_update(q, n);
    } else {
        expect_unlink(q, e);
    }
    if (whole >= 0 && e->whole != (whole > 0)) {
        e->whole = whole > 0;
        e->whole ? atomic_fetch_add(&q->nwhole, 1) : atomic_fetch_sub(&q->nwhole, 1);
    }
    e->since = now;
    e->active = false;
    expect_push(q, e);
    return e;
}

static void expect_drop(struct vs_bindq *q, const char *uid)
{
    struct expect *e = NULL;
    HASH_FIND_STR(q->expects, uid, e);
    if (e)
        expect_del(q, e);
}

void vs_bindq_expect(struct vs_bindq *q, const char *node, const char *uid, bool whole)
{
    if (!uid || !*uid)
        return;
    double now = mono();
    pthread_mutex_lock(&q->mu);
    expect_sweep(q, now);
    struct qnode *n = node_get(q, node);
    if (n)
        expect_set(q, n, uid, now, whole ? 1 : 0);
    pthread_mutex_unlock(&q->mu);
}

size_t vs_bindq_whole(struct vs_bindq *q)
{
    return atomic_load(&q->nwhole);
}

void vs_bindq_forget(struct vs_bindq *q, const char *uid)
{
    if (!uid || !*uid || atomic_load(&q->nexpect) == 0)
        return;
    pthread_mutex_lock(&q->mu);
    expect_drop(q, uid);
    pthread_mutex_unlock(&q->mu);
}

/* ------------------------------------------------------------------ waiting */

static void unlink_waiter(struct qnode *n, struct waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        n->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        n->tail = w->prev;
    n->nwait--;
}

/* Caller holds mu: the node's lock or holder changed; only the head acts on that. */
static void wake_head(struct qnode *n)
{
    if (n->head)
        pthread_cond_signal(&n->head->cv);
}

static void fail_waiter(struct waiter *w, enum vs_err err, const char *msg)
{
    if (w->failed)
        return;
    w->failed = true;
    w->err = err;
    pthread_cond_signal(&w->cv);
    snprintf(w->msg, sizeof(w->msg), "%s", msg);
}

/* Caller holds mu: a waiter left or a holder was cleared. */
static void active_dropped(struct vs_bindq *q)
{
    if (q->o.on_idle && atomic_load(&q->waiting) == 0 && atomic_load(&q->held) == 0)
        q->o.on_idle(q->o.idle_ctx);
}

static void clear_holder(struct vs_bindq *q, struct qnode *n, bool seen_release)
{
    if (!n->holder_uid)
        return;
    if (seen_release && q->o.metrics)
        vs_metrics_lock_hold(q->o.metrics, mono() - n->taken_at);
    if (seen_release)
        vs_log(VS_LOG_DEBUG, "node_lock_release_seen", "node=%s holder=%s hold_ms=%.1f waiting=%zu",
               n->name, n->holder_key ? n->holder_key : "", (mono() - n->taken_at) * 1e3, n->nwait);
    expect_drop(q, n->holder_uid);
    free(n->holder_uid);
    free(n->holder_key);
    n->holder_uid = n->holder_key = NULL;
    n->holder_seen = false;
    n->done_at = 0;
    keys_update(q, n);
    atomic_fetch_sub(&q->held, 1);
    active_dropped(q);
}

/* Go's time.Duration.String() of a whole number of milliseconds ("28s", "1m30s", "500ms",
 * "1.5s"), as HAMi prints --node-lock-retry-timeout. */
static void duration_ms_string(int64_t ms, char *out, size_t len)
{
    if (ms % 1000 == 0) {
        vs_duration_string(ms / 1000, out, (unsigned)len);
        return;
    }
    if (ms < 1000) {
        snprintf(out, len, "%lldms", (long long)ms);
        return;
    }
    int64_t s = ms / 1000;
    char frac[8];
    snprintf(frac, sizeof(frac), "%03lld", (long long)(ms % 1000));
    for (int i = 2; i > 0 && frac[i] == '0'; i--)
        frac[i] = '\0';
    if (s >= 60) {
        char head[32];
        vs_duration_string(s - s % 60, head, sizeof(head)); /* "1m0s" / "1h0m0s" */
        head[strlen(head) - 2] = '\0';                      /* drop "0s" */
        snprintf(out, len, "%s%lld.%ss", head, (long long)(s % 60), frac);
    } else {
        snprintf(out, len, "%lld.%ss", (long long)s, frac);
    }
}

/* HAMi's message for a wait that ran out (spec/hami-compat.md §6.3). */
static void timeout_msg(struct vs_bindq *q, const char *node, char *out, size_t len)
{
    char d[32];
    duration_ms_string(q->o.wait_ms, d, sizeof(d));
    snprintf(out, len,
             "timed out after %s waiting for node %s to be unlocked: node lock contention", d,
             node);
}

static struct timespec abs_deadline(double deadline)
{
    struct timespec ts;
    ts.tv_sec = (time_t)deadline;
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

enum vs_err vs_bindq_lock(struct vs_bindq *q, const struct vs_bindq_req *r, double *waited_s,
                          struct vs_errbuf *eb)
{
    double t0 = mono();
    double deadline =
        (r->since > 0 && r->since < t0 ? r->since : t0) + (double)q->o.wait_ms / 1000.0;
    struct waiter w;
    memset(&w, 0, sizeof(w));
    w.r = r;
    enum vs_err err = VS_OK;
    char last[VS_ERRBUF_SIZE];
    last[0] = '\0';
    pthread_mutex_lock(&q->mu);
    if (q->closed) {
        snprintf(w.msg, sizeof(w.msg), "%s", q->close_msg);
        pthread_mutex_unlock(&q->mu);
        if (waited_s)
            *waited_s = 0;
        return vs_err_set(eb, VS_ERR_CONFLICT, "%s", w.msg);
    }
    struct qnode *n = node_get(q, r->node);
    struct expect *e = n ? expect_set(q, n, r->uid && *r->uid ? r->uid : "", t0, -1) : NULL;
    if (!n || !e) {
        pthread_mutex_unlock(&q->mu);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &ca);
    pthread_condattr_destroy(&ca);
    e->active = true;
    expect_unlink(q, e); /* active entries are not swept */
    w.behind = n->holder_uid || n->head;
    w.node = n;
    if (r->uid && *r->uid && !key_add(&q->by_uid, r->uid, &w))
        q->keys_broken = true;
    w.prev = n->tail;
    if (n->tail)
        n->tail->next = &w;
    else
        n->head = &w;
    n->tail = &w;
    n->nwait++;
    atomic_fetch_add(&q->waiting, 1);
    for (;;) {
        if (w.failed) {
            err = w.err;
            snprintf(last, sizeof(last), "%s", w.msg);
            break;
        }
        if (w.recheck && r->check) {
            w.recheck = false;
            struct vs_errbuf ceb;
            pthread_mutex_unlock(&q->mu);
            enum vs_err ce = r->check(r->ctx, &ceb);
            pthread_mutex_lock(&q->mu);
            if (ce) {
                fail_waiter(&w, ce, ceb.msg);
                continue;
            }
        }
        double grace_end = n->holder_uid && n->done_at > 0
                               ? n->done_at + (double)q->o.handoff_grace_ms / 1000.0
                               : 0;
        if (n->head == &w && grace_end > 0 && mono() >= grace_end) {
            /* The holder is allocated but its lock was not seen released: the device plugin's
             * release failed. Try the lock; the owner rules break it. */
            vs_log(VS_LOG_WARN, "node_lock_not_released", "node=%s holder=%s", n->name,
                   n->holder_key ? n->holder_key : "");
            clear_holder(q, n, false);
            n->gen++;
            continue;
        }
        if (n->head == &w && !n->holder_uid && (!w.tried || w.tried_gen != n->gen)) {
            uint64_t g = n->gen;
            struct vs_errbuf teb;
            teb.msg[0] = '\0';
            /* The watch's last event shows the node unlocked, or locked by a pod seen allocated
             * since (its device plugin is done with the node; its release is owner-checked, so
             * it leaves our lock alone), or no event of the node came since its entry was made
             * for a pod (the watch makes an entry for every lock it sees, so it has shown none
             * here): take it as seen. A lock the watch has not shown yet fails the patch's test,
             * and the node is read. */
            bool at = r->take_seen && (!n->owner || n->owner_done) && (n->rv[0] || n->unseen);
            char *seen = NULL;
            if (at && n->seen_lock && !(seen = strdup(n->seen_lock)))
                at = false;
            /* Logged under the mutex: the entry's owner may change once it is released. */
            if (!at)
                vs_log(VS_LOG_DEBUG, "node_lock_take",
                       "node=%s pod=%s/%s owner=%s done=%d known=%d", n->name, r->ns, r->name,
                       n->owner ? n->owner : "", n->owner_done, n->rv[0] != '\0');
            pthread_mutex_unlock(&q->mu);
            enum vs_err te = at ? r->take_seen(r->ctx, seen, &teb) : r->take(r->ctx, &teb);
            free(seen);
            pthread_mutex_lock(&q->mu);
            if (te == VS_OK) {
                free(n->holder_uid);
                free(n->holder_key);
                n->holder_uid = strdup(r->uid ? r->uid : "");
                if (n->holder_uid)
                    atomic_fetch_add(&q->held, 1);
                size_t kl = strlen(r->ns) + strlen(r->name) + 2;
                n->holder_key = malloc(kl);
                if (n->holder_key)
                    snprintf(n->holder_key, kl, "%s/%s", r->ns, r->name);
                keys_update(q, n);
                n->holder_seen = n->owner && n->holder_key && strcmp(n->owner, n->holder_key) == 0;
                double now = mono();
                /* It queued behind the previous holder (or behind Binds that took the lock
                 * since): from the last take to this one is one whole allocation on this node
                 * (hold and hand-off), not time the node sat idle. */
                if (w.behind && n->taken_at > 0)
                    service_sample(q, now - n->taken_at);
                n->taken_at = now;
                err = VS_OK;
                break;
            }
            if (te != VS_ERR_CONFLICT || q->o.wait_ms <= 0) {
                err = te;
                snprintf(last, sizeof(last), "%s", teb.msg);
                break;
            }
            snprintf(last, sizeof(last), "%s", teb.msg);
            w.tried = true;
            w.tried_gen = g;
            continue; /* the lock may have changed while we tried */
        }
        if (mono() >= deadline) {
            err = VS_ERR_CONFLICT;
            timeout_msg(q, r->node, last, sizeof(last));
            break;
        }
        struct timespec ts = abs_deadline(
            n->head == &w && grace_end > 0 && grace_end < deadline ? grace_end : deadline);
        pthread_cond_timedwait(&w.cv, &q->mu, &ts);
    }
    bool was_head = n->head == &w;
    unlink_waiter(n, &w);
    if (r->uid && *r->uid)
        key_drop(&q->by_uid, r->uid, &w);
    atomic_fetch_sub(&q->waiting, 1);
    active_dropped(q);
    if (err) {
        struct expect *x = NULL;
        HASH_FIND_STR(q->expects, r->uid && *r->uid ? r->uid : "", x);
        if (x && x->node == n)
            expect_del(q, x);
    }
    if (was_head || err)
        wake_head(n);
    pthread_mutex_unlock(&q->mu);
    pthread_cond_destroy(&w.cv);
    double waited = mono() - t0;
    if (waited_s)
        *waited_s = waited;
    if (q->o.metrics)
        vs_metrics_bind_wait(q->o.metrics, waited);
    if (err)
        return vs_err_set(eb, err, "%s", last);
    return VS_OK;
}

void vs_bindq_released(struct vs_bindq *q, const char *node, const char *uid)
{
    pthread_mutex_lock(&q->mu);
    struct qnode *n = NULL;
    HASH_FIND_STR(q->nodes, node, n);
    if (n && n->holder_uid && strcmp(n->holder_uid, uid ? uid : "") == 0) {
        clear_holder(q, n, true);
        n->gen++;
        wake_head(n);
    } else {
        expect_drop(q, uid ? uid : "");
    }
    pthread_mutex_unlock(&q->mu);
}

/* ------------------------------------------------------------------ events */

/* "ns/name" of the lock's owner, the raw value when it does not parse; NULL for no lock. */
static char *owner_of(const char *lock)
{
    if (!lock)
        return NULL;
    struct vs_lock l;
    struct vs_errbuf eb;
    if (vs_annot_parse_lock(lock, &l, &eb))
        return strdup(lock);
    size_t len = strlen(l.ns) + strlen(l.name) + 2;
    char *k = malloc(len);
    if (k)
        snprintf(k, len, "%s/%s", l.ns, l.name);
    vs_lock_cleanup(&l);
    return k;
}

void vs_bindq_node_event(struct vs_bindq *q, const char *node, const char *lock, bool deleted,
                         bool relist)
{
    vs_bindq_node_event_rv(q, node, lock, NULL, deleted, relist);
}

void vs_bindq_node_event_rv(struct vs_bindq *q, const char *node, const char *lock, const char *rv,
                            bool deleted, bool relist)
{
    pthread_mutex_lock(&q->mu);
    struct qnode *n = NULL;
    HASH_FIND_STR(q->nodes, node, n);
    /* A locked node gets its entry now, so a later Bind knows the lock's owner. */
    if (!n && lock && !deleted)
        n = node_get(q, node);
    if (!n) {
        pthread_mutex_unlock(&q->mu);
        return;
    }
    n->unseen = false;
    free(n->seen_lock);
    n->seen_lock = NULL;
    if (!deleted && rv && strlen(rv) < sizeof(n->rv) && (!lock || (n->seen_lock = strdup(lock))))
        memcpy(n->rv, rv, strlen(rv) + 1);
    else
        n->rv[0] = '\0';
    if (deleted) {
        char msg[VS_ERRBUF_SIZE];
        snprintf(msg, sizeof(msg), "node %s was deleted while the Bind waited for its lock", node);
        for (struct waiter *w = n->head; w; w = w->next)
            fail_waiter(w, VS_ERR_NOTFOUND, msg);
        clear_holder(q, n, false);
        struct expect *e, *t;
        HASH_ITER(hh, q->expects, e, t)
        if (e->node == n && !e->active)
            expect_del(q, e);
        free(n->owner);
        n->owner = NULL;
        n->owner_done = false;
        keys_update(q, n);
        n->gen++;
        wake_head(n);
        pthread_mutex_unlock(&q->mu);
        return;
    }
    char *owner = owner_of(lock);
    if (!same(owner, n->owner)) {
        n->owner_done = false;
        n->owner_at = mono();
    }
    if (n->holder_uid && !n->holder_seen) {
        bool ours = same(owner, n->holder_key);
        free(n->owner);
        n->owner = owner;
        keys_update(q, n);
        if (ours)
            n->holder_seen = true; /* our own lock: nothing changed for the waiters */
        if (ours || !relist) {
            /* Not ours and not a relist: an event older than our lock (the previous owner's
             * release arriving late). */
            pthread_mutex_unlock(&q->mu);
            return;
        }
        clear_holder(q, n, true); /* a relist no longer shows our lock: released meanwhile */
        n->gen++;
        wake_head(n);
        pthread_mutex_unlock(&q->mu);
        return;
    }
    /* No lock while the head waits: its failed try saw one the watch may never have shown (the
     * node had no entry yet, or the lock came and went between two events). */
    bool head_waits = !owner && n->head && !n->holder_uid;
    if (same(owner, n->owner) && !head_waits) {
        free(owner);
        pthread_mutex_unlock(&q->mu);
        return;
    }
    free(n->owner);
    n->owner = owner;
    keys_update(q, n);
    if (n->holder_uid)
        clear_holder(q, n, true); /* the lock we took is released or replaced */
    n->gen++;
    wake_head(n);
    pthread_mutex_unlock(&q->mu);
}

/* Caller holds mu: w's pod was deleted. */
static void fail_deleted(struct waiter *w, const char *key)
{
    char msg[VS_ERRBUF_SIZE];
    snprintf(msg, sizeof(msg), "pod %s was deleted while its Bind waited for node %s's lock", key,
             w->node->name);
    fail_waiter(w, VS_ERR_NOTFOUND, msg);
    wake_head(w->node);
}

/* Caller holds mu: the lock's owner key is gone or terminal, so the next try may break the lock. */
static void owner_gone(struct vs_bindq *q, struct qnode *n, const char *key)
{
    if (!n->owner || strcmp(n->owner, key) != 0)
        return;
    if (n->holder_key && strcmp(n->holder_key, key) == 0)
        clear_holder(q, n, false);
    n->gen++;
    wake_head(n);
}

void vs_bindq_pod_event(struct vs_bindq *q, const char *uid, const char *ns, const char *name,
                        bool deleted)
{
    if (atomic_load(&q->waiting) == 0 && atomic_load(&q->nexpect) == 0)
        return;
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name ? name : "");
    bool by_uid = deleted && uid && *uid;
    pthread_mutex_lock(&q->mu);
    void *wfew[4], **wv = wfew, *nfew[4], **nv = nfew;
    size_t nw = 0, nn = 0;
    if (by_uid)
        key_copy(q, q->by_uid, uid, wfew, 4, &wv, &nw);
    key_copy(q, q->by_key, key, nfew, 4, &nv, &nn);
    if (q->keys_broken) { /* out of memory once: the indexes may miss a Bind or a node */
        struct qnode *n, *t;
        HASH_ITER(hh, q->nodes, n, t)
        {
            for (struct waiter *w = n->head; by_uid && w; w = w->next)
                if (w->r->uid && strcmp(w->r->uid, uid) == 0)
                    fail_deleted(w, key);
            owner_gone(q, n, key);
        }
    } else {
        for (size_t i = 0; i < nw; i++)
            fail_deleted(wv[i], key);
        for (size_t i = 0; i < nn; i++)
            owner_gone(q, nv[i], key);
    }
    if (wv != wfew)
        free(wv);
    if (nv != nfew)
        free(nv);
    if (deleted && uid) {
        struct expect *e = NULL;
        HASH_FIND_STR(q->expects, uid, e);
        if (e && !e->active)
            expect_del(q, e);
    }
    pthread_mutex_unlock(&q->mu);
}

/* Caller holds mu: the pod key (its lock seen on n, or its Bind holding n) was seen allocated. */
static void allocated_on(struct vs_bindq *q, struct qnode *n, const char *key)
{
    bool owns = n->owner && strcmp(n->owner, key) == 0;
    if (owns)
        n->owner_done = true;
    if (n->holder_key && strcmp(n->holder_key, key) == 0 && owns && n->holder_seen && n->rv[0]) {
        /* The watch showed our holder's lock at n->rv: the next Bind takes the lock over at
         * that version, without waiting for the device plugin's release to come round. */
        vs_log(VS_LOG_DEBUG, "node_lock_handover", "node=%s holder=%s hold_ms=%.1f waiting=%zu",
               n->name, key, (mono() - n->taken_at) * 1e3, n->nwait);
        if (q->o.metrics)
            vs_metrics_lock_hold(q->o.metrics, mono() - n->taken_at);
        clear_holder(q, n, false);
        n->gen++;
        wake_head(n);
    } else if (n->holder_key && n->done_at == 0 && strcmp(n->holder_key, key) == 0) {
        n->done_at = mono();
        wake_head(n);
    } else if (owns && n->head) {
        n->gen++;
        wake_head(n);
    }
}

size_t vs_bindq_pod_keys(struct vs_bindq *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = HASH_COUNT(q->by_key) + HASH_COUNT(q->by_uid);
    pthread_mutex_unlock(&q->mu);
    return n;
}

void vs_bindq_pod_allocated(struct vs_bindq *q, const char *ns, const char *name)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name ? name : "");
    pthread_mutex_lock(&q->mu);
    /* allocated_on may take nodes out of the entry (clear_holder): act on a copy. */
    void *few[4], **v;
    size_t nv;
    key_copy(q, q->by_key, key, few, 4, &v, &nv);
    if (q->keys_broken) { /* out of memory once: the index may miss a node */
        struct qnode *n, *t;
        HASH_ITER(hh, q->nodes, n, t)
        {
            allocated_on(q, n, key);
        }
    } else {
        for (size_t i = 0; i < nv; i++)
            allocated_on(q, v[i], key);
    }
    if (v != few)
        free(v);
    pthread_mutex_unlock(&q->mu);
}

void vs_bindq_recheck(struct vs_bindq *q)
{
    if (atomic_load(&q->waiting) == 0)
        return;
    pthread_mutex_lock(&q->mu);
    struct qnode *n, *t;
    HASH_ITER(hh, q->nodes, n, t)
    {
        if (!n->head)
            continue;
        for (struct waiter *w = n->head; w; w = w->next) {
            w->recheck = true;
            pthread_cond_signal(&w->cv);
        }
    }
    pthread_mutex_unlock(&q->mu);
}

static void fail_all_locked(struct vs_bindq *q, const char *why)
{
    struct qnode *n, *t;
    HASH_ITER(hh, q->nodes, n, t)
    {
        if (!n->head)
            continue;
        for (struct waiter *w = n->head; w; w = w->next)
            fail_waiter(w, VS_ERR_CONFLICT, why);
    }
}

void vs_bindq_fail_all(struct vs_bindq *q, const char *why)
{
    pthread_mutex_lock(&q->mu);
    fail_all_locked(q, why);
    pthread_mutex_unlock(&q->mu);
}

void vs_bindq_close(struct vs_bindq *q, const char *why)
{
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    snprintf(q->close_msg, sizeof(q->close_msg), "%s", why);
    fail_all_locked(q, why);
    pthread_mutex_unlock(&q->mu);
}

void vs_bindq_open(struct vs_bindq *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = false;
    pthread_mutex_unlock(&q->mu);
}

/* ------------------------------------------------------------------ Filter's view */

/* Caller holds mu. Binds on a node from which a new one would wait past the budget; SIZE_MAX
 * while no allocation time was measured or without a wait bound. */
static size_t saturation(const struct vs_bindq *q)
{
    if (q->service_s <= 0 || q->o.wait_ms <= 0 || q->o.saturation <= 0)
        return SIZE_MAX;
    double budget = (double)q->o.wait_ms / 1000.0 * q->o.saturation;
    double c = ceil(budget / q->service_s);
    size_t cap = c >= (double)SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)c;
    return cap > (size_t)q->o.depth ? cap : (size_t)q->o.depth;
}

/* A busy node's rank (vs_sched_opts.busy_rank): its layer, Binds / depth (>= 1), below the
 * saturated ones, VS_SCHED_RANK_SATURATED + Binds. */
static unsigned rank_of(const struct vs_bindq *q, size_t expected, size_t cap)
{
    if (expected < cap) {
        size_t layer = expected / (size_t)q->o.depth;
        return layer < VS_SCHED_RANK_SATURATED ? (unsigned)layer : VS_SCHED_RANK_SATURATED - 1;
    }
    return expected < UINT_MAX - VS_SCHED_RANK_SATURATED
               ? VS_SCHED_RANK_SATURATED + (unsigned)expected
               : UINT_MAX;
}

size_t vs_bindq_busy(struct vs_bindq *q, char ***names, unsigned **ranks)
{
    *names = NULL;
    if (ranks)
        *ranks = NULL;
    if (q->o.depth <= 0)
        return 0;
    pthread_mutex_lock(&q->mu);
    expect_sweep(q, mono());
    size_t cap = saturation(q);
    size_t count = q->nbusy, bytes = 0;
    for (size_t i = 0; i < count; i++)
        bytes += q->busyv[i]->name_len + 1;
    char **out = count ? malloc(count * (sizeof(char *) + sizeof(unsigned)) + bytes) : NULL;
    if (out) {
        unsigned *rk = (unsigned *)(out + count);
        char *p = (char *)(rk + count);
        for (size_t i = 0; i < count; i++) {
            const struct qnode *n = q->busyv[i];
            memcpy(p, n->name, n->name_len + 1);
            out[i] = p;
            rk[i] = rank_of(q, n->expected, cap);
            p += n->name_len + 1;
        }
    }
    pthread_mutex_unlock(&q->mu);
    if (!out)
        return 0;
    *names = out;
    if (ranks)
        *ranks = (unsigned *)(out + count);
    return count;
}

size_t vs_bindq_load(struct vs_bindq *q, const char *node)
{
    pthread_mutex_lock(&q->mu);
    struct qnode *n = NULL;
    HASH_FIND_STR(q->nodes, node, n);
    size_t v = n ? n->expected : 0;
    pthread_mutex_unlock(&q->mu);
    return v;
}

size_t vs_bindq_waiting(struct vs_bindq *q)
{
    return atomic_load(&q->waiting);
}

size_t vs_bindq_active(struct vs_bindq *q)
{
    return atomic_load(&q->waiting) + atomic_load(&q->held);
}

static int view_cmp(const void *a, const void *b)
{
    return strcmp(((const struct vs_bindq_node_view *)a)->node,
                  ((const struct vs_bindq_node_view *)b)->node);
}

void vs_bindq_nodes_free(struct vs_bindq_node_view *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].node);
        free(v[i].owner);
        free(v[i].holder);
    }
    free(v);
}

size_t vs_bindq_nodes(struct vs_bindq *q, struct vs_bindq_node_view **out)
{
    *out = NULL;
    double now = mono();
    pthread_mutex_lock(&q->mu);
    size_t cnt = 0;
    struct qnode *n, *t;
    HASH_ITER(hh, q->nodes, n, t)
    cnt += n->owner || n->holder_key || n->nwait || n->expected;
    struct vs_bindq_node_view *v = cnt ? calloc(cnt, sizeof(*v)) : NULL;
    size_t k = 0;
    HASH_ITER(hh, q->nodes, n, t)
    {
        if (!v || !(n->owner || n->holder_key || n->nwait || n->expected))
            continue;
        struct vs_bindq_node_view *d = &v[k++];
        d->node = strdup(n->name);
        d->owner = n->owner ? strdup(n->owner) : NULL;
        d->owner_done = n->owner_done;
        d->owner_age_s = n->owner ? now - n->owner_at : -1;
        d->holder = n->holder_key ? strdup(n->holder_key) : NULL;
        d->held_s = n->holder_key ? now - n->taken_at : -1;
        d->waiting = n->nwait;
        d->in_flight = n->expected;
        if (!d->node || (n->owner && !d->owner) || (n->holder_key && !d->holder)) {
            pthread_mutex_unlock(&q->mu);
            vs_bindq_nodes_free(v, k);
            return 0;
        }
    }
    pthread_mutex_unlock(&q->mu);
    if (k > 1)
        qsort(v, k, sizeof(*v), view_cmp);
    *out = v;
    return k;
}
