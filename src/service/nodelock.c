/* nodelock: acquire/release of the node lock annotation. A per-node in-process mutex serialises
 * our own lock operations on one node; the API's resourceVersion precondition serialises us
 * against other writers (409 is retried). Malformed lock values are remembered with the time
 * they were first seen, so they can be broken after the timeout. */
#include "nodelock.h"

#include "annot.h"
#include "log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

struct node_mu {
    char *name;
    pthread_mutex_t mu;
    char *bad_value; /* a malformed lock value seen on this node, and since when */
    int64_t bad_since;
    UT_hash_handle hh;
};

/* A lock of ours whose release failed (API down): retried until released or no longer ours. */
struct pending {
    char *node, *ns, *name;
    struct pending *next;
};

struct vs_nodelock {
    struct vs_kube *k;
    int64_t timeout;
    int64_t (*now)(void);
    pthread_mutex_t mu; /* guards the nodes table */
    struct node_mu *nodes;
    atomic_uint_fast64_t acquired, contended, broken, released, release_retries;
    atomic_uint_fast64_t acquired_at, at_conflicts;
    pthread_mutex_t pmu; /* guards pending, stop */
    pthread_cond_t pcv;
    struct pending *pending;
    bool stop, retrying;
    pthread_t retry_thread;
};

void vs_duration_string(int64_t s, char *out, unsigned len)
{
    if (s >= 3600)
        snprintf(out, len, "%lldh%lldm%llds", (long long)(s / 3600), (long long)(s / 60 % 60),
                 (long long)(s % 60));
    else if (s >= 60)
        snprintf(out, len, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(out, len, "%llds", (long long)s);
}

struct vs_nodelock *vs_nodelock_new(struct vs_kube *k, int64_t timeout_s, int64_t (*now_fn)(void))
{
    struct vs_nodelock *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->k = k;
    l->timeout = timeout_s;
    l->now = now_fn;
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->pmu, NULL);
    pthread_cond_init(&l->pcv, NULL);
    return l;
}

static void pending_free(struct pending *p)
{
    free(p->node);
    free(p->ns);
    free(p->name);
    free(p);
}

void vs_nodelock_free(struct vs_nodelock *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->pmu);
    l->stop = true;
    pthread_cond_broadcast(&l->pcv);
    pthread_mutex_unlock(&l->pmu);
    if (l->retrying)
        pthread_join(l->retry_thread, NULL);
    while (l->pending) {
        struct pending *p = l->pending;
        l->pending = p->next;
        vs_log(VS_LOG_WARN, "node_lock_release_abandoned", "node=%s pod=%s/%s", p->node, p->ns,
               p->name);
        pending_free(p);
    }
    pthread_cond_destroy(&l->pcv);
    pthread_mutex_destroy(&l->pmu);
    struct node_mu *n, *t;
    HASH_ITER(hh, l->nodes, n, t)
    {
        HASH_DEL(l->nodes, n);
        pthread_mutex_destroy(&n->mu);
        free(n->name);
        free(n->bad_value);
        free(n);
    }
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static struct node_mu *node_mu(struct vs_nodelock *l, const char *node)
{
    pthread_mutex_lock(&l->mu);
    struct node_mu *n = NULL;
    HASH_FIND_STR(l->nodes, node, n);
    if (!n) {
        n = calloc(1, sizeof(*n));
        if (n && (n->name = strdup(node))) {
            pthread_mutex_init(&n->mu, NULL);
            HASH_ADD_KEYPTR(hh, l->nodes, n->name, strlen(n->name), n);
        } else {
            free(n);
            n = NULL;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return n;
}

static void node_path(char *buf, size_t len, const char *node)
{
    char *e = vs_kube_escape(node);
    snprintf(buf, len, "/api/v1/nodes/%s", e ? e : node);
    free(e);
}

/* GETs the node; *lock is the current lock value (borrowed from *node_json) or NULL. */
static enum vs_err get_node(struct vs_nodelock *l, const char *node, json_t **node_json,
                            const char **lock, const char **rv, struct vs_errbuf *eb)
{
    char path[512];
    node_path(path, sizeof(path), node);
    enum vs_err err = vs_kube_get(l->k, path, node_json, eb);
    if (err)
        return err;
    json_t *md = json_object_get(*node_json, "metadata");
    *lock = json_string_value(json_object_get(json_object_get(md, "annotations"), VS_ANNO_LOCK));
    *rv = json_string_value(json_object_get(md, "resourceVersion"));
    return VS_OK;
}

static enum vs_err patch_lock(struct vs_nodelock *l, const char *node, const char *value,
                              const char *rv, struct vs_errbuf *eb)
{
    char path[512];
    node_path(path, sizeof(path), node);
    json_t *patch =
        json_pack("{s:{s:{s:o},s:s}}", "metadata", "annotations", VS_ANNO_LOCK,
                  value ? json_string(value) : json_null(), "resourceVersion", rv ? rv : "");
    if (!patch)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    enum vs_err err = vs_kube_merge_patch(l->k, path, patch, NULL, eb);
    json_decref(patch);
    return err;
}

static bool owner_suffix_is(const char *value, const char *ns, const char *name)
{
    char suffix[600];
    snprintf(suffix, sizeof(suffix), ",%s,%s", ns, name);
    size_t vl = strlen(value), sl = strlen(suffix);
    return vl >= sl && strcmp(value + vl - sl, suffix) == 0;
}

static void sleep_backoff(int attempt)
{
    unsigned ms = 100u << attempt;
    ms = ms / 2 + (unsigned)(rand() % (int)(ms + 1)) / 2; /* jitter 0.5 */
    usleep(ms * 1000);
}

static enum vs_err contention(struct vs_nodelock *l, const char *node, struct vs_errbuf *eb)
{
    char d[32];
    vs_duration_string(l->timeout, d, sizeof(d));
    atomic_fetch_add(&l->contended, 1);
    return vs_err_set(eb, VS_ERR_CONFLICT,
                      "node %s has been locked within %s: node lock contention", node, d);
}

/* SetLock: up to 5 attempts, retrying non-contention errors. rv0: the resourceVersion of a
 * node just read without a lock (the first attempt patches against it instead of reading the
 * node again; a change meanwhile is a 409, retried like any other failure). */
static enum vs_err set_lock(struct vs_nodelock *l, const char *node, const char *ns,
                            const char *name, const char *rv0, struct vs_errbuf *eb)
{
    enum vs_err err = VS_ERR_KUBE;
    for (int attempt = 0; attempt < 5; attempt++) {
        if (attempt)
            sleep_backoff(attempt - 1);
        if (attempt == 0 && rv0) {
            char *value = vs_annot_format_lock(l->now(), ns, name);
            err = value ? patch_lock(l, node, value, rv0, eb) : VS_ERR_NOMEM;
            free(value);
            if (!err || err == VS_ERR_NOMEM)
                return err;
            continue;
        }
        json_t *nj = NULL;
        const char *lock, *rv;
        if ((err = get_node(l, node, &nj, &lock, &rv, eb))) {
            json_decref(nj);
            if (err == VS_ERR_NOTFOUND)
                return err;
            continue;
        }
        if (lock && owner_suffix_is(lock, ns, name)) {
            json_decref(nj);
            return VS_OK; /* an earlier attempt landed */
        }
        if (lock) {
            json_decref(nj);
            return contention(l, node, eb);
        }
        char *value = vs_annot_format_lock(l->now(), ns, name);
        err = value ? patch_lock(l, node, value, rv, eb) : VS_ERR_NOMEM;
        free(value);
        json_decref(nj);
        if (!err)
            return VS_OK;
    }
    return err;
}

/* Decides whether an existing lock held by another pod may be broken. */
static bool owner_dead(struct vs_nodelock *l, const char *ns, const char *name, const char **why,
                       struct vs_errbuf *eb, enum vs_err *err)
{
    char path[1024];
    char *ens = vs_kube_escape(ns), *ename = vs_kube_escape(name);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ens ? ens : ns,
             ename ? ename : name);
    free(ens);
    free(ename);
    json_t *pod = NULL;
    *err = vs_kube_get(l->k, path, &pod, eb);
    if (*err == VS_ERR_NOTFOUND) {
        *err = VS_OK;
        *why = "owner pod not found";
        return true;
    }
    if (*err)
        return false;
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    const char *bp = json_string_value(json_object_get(
        json_object_get(json_object_get(pod, "metadata"), "annotations"), VS_ANNO_BIND_PHASE));
    bool dead = false;
    if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
        *why = "owner pod terminated";
        dead = true;
    } else if (bp && strcmp(bp, "success") == 0) {
        *why = "owner pod already allocated (bind-phase=success)";
        dead = true;
    } else if (bp && strcmp(bp, "failed") == 0) {
        /* The device plugin's Allocate failed: it is done with the node (HAMi's plugin releases
         * the lock right after writing `failed`; this covers a release that was lost). */
        *why = "owner pod's allocation failed (bind-phase=failed)";
        dead = true;
    }
    json_decref(pod);
    return dead;
}

static enum vs_err force_release(struct vs_nodelock *l, const char *node, const char *value,
                                 struct vs_errbuf *eb)
{
    enum vs_err err = VS_ERR_KUBE;
    for (int attempt = 0; attempt < 5; attempt++) {
        if (attempt)
            sleep_backoff(attempt - 1);
        json_t *nj = NULL;
        const char *lock, *rv;
        if ((err = get_node(l, node, &nj, &lock, &rv, eb))) {
            json_decref(nj);
            continue;
        }
        if (!lock || strcmp(lock, value) != 0) {
            json_decref(nj);
            return VS_OK; /* gone or replaced meanwhile: nothing of that lock left to break */
        }
        err = patch_lock(l, node, NULL, rv, eb);
        json_decref(nj);
        if (!err)
            return VS_OK;
    }
    return err;
}

/* A lock value that does not parse is broken once the same value has been seen for longer than
 * the lock timeout (its first sighting is remembered per node, under nm->mu). */
static bool malformed_aged(const struct vs_nodelock *l, struct node_mu *nm, const char *value,
                           int64_t now)
{
    if (!nm->bad_value || strcmp(nm->bad_value, value) != 0) {
        free(nm->bad_value);
        nm->bad_value = strdup(value);
        nm->bad_since = now;
    }
    return now - nm->bad_since > l->timeout;
}

enum vs_err vs_nodelock_acquire(struct vs_nodelock *l, const char *node, const char *ns,
                                const char *name, struct vs_errbuf *eb)
{
    struct node_mu *nm = node_mu(l, node);
    if (!nm)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&nm->mu);
    json_t *nj = NULL;
    const char *lock, *rv;
    enum vs_err err = get_node(l, node, &nj, &lock, &rv, eb);
    if (err)
        goto out;
    if (!lock) {
        err = set_lock(l, node, ns, name, rv, eb);
        goto out;
    }
    char value[1024];
    snprintf(value, sizeof(value), "%s", lock);
    struct vs_lock parsed;
    struct vs_errbuf pe;
    int64_t now = l->now();
    const char *why = NULL;
    if (vs_annot_parse_lock(value, &parsed, &pe)) {
        if (!malformed_aged(l, nm, value, now)) {
            char q[VS_ERRBUF_SIZE + 8];
            vs_log(VS_LOG_WARN, "node_lock_malformed", "node=%s error=%s", node,
                   vs_log_quote(pe.msg, q, sizeof(q)));
            err = vs_err_set(eb, VS_ERR_CONFLICT,
                             "node %s has a malformed lock annotation (%s); it is broken after "
                             "the lock timeout: node lock contention",
                             node, pe.msg);
            atomic_fetch_add(&l->contended, 1);
            goto out;
        }
        why = "malformed lock value older than the timeout";
    } else if (now - parsed.time > l->timeout) {
        why = "lock expired";
    } else if (strcmp(parsed.ns, ns) == 0 && strcmp(parsed.name, name) == 0) {
        vs_lock_cleanup(&parsed);
        err = VS_OK; /* re-entrant */
        goto out;
    } else if (*parsed.ns && *parsed.name) {
        enum vs_err gerr;
        if (!owner_dead(l, parsed.ns, parsed.name, &why, eb, &gerr)) {
            vs_lock_cleanup(&parsed);
            err = gerr ? gerr : contention(l, node, eb);
            goto out;
        }
    } else {
        vs_lock_cleanup(&parsed);
        err = contention(l, node, eb);
        goto out;
    }
    if (!why)
        why = "";
    vs_lock_cleanup(&parsed);
    char q[1100];
    vs_log(VS_LOG_WARN, "node_lock_broken", "node=%s lock=%s reason=\"%s\"", node,
           vs_log_quote(value, q, sizeof(q)), why);
    atomic_fetch_add(&l->broken, 1);
    if ((err = force_release(l, node, value, eb)))
        goto out;
    free(nm->bad_value);
    nm->bad_value = NULL;
    err = set_lock(l, node, ns, name, NULL, eb);
out:
    if (!err)
        atomic_fetch_add(&l->acquired, 1);
    json_decref(nj);
    pthread_mutex_unlock(&nm->mu);
    return err;
}

/* One JSON patch: the lock annotation tested to be `expect` (NULL: absent), then set to ours. */
static enum vs_err cas_lock(struct vs_nodelock *l, const char *node, const char *expect,
                            const char *ns, const char *name, struct vs_errbuf *eb)
{
    static const char ptr[] = "/metadata/annotations/hami.io~1mutex.lock";
    char path[512];
    node_path(path, sizeof(path), node);
    char *value = vs_annot_format_lock(l->now(), ns, name);
    json_t *ops = value ? json_pack("[{s:s,s:s,s:o},{s:s,s:s,s:s}]", "op", "test", "path", ptr,
                                    "value", expect ? json_string(expect) : json_null(), "op",
                                    "add", "path", ptr, "value", value)
                        : NULL;
    free(value);
    if (!ops)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    enum vs_err err = vs_kube_json_patch(l->k, path, ops, NULL, eb);
    json_decref(ops);
    return err;
}

enum vs_err vs_nodelock_acquire_seen(struct vs_nodelock *l, const char *node, const char *seen,
                                     const char *ns, const char *name, struct vs_errbuf *eb)
{
    struct node_mu *nm = node_mu(l, node);
    if (!nm)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&nm->mu);
    enum vs_err err = cas_lock(l, node, seen, ns, name, eb);
    if (err && err != VS_ERR_NOMEM && seen) {
        atomic_fetch_add(&l->at_conflicts, 1);
        err = cas_lock(l, node, NULL, ns, name, eb);
    }
    if (!err) {
        atomic_fetch_add(&l->acquired, 1);
        atomic_fetch_add(&l->acquired_at, 1);
    } else if (err != VS_ERR_NOMEM) {
        atomic_fetch_add(&l->at_conflicts, 1);
    }
    pthread_mutex_unlock(&nm->mu);
    if (err == VS_OK || err == VS_ERR_NOMEM)
        return err;
    vs_log(VS_LOG_DEBUG, "node_lock_read", "node=%s pod=%s/%s seen=\"%s\" error=\"%s\"", node, ns,
           name, seen ? seen : "", eb->msg);
    return vs_nodelock_acquire(l, node, ns, name, eb);
}

static enum vs_err release_now(struct vs_nodelock *l, const char *node, const char *ns,
                               const char *name, bool force, struct vs_errbuf *eb)
{
    struct node_mu *nm = node_mu(l, node);
    if (!nm)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&nm->mu);
    enum vs_err err = VS_OK;
    for (int attempt = 0; attempt < 5; attempt++) {
        if (attempt)
            sleep_backoff(attempt - 1);
        json_t *nj = NULL;
        const char *lock, *rv;
        if ((err = get_node(l, node, &nj, &lock, &rv, eb))) {
            json_decref(nj);
            if (err == VS_ERR_NOTFOUND) {
                err = VS_OK;
                break;
            }
            continue;
        }
        if (!lock || (!force && strchr(lock, ',') && !owner_suffix_is(lock, ns, name))) {
            json_decref(nj);
            err = VS_OK; /* gone, or not ours */
            break;
        }
        err = patch_lock(l, node, NULL, rv, eb);
        json_decref(nj);
        if (!err) {
            atomic_fetch_add(&l->released, 1);
            break;
        }
    }
    pthread_mutex_unlock(&nm->mu);
    return err;
}

static void *retry_main(void *arg)
{
    struct vs_nodelock *l = arg;
    pthread_mutex_lock(&l->pmu);
    while (!l->stop) {
        if (!l->pending) {
            pthread_cond_wait(&l->pcv, &l->pmu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&l->pcv, &l->pmu, &ts);
        if (l->stop)
            break;
        struct pending *list = l->pending, *keep = NULL;
        l->pending = NULL;
        pthread_mutex_unlock(&l->pmu);
        while (list) {
            struct pending *p = list;
            list = p->next;
            struct vs_errbuf eb;
            atomic_fetch_add(&l->release_retries, 1);
            if (release_now(l, p->node, p->ns, p->name, false, &eb) == VS_OK) {
                vs_log(VS_LOG_INFO, "node_lock_released_late", "node=%s pod=%s/%s", p->node, p->ns,
                       p->name);
                pending_free(p);
            } else {
                p->next = keep;
                keep = p;
            }
        }
        pthread_mutex_lock(&l->pmu);
        while (keep) {
            struct pending *p = keep;
            keep = p->next;
            p->next = l->pending;
            l->pending = p;
        }
    }
    pthread_mutex_unlock(&l->pmu);
    return NULL;
}

enum vs_err vs_nodelock_release(struct vs_nodelock *l, const char *node, const char *ns,
                                const char *name, bool force, struct vs_errbuf *eb)
{
    enum vs_err err = release_now(l, node, ns, name, force, eb);
    if (!err || force)
        return err;
    /* Left on the node, the lock would block it until --node-lock-timeout: keep trying. */
    struct pending *p = calloc(1, sizeof(*p));
    if (!p || !(p->node = strdup(node)) || !(p->ns = strdup(ns)) || !(p->name = strdup(name))) {
        if (p)
            pending_free(p);
        return err;
    }
    pthread_mutex_lock(&l->pmu);
    if (!l->retrying && !l->stop && pthread_create(&l->retry_thread, NULL, retry_main, l) == 0)
        l->retrying = true;
    p->next = l->pending;
    l->pending = p;
    pthread_cond_broadcast(&l->pcv);
    pthread_mutex_unlock(&l->pmu);
    return err;
}

struct locked {
    char **nodes;
    size_t n, cap;
};

static int collect_locked(void *ctx, json_t *item)
{
    struct locked *lk = ctx;
    json_t *md = json_object_get(item, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!name || !json_object_get(json_object_get(md, "annotations"), VS_ANNO_LOCK))
        return 0;
    if (lk->n == lk->cap) {
        size_t nc = lk->cap ? lk->cap * 2 : 16;
        char **v = realloc(lk->nodes, nc * sizeof(*v));
        if (!v)
            return -1;
        lk->nodes = v;
        lk->cap = nc;
    }
    if (!(lk->nodes[lk->n] = strdup(name)))
        return -1;
    lk->n++;
    return 0;
}

/* The owner's hami.io/bind-phase ("" when absent) and whether it is bound (spec.nodeName);
 * false when the pod could not be read. */
static bool owner_state(struct vs_nodelock *l, const char *ns, const char *name, char *phase,
                        size_t len, bool *bound)
{
    char path[1024];
    char *ens = vs_kube_escape(ns), *ename = vs_kube_escape(name);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ens ? ens : ns,
             ename ? ename : name);
    free(ens);
    free(ename);
    json_t *pod = NULL;
    struct vs_errbuf eb;
    phase[0] = '\0';
    *bound = false;
    bool ok = vs_kube_get(l->k, path, &pod, &eb) == VS_OK;
    if (ok) {
        const char *bp = json_string_value(json_object_get(
            json_object_get(json_object_get(pod, "metadata"), "annotations"), VS_ANNO_BIND_PHASE));
        const char *nn =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        snprintf(phase, len, "%s", bp ? bp : "");
        *bound = nn && *nn;
    }
    json_decref(pod);
    return ok;
}

/* One locked node: the rules of acquire, applied without wanting the lock. */
static enum vs_err repair_node(struct vs_nodelock *l, const char *node, int64_t before,
                               struct vs_nodelock_repair *r, struct vs_errbuf *eb)
{
    struct node_mu *nm = node_mu(l, node);
    if (!nm)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&nm->mu);
    json_t *nj = NULL;
    const char *lock, *rv;
    enum vs_err err = get_node(l, node, &nj, &lock, &rv, eb);
    if (err == VS_ERR_NOTFOUND)
        err = VS_OK;
    if (err || !lock)
        goto out;
    char value[1024];
    snprintf(value, sizeof(value), "%s", lock);
    struct vs_lock parsed;
    struct vs_errbuf pe;
    int64_t now = l->now();
    const char *why = NULL;
    if (vs_annot_parse_lock(value, &parsed, &pe)) {
        if (malformed_aged(l, nm, value, now))
            why = "malformed lock value older than the timeout";
        goto decided;
    }
    if (now - parsed.time > l->timeout) {
        why = "lock expired";
        char phase[64];
        bool bound;
        owner_state(l, parsed.ns, parsed.name, phase, sizeof(phase), &bound);
        if (strcmp(phase, "allocating") == 0) {
            /* The device plugin never answered (HAMi's would set bind-phase=failed). */
            r->stuck_allocating++;
            vs_log(VS_LOG_WARN, "pod_stuck_allocating",
                   "pod=%s/%s node=%s locked_for_s=%lld timeout_s=%lld", parsed.ns, parsed.name,
                   node, (long long)(now - parsed.time), (long long)l->timeout);
        }
    } else if (*parsed.ns && *parsed.name) {
        enum vs_err gerr;
        if (!owner_dead(l, parsed.ns, parsed.name, &why, eb, &gerr))
            why = NULL;
        err = gerr;
        char phase[64];
        bool bound;
        /* Taken before this term and the owner never bound: the Bind that took it died with an
         * earlier term (a Bind of this term took its locks at or after `before`). */
        if (!err && !why && parsed.time < before &&
            owner_state(l, parsed.ns, parsed.name, phase, sizeof(phase), &bound) && !bound)
            why = "owner pod not bound: its Bind ended with an earlier leadership term";
    }
    vs_lock_cleanup(&parsed);
decided:
    if (err || !why) {
        if (!err)
            r->kept++;
        goto out;
    }
    char q[1100];
    vs_log(VS_LOG_WARN, "node_lock_broken", "node=%s lock=%s reason=\"%s\" by=repair", node,
           vs_log_quote(value, q, sizeof(q)), why);
    if ((err = force_release(l, node, value, eb)))
        goto out;
    atomic_fetch_add(&l->broken, 1);
    r->broken++;
    free(nm->bad_value);
    nm->bad_value = NULL;
out:
    json_decref(nj);
    pthread_mutex_unlock(&nm->mu);
    return err;
}

enum vs_err vs_nodelock_repair(struct vs_nodelock *l, int64_t before, struct vs_nodelock_repair *r,
                               struct vs_errbuf *eb)
{
    memset(r, 0, sizeof(*r));
    struct locked lk = {0};
    char *rv = NULL;
    enum vs_err err = vs_kube_list(l->k, "/api/v1/nodes", NULL, 500, collect_locked, &lk, &rv, eb);
    free(rv);
    for (size_t i = 0; i < lk.n; i++) {
        r->locked++;
        struct vs_errbuf ne;
        if (!err && repair_node(l, lk.nodes[i], before, r, &ne)) {
            r->failed++;
            char q[VS_ERRBUF_SIZE + 8];
            vs_log(VS_LOG_WARN, "node_lock_repair_failed", "node=%s error=%s", lk.nodes[i],
                   vs_log_quote(ne.msg, q, sizeof(q)));
        }
        free(lk.nodes[i]);
    }
    free(lk.nodes);
    return err;
}

void vs_nodelock_stats(struct vs_nodelock *l, struct vs_nodelock_stats *out)
{
    out->acquired = atomic_load(&l->acquired);
    out->contended = atomic_load(&l->contended);
    out->broken = atomic_load(&l->broken);
    out->released = atomic_load(&l->released);
    out->release_retries = atomic_load(&l->release_retries);
    out->acquired_at = atomic_load(&l->acquired_at);
    out->at_conflicts = atomic_load(&l->at_conflicts);
}

/* ------------------------------------------------------------------ timestamp locks */

static enum vs_err patch_stamp(struct vs_nodelock *l, const char *node, const char *key,
                               const char *value, const char *rv, struct vs_errbuf *eb)
{
    char path[512];
    node_path(path, sizeof(path), node);
    json_t *md =
        json_pack("{s:{s:o}}", "annotations", key, value ? json_string(value) : json_null());
    if (md && rv)
        json_object_set_new(md, "resourceVersion", json_string(rv));
    json_t *patch = md ? json_pack("{s:o}", "metadata", md) : NULL;
    if (!patch)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    enum vs_err err = vs_kube_merge_patch(l->k, path, patch, NULL, eb);
    json_decref(patch);
    return err;
}

static enum vs_err get_stamp(struct vs_nodelock *l, const char *node, const char *key, json_t **nj,
                             const char **val, const char **rv, struct vs_errbuf *eb)
{
    char path[512];
    node_path(path, sizeof(path), node);
    enum vs_err err = vs_kube_get(l->k, path, nj, eb);
    if (err)
        return err;
    json_t *md = json_object_get(*nj, "metadata");
    *val = json_string_value(json_object_get(json_object_get(md, "annotations"), key));
    *rv = json_string_value(json_object_get(md, "resourceVersion"));
    return VS_OK;
}

enum vs_err vs_nodelock_stamp_acquire(struct vs_nodelock *l, const char *node, const char *key,
                                      int64_t ttl_s, struct vs_errbuf *eb)
{
    enum vs_err err = VS_ERR_KUBE;
    for (int attempt = 0; attempt < 5; attempt++) {
        json_t *nj = NULL;
        const char *val, *rv;
        if ((err = get_stamp(l, node, key, &nj, &val, &rv, eb)))
            return err;
        int64_t now = l->now(), t;
        if (val && vs_annot_parse_rfc3339(val, &t)) {
            err = vs_err_set(eb, VS_ERR_PARSE, "node %s: invalid %s \"%s\": not an RFC 3339 time",
                             node, key, val);
            json_decref(nj);
            return err;
        }
        if (val && now - t < ttl_s) {
            json_decref(nj);
            return vs_err_set(eb, VS_ERR_CONFLICT, "node %s has been locked within 2 minutes",
                              node);
        }
        char ts[40];
        vs_annot_format_rfc3339(now, ts, sizeof(ts));
        err = patch_stamp(l, node, key, ts, rv, eb);
        json_decref(nj);
        if (err != VS_ERR_CONFLICT)
            return err;
    }
    return err;
}

enum vs_err vs_nodelock_stamp_release(struct vs_nodelock *l, const char *node, const char *key,
                                      struct vs_errbuf *eb)
{
    json_t *nj = NULL;
    const char *val, *rv;
    enum vs_err err = get_stamp(l, node, key, &nj, &val, &rv, eb);
    if (!err && val)
        err = patch_stamp(l, node, key, NULL, NULL, eb);
    json_decref(nj);
    return err;
}
