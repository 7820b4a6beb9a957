/* mirrors: the API side of mirror claims (mirrors.h). A mirror is written in two steps, create
 * then status; a mirror whose second step failed is deleted at once, and one left half-written
 * by a crash is neither "same" nor kept by the next reconcile (not allocated), so it is
 * replaced. Reconcile LISTs before it reads the model: a mirror Bind makes in between is then
 * wanted too (its pod was reserved before Bind), never taken for an orphan. */
#include "mirrors.h"

#include "annot.h"
#include "flags.h"
#include "leader.h"
#include "log.h"
#include "store.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API "/apis/resource.k8s.io/v1/namespaces/"

struct vs_mirrors {
    struct vs_mirrors_opts o;
    char *ns;
    pthread_t thread;
    bool started;
    /* mu guards the fields below */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, kicked, said_unsynced;
    /* reconciles only (one at a time: the thread, or a test): the cards' mirrors a DRA claim
     * also held at the last pass, names sorted */
    struct vs_mirror_set overlapped;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void claims_path(const struct vs_mirrors *m, const char *name, const char *sub, char *out,
                        size_t n)
{
    snprintf(out, n, API "%s/resourceclaims%s%s%s%s", m->ns, name ? "/" : "", name ? name : "",
             sub ? "/" : "", sub ? sub : "");
}

/* Deallocates claim ns/name (its status.allocation removed through the status subresource),
 * then deletes it. Deallocation first: kube-scheduler retries the pods its DRA allocator
 * refused when an allocated claim is deallocated, not when one is deleted. Gone already is
 * success. */
static enum vs_err retire(struct vs_kube *k, const char *ns, const char *name, struct vs_errbuf *eb)
{
    char p[600];
    snprintf(p, sizeof(p), API "%s/resourceclaims/%s", ns, name);
    enum vs_err err = VS_OK;
    for (int attempt = 0; attempt < 3; attempt++) {
        json_t *cur = NULL;
        if ((err = vs_kube_get(k, p, &cur, eb)))
            return err == VS_ERR_NOTFOUND ? VS_OK : err;
        json_t *st = json_object_get(cur, "status");
        bool allocated = json_is_object(json_object_get(st, "allocation"));
        if (allocated) {
            json_object_del(st, "allocation");
            char sp[640];
            snprintf(sp, sizeof(sp), "%s/status", p);
            err = vs_kube_put(k, sp, cur, NULL, eb);
        }
        json_decref(cur);
        if (err == VS_ERR_CONFLICT)
            continue; /* changed meanwhile: read it again */
        if (err)
            return err == VS_ERR_NOTFOUND ? VS_OK : err;
        break;
    }
    if (err)
        return err;
    err = vs_kube_request(k, "DELETE", p, NULL, NULL, NULL, eb);
    return err == VS_ERR_NOTFOUND ? VS_OK : err;
}

static enum vs_err delete_claim(struct vs_mirrors *m, const char *name, struct vs_errbuf *eb)
{
    return retire(m->o.kube, m->ns, name, eb);
}

/* Makes mirror mr exist, allocated: created and its allocation written; an existing claim of
 * that name that is the same is kept, one not yet allocated is completed (a concurrent Bind or
 * reconcile may be writing it: whoever loses the status write reads it again), an allocated
 * one that differs is replaced. *made: this call created it. Nothing is left behind by a
 * create of this call on error. */
static enum vs_err ensure(struct vs_mirrors *m, const struct vs_mirror *mr, bool *made,
                          struct vs_errbuf *eb)
{
    char p[600], sp[640];
    *made = false;
    json_t *body = vs_mirror_claim_json(mr, m->ns), *cur = NULL, *st = NULL;
    if (!body)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    claims_path(m, NULL, NULL, p, sizeof(p));
    enum vs_err err = vs_kube_post(m->o.kube, p, body, &cur, eb);
    if (!err)
        *made = true;
    else if (err != VS_ERR_CONFLICT) /* AlreadyExists: from an earlier Bind or reconcile */
        goto fail;
    claims_path(m, mr->name, NULL, p, sizeof(p));
    snprintf(sp, sizeof(sp), "%s/status", p);
    for (int attempt = 0; attempt < 4; attempt++) {
        if (!cur && (err = vs_kube_get(m->o.kube, p, &cur, eb)))
            goto fail;
        struct vs_mirror have;
        bool decoded = vs_mirror_from_claim(cur, &have, NULL) == VS_OK;
        bool same = decoded && vs_mirror_same(mr, &have);
        /* the same devices requested: its allocation can be written */
        const json_t *reqs =
            json_object_get(json_object_get(json_object_get(cur, "spec"), "devices"), "requests");
        bool fits = decoded && !have.allocated && json_array_size(reqs) == mr->n;
        vs_mirror_cleanup(&have);
        if (same)
            goto done;
        if (fits) {
            if (!(st = vs_mirror_status_json(mr)) || json_object_set(cur, "status", st)) {
                err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
                goto fail;
            }
            json_decref(st);
            st = NULL;
            err = vs_kube_put(m->o.kube, sp, cur, NULL, eb);
            if (!err)
                goto done;
            if (err != VS_ERR_CONFLICT && err != VS_ERR_NOTFOUND)
                goto fail;
        } else {
            /* allocated otherwise (stale devices), or not ours to complete: replace it */
            if ((err = delete_claim(m, mr->name, eb)))
                goto fail;
            claims_path(m, NULL, NULL, p, sizeof(p));
            json_decref(cur);
            cur = NULL;
            err = vs_kube_post(m->o.kube, p, body, &cur, eb);
            claims_path(m, mr->name, NULL, p, sizeof(p));
            if (!err)
                *made = true;
            else if (err != VS_ERR_CONFLICT)
                goto fail;
            continue;
        }
        json_decref(cur);
        cur = NULL; /* changed meanwhile: read it again */
    }
    err = vs_err_set(eb, VS_ERR_CONFLICT, "kept changing");
fail:
    vs_err_prefix(eb, err, "ResourceClaim %s/%s: ", m->ns, mr->name);
    if (*made) {
        struct vs_errbuf e2;
        delete_claim(m, mr->name, &e2);
        *made = false;
    }
    goto out;
done:
    err = VS_OK;
out:
    json_decref(st);
    json_decref(cur);
    json_decref(body);
    return err;
}

struct have_ctx {
    struct vs_mirror_set *set;
    bool oom;
};

static int on_have(void *ctx, json_t *item)
{
    struct have_ctx *h = ctx;
    struct vs_mirror mr;
    struct vs_errbuf eb;
    enum vs_err err = vs_mirror_from_claim(item, &mr, &eb);
    if (err == VS_ERR_PARSE) {
        /* Labelled but unreadable: an orphan by name (never the same as a wanted one). */
        const char *name =
            json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
        memset(&mr, 0, sizeof(mr));
        if (!name)
            return 0;
        mr.name = (char *)name;
        if (!vs_mirror_set_add(h->set, &mr))
            h->oom = true;
        return 0;
    }
    if (err || !vs_mirror_set_add(h->set, &mr))
        h->oom = true;
    vs_mirror_cleanup(&mr);
    return 0;
}

struct want_ctx {
    enum vs_mirror_mode mode;
    const char *uid; /* NULL: every pod */
    struct vs_mirror_set *set;
    struct vs_mirror_set *have; /* marked too (reconcile) */
    enum vs_err err;
    bool taken;
    char *why;
    size_t n;
};

static void read_want(void *ctx, const struct vs_model *model)
{
    struct want_ctx *w = ctx;
    w->err = w->uid ? vs_mirror_desired_pod(model, w->mode, w->uid, w->set)
                    : vs_mirror_desired(model, w->mode, w->set);
    if (!w->err && w->have) {
        vs_mirror_mark_held(model, w->set);
        vs_mirror_mark_held(model, w->have);
    }
}

static void read_taken(void *ctx, const struct vs_model *model)
{
    struct want_ctx *w = ctx;
    w->taken = vs_mirror_taken(model, w->uid, w->why, w->n);
}

static bool serving(struct vs_mirrors *m)
{
    return !m->o.leader || vs_leader_term(m->o.leader, NULL) != 0;
}

enum vs_err vs_mirrors_reconcile(struct vs_mirrors *m, struct vs_mirrors_pass *out,
                                 struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    if (!serving(m) || !vs_store_synced(m->o.store) || !vs_store_dra_synced(m->o.store)) {
        out->skipped = true;
        pthread_mutex_lock(&m->mu);
        bool say = serving(m) && !m->said_unsynced;
        if (say)
            m->said_unsynced = true;
        pthread_mutex_unlock(&m->mu);
        if (say)
            vs_log(VS_LOG_INFO, "dra_mirror_waiting",
                   "reason=\"ResourceSlices and ResourceClaims not listed yet (or not readable)\"");
        return VS_OK;
    }
    struct vs_mirror_set have = {0}, want = {0};
    struct vs_mirror_diff d = {0};
    struct have_ctx hc = {.set = &have};
    char p[600];
    claims_path(m, NULL, NULL, p, sizeof(p));
    enum vs_err err = vs_kube_list(m->o.kube, p, VS_LABEL_MIRROR_OF, 500, on_have, &hc, NULL, eb);
    if (!err && hc.oom)
        err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    if (err)
        goto out;
    struct want_ctx wc = {.mode = m->o.mode, .set = &want, .have = &have};
    vs_store_read(m->o.store, read_want, &wc);
    if ((err = wc.err) || (err = vs_mirror_diff(&want, &have, &d))) {
        vs_err_set(eb, err, "out of memory");
        goto out;
    }
    out->kept = want.n - d.n_create; /* wanted and there as wanted; pinned ones below */
    char q[VS_ERRBUF_SIZE + 8];
    /* A card's mirror that shares a device with a DRA claim (a claim allocated from a stale
     * cache, or a mirror made after it) stays while the claim does: deleting it would make
     * kube-scheduler forget the claim's device. Once the overlap ends, a wanted one is made
     * again, as the claim's removal made kube-scheduler forget the mirror's device. */
    struct vs_mirror_set held = {0};
    for (size_t i = 0; i < have.n; i++)
        if (have.items[i].dra_held && !vs_mirror_set_add(&held, &have.items[i]))
            err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < want.n; i++) {
        const struct vs_mirror *w = &want.items[i];
        const struct vs_mirror *h = vs_mirror_set_find(&have, w->name);
        if (!w->pod_uid && h && !w->dra_held && vs_mirror_set_find(&m->overlapped, w->name) &&
            vs_mirror_same(w, h)) {
            struct vs_errbuf e;
            bool made;
            if (!delete_claim(m, w->name, &e) && !ensure(m, w, &made, &e))
                vs_log(VS_LOG_INFO, "dra_mirror_refreshed", "claim=%s/%s card=%s", m->ns, w->name,
                       w->card);
        }
        if (w->dra_held && !vs_mirror_set_add(&held, w))
            err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    vs_mirror_set_cleanup(&m->overlapped);
    m->overlapped = held;
    if (err)
        goto out;
    for (size_t i = 0; i < d.n_remove; i++) {
        const struct vs_mirror *mr = &have.items[d.remove[i]];
        struct vs_errbuf e;
        if (mr->dra_held && !vs_mirror_set_find(&want, mr->name)) {
            out->kept++;
            continue; /* pinned by the overlap (above) */
        }
        if (!serving(m) || delete_claim(m, mr->name, &e)) {
            out->failed++;
            if (serving(m))
                vs_log(VS_LOG_WARN, "dra_mirror_delete_failed", "claim=%s/%s error=%s", m->ns,
                       mr->name, vs_log_quote(e.msg, q, sizeof(q)));
            continue;
        }
        out->deleted++;
        vs_log(VS_LOG_INFO, "dra_mirror_deleted", "claim=%s/%s pod_uid=%s reason=%s", m->ns,
               mr->name, mr->pod_uid ? mr->pod_uid : "-", mr->allocated ? "orphan" : "unallocated");
    }
    for (size_t i = 0; i < d.n_create; i++) {
        const struct vs_mirror *mr = &want.items[d.create[i]];
        struct vs_errbuf e;
        bool made;
        if (!serving(m) || ensure(m, mr, &made, &e)) {
            out->failed++;
            if (serving(m))
                vs_log(VS_LOG_WARN, "dra_mirror_create_failed", "claim=%s/%s error=%s", m->ns,
                       mr->name, vs_log_quote(e.msg, q, sizeof(q)));
            continue;
        }
        out->created++;
        vs_log(VS_LOG_INFO, "dra_mirror_created",
               "claim=%s/%s pod=%s node=%s card=%s source=reconcile new=%d", m->ns, mr->name,
               mr->pod ? mr->pod : "-", mr->node, mr->card, made);
    }
out:
    vs_mirror_diff_cleanup(&d);
    vs_mirror_set_cleanup(&have);
    vs_mirror_set_cleanup(&want);
    return err;
}

bool vs_mirrors_taken(struct vs_mirrors *m, const char *uid, char *why, size_t n)
{
    struct want_ctx wc = {.uid = uid, .why = why, .n = n};
    vs_store_read(m->o.store, read_taken, &wc);
    return wc.taken;
}

enum vs_err vs_mirrors_bind(struct vs_mirrors *m, const char *uid, size_t *n_made, char *why,
                            size_t n, struct vs_errbuf *eb)
{
    *n_made = 0;
    struct vs_mirror_set want = {0};
    struct want_ctx wc = {.mode = m->o.mode, .uid = uid, .set = &want, .why = why, .n = n};
    vs_store_read(m->o.store, read_want, &wc);
    enum vs_err err = wc.err ? vs_err_set(eb, wc.err, "out of memory") : VS_OK;
    for (size_t i = 0; !err && i < want.n; i++) {
        const struct vs_mirror *mr = &want.items[i];
        bool made;
        if ((err = ensure(m, mr, &made, eb)))
            break;
        (*n_made)++;
        vs_log(VS_LOG_INFO, "dra_mirror_created",
               "claim=%s/%s pod=%s node=%s card=%s source=bind new=%d", m->ns, mr->name,
               mr->pod ? mr->pod : "-", mr->node, mr->card, made);
    }
    /* A claim allocated after Filter chose the card (kube-scheduler's DRA allocator did not
     * see the mirror yet) holds it now: the mirror came too late for this card. */
    if (!err && want.n && vs_mirrors_taken(m, uid, why, n))
        err = VS_ERR_CONFLICT;
    if (err) {
        /* The pod's own mirrors go; a card's mirror may fence other pods' use of the card too:
         * the reconcile deletes it once no pod uses the card. */
        for (size_t i = 0; i < want.n; i++) {
            struct vs_errbuf e;
            if (want.items[i].pod_uid)
                delete_claim(m, want.items[i].name, &e);
        }
        *n_made = 0;
        vs_mirrors_kick(m);
    }
    vs_mirror_set_cleanup(&want);
    return err;
}

static int on_release(void *ctx, json_t *item)
{
    struct vs_mirrors *m = ctx;
    const char *name =
        json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
    struct vs_errbuf eb;
    char q[VS_ERRBUF_SIZE + 8];
    if (name && delete_claim(m, name, &eb))
        vs_log(VS_LOG_WARN, "dra_mirror_delete_failed", "claim=%s/%s error=%s", m->ns, name,
               vs_log_quote(eb.msg, q, sizeof(q)));
    return 0;
}

void vs_mirrors_release(struct vs_mirrors *m, const char *uid)
{
    vs_mirrors_kick(m); /* the card's mirror, if the pod was its only user */
    char sel[200], p[600];
    snprintf(sel, sizeof(sel), VS_LABEL_MIRROR_OF "=%s", uid);
    claims_path(m, NULL, NULL, p, sizeof(p));
    struct vs_errbuf eb;
    char q[VS_ERRBUF_SIZE + 8];
    if (vs_kube_list(m->o.kube, p, sel, 0, on_release, m, NULL, &eb))
        vs_log(VS_LOG_WARN, "dra_mirror_delete_failed", "pod_uid=%s error=%s", uid,
               vs_log_quote(eb.msg, q, sizeof(q)));
}

void vs_mirrors_kick(struct vs_mirrors *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->kicked = true;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

static void *run(void *arg)
{
    struct vs_mirrors *m = arg;
    double last = 0;
    bool first = true;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        /* Wait for a kick (at least min_gap after the last pass) or the period. */
        double now = mono();
        double due = last == 0            ? now
                     : m->kicked || first ? last + m->o.min_gap_s
                                          : last + m->o.period_s;
        if (now < due) {
            double wait = due - now;
            if (!m->kicked && wait > 0.5)
                wait = 0.5; /* look again for a kick or the store's sync */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            double t = ts.tv_sec + ts.tv_nsec / 1e9 + wait;
            ts.tv_sec = (time_t)t;
            ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
            pthread_cond_timedwait(&m->cv, &m->mu, &ts);
            continue;
        }
        m->kicked = false;
        pthread_mutex_unlock(&m->mu);
        struct vs_mirrors_pass pass;
        struct vs_errbuf eb;
        char q[VS_ERRBUF_SIZE + 8];
        enum vs_err err = vs_mirrors_reconcile(m, &pass, &eb);
        if (err)
            vs_log(VS_LOG_WARN, "dra_mirror_reconcile_failed", "error=%s",
                   vs_log_quote(eb.msg, q, sizeof(q)));
        else if (!pass.skipped && (pass.created || pass.deleted || pass.failed || first))
            vs_log(VS_LOG_INFO, "dra_mirror_reconcile",
                   "kept=%zu created=%zu deleted=%zu failed=%zu", pass.kept, pass.created,
                   pass.deleted, pass.failed);
        pthread_mutex_lock(&m->mu);
        last = mono();
        /* Until a pass ran (the start-up reconcile), try again every min_gap. */
        if (!err && !pass.skipped)
            first = false;
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

struct vs_mirrors *vs_mirrors_new(const struct vs_mirrors_opts *o)
{
    struct vs_mirrors *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->o = *o;
    if (!(m->ns = strdup(o->ns ? o->ns : "default"))) {
        free(m);
        return NULL;
    }
    m->o.ns = m->ns;
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    return m;
}

bool vs_mirrors_start(struct vs_mirrors *m, struct vs_leader *leader)
{
    if (leader)
        m->o.leader = leader;
    if (pthread_create(&m->thread, NULL, run, m) != 0)
        return false;
    m->started = true;
    return true;
}

void vs_mirrors_stop(struct vs_mirrors *m)
{
    if (!m || !m->started)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    m->started = false;
}

void vs_mirrors_free(struct vs_mirrors *m)
{
    if (!m)
        return;
    vs_mirrors_stop(m);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    vs_mirror_set_cleanup(&m->overlapped);
    free(m->ns);
    free(m);
}

struct sweep_ctx {
    struct vs_kube *k;
    const char *ns;
    size_t deleted;
    enum vs_err err;
    struct vs_errbuf *eb;
};

static int on_sweep(void *ctx, json_t *item)
{
    struct sweep_ctx *c = ctx;
    const char *name =
        json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
    if (!name)
        return 0;
    enum vs_err err = retire(c->k, c->ns, name, c->eb);
    if (err) {
        c->err = err;
        return 1;
    }
    c->deleted++;
    return 0;
}

enum vs_err vs_mirrors_sweep(struct vs_kube *k, const char *ns, size_t *deleted,
                             struct vs_errbuf *eb)
{
    char p[600];
    snprintf(p, sizeof(p), API "%s/resourceclaims", ns);
    struct sweep_ctx c = {.k = k, .ns = ns, .eb = eb};
    enum vs_err err = vs_kube_list(k, p, VS_LABEL_MIRROR_OF, 500, on_sweep, &c, NULL, eb);
    *deleted = c.deleted;
    return c.err ? c.err : err;
}

struct sweep_opts {
    const char *ns, *kubeconfig;
};

static const struct vs_flag sweep_flags[] = {
    {.name = "namespace",
     .type = VS_FLAG_STR,
     .off = offsetof(struct sweep_opts, ns),
     .help = "namespace of the mirror ResourceClaims",
     .def = "$POD_NAMESPACE, the kubeconfig's, default"},
    {.name = "kubeconfig",
     .type = VS_FLAG_STR,
     .off = offsetof(struct sweep_opts, kubeconfig),
     .help = "out-of-cluster API access",
     .def = "$KUBECONFIG, ~/.kube/config, in-cluster"},
    {.name = "help", .alias = "h", .type = VS_FLAG_HELP, .help = "print this help and exit"},
};
#define N_SWEEP_FLAGS (sizeof(sweep_flags) / sizeof(sweep_flags[0]))

void vs_mirrors_sweep_usage(FILE *f)
{
    struct sweep_opts o = {0};
    fprintf(f, "usage: vgpu-sched dra-mirror-sweep [flags]\n"
               "\n"
               "Deletes every mirror ResourceClaim (label vgpu-sched.io/mirror-of) of one\n"
               "namespace, as after an uninstall (docs/dra.md). Exit status: 0, 1 when the API\n"
               "refused, 2 bad flags.\n"
               "\n"
               "flags:\n");
    vs_flags_print(f, sweep_flags, N_SWEEP_FLAGS, &o);
}

int vs_mirrors_sweep_main(int argc, char **argv, FILE *out, FILE *err)
{
    struct sweep_opts o = {0};
    enum vs_flags_result fr = vs_flags_parse(sweep_flags, N_SWEEP_FLAGS, argc, argv, &o,
                                             "dra-mirror-sweep", err, NULL, NULL);
    if (fr == VS_FLAGS_HELP) {
        vs_mirrors_sweep_usage(out);
        return 0;
    }
    if (fr != VS_FLAGS_OK)
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct vs_kube_config kc = {0};
    struct vs_kube *k = NULL;
    struct vs_errbuf eb;
    int rc = 1;
    if (vs_kube_config_load(o.kubeconfig, &kc, &eb)) {
        fprintf(err, "dra-mirror-sweep: %s\n", eb.msg);
        rc = 2;
        goto out;
    }
    struct vs_kube_opts ko = {.timeout_s = 30, .user_agent = "vgpu-sched/" VS_VERSION};
    if (!(k = vs_kube_new(&kc, &ko, &eb))) {
        fprintf(err, "dra-mirror-sweep: %s\n", eb.msg);
        goto out;
    }
    const char *ns = o.ns && *o.ns                                         ? o.ns
                     : getenv("POD_NAMESPACE") && *getenv("POD_NAMESPACE") ? getenv("POD_NAMESPACE")
                     : kc.namespace && *kc.namespace                       ? kc.namespace
                                                                           : "default";
    size_t n = 0;
    enum vs_err e = vs_mirrors_sweep(k, ns, &n, &eb);
    fprintf(out, "deleted %zu mirror ResourceClaims in %s\n", n, ns);
    if (e) {
        fprintf(err, "dra-mirror-sweep: %s\n", eb.msg);
        goto out;
    }
    rc = 0;
out:
    vs_kube_free(k);
    vs_kube_config_cleanup(&kc);
    curl_global_cleanup();
    return rc;
}
