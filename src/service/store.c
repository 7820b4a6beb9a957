/* store: informer threads feed decoded objects into the model under the write lock; Filter
 * evaluates under the read lock and commits under the write lock. Lock order: only `mu` (the
 * rwlock over the model and the seen-sets); stats are atomics. */
#include "store.h"

#include "access.h"
#include "dra.h"
#include "k8s_codec.h"
#include "log.h"
#include "preempt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

struct sset {
    char *key;
    UT_hash_handle hh;
};

enum { INF_NODES, INF_PODS, INF_QUOTAS, INF_PDBS, INF_CLASSES, INF_SLICES, INF_CLAIMS, INF_COUNT };

struct informer {
    struct vs_store *s;
    int which;
    pthread_t thread;
    bool started;
    atomic_bool synced;
    struct sset *seen; /* names (nodes), uids (pods), ns/name (quotas) seen since begin() */
    bool listing;
    volatile int stop;               /* ends this informer's run: store stop or a resync */
    atomic_uint_fast64_t begin_gen;  /* s->resync_req when the current list began */
    atomic_uint_fast64_t synced_gen; /* begin_gen of the last completed list */
};

struct quota_key {
    char *key; /* ns/name */
    char *ns;
    char *name;
    UT_hash_handle hh;
};

/* A Pending pod kube-scheduler nominated to a node (status.nominatedNodeName set, no
 * spec.nodeName yet), typically a preemptor waiting for its victims to terminate. Filter holds
 * its request on that node for pods of lower or equal priority, as kube-scheduler does for the
 * in-tree resources it knows (it cannot for the GPU ones, which are ignoredByScheduler). */
struct nominee {
    char *uid;
    struct vs_pod pod; /* decoded; pod.nominated_node is the node */
    uint64_t list_gen; /* nominee_gen when last seen: a relist drops entries it did not see */
    UT_hash_handle hh;
};

/* A Bind's hold on a pod's reservation (vs_store_bind_begin .. vs_store_bind_end), or, once that
 * Bind posted the binding, the pod pinned to its node until the pod watch shows it bound,
 * deleted or terminal (or a pod relist no longer has it). Filter never moves a pod that has
 * one, so the node a Bind checked is the node it binds to. */
struct binding {
    char *uid;
    char *node;
    uint64_t token;   /* vs_store_bind_begin's answer: which Bind holds it */
    uint64_t resv_id; /* the reservation's vs_podent.resv_id when the Bind began */
    bool posted;
    UT_hash_handle hh;
};

struct vs_store {
    struct vs_kube *k;
    struct vs_store_opts o;
    pthread_rwlock_t mu; /* guards model, informer seen-sets, quotas */
    struct vs_model *model;
    struct quota_key *quotas;
    struct nominee *nominees; /* by uid */
    struct binding *bindings; /* by uid */
    /* Pods the watch (or a relist) showed deleted, by uid, oldest first: kube-scheduler may
     * still filter one it had begun to schedule, and a reservation made then would have no
     * DELETED event left to free it (it would count until --reservation-ttl). Kept for the
     * TTL (a reservation made later expires as soon) and at most GONE_MAX. */
    struct gone *gone;
    uint64_t bind_seq;    /* the last binding.token handed out */
    uint64_t nominee_gen; /* bumped when a pod relist begins */
    bool nominee_freed;   /* a hold went away in the event being applied */
    struct vs_pdb *pdbs;  /* PodDisruptionBudgets (with watch_pdbs), in arrival order */
    size_t n_pdbs, cap_pdbs;
    struct vs_dra_guard dra; /* DeviceClasses mapping a counted resource to DRA (watch_dra) */
    struct informer inf[INF_COUNT];
    volatile int stop;
    pthread_t expiry;
    bool expiry_started;
    atomic_uint_fast64_t malformed_pods, malformed_nodes, expired, conflicts, relists;
    atomic_uint_fast64_t resync_req; /* number of the last vs_store_resync */
    /* Bumped under the write lock by every change of what the model shows (vs_store_version). */
    atomic_uint_fast64_t version;
    struct vs_store_hooks hooks;
};

static void sset_add(struct sset **set, const char *key)
{
    struct sset *e = NULL;
    HASH_FIND_STR(*set, key, e);
    if (e)
        return;
    e = calloc(1, sizeof(*e));
    if (!e || !(e->key = strdup(key))) {
        free(e);
        return;
    }
    HASH_ADD_KEYPTR(hh, *set, e->key, strlen(e->key), e);
}

static bool sset_has(struct sset *set, const char *key)
{
    struct sset *e = NULL;
    HASH_FIND_STR(set, key, e);
    return e != NULL;
}

static void sset_clear(struct sset **set)
{
    struct sset *e, *t;
    HASH_ITER(hh, *set, e, t)
    {
        HASH_DEL(*set, e);
        free(e->key);
        free(e);
    }
}

struct gone {
    UT_hash_handle hh;
    int64_t at; /* time() it was seen gone */
    char uid[];
};

/* The most deleted pods remembered: within the default TTL of 300 s that is 218 deletions a
 * second, sustained; beyond it the oldest go first. */
#define GONE_MAX 65536

static void gone_drop(struct vs_store *s, struct gone *g)
{
    HASH_DEL(s->gone, g);
    free(g);
}

/* Lock held. */
static void gone_add(struct vs_store *s, const char *uid)
{
    struct gone *g = NULL;
    if (!uid || !*uid)
        return;
    HASH_FIND_STR(s->gone, uid, g);
    if (g)
        return;
    if (HASH_COUNT(s->gone) >= GONE_MAX)
        gone_drop(s, s->gone); /* the head is the oldest (uthash keeps insertion order) */
    size_t len = strlen(uid);
    if (!(g = malloc(sizeof(*g) + len + 1)))
        return; /* out of memory: a late Filter of it may reserve until the TTL */
    g->at = (int64_t)time(NULL);
    memcpy(g->uid, uid, len + 1);
    HASH_ADD_KEYPTR(hh, s->gone, g->uid, len, g);
}

/* Lock held. */
static bool gone_has(const struct vs_store *s, const char *uid)
{
    struct gone *g = NULL;
    if (uid && *uid && s->gone)
        HASH_FIND_STR(s->gone, uid, g);
    return g != NULL;
}

/* Forgets the pods seen gone before now - ttl. Lock held. */
static void gone_expire(struct vs_store *s, int64_t now, int64_t ttl)
{
    while (s->gone && s->gone->at < now - ttl)
        gone_drop(s, s->gone);
}

static void binding_free(struct vs_store *s, struct binding *b)
{
    HASH_DEL(s->bindings, b);
    free(b->uid);
    free(b->node);
    free(b);
}

/* Lock held. */
static struct binding *binding_find(struct vs_store *s, const char *uid)
{
    struct binding *b = NULL;
    if (uid && *uid && s->bindings)
        HASH_FIND_STR(s->bindings, uid, b);
    return b;
}

struct vs_store *vs_store_new(struct vs_kube *k, const struct vs_store_opts *o,
                              struct vs_errbuf *eb)
{
    struct vs_store *s = calloc(1, sizeof(*s));
    if (!s) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->k = k;
    s->o = *o;
    if (s->o.reservation_ttl <= 0)
        s->o.reservation_ttl = 300;
    s->model = vs_model_new(o->cfg->devices);
    if (!s->model) {
        free(s);
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    pthread_rwlock_init(&s->mu, NULL);
    for (int i = 0; i < INF_COUNT; i++) {
        s->inf[i].s = s;
        s->inf[i].which = i;
    }
    return s;
}

void vs_store_set_hooks(struct vs_store *s, const struct vs_store_hooks *h)
{
    s->hooks = *h;
}

/* ------------------------------------------------------------------ applying objects */

static const char *meta_str(const json_t *obj, const char *key)
{
    const char *v = json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
    return v ? v : "";
}

static enum vs_err apply_node(struct vs_store *s, const char *type, const json_t *obj,
                              struct vs_errbuf *eb)
{
    const char *name = meta_str(obj, "name");
    if (strcmp(type, "DELETED") == 0) {
        vs_model_remove_node(s->model, name);
        return VS_OK;
    }
    struct vs_knode n;
    enum vs_err err = vs_codec_node_from_json(obj, &n, eb);
    if (err) {
        vs_knode_cleanup(&n);
        return err;
    }
    struct vs_errbuf pe;
    pe.msg[0] = '\0';
    err = vs_model_upsert_node(s->model, &n, &pe);
    if (!err && pe.msg[0]) {
        atomic_fetch_add(&s->malformed_nodes, 1);
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_WARN, "node_annotation_invalid", "node=%s error=%s", name,
               vs_log_quote(pe.msg, q, sizeof(q)));
    }
    vs_knode_cleanup(&n);
    return err;
}

/* Counts a decoded pod's requests on its node; requests that do not parse are logged (the pod
 * then counts nowhere, as the API server would not have admitted it). Write lock held. */
static enum vs_err account_log(struct vs_store *s, const struct vs_pod *p)
{
    struct vs_errbuf ae;
    enum vs_err err = vs_model_account_pod(s->model, p, &ae);
    if (err == VS_ERR_PARSE) {
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_WARN, "pod_requests_invalid", "pod=%s/%s error=%s", p->ns, p->name,
               vs_log_quote(ae.msg, q, sizeof(q)));
        err = VS_OK;
    }
    return err;
}

static enum vs_err account_only(struct vs_store *s, const json_t *obj, struct vs_errbuf *eb)
{
    struct vs_pod p;
    enum vs_err err = vs_codec_pod_res_from_json(obj, &p, eb);
    if (!err)
        err = account_log(s, &p);
    vs_pod_cleanup(&p);
    return err;
}

static void nominee_free(struct nominee *e)
{
    free(e->uid);
    vs_pod_cleanup(&e->pod);
    free(e);
}

/* Drops uid's nomination; true when it had one (its hold frees capacity). */
static bool nominee_drop(struct vs_store *s, const char *uid)
{
    struct nominee *e = NULL;
    if (uid)
        HASH_FIND_STR(s->nominees, uid, e);
    if (!e)
        return false;
    HASH_DEL(s->nominees, e);
    nominee_free(e);
    return true;
}

/* Keeps, replaces or drops the pod's nomination from a pod event. Write lock held. Returns
 * true when a nomination went away or moved (capacity held for it is free again). */
static bool nominee_apply(struct vs_store *s, const char *type, const json_t *obj,
                          struct vs_errbuf *eb)
{
    const char *uid = meta_str(obj, "uid");
    const json_t *status = json_object_get(obj, "status");
    const char *nom = json_string_value(json_object_get(status, "nominatedNodeName"));
    const char *bound =
        json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
    const char *phase = json_string_value(json_object_get(status, "phase"));
    bool terminal = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
    if (strcmp(type, "DELETED") == 0 || !uid || !*uid || !nom || !*nom || (bound && *bound) ||
        terminal)
        return nominee_drop(s, uid);
    struct nominee *e = calloc(1, sizeof(*e));
    if (!e || !(e->uid = strdup(uid))) {
        free(e);
        return false; /* not held: the in-tree view kube-scheduler has, no worse */
    }
    if (vs_codec_pod_from_json(obj, &e->pod, eb) != VS_OK) {
        vs_pod_cleanup(&e->pod);
        free(e->uid);
        free(e);
        return nominee_drop(s, uid);
    }
    struct vs_pod *p = &e->pod;
    struct nominee *old = NULL;
    HASH_FIND_STR(s->nominees, uid, old);
    bool moved = old && strcmp(old->pod.nominated_node, p->nominated_node) != 0;
    if (old) {
        HASH_DEL(s->nominees, old);
        nominee_free(old);
    }
    e->list_gen = s->nominee_gen;
    HASH_ADD_KEYPTR(hh, s->nominees, e->uid, strlen(e->uid), e);
    return moved;
}

static enum vs_err apply_pod(struct vs_store *s, const char *type, const json_t *obj,
                             struct vs_errbuf *eb)
{
    const char *uid = meta_str(obj, "uid");
    s->nominee_freed |= nominee_apply(s, type, obj, eb);
    struct binding *b = binding_find(s, uid);
    if (b) {
        const json_t *st = json_object_get(obj, "status");
        const char *phase = json_string_value(json_object_get(st, "phase"));
        const char *bound =
            json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
        if (strcmp(type, "DELETED") == 0 || (bound && *bound) ||
            (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
            binding_free(s, b); /* the model says BOUND or MISSING from now on */
    }
    if (strcmp(type, "DELETED") == 0) {
        vs_model_remove_pod(s->model, uid);
        vs_model_unaccount(s->model, uid);
        gone_add(s, uid);
        return VS_OK;
    }
    /* Cheap pre-check: a pod without hami.io/vgpu-node only has its requests counted, from a
     * decoder that reads just those fields. */
    const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    if (!json_object_get(ann, VS_ANNO_VGPU_NODE))
        return account_only(s, obj, eb);
    struct vs_pod p;
    enum vs_err err = vs_codec_pod_from_json(obj, &p, eb);
    if (err) {
        vs_pod_cleanup(&p);
        return err;
    }
    struct vs_errbuf pe;
    if (account_log(s, &p) == VS_ERR_NOMEM) {
        vs_pod_cleanup(&p);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    err = vs_model_upsert_pod(s->model, &p, &pe);
    if (err == VS_ERR_PARSE) {
        atomic_fetch_add(&s->malformed_pods, 1);
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_WARN, "pod_allocation_invalid", "pod=%s/%s error=%s", p.ns, p.name,
               vs_log_quote(pe.msg, q, sizeof(q)));
        err = VS_OK;
    }
    vs_pod_cleanup(&p);
    return err;
}

static enum vs_err apply_quota(struct vs_store *s, const char *type, const json_t *obj,
                               struct vs_errbuf *eb)
{
    const char *ns = meta_str(obj, "namespace"), *name = meta_str(obj, "name");
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    struct quota_key *qk = NULL;
    HASH_FIND_STR(s->quotas, key, qk);
    if (strcmp(type, "DELETED") == 0) {
        vs_model_remove_quota(s->model, ns, name);
        if (qk) {
            HASH_DEL(s->quotas, qk);
            free(qk->key);
            free(qk->ns);
            free(qk->name);
            free(qk);
        }
        return VS_OK;
    }
    struct vs_kquota q;
    enum vs_err err = vs_codec_quota_from_json(obj, &q, eb);
    if (!err)
        err = vs_model_set_quota(s->model, &q);
    vs_kquota_cleanup(&q);
    if (!err && !qk) {
        qk = calloc(1, sizeof(*qk));
        if (qk && (qk->key = strdup(key)) && (qk->ns = strdup(ns)) && (qk->name = strdup(name))) {
            HASH_ADD_KEYPTR(hh, s->quotas, qk->key, strlen(qk->key), qk);
        } else if (qk) {
            free(qk->key);
            free(qk->ns);
            free(qk);
        }
    }
    return err;
}

enum vs_err vs_store_apply_pod_text(struct vs_store *s, const char *text, size_t len,
                                    struct vs_errbuf *eb)
{
    /* Only the members the accounting reads; a nominated pod is held whole (nominee_apply
     * decodes all of it), and text the pruned reader refuses gets json_loadb's error. */
    json_t *obj = vs_codec_pod_res_load(text, len);
    const char *nom =
        json_string_value(json_object_get(json_object_get(obj, "status"), "nominatedNodeName"));
    if (nom && *nom) {
        json_decref(obj);
        obj = NULL;
    }
    if (!obj) {
        json_error_t je;
        if (!(obj = json_loadb(text, len, 0, &je)))
            return vs_err_set(eb, VS_ERR_PARSE, "invalid JSON in a pod: %s", je.text);
    }
    pthread_rwlock_wrlock(&s->mu);
    bool freed = nominee_apply(s, "ADDED", obj, eb);
    enum vs_err err = account_only(s, obj, eb);
    atomic_fetch_add(&s->version, 1);
    pthread_rwlock_unlock(&s->mu);
    json_decref(obj);
    if (freed && s->hooks.freed)
        s->hooks.freed(s->hooks.ctx);
    return err;
}

static long pdb_find(const struct vs_store *s, const char *ns, const char *name)
{
    for (size_t i = 0; i < s->n_pdbs; i++)
        if (strcmp(s->pdbs[i].ns, ns ? ns : "") == 0 &&
            strcmp(s->pdbs[i].name, name ? name : "") == 0)
            return (long)i;
    return -1;
}

static void pdb_drop(struct vs_store *s, long i)
{
    vs_pdb_cleanup(&s->pdbs[i]);
    s->pdbs[i] = s->pdbs[--s->n_pdbs];
}

static enum vs_err apply_pdb(struct vs_store *s, const char *type, const json_t *obj,
                             struct vs_errbuf *eb)
{
    const char *ns = meta_str(obj, "namespace"), *name = meta_str(obj, "name");
    long i = pdb_find(s, ns && *ns ? ns : "default", name);
    if (strcmp(type, "DELETED") == 0) {
        if (i >= 0)
            pdb_drop(s, i);
        return VS_OK;
    }
    struct vs_pdb d;
    enum vs_err err = vs_codec_pdb_from_json(obj, &d, eb);
    if (err) {
        vs_pdb_cleanup(&d);
        return err;
    }
    if (i >= 0) {
        vs_pdb_cleanup(&s->pdbs[i]);
        s->pdbs[i] = d;
        return VS_OK;
    }
    if (s->n_pdbs == s->cap_pdbs) {
        size_t nc = s->cap_pdbs ? s->cap_pdbs * 2 : 8;
        struct vs_pdb *g = realloc(s->pdbs, nc * sizeof(*g));
        if (!g) {
            vs_pdb_cleanup(&d);
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
        s->pdbs = g;
        s->cap_pdbs = nc;
    }
    s->pdbs[s->n_pdbs++] = d;
    return VS_OK;
}

/* A DeviceClass: the guard's entry for it follows the class; a change is logged once. */
static void class_log(const char *cls, const char *before, const char *after)
{
    if (before && after && strcmp(before, after) == 0)
        return;
    if (before)
        vs_log(VS_LOG_INFO, "dra_extended_resource_conflict_resolved", "deviceclass=%s resource=%s",
               cls, before);
    if (after)
        vs_log(VS_LOG_WARN, "dra_extended_resource_conflict",
               "deviceclass=%s resource=%s effect=\"kube-scheduler refuses every pod asking %s "
               "before vgpu-sched sees it\"",
               cls, after, after);
}

static enum vs_err apply_class(struct vs_store *s, const char *type, const json_t *obj,
                               struct vs_errbuf *eb)
{
    if (strcmp(type, "DELETED") == 0) {
        char *was = vs_dra_guard_remove(&s->dra, meta_str(obj, "name"));
        if (was)
            class_log(meta_str(obj, "name"), was, NULL);
        free(was);
        return VS_OK;
    }
    struct vs_dra_class c;
    enum vs_err err = vs_dra_class_from_json(obj, &c, eb);
    if (err)
        return err;
    char *before = NULL;
    const char *after = NULL;
    if (!vs_dra_guard_set(&s->dra, &c, s->o.cfg->devices, &before, &after)) {
        vs_dra_class_cleanup(&c);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    class_log(c.name, before, after);
    free(before);
    vs_dra_class_cleanup(&c);
    return VS_OK;
}

/* A ResourceSlice or ResourceClaim: the model's ledger follows it. */
static enum vs_err apply_slice(struct vs_store *s, const char *type, const json_t *obj,
                               struct vs_errbuf *eb)
{
    if (strcmp(type, "DELETED") == 0) {
        vs_model_remove_slice(s->model, meta_str(obj, "name"));
        s->nominee_freed = true; /* what its devices held may be free now */
        return VS_OK;
    }
    struct vs_dra_slice sl;
    enum vs_err err = vs_dra_slice_from_json(obj, &sl, eb);
    if (err)
        return err;
    err = vs_model_set_slice(s->model, &sl);
    vs_dra_slice_cleanup(&sl);
    s->nominee_freed = true;
    return err ? vs_err_set(eb, err, "out of memory") : VS_OK;
}

static enum vs_err apply_claim(struct vs_store *s, const char *type, const json_t *obj,
                               struct vs_errbuf *eb)
{
    if (strcmp(type, "DELETED") == 0) {
        vs_model_remove_claim(s->model, meta_str(obj, "uid"));
        s->nominee_freed = true;
        return VS_OK;
    }
    struct vs_dra_claim c;
    enum vs_err err = vs_dra_claim_from_json(obj, &c, eb);
    if (err)
        return err;
    /* When an allocation reaches the ledger (the DRA race windows in docs/dra.md). */
    if (vs_log_enabled(VS_LOG_DEBUG))
        vs_log(VS_LOG_DEBUG, "dra_claim_applied", "claim=%s/%s results=%zu mirror=%d", c.ns, c.name,
               c.n, c.mirror_of != NULL);
    err = vs_model_set_claim(s->model, &c);
    vs_dra_claim_cleanup(&c);
    s->nominee_freed = true; /* a changed claim may hold less */
    return err ? vs_err_set(eb, err, "out of memory") : VS_OK;
}

static const char *kind_of(int which)
{
    if (which == INF_SLICES)
        return "ResourceSlice";
    if (which == INF_CLAIMS)
        return "ResourceClaim";
    return which == INF_NODES    ? "Node"
           : which == INF_PODS   ? "Pod"
           : which == INF_QUOTAS ? "ResourceQuota"
           : which == INF_PDBS   ? "PodDisruptionBudget"
                                 : "DeviceClass";
}

enum vs_err vs_store_apply(struct vs_store *s, const char *kind, const char *type,
                           const json_t *obj, struct vs_errbuf *eb)
{
    enum vs_err err;
    pthread_rwlock_wrlock(&s->mu);
    if (strcmp(kind, "Node") == 0)
        err = apply_node(s, type, obj, eb);
    else if (strcmp(kind, "Pod") == 0)
        err = apply_pod(s, type, obj, eb);
    else if (strcmp(kind, "ResourceQuota") == 0)
        err = apply_quota(s, type, obj, eb);
    else if (strcmp(kind, "PodDisruptionBudget") == 0)
        err = apply_pdb(s, type, obj, eb);
    else if (strcmp(kind, "DeviceClass") == 0)
        err = apply_class(s, type, obj, eb);
    else if (strcmp(kind, "ResourceSlice") == 0)
        err = apply_slice(s, type, obj, eb);
    else if (strcmp(kind, "ResourceClaim") == 0)
        err = apply_claim(s, type, obj, eb);
    else
        err = vs_err_set(eb, VS_ERR_INVAL, "unknown kind %s", kind);
    bool freed = s->nominee_freed;
    s->nominee_freed = false;
    atomic_fetch_add(&s->version, 1);
    pthread_rwlock_unlock(&s->mu);
    if (freed && s->hooks.freed)
        s->hooks.freed(s->hooks.ctx);
    return err;
}

/* ------------------------------------------------------------------ informer handlers */

static void on_begin(void *ctx)
{
    struct informer *inf = ctx;
    atomic_store(&inf->synced, false);
    atomic_store(&inf->begin_gen, atomic_load(&inf->s->resync_req));
    atomic_fetch_add(&inf->s->relists, 1);
    pthread_rwlock_wrlock(&inf->s->mu);
    sset_clear(&inf->seen);
    inf->listing = true;
    if (inf->which == INF_PODS) { /* every pod of the list re-stamps its requests' entry */
        vs_model_account_mark(inf->s->model);
        inf->s->nominee_gen++;
    }
    pthread_rwlock_unlock(&inf->s->mu);
}

/* A pod LIST item without hami.io/vgpu-node: only its requests are counted. */
static void on_other(void *ctx, const char *text, size_t len)
{
    struct informer *inf = ctx;
    struct vs_errbuf eb;
    if (vs_store_apply_pod_text(inf->s, text, len, &eb) != VS_OK) {
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_WARN, "object_decode_failed", "kind=Pod error=%s",
               vs_log_quote(eb.msg, q, sizeof(q)));
    }
}

static void call_hooks(struct vs_store *s, int which, const char *type, const json_t *obj,
                       bool listing)
{
    const struct vs_store_hooks *h = &s->hooks;
    bool deleted = strcmp(type, "DELETED") == 0;
    if (which == INF_NODES && h->node) {
        const char *lock = json_string_value(json_object_get(
            json_object_get(json_object_get(obj, "metadata"), "annotations"), VS_ANNO_LOCK));
        h->node(h->ctx, meta_str(obj, "name"), deleted ? NULL : lock,
                deleted ? NULL : meta_str(obj, "resourceVersion"), deleted, listing);
    } else if (which == INF_PODS && (h->pod || h->pod_allocated || h->pod_bound)) {
        const char *phase =
            json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
        if (deleted ||
            (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))) {
            if (h->pod)
                h->pod(h->ctx, meta_str(obj, "uid"), meta_str(obj, "namespace"),
                       meta_str(obj, "name"), deleted);
        } else {
            const json_t *md = json_object_get(obj, "metadata");
            const json_t *an = json_object_get(md, "annotations");
            const char *bp = json_string_value(json_object_get(an, VS_ANNO_BIND_PHASE));
            if (h->pod_allocated && bp && (strcmp(bp, "success") == 0 || strcmp(bp, "failed") == 0))
                h->pod_allocated(h->ctx, meta_str(obj, "namespace"), meta_str(obj, "name"));
            const char *bound =
                json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
            if (h->pod_bound && bound && *bound && json_object_get(an, VS_ANNO_VGPU_NODE))
                h->pod_bound(
                    h->ctx, meta_str(obj, "uid"), meta_str(obj, "namespace"), meta_str(obj, "name"),
                    json_object_get(json_object_get(md, "labels"), VS_LABEL_VGPU_NODE) != NULL);
        }
    }
}

static void on_object(void *ctx, const char *type, json_t *obj)
{
    struct informer *inf = ctx;
    struct vs_store *s = inf->s;
    struct vs_errbuf eb;
    enum vs_err err;
    pthread_rwlock_wrlock(&s->mu);
    bool had = false;
    uint64_t had_fp = 0;
    if (inf->which == INF_PODS) {
        const struct vs_podent *pe = vs_model_pod(s->model, meta_str(obj, "uid"));
        had = pe && !pe->expired;
    } else if (inf->which == INF_NODES) {
        const struct vs_node *n = vs_model_node(s->model, meta_str(obj, "name"));
        had = n && n->present;
        had_fp = had ? n->inv_fp : 0;
    }
    if (inf->listing) {
        char key[512];
        if (inf->which == INF_NODES || inf->which == INF_SLICES)
            snprintf(key, sizeof(key), "%s", meta_str(obj, "name"));
        else if (inf->which == INF_PODS || inf->which == INF_CLAIMS)
            snprintf(key, sizeof(key), "%s", meta_str(obj, "uid"));
        else
            snprintf(key, sizeof(key), "%s/%s", meta_str(obj, "namespace"), meta_str(obj, "name"));
        sset_add(&inf->seen, key);
    }
    if (inf->which == INF_NODES)
        err = apply_node(s, type, obj, &eb);
    else if (inf->which == INF_PODS)
        err = apply_pod(s, type, obj, &eb);
    else if (inf->which == INF_QUOTAS)
        err = apply_quota(s, type, obj, &eb);
    else if (inf->which == INF_PDBS)
        err = apply_pdb(s, type, obj, &eb);
    else if (inf->which == INF_SLICES)
        err = apply_slice(s, type, obj, &eb);
    else if (inf->which == INF_CLAIMS)
        err = apply_claim(s, type, obj, &eb);
    else
        err = apply_class(s, type, obj, &eb);
    bool listing = inf->listing;
    bool freed = false;
    if (inf->which == INF_PODS) {
        const struct vs_podent *pe = vs_model_pod(s->model, meta_str(obj, "uid"));
        freed = (had && (!pe || pe->expired)) || s->nominee_freed;
        s->nominee_freed = false;
    } else if (inf->which == INF_SLICES || inf->which == INF_CLAIMS) {
        freed = s->nominee_freed;
        s->nominee_freed = false;
    } else if (inf->which == INF_NODES) {
        const struct vs_node *n = vs_model_node(s->model, meta_str(obj, "name"));
        freed = n && n->present && (!had || n->inv_fp != had_fp);
    }
    atomic_fetch_add(&s->version, 1);
    pthread_rwlock_unlock(&s->mu);
    call_hooks(s, inf->which, type, obj, listing);
    if (freed && s->hooks.freed)
        s->hooks.freed(s->hooks.ctx);
    if (err) {
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_WARN, "object_decode_failed", "kind=%s name=%s/%s error=%s",
               kind_of(inf->which), meta_str(obj, "namespace"), meta_str(obj, "name"),
               vs_log_quote(eb.msg, q, sizeof(q)));
    }
}

struct sweep {
    struct sset *seen;
    char **gone;
    size_t n, cap;
};

static void collect(struct sweep *sw, const char *key)
{
    if (sset_has(sw->seen, key))
        return;
    if (sw->n == sw->cap) {
        size_t nc = sw->cap ? sw->cap * 2 : 16;
        char **g = realloc(sw->gone, nc * sizeof(*g));
        if (!g)
            return;
        sw->gone = g;
        sw->cap = nc;
    }
    char *d = strdup(key);
    if (d)
        sw->gone[sw->n++] = d;
}

static void sweep_node(void *ctx, const struct vs_node *n)
{
    collect(ctx, n->name);
}

static void sweep_pod(void *ctx, const struct vs_podent *pe)
{
    if (!pe->reservation) /* our own unconfirmed decisions are not in any list yet */
        collect(ctx, pe->uid);
}

static void sweep_dra(void *ctx, const char *key)
{
    collect(ctx, key);
}

static void on_synced(void *ctx)
{
    struct informer *inf = ctx;
    struct vs_store *s = inf->s;
    struct sweep sw = {.seen = NULL};
    size_t swept = 0; /* accounted pods (requests only) gone since the relist began */
    bool nominees_swept = false;
    pthread_rwlock_wrlock(&s->mu);
    sw.seen = inf->seen;
    if (inf->which == INF_NODES) {
        vs_model_each_node(s->model, sweep_node, &sw);
        for (size_t i = 0; i < sw.n; i++)
            vs_model_remove_node(s->model, sw.gone[i]);
    } else if (inf->which == INF_PODS) {
        vs_model_each_pod(s->model, sweep_pod, &sw);
        for (size_t i = 0; i < sw.n; i++) {
            vs_model_remove_pod(s->model, sw.gone[i]);
            gone_add(s, sw.gone[i]);
        }
        swept = vs_model_account_sweep(s->model);
        struct binding *b, *bt;
        HASH_ITER(hh, s->bindings, b, bt)
        {
            if (b->posted && !sset_has(inf->seen, b->uid))
                binding_free(s, b); /* the pod is gone; a held one ends with its Bind */
        }
        struct nominee *e, *et;
        HASH_ITER(hh, s->nominees, e, et)
        {
            if (e->list_gen == s->nominee_gen)
                continue;
            HASH_DEL(s->nominees, e);
            nominee_free(e);
            nominees_swept = true;
        }
    } else if (inf->which == INF_PDBS) {
        for (size_t i = s->n_pdbs; i-- > 0;) {
            char key[512];
            snprintf(key, sizeof(key), "%s/%s", s->pdbs[i].ns, s->pdbs[i].name);
            if (!sset_has(inf->seen, key))
                pdb_drop(s, (long)i);
        }
    } else if (inf->which == INF_SLICES) {
        vs_model_each_dra(s->model, sweep_dra, NULL, &sw);
        for (size_t i = 0; i < sw.n; i++)
            vs_model_remove_slice(s->model, sw.gone[i]);
    } else if (inf->which == INF_CLAIMS) {
        vs_model_each_dra(s->model, NULL, sweep_dra, &sw);
        for (size_t i = 0; i < sw.n; i++)
            vs_model_remove_claim(s->model, sw.gone[i]);
    } else if (inf->which == INF_CLASSES) {
        for (size_t i = s->dra.n; i-- > 0;) {
            char key[512];
            snprintf(key, sizeof(key), "/%s", s->dra.items[i].cls);
            if (sset_has(inf->seen, key))
                continue;
            char *cls = strdup(s->dra.items[i].cls);
            char *was = cls ? vs_dra_guard_remove(&s->dra, cls) : NULL;
            if (was)
                class_log(cls, was, NULL);
            free(was);
            free(cls);
        }
    } else {
        struct quota_key *qk, *t;
        HASH_ITER(hh, s->quotas, qk, t)
        {
            if (sset_has(inf->seen, qk->key))
                continue;
            vs_model_remove_quota(s->model, qk->ns, qk->name);
            HASH_DEL(s->quotas, qk);
            free(qk->key);
            free(qk->ns);
            free(qk->name);
            free(qk);
        }
    }
    sset_clear(&inf->seen);
    inf->listing = false;
    atomic_fetch_add(&s->version, 1);
    pthread_rwlock_unlock(&s->mu);
    for (size_t i = 0; i < sw.n; i++) {
        if (inf->which == INF_NODES && s->hooks.node)
            s->hooks.node(s->hooks.ctx, sw.gone[i], NULL, NULL, true, true);
        else if (inf->which == INF_PODS && s->hooks.pod)
            s->hooks.pod(s->hooks.ctx, sw.gone[i], "", "", true);
        free(sw.gone[i]);
    }
    free(sw.gone);
    if (inf->which == INF_PODS && (sw.n || nominees_swept) && s->hooks.freed)
        s->hooks.freed(s->hooks.ctx);
    if (inf->which == INF_PDBS)
        vs_access_report(s->o.access, VS_API_PDB, VS_OK);
    else if (inf->which == INF_CLASSES)
        vs_access_report(s->o.access, VS_API_DRA_CLASSES, VS_OK);
    else if (inf->which == INF_SLICES)
        vs_access_report(s->o.access, VS_API_DRA_SLICES, VS_OK);
    else if (inf->which == INF_CLAIMS)
        vs_access_report(s->o.access, VS_API_DRA_CLAIMS, VS_OK);
    atomic_store(&inf->synced_gen, atomic_load(&inf->begin_gen));
    atomic_store(&inf->synced, true);
    vs_log(VS_LOG_INFO, "informer_synced", "kind=%s removed=%zu", kind_of(inf->which),
           sw.n + swept);
}

static void on_error(void *ctx, enum vs_err err, const char *msg)
{
    struct informer *inf = ctx;
    struct vs_store *s = inf->s;
    if (inf->which == INF_PDBS && (err == VS_ERR_AUTH || err == VS_ERR_NOTFOUND)) {
        /* Optional: said once by access (and retried slowly); the PDBs known may be stale. */
        vs_access_report(s->o.access, VS_API_PDB, err);
        pthread_rwlock_wrlock(&s->mu);
        while (s->n_pdbs)
            pdb_drop(s, (long)s->n_pdbs - 1);
        pthread_rwlock_unlock(&s->mu);
        return;
    }
    if (inf->which == INF_CLASSES && (err == VS_ERR_AUTH || err == VS_ERR_NOTFOUND)) {
        /* Optional: the guard is off (said once by access); what it knew is dropped. */
        vs_access_report(s->o.access, VS_API_DRA_CLASSES, err);
        pthread_rwlock_wrlock(&s->mu);
        vs_dra_guard_cleanup(&s->dra);
        atomic_fetch_add(&s->version, 1);
        pthread_rwlock_unlock(&s->mu);
        return;
    }
    if ((inf->which == INF_SLICES || inf->which == INF_CLAIMS) &&
        (err == VS_ERR_AUTH || err == VS_ERR_NOTFOUND)) {
        /* Optional: the ledger is off (said once by access); what it held is dropped. */
        bool slices = inf->which == INF_SLICES;
        vs_access_report(s->o.access, slices ? VS_API_DRA_SLICES : VS_API_DRA_CLAIMS, err);
        struct sweep sw = {.seen = NULL};
        pthread_rwlock_wrlock(&s->mu);
        vs_model_each_dra(s->model, slices ? sweep_dra : NULL, slices ? NULL : sweep_dra, &sw);
        for (size_t i = 0; i < sw.n; i++) {
            if (slices)
                vs_model_remove_slice(s->model, sw.gone[i]);
            else
                vs_model_remove_claim(s->model, sw.gone[i]);
            free(sw.gone[i]);
        }
        free(sw.gone);
        if (sw.n)
            atomic_fetch_add(&s->version, 1);
        pthread_rwlock_unlock(&s->mu);
        if (sw.n && s->hooks.freed)
            s->hooks.freed(s->hooks.ctx);
        return;
    }
    char q[VS_ERRBUF_SIZE + 8];
    vs_log(err == VS_ERR_GONE ? VS_LOG_INFO : VS_LOG_WARN, "watch_error", "kind=%s error=%s",
           kind_of(inf->which), vs_log_quote(msg, q, sizeof(q)));
}

static void *informer_main(void *arg)
{
    struct informer *inf = arg;
    static const struct vs_informer_handlers h = {
        .begin = on_begin, .object = on_object, .synced = on_synced, .error = on_error};
    /* Nodes: watch events hold only what on_object and the node hook read (vs_codec_node_keep:
     * the lock annotation and resourceVersion are among them); a lock's take and release each
     * send the whole node. */
    static const struct vs_informer_handlers hn = {.begin = on_begin,
                                                   .object = on_object,
                                                   .synced = on_synced,
                                                   .error = on_error,
                                                   .watch_keep = vs_codec_node_keep};
    /* Pods: only pods with hami.io/vgpu-node are tracked whole, and the relist sweep of tracked
     * pods only drops those (which all carry it), so LIST pages need not decode the others in
     * full: their text goes to on_other, which reads just their requests (the accounting's
     * sweep runs on epochs, not on `seen`). "vgpu-node" also matches the key written with an
     * escaped slash. The decoded ones, and every watch event's pod, hold only what on_object
     * reads: vs_codec_pod_from_json's members (uid, namespace, name, annotations, phase and the
     * requests account_only and the hooks read are among them). */
    static const struct vs_informer_handlers hp = {.begin = on_begin,
                                                   .object = on_object,
                                                   .synced = on_synced,
                                                   .error = on_error,
                                                   .list_needle = "vgpu-node",
                                                   .list_keep = vs_codec_pod_keep,
                                                   .watch_keep = vs_codec_pod_keep,
                                                   .list_other = on_other};
    const char *path = inf->which == INF_NODES    ? "/api/v1/nodes"
                       : inf->which == INF_PODS   ? "/api/v1/pods"
                       : inf->which == INF_QUOTAS ? "/api/v1/resourcequotas"
                       : inf->which == INF_PDBS   ? "/apis/policy/v1/poddisruptionbudgets"
                       : inf->which == INF_SLICES ? "/apis/resource.k8s.io/v1/resourceslices"
                       : inf->which == INF_CLAIMS ? "/apis/resource.k8s.io/v1/resourceclaims"
                                                  : "/apis/resource.k8s.io/v1/deviceclasses";
    /* PodDisruptionBudgets are optional: a refusal waits for the slow re-check. */
    const struct vs_informer_handlers hpdb = {.begin = on_begin,
                                              .object = on_object,
                                              .synced = on_synced,
                                              .error = on_error,
                                              .denied_retry_s =
                                                  vs_access_retry_s(inf->s->o.access)};
    const struct vs_informer_handlers *hh = inf->which == INF_PODS    ? &hp
                                            : inf->which == INF_NODES ? &hn
                                            : inf->which == INF_PDBS || inf->which >= INF_CLASSES
                                                ? &hpdb
                                                : &h;
    const char *sel = inf->which == INF_NODES ? inf->s->o.node_label_selector : NULL;
    /* A resync ends the run (inf->stop) and the next one starts with a fresh list. */
    while (!__atomic_load_n(&inf->s->stop, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&inf->stop, 0, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&inf->s->stop, __ATOMIC_SEQ_CST))
            break;
        vs_kube_informer_run(inf->s->k, path, sel, hh, inf, &inf->stop);
    }
    return NULL;
}

/* A reservation a Bind holds (or bound) does not expire under it. */
static bool keep_binding(void *ctx, const struct vs_podent *pe)
{
    return binding_find(ctx, pe->uid) != NULL;
}

static void *expiry_main(void *arg)
{
    struct vs_store *s = arg;
    while (!__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST)) {
        for (int i = 0; i < 10 && !__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST); i++)
            usleep(100 * 1000);
        if (__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST))
            break;
        pthread_rwlock_wrlock(&s->mu);
        int64_t now = (int64_t)time(NULL);
        size_t n = vs_model_expire_keep(s->model, now, s->o.reservation_ttl, keep_binding, s);
        gone_expire(s, now, s->o.reservation_ttl);
        if (n)
            atomic_fetch_add(&s->version, 1);
        pthread_rwlock_unlock(&s->mu);
        if (n && s->hooks.expired)
            s->hooks.expired(s->hooks.ctx);
        if (n && s->hooks.freed)
            s->hooks.freed(s->hooks.ctx);
        if (n) {
            atomic_fetch_add(&s->expired, n);
            vs_log(VS_LOG_INFO, "reservations_expired", "count=%zu ttl_s=%lld", n,
                   (long long)s->o.reservation_ttl);
        }
    }
    return NULL;
}

enum vs_err vs_store_start(struct vs_store *s, struct vs_errbuf *eb)
{
    for (int i = 0; i < INF_COUNT; i++) {
        if ((i == INF_PDBS && !s->o.watch_pdbs) || (i == INF_CLASSES && !s->o.watch_dra) ||
            ((i == INF_SLICES || i == INF_CLAIMS) && !s->o.watch_dra_ledger)) {
            atomic_store(&s->inf[i].synced, true); /* not watched: nothing to wait for */
            continue;
        }
        if (pthread_create(&s->inf[i].thread, NULL, informer_main, &s->inf[i]) != 0)
            return vs_err_set(eb, VS_ERR_NOMEM, "cannot start informer thread");
        s->inf[i].started = true;
    }
    if (pthread_create(&s->expiry, NULL, expiry_main, s) != 0)
        return vs_err_set(eb, VS_ERR_NOMEM, "cannot start expiry thread");
    s->expiry_started = true;
    return VS_OK;
}

void vs_store_free(struct vs_store *s)
{
    if (!s)
        return;
    __atomic_store_n(&s->stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < INF_COUNT; i++)
        __atomic_store_n(&s->inf[i].stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < INF_COUNT; i++)
        if (s->inf[i].started)
            pthread_join(s->inf[i].thread, NULL);
    if (s->expiry_started)
        pthread_join(s->expiry, NULL);
    for (int i = 0; i < INF_COUNT; i++)
        sset_clear(&s->inf[i].seen);
    struct quota_key *qk, *t;
    HASH_ITER(hh, s->quotas, qk, t)
    {
        HASH_DEL(s->quotas, qk);
        free(qk->key);
        free(qk->ns);
        free(qk->name);
        free(qk);
    }
    for (size_t i = 0; i < s->n_pdbs; i++)
        vs_pdb_cleanup(&s->pdbs[i]);
    free(s->pdbs);
    vs_dra_guard_cleanup(&s->dra);
    struct nominee *e, *et;
    HASH_ITER(hh, s->nominees, e, et)
    {
        HASH_DEL(s->nominees, e);
        nominee_free(e);
    }
    struct binding *b, *bt;
    HASH_ITER(hh, s->bindings, b, bt)
    binding_free(s, b);
    while (s->gone)
        gone_drop(s, s->gone);
    vs_model_free(s->model);
    pthread_rwlock_destroy(&s->mu);
    free(s);
}

bool vs_store_synced(const struct vs_store *s)
{
    for (int i = INF_NODES; i <= INF_QUOTAS; i++)
        if (!atomic_load(&((struct vs_store *)s)->inf[i].synced))
            return false;
    return true;
}

bool vs_store_dra_synced(const struct vs_store *s)
{
    return s->o.watch_dra_ledger && atomic_load(&((struct vs_store *)s)->inf[INF_SLICES].synced) &&
           atomic_load(&((struct vs_store *)s)->inf[INF_CLAIMS].synced);
}

/* ------------------------------------------------------------------ Filter */

#define MAX_OPTIMISTIC 4

struct holds {
    struct vs_sched_extra *v;
    size_t n;
};

static void holds_free(struct holds *h)
{
    for (size_t i = 0; i < h->n; i++)
        vs_usage_free((struct vs_usage *)h->v[i].usage, h->v[i].n_usage);
    free(h->v);
    h->v = NULL;
    h->n = 0;
}

static int cmp_nominee(const void *a, const void *b)
{
    const struct nominee *x = *(const struct nominee *const *)a;
    const struct nominee *y = *(const struct nominee *const *)b;
    if (x->pod.priority != y->pod.priority)
        return x->pod.priority > y->pod.priority ? -1 : 1;
    return strcmp(x->uid, y->uid);
}

/* Where nominee e would go on its node: Fit of its pod on that node alone, with the node's
 * terminating pods gone (the capacity a preemptor waits for) and the holds already made on it;
 * its usage appended to h. Not fitting even so holds nothing. Lock held. */
static enum vs_err hold_one(struct vs_store *s, const struct nominee *e,
                            const struct vs_sched_opts *o, struct holds *h)
{
    const struct vs_node *nd = vs_model_node(s->model, e->pod.nominated_node);
    if (!nd)
        return VS_OK;
    size_t nt;
    const struct vs_podent **gone = vs_node_terminating(nd, &nt);
    if (!gone)
        return VS_ERR_NOMEM;
    struct vs_sched_opts qo = *o;
    qo.without = gone;
    qo.n_without = nt;
    qo.extra = h->v;
    qo.n_extra = h->n;
    qo.what_if = true;
    qo.lazy_reasons = true;
    qo.busy = NULL;
    qo.n_busy = 0;
    const char *cand = e->pod.nominated_node;
    struct vs_filter_result r;
    enum vs_err err = vs_sched_filter(s->model, &e->pod, &cand, 1, &qo, &r);
    free(gone);
    if (!err && r.managed && !r.error && r.best == 0) {
        struct vs_usage *u = NULL;
        size_t nu = 0;
        struct vs_sched_extra *g = realloc(h->v, (h->n + 1) * sizeof(*g));
        if (!g ||
            vs_usage_collapse_all(r.nodes[0].allocs, r.nodes[0].n_allocs, e->pod.n_init, &u, &nu)) {
            if (g)
                h->v = g;
            err = VS_ERR_NOMEM;
        } else {
            h->v = g;
            h->v[h->n++] =
                (struct vs_sched_extra){.node = e->pod.nominated_node, .usage = u, .n_usage = nu};
        }
    }
    vs_filter_result_cleanup(&r);
    return err;
}

/* The holds of the pods nominated to candidate nodes that `pod` must leave room for: priority
 * at least the pod's, not the pod itself, not already tracked with an allocation. Higher
 * priority first (then uid), each placed around the holds before it. Lock held. */
static enum vs_err holds_for(struct vs_store *s, const struct vs_pod *pod, const char *const *cands,
                             size_t n, const struct vs_sched_opts *o, struct holds *h)
{
    size_t nn = HASH_COUNT(s->nominees), k = 0;
    if (!nn)
        return VS_OK;
    const struct nominee **v = calloc(nn, sizeof(*v));
    if (!v)
        return VS_ERR_NOMEM;
    for (const struct nominee *e = s->nominees; e; e = e->hh.next) {
        if (e->pod.priority < pod->priority || (pod->uid && strcmp(e->uid, pod->uid) == 0))
            continue;
        const struct vs_podent *pe = vs_model_pod(s->model, e->uid);
        if (pe && !pe->expired)
            continue;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(cands[i], e->pod.nominated_node) == 0) {
                v[k++] = e;
                break;
            }
        }
    }
    qsort(v, k, sizeof(*v), cmp_nominee);
    enum vs_err err = VS_OK;
    for (size_t i = 0; i < k && !err; i++)
        err = hold_one(s, v[i], o, h);
    free(v);
    return err;
}

/* The state of pod uid's reservation for a Bind to node (NULL: any node). Lock held. */
static enum vs_reservation_state res_state(struct vs_store *s, const char *uid, const char *node)
{
    const struct vs_podent *pe = vs_model_pod(s->model, uid);
    return !pe                              ? VS_RES_MISSING
           : pe->expired                    ? VS_RES_EXPIRED
           : pe->bound                      ? VS_RES_BOUND
           : node && strcmp(pe->node, node) ? VS_RES_MOVED
                                            : VS_RES_OK;
}

/* Whether Bind b's hold still names the reservation it began with. Lock held. */
static enum vs_reservation_state held_state(struct vs_store *s, const struct binding *b)
{
    if (b->posted)
        return VS_RES_BOUND;
    enum vs_reservation_state st = res_state(s, b->uid, b->node);
    if (st == VS_RES_OK && vs_model_pod(s->model, b->uid)->resv_id != b->resv_id)
        st = VS_RES_CHANGED;
    return st;
}

/* When the pod was seen deleted (vs_filter_result.gone), a Bind holds (or bound) it, or the watch
 * has shown it bound, fills r with that instead of a decision (see vs_filter_result.bind_node):
 * 1, or -1 out of memory; 0 when none of these.
 * A bound pod is never reserved again: a Filter that reaches us after the pod's binding (kube-
 * scheduler retried a Bind that outlasted its timeout, from a cache without the binding yet)
 * would otherwise replace its usage and rewrite its annotations for another node. evaluated: r
 * holds an evaluation (cleaned up), else it is not initialized. Lock held. */
static int filter_binding(struct vs_store *s, const struct vs_pod *pod, const char *const *cands,
                          size_t n, bool evaluated, struct vs_filter_result *r)
{
    if (gone_has(s, pod->uid)) {
        if (evaluated)
            vs_filter_result_cleanup(r);
        memset(r, 0, sizeof(*r));
        r->best = -1;
        r->managed = true;
        r->gone = true;
        return 1;
    }
    const struct binding *b = binding_find(s, pod->uid);
    const struct vs_podent *pe = b ? NULL : vs_model_pod(s->model, pod->uid);
    if (!b && !(pe && pe->bound && !pe->expired))
        return 0;
    if (evaluated) {
        vs_filter_result_cleanup(r);
    } else {
        memset(r, 0, sizeof(*r));
        r->best = -1;
    }
    r->managed = true;
    r->bind_posted = !b || b->posted;
    if (!(r->bind_node = strdup(b ? b->node : pe->node ? pe->node : "")))
        return -1;
    if (b && held_state(s, b) == VS_RES_OK)
        for (size_t i = 0; i < n && !r->bind_keep; i++)
            r->bind_keep = strcmp(cands[i], b->node) == 0;
    return 1;
}

enum vs_err vs_store_filter(struct vs_store *s, const struct vs_pod *pod, const char *const *cands,
                            size_t n, const struct vs_sched_opts *o, int64_t now,
                            struct vs_filter_result *r)
{
    struct vs_errbuf eb;
    for (int attempt = 0;; attempt++) {
        bool exclusive = attempt >= MAX_OPTIMISTIC;
        /* After a few conflicts, evaluate under the write lock so the commit cannot fail. */
        if (exclusive)
            pthread_rwlock_wrlock(&s->mu);
        else
            pthread_rwlock_rdlock(&s->mu);
        int held = filter_binding(s, pod, cands, n, false, r);
        if (held) {
            pthread_rwlock_unlock(&s->mu);
            return held < 0 ? VS_ERR_NOMEM : VS_OK;
        }
        struct holds h = {0};
        enum vs_err err = holds_for(s, pod, cands, n, o, &h);
        if (!err) {
            struct vs_sched_opts fo = *o;
            fo.extra = h.v;
            fo.n_extra = h.n;
            err = vs_sched_filter(s->model, pod, cands, n, h.n ? &fo : o, r);
        }
        holds_free(&h);
        if (!exclusive)
            pthread_rwlock_unlock(&s->mu);
        if (err || r->error || !r->managed || r->best < 0) {
            if (exclusive)
                pthread_rwlock_unlock(&s->mu);
            return err;
        }
        if (!exclusive) {
            pthread_rwlock_wrlock(&s->mu);
            /* A Bind of the pod may have begun since the evaluation: it keeps its node. */
            if ((held = filter_binding(s, pod, cands, n, true, r))) {
                pthread_rwlock_unlock(&s->mu);
                return held < 0 ? VS_ERR_NOMEM : VS_OK;
            }
        }
        err = vs_sched_commit(s->model, pod, r, now, &eb);
        if (err == VS_OK) {
            r->reservation = vs_model_pod(s->model, pod->uid)->resv_id;
            /* The backends' annotations may read the node: made while it is locked. */
            const struct vs_node_fit *f = &r->nodes[r->best];
            if (!(r->annotations = json_object()) ||
                vs_sched_annotations(o->cfg->devices, pod, vs_model_node(s->model, f->node), f,
                                     now * 1000000000LL, r->annotations)) {
                vs_model_remove_pod(s->model, pod->uid);
                err = VS_ERR_NOMEM;
            }
            atomic_fetch_add(&s->version, 1);
        }
        pthread_rwlock_unlock(&s->mu);
        if (err != VS_ERR_CONFLICT)
            return err;
        atomic_fetch_add(&s->conflicts, 1);
        vs_filter_result_cleanup(r);
    }
}

struct uids {
    char **v;
    size_t n, cap;
};

static void collect_reservation(void *ctx, const struct vs_podent *pe)
{
    struct uids *u = ctx;
    if (!pe->reservation)
        return;
    if (u->n == u->cap) {
        size_t nc = u->cap ? u->cap * 2 : 16;
        char **v = realloc(u->v, nc * sizeof(*v));
        if (!v)
            return;
        u->v = v;
        u->cap = nc;
    }
    if ((u->v[u->n] = strdup(pe->uid)))
        u->n++;
}

/* Under the write lock. */
static size_t drop_reservations(struct vs_store *s)
{
    struct uids u = {0};
    vs_model_each_pod(s->model, collect_reservation, &u);
    for (size_t i = 0; i < u.n; i++) {
        vs_model_remove_pod(s->model, u.v[i]);
        free(u.v[i]);
    }
    free(u.v);
    return u.n;
}

size_t vs_store_drop_reservations(struct vs_store *s)
{
    pthread_rwlock_wrlock(&s->mu);
    size_t n = drop_reservations(s);
    if (n)
        atomic_fetch_add(&s->version, 1);
    pthread_rwlock_unlock(&s->mu);
    if (n && s->hooks.freed)
        s->hooks.freed(s->hooks.ctx);
    return n;
}

uint64_t vs_store_resync(struct vs_store *s)
{
    uint64_t req = atomic_fetch_add(&s->resync_req, 1) + 1;
    pthread_rwlock_wrlock(&s->mu);
    size_t n = drop_reservations(s);
    if (n)
        atomic_fetch_add(&s->version, 1);
    pthread_rwlock_unlock(&s->mu);
    /* Nodes (capacity, locks) and pods (allocations) are listed again; quotas follow watch. */
    for (int i = INF_NODES; i <= INF_PODS; i++) {
        atomic_store(&s->inf[i].synced, false);
        __atomic_store_n(&s->inf[i].stop, 1, __ATOMIC_SEQ_CST);
    }
    vs_log(VS_LOG_INFO, "store_resync", "request=%llu reservations_dropped=%zu",
           (unsigned long long)req, n);
    return req;
}

bool vs_store_resynced(const struct vs_store *cs, uint64_t req)
{
    struct vs_store *s = (struct vs_store *)cs;
    for (int i = INF_NODES; i <= INF_PODS; i++)
        if (atomic_load(&s->inf[i].synced_gen) < req || !atomic_load(&s->inf[i].synced))
            return false;
    return vs_store_synced(s);
}

void vs_store_plan_cleanup(struct vs_store_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->victims[i].ns);
        free(p->victims[i].name);
        free(p->victims[i].uid);
    }
    free(p->victims);
    free(p->node);
    memset(p, 0, sizeof(*p));
}

static enum vs_err plan_copy(const struct vs_preempt_plan *pl, struct vs_store_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->node = strdup(pl->node);
    out->victims = calloc(pl->n ? pl->n : 1, sizeof(*out->victims));
    if (!out->node || !out->victims)
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < pl->n; i++) {
        struct vs_store_victim *v = &out->victims[out->n++];
        v->ns = strdup(pl->victims[i]->ns);
        v->name = strdup(pl->victims[i]->name);
        v->uid = strdup(pl->victims[i]->uid);
        if (!v->ns || !v->name || !v->uid)
            return VS_ERR_NOMEM;
    }
    return VS_OK;
}

enum vs_err vs_store_preempt(struct vs_store *s, const struct vs_pod *pod, const char *const *cands,
                             size_t n, const struct vs_sched_opts *o, int64_t now,
                             struct vs_store_plan *out, bool *found)
{
    struct vs_preempt_opts po = {.sched = o, .bound_only = true};
    struct vs_errbuf eb;
    memset(out, 0, sizeof(*out));
    *found = false;
    for (int attempt = 0;; attempt++) {
        /* After a few conflicts, plan under the write lock so the commit cannot fail. */
        bool exclusive = attempt >= MAX_OPTIMISTIC;
        if (exclusive)
            pthread_rwlock_wrlock(&s->mu);
        else
            pthread_rwlock_rdlock(&s->mu);
        struct vs_preempt_plan *plans = NULL;
        size_t np = 0;
        po.pdbs = s->pdbs;
        po.n_pdbs = s->n_pdbs;
        enum vs_err err = vs_preempt_plans(s->model, pod, cands, n, &po, &plans, &np);
        if (!err && np)
            err = plan_copy(&plans[0], out);
        if (!exclusive)
            pthread_rwlock_unlock(&s->mu);
        if (err || np == 0) {
            if (exclusive)
                pthread_rwlock_unlock(&s->mu);
            vs_preempt_plans_free(plans, np);
            if (err)
                vs_store_plan_cleanup(out);
            return err;
        }
        if (!exclusive)
            pthread_rwlock_wrlock(&s->mu);
        /* A Bind of the pod began (its reservation stays), or the pod was deleted. */
        if (binding_find(s, pod->uid) || gone_has(s, pod->uid)) {
            pthread_rwlock_unlock(&s->mu);
            vs_preempt_plans_free(plans, np);
            vs_store_plan_cleanup(out);
            return VS_OK;
        }
        err = vs_sched_commit(s->model, pod, &plans[0].fit, now, &eb);
        if (err == VS_OK) {
            out->reservation = vs_model_pod(s->model, pod->uid)->resv_id;
            atomic_fetch_add(&s->version, 1);
        }
        pthread_rwlock_unlock(&s->mu);
        vs_preempt_plans_free(plans, np);
        if (err == VS_OK) {
            *found = true;
            return VS_OK;
        }
        vs_store_plan_cleanup(out);
        if (err != VS_ERR_CONFLICT)
            return err;
        atomic_fetch_add(&s->conflicts, 1);
    }
}

bool vs_store_unreserve(struct vs_store *s, const char *uid, uint64_t reservation)
{
    pthread_rwlock_wrlock(&s->mu);
    const struct vs_podent *pe = vs_model_pod(s->model, uid);
    bool freed = pe && pe->reservation && (!reservation || pe->resv_id == reservation);
    if (freed) {
        vs_model_remove_pod(s->model, uid);
        atomic_fetch_add(&s->version, 1);
    }
    pthread_rwlock_unlock(&s->mu);
    if (freed && s->hooks.freed)
        s->hooks.freed(s->hooks.ctx);
    return freed;
}

bool vs_store_gone(struct vs_store *s, const char *uid)
{
    pthread_rwlock_rdlock(&s->mu);
    bool g = gone_has(s, uid);
    pthread_rwlock_unlock(&s->mu);
    return g;
}

bool vs_store_superseded(struct vs_store *s, const char *uid, uint64_t reservation)
{
    pthread_rwlock_rdlock(&s->mu);
    const struct vs_podent *pe = vs_model_pod(s->model, uid);
    bool later = pe && pe->resv_id > reservation;
    pthread_rwlock_unlock(&s->mu);
    return later;
}

enum vs_reservation_state vs_store_reservation_on(struct vs_store *s, const char *uid,
                                                  const char *node)
{
    pthread_rwlock_rdlock(&s->mu);
    const struct binding *b = binding_find(s, uid);
    enum vs_reservation_state st = b && b->posted ? VS_RES_BOUND : res_state(s, uid, node);
    pthread_rwlock_unlock(&s->mu);
    return st;
}

enum vs_reservation_state vs_store_bind_begin(struct vs_store *s, const char *uid, const char *node,
                                              uint64_t *token, char **holder)
{
    *token = 0;
    if (holder)
        *holder = NULL;
    pthread_rwlock_wrlock(&s->mu);
    struct binding *b = binding_find(s, uid);
    enum vs_reservation_state st;
    if (b) {
        st = b->posted ? VS_RES_BOUND : VS_RES_BUSY;
        if (holder && st == VS_RES_BUSY && !(*holder = strdup(b->node)))
            st = VS_RES_NOMEM;
    } else if ((st = res_state(s, uid, node)) == VS_RES_OK) {
        b = calloc(1, sizeof(*b));
        if (b && (b->uid = strdup(uid)) && (b->node = strdup(node))) {
            b->token = ++s->bind_seq;
            b->resv_id = vs_model_pod(s->model, uid)->resv_id;
            HASH_ADD_KEYPTR(hh, s->bindings, b->uid, strlen(b->uid), b);
            *token = b->token;
        } else {
            if (b)
                free(b->uid);
            free(b);
            st = VS_RES_NOMEM;
        }
    }
    pthread_rwlock_unlock(&s->mu);
    return st;
}

uint64_t vs_store_bind_resv(struct vs_store *s, const char *uid, uint64_t token)
{
    pthread_rwlock_rdlock(&s->mu);
    const struct binding *b = binding_find(s, uid);
    uint64_t id = b && b->token == token ? b->resv_id : 0;
    pthread_rwlock_unlock(&s->mu);
    return id;
}

enum vs_reservation_state vs_store_bind_check(struct vs_store *s, const char *uid, const char *node,
                                              uint64_t token)
{
    pthread_rwlock_rdlock(&s->mu);
    const struct binding *b = binding_find(s, uid);
    enum vs_reservation_state st;
    if (b && b->token == token) {
        st = held_state(s, b);
    } else {
        /* The hold went with the pod (deleted, terminal, or seen bound) */
        st = res_state(s, uid, node);
        if (st == VS_RES_OK)
            st = VS_RES_MISSING;
    }
    pthread_rwlock_unlock(&s->mu);
    return st;
}

void vs_store_bind_end(struct vs_store *s, const char *uid, uint64_t token, bool posted)
{
    if (!token)
        return;
    pthread_rwlock_wrlock(&s->mu);
    struct binding *b = binding_find(s, uid);
    if (b && b->token == token) {
        if (posted)
            b->posted = true;
        else
            binding_free(s, b);
    }
    pthread_rwlock_unlock(&s->mu);
}

enum vs_reservation_state vs_store_reservation(struct vs_store *s, const char *uid)
{
    return vs_store_reservation_on(s, uid, NULL);
}

void vs_store_read(struct vs_store *s, void (*fn)(void *ctx, const struct vs_model *m), void *ctx)
{
    pthread_rwlock_rdlock(&s->mu);
    fn(ctx, s->model);
    pthread_rwlock_unlock(&s->mu);
}

void vs_store_read_pdbs(struct vs_store *s,
                        void (*fn)(void *ctx, const struct vs_model *m, const struct vs_pdb *pdbs,
                                   size_t n_pdbs),
                        void *ctx)
{
    pthread_rwlock_rdlock(&s->mu);
    fn(ctx, s->model, s->pdbs, s->n_pdbs);
    pthread_rwlock_unlock(&s->mu);
}

void vs_store_stats(const struct vs_store *cs, struct vs_store_stats *out)
{
    struct vs_store *s = (struct vs_store *)cs;
    out->malformed_pods = atomic_load(&s->malformed_pods);
    out->malformed_nodes = atomic_load(&s->malformed_nodes);
    out->expired = atomic_load(&s->expired);
    out->commit_conflicts = atomic_load(&s->conflicts);
    out->relists = atomic_load(&s->relists);
}

uint64_t vs_store_version(const struct vs_store *cs)
{
    struct vs_store *s = (struct vs_store *)cs;
    return atomic_load(&s->version);
}

json_t *vs_store_dra_conflicts(struct vs_store *s)
{
    pthread_rwlock_rdlock(&s->mu);
    json_t *a = vs_dra_guard_json(&s->dra);
    pthread_rwlock_unlock(&s->mu);
    return a;
}
