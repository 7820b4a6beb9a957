/* extender: HTTP handlers of the extender protocol. Filter never waits on the API: it commits
 * the reservation in the store and records its decision for the pod's Bind (decision.c; with
 * --patch-at-filter it queues the pod patch instead, async.c, and Bind waits for it); Bind takes
 * the node lock and creates the binding, which carries the decision and bind-phase, releasing
 * the lock on every failure path. */
#include "extender.h"

#include "access.h"
#include "annot.h"
#include "buf.h"
#include "decision.h"
#include "evmsg.h"
#include "extargs.h"
#include "k8s_codec.h"
#include "log.h"
#include "mirrors.h"
#include "frag.h"
#include "podres.h"
#include "preempt.h"
#include "pending.h"
#include "requeue.h"
#include "request.h"
#include "sched.h"
#include "webhook.h"

#include <stdio.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void set_json(struct vs_http_resp *resp, int status, json_t *body)
{
    resp->status = status;
    resp->content_type = "application/json";
    resp->body = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    if (!resp->body)
        vs_http_error(resp, 500, "cannot serialize the response");
}

static json_t *filter_result(json_t *nodes, json_t *names, json_t *failed, const char *error)
{
    json_t *o = json_object();
    json_object_set_new(o, "Nodes", nodes ? nodes : json_null());
    json_object_set_new(o, "NodeNames", names ? names : json_null());
    json_object_set_new(o, "FailedNodes", failed ? failed : json_null());
    json_object_set_new(o, "FailedAndUnresolvableNodes", json_null());
    json_object_set_new(o, "Error", json_string(error ? error : ""));
    return o;
}

static const char *source(const struct vs_app *a)
{
    return a->scheduler_name && *a->scheduler_name ? a->scheduler_name : "hami-scheduler";
}

static void rfc3339(int64_t t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *event_json(struct vs_app *a, const char *ns, const char *name, const char *uid,
                          const char *type, const char *reason, const char *msg)
{
    char ts[32], gen[300];
    rfc3339(a->now(), ts, sizeof(ts));
    snprintf(gen, sizeof(gen), "%s.", name);
    json_t *ev =
        json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:{s:s},"
                  "s:s,s:s,s:i,s:s}",
                  "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen, "namespace",
                  ns, "involvedObject", "apiVersion", "v1", "kind", "Pod", "namespace", ns, "name",
                  name, "uid", uid ? uid : "", "reason", reason, "message", msg, "type", type,
                  "source", "component", source(a), "firstTimestamp", ts, "lastTimestamp", ts,
                  "count", 1, "reportingComponent", source(a));
    return ev;
}

/* Queues a pod Event (best effort). */
static void pod_event(struct vs_app *a, const char *ns, const char *name, const char *uid,
                      const char *type, const char *reason, const char *msg)
{
    if (!a->async)
        return;
    json_t *ev = event_json(a, ns, name, uid, type, reason, msg);
    if (ev)
        vs_async_event(a->async, ns, ev); /* takes ownership */
}

static char *pod_path(const char *ns, const char *name)
{
    char *ens = vs_kube_escape(ns), *ename = vs_kube_escape(name);
    size_t n = strlen(ens ? ens : ns) + strlen(ename ? ename : name) + 40;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "/api/v1/namespaces/%s/pods/%s", ens ? ens : ns, ename ? ename : name);
    free(ens);
    free(ename);
    return p;
}

/* ------------------------------------------------------------------ preemption holds */

struct hold {
    char *uid;
    char *node;
    char *victims; /* "ns/a, ns/b" */
    double t0;     /* monotonic time of the evictions */
    UT_hash_handle hh;
};

struct vs_holds {
    pthread_mutex_t mu;
    struct hold *by_uid;
};

struct vs_holds *vs_holds_new(void)
{
    struct vs_holds *h = calloc(1, sizeof(*h));
    if (h)
        pthread_mutex_init(&h->mu, NULL);
    return h;
}

static void hold_free(struct hold *e)
{
    free(e->uid);
    free(e->node);
    free(e->victims);
    free(e);
}

void vs_holds_free(struct vs_holds *h)
{
    if (!h)
        return;
    struct hold *e, *t;
    HASH_ITER(hh, h->by_uid, e, t)
    {
        HASH_DEL(h->by_uid, e);
        hold_free(e);
    }
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* Copies the pod's hold (node and victims text) into the out strings; false when none. */
static bool holds_get(struct vs_holds *h, const char *uid, char **node, char **victims)
{
    struct hold *e = NULL;
    pthread_mutex_lock(&h->mu);
    HASH_FIND_STR(h->by_uid, uid, e);
    bool ok = e && (*node = strdup(e->node)) && (*victims = strdup(e->victims));
    pthread_mutex_unlock(&h->mu);
    if (!ok && e) {
        free(*node);
        *node = NULL;
    }
    return ok;
}

bool vs_holds_get(struct vs_holds *h, const char *uid, char **node, char **victims)
{
    *node = *victims = NULL;
    return h && holds_get(h, uid, node, victims);
}

static void holds_put(struct vs_holds *h, const char *uid, const char *node, const char *victims)
{
    struct hold *e = calloc(1, sizeof(*e)), *old = NULL;
    if (!e || !(e->uid = strdup(uid)) || !(e->node = strdup(node)) ||
        !(e->victims = strdup(victims))) {
        if (e)
            hold_free(e);
        return;
    }
    e->t0 = mono();
    pthread_mutex_lock(&h->mu);
    HASH_FIND_STR(h->by_uid, uid, old);
    if (old) {
        HASH_DEL(h->by_uid, old);
        hold_free(old);
    }
    HASH_ADD_KEYPTR(hh, h->by_uid, e->uid, strlen(e->uid), e);
    pthread_mutex_unlock(&h->mu);
}

/* Drops the holds whose reservation is gone (the preemptor was deleted, or its hold expired
 * after --reservation-ttl, or was placed elsewhere and expired there) so the table stays as
 * small as the set of waiting preemptors. Called before each new hold. */
static void holds_sweep(struct vs_holds *h, struct vs_store *store)
{
    pthread_mutex_lock(&h->mu);
    struct hold *e, *t;
    HASH_ITER(hh, h->by_uid, e, t)
    {
        enum vs_reservation_state rs = vs_store_reservation(store, e->uid);
        if (rs == VS_RES_OK || rs == VS_RES_BOUND) /* bound: taken by its Bind */
            continue;
        HASH_DEL(h->by_uid, e);
        hold_free(e);
    }
    pthread_mutex_unlock(&h->mu);
}

/* Removes the pod's hold; returns seconds since its evictions, or -1 when it had none. */
static double holds_take(struct vs_holds *h, const char *uid)
{
    struct hold *e = NULL;
    double dt = -1;
    pthread_mutex_lock(&h->mu);
    HASH_FIND_STR(h->by_uid, uid, e);
    if (e) {
        dt = mono() - e->t0;
        HASH_DEL(h->by_uid, e);
        hold_free(e);
    }
    pthread_mutex_unlock(&h->mu);
    return dt;
}

/* ------------------------------------------------------------------ Filter */

/* FilteringSucceed as HAMi words it: every fitting node with its score, the list capped as
 * evmsg.h says. With thousands of candidates the message is written by the event worker, from a
 * copy of the candidates' names (one block) and their scores. */
struct succeed_msg {
    size_t n, n_fit;
    char *names;   /* the candidates' names, NUL-separated, in candidate order */
    float *scores; /* per candidate; NaN when it does not fit */
    size_t best;
};

static void succeed_msg_free(void *ctx)
{
    struct succeed_msg *s = ctx;
    if (!s)
        return;
    free(s->names);
    free(s->scores);
    free(s);
}

static char *succeed_msg_build(void *ctx)
{
    const struct succeed_msg *s = ctx;
    const char *best = s->names;
    for (size_t i = 0; i < s->best; i++)
        best += strlen(best) + 1;
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_printf(&b, "find fit node(%s), %zu nodes not fit, %zu nodes fit(", best, s->n - s->n_fit,
                  s->n_fit);
    struct vs_evlist l;
    vs_evlist_begin(&l, &b, s->n_fit, VS_EVMSG_LIST_CAP);
    const char *p = s->names;
    for (size_t i = 0; i < s->n; i++) {
        size_t len = strlen(p);
        if (!isnan(s->scores[i]))
            vs_evlist_add_scored(&l, p, len, (double)s->scores[i]);
        p += len + 1;
    }
    vs_evlist_end(&l);
    return vs_buf_steal(&b);
}

static void succeed_event(struct vs_app *a, const struct vs_filter_args *fa,
                          const struct vs_filter_result *r)
{
    if (!a->async)
        return;
    struct succeed_msg *s = calloc(1, sizeof(*s));
    if (!s || !(s->scores = malloc((r->n ? r->n : 1) * sizeof(*s->scores)))) {
        succeed_msg_free(s);
        return;
    }
    s->n = r->n;
    s->best = (size_t)r->best;
    for (size_t i = 0; i < r->n; i++) {
        s->scores[i] = r->nodes[i].fit ? r->nodes[i].score : NAN;
        s->n_fit += r->nodes[i].fit;
    }
    /* The fast decode keeps the names in one block already: copy it whole. */
    size_t bytes = 0;
    if (fa->names_buf && r->n && r->nodes[0].node == fa->names_buf &&
        r->nodes[r->n - 1].node == fa->names[r->n - 1]) {
        bytes =
            (size_t)(r->nodes[r->n - 1].node - fa->names_buf) + strlen(r->nodes[r->n - 1].node) + 1;
        if ((s->names = malloc(bytes)))
            memcpy(s->names, fa->names_buf, bytes);
    } else {
        for (size_t i = 0; i < r->n; i++)
            bytes += strlen(r->nodes[i].node) + 1;
        if ((s->names = malloc(bytes ? bytes : 1))) {
            char *w = s->names;
            for (size_t i = 0; i < r->n; i++) {
                size_t len = strlen(r->nodes[i].node) + 1;
                memcpy(w, r->nodes[i].node, len);
                w += len;
            }
        }
    }
    const struct vs_pod *pod = &fa->pod;
    json_t *ev = s->names
                     ? event_json(a, pod->ns, pod->name, pod->uid, "Normal", "FilteringSucceed", "")
                     : NULL;
    if (ev)
        vs_async_event_lazy(a->async, pod->ns, ev, "find fit node(",
                            bytes + r->n * sizeof(*s->scores), succeed_msg_build, s,
                            succeed_msg_free);
    else
        succeed_msg_free(s);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Claim names, each once. */
struct names {
    char **v;
    size_t n;
};

static bool names_has(const struct names *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}

static void names_cleanup(struct names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* The claim names of a node's reason note (sched.c dra_named: " (held by DRA claim a/b)" or
 * " (held by DRA claims a/b, c/d)") appended to *names; NULL reason or no note adds nothing.
 * False when out of memory. */
static bool note_claims(const char *reason, struct names *names)
{
    static const char *const lead[] = {" (held by DRA claims ", " (held by DRA claim "};
    const char *p = NULL;
    for (size_t i = 0; reason && !p && i < 2; i++)
        if ((p = strstr(reason, lead[i])))
            p += strlen(lead[i]);
    if (!p)
        return true;
    const char *end = strrchr(p, ')');
    while (end && p < end) {
        const char *q = strstr(p, ", ");
        if (!q || q > end)
            q = end;
        char *name = strndup(p, (size_t)(q - p));
        if (!name)
            return false;
        if (names_has(names, name)) {
            free(name);
        } else {
            char **g = realloc(names->v, (names->n + 1) * sizeof(*g));
            if (!g) {
                free(name);
                return false;
            }
            names->v = g;
            names->v[names->n++] = name;
        }
        p = q == end ? end : q + 2;
    }
    return true;
}

/* FilteringFailed as HAMi emits it: one event per card reason word, `<n> nodes <Reason>(<nodes
 * sorted>)` (the list capped as evmsg.h says), then `no available node, <N> nodes do not meet`.
 * Node-level strings (node unregistered, NodeInsufficientDevice, ...) only count in the last one.
 * A word event whose nodes' reasons name DRA claims (sched.c dra_named) ends with the same note
 * naming them all, in byte order: `1 nodes CardTimeSlicingExhausted(n1) (held by DRA claim
 * ml/train)`. */
static void failed_events(struct vs_app *a, const struct vs_pod *pod,
                          const struct vs_filter_result *r)
{
    const char **nodes = calloc(r->n ? r->n : 1, sizeof(*nodes));
    size_t *idx = calloc(r->n ? r->n : 1, sizeof(*idx));
    for (size_t w = 0; nodes && idx && w < VS_REASON_COUNT; w++) {
        size_t n = 0, wl = strlen(vs_reason_words[w]);
        for (size_t i = 0; i < r->n; i++) {
            const char *s = r->nodes[i].reason;
            /* "<c>/<t> <Word>" items separated by ", ", then perhaps " (held by ...)" */
            for (const char *p = s ? strchr(s, ' ') : NULL; p; p = strchr(p + 1, ' ')) {
                if (p[1] == '(')
                    break;
                if (strncmp(p + 1, vs_reason_words[w], wl) == 0 &&
                    (p[1 + wl] == ',' || p[1 + wl] == ' ' || !p[1 + wl])) {
                    idx[n] = i;
                    nodes[n++] = r->nodes[i].node;
                    break;
                }
            }
        }
        if (!n)
            continue;
        struct names claims = {0};
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++)
            ok = note_claims(r->nodes[idx[i]].reason, &claims);
        qsort(nodes, n, sizeof(*nodes), cmp_str);
        struct vs_buf b;
        vs_buf_init(&b);
        vs_buf_printf(&b, "%zu nodes %s(", n, vs_reason_words[w]);
        struct vs_evlist l;
        vs_evlist_begin(&l, &b, n, VS_EVMSG_LIST_CAP);
        for (size_t i = 0; i < n; i++)
            vs_evlist_add(&l, nodes[i], strlen(nodes[i]));
        vs_evlist_end(&l);
        if (claims.n) {
            qsort(claims.v, claims.n, sizeof(*claims.v), cmp_str);
            vs_buf_puts(&b, claims.n > 1 ? " (held by DRA claims " : " (held by DRA claim ");
            for (size_t i = 0; i < claims.n; i++)
                vs_buf_printf(&b, "%s%s", i ? ", " : "", claims.v[i]);
            vs_buf_puts(&b, ")");
        }
        names_cleanup(&claims);
        char *msg = ok ? vs_buf_steal(&b) : NULL;
        vs_buf_cleanup(&b);
        if (msg)
            pod_event(a, pod->ns, pod->name, pod->uid, "Warning", "FilteringFailed", msg);
        free(msg);
    }
    free(nodes);
    free(idx);
    char msg[96];
    snprintf(msg, sizeof(msg), "no available node, %zu nodes do not meet", r->n);
    pod_event(a, pod->ns, pod->name, pod->uid, "Warning", "FilteringFailed", msg);
}

/* Cluster-Autoscaler style request with full Node objects (§4.7): a throw-away model of those
 * nodes with no usage; nothing is written. */
static json_t *filter_simulated(struct vs_app *a, const struct vs_pod *pod, json_t *nodes_obj)
{
    json_t *items = vs_json_get_ci(nodes_obj, "items");
    size_t n = json_array_size(items);
    struct vs_model *m = vs_model_new(a->cfg->devices);
    const char **names = calloc(n ? n : 1, sizeof(*names));
    json_t *out = NULL;
    if (!m || !names)
        goto out;
    for (size_t i = 0; i < n; i++) {
        struct vs_knode kn;
        struct vs_errbuf eb;
        if (vs_codec_node_from_json(json_array_get(items, i), &kn, &eb) == VS_OK) {
            vs_model_upsert_node(m, &kn, &eb);
            names[i] = json_string_value(
                json_object_get(json_object_get(json_array_get(items, i), "metadata"), "name"));
        }
        vs_knode_cleanup(&kn);
        if (!names[i])
            names[i] = "";
    }
    struct vs_sched_opts so = {.cfg = a->cfg,
                               .node_policy = a->node_policy,
                               .gpu_policy = a->gpu_policy,
                               .frag_stats = a->frag_stats};
    struct vs_filter_result r;
    if (vs_sched_filter(m, pod, names, n, &so, &r))
        goto out;
    if (r.error) {
        out = filter_result(NULL, NULL, NULL, r.error);
    } else {
        json_t *failed = json_object();
        for (size_t i = 0; i < r.n; i++)
            if (!r.nodes[i].fit)
                json_object_set_new(failed, r.nodes[i].node, json_string(r.nodes[i].reason));
        json_t *best = NULL;
        if (r.best >= 0) {
            best = json_pack("{s:[O]}", "items", json_array_get(items, (size_t)r.best));
        }
        out = filter_result(best, NULL, failed, NULL);
    }
    vs_filter_result_cleanup(&r);
out:
    vs_model_free(m);
    free(names);
    return out;
}

/* The Filter's pod patch: the decision's annotations (vs_store_filter made them) and the label
 * hami.io/vgpu-node. */
/* The patch gets its own copy of the annotations: it goes to an async worker thread, and
 * jansson's reference count is not safe to share across threads (its decrement to zero has no
 * acquire ordering). */
static json_t *decision_patch(const struct vs_filter_result *r)
{
    const struct vs_node_fit *f = &r->nodes[r->best];
    return json_pack("{s:{s:o,s:{s:s}}}", "metadata", "annotations", json_deep_copy(r->annotations),
                     "labels", VS_LABEL_VGPU_NODE, f->node);
}

/* Whether the decision's annotations remove (null) one that the pod carries. */
static bool removes_present(const json_t *annotations, const struct vs_pod *pod)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)annotations, k, v)
    {
        if (json_is_null(v) && vs_kv_get(&pod->annotations, k))
            return true;
    }
    return false;
}

/* A copy of the decision's annotations without its removals (the pod has none of those keys). */
static json_t *added_only(const json_t *annotations)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)annotations, k, v)
    {
        if (out && !json_is_null(v) && json_object_set_new(out, k, json_deep_copy(v))) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

/* What the log line says of the decision: each backend's device list, in backend order. */
static char *decision_devices(const struct vs_devices *set, const struct vs_node_fit *f)
{
    struct vs_buf b;
    vs_buf_init(&b);
    for (size_t k = 0; k < f->n_allocs; k++) {
        char *v = vs_annot_format_devices(&f->allocs[k].devs);
        if (!v) {
            vs_buf_cleanup(&b);
            return NULL;
        }
        if (f->n_allocs == 1)
            vs_buf_puts(&b, v);
        else
            vs_buf_printf(&b, "%s%s=%s", k ? " " : "", set->dev[f->allocs[k].dev]->word, v);
        free(v);
    }
    return vs_buf_steal(&b);
}

#define TERM_ENDED                                                                                 \
    "the leadership term of this vgpu-sched replica ended during the bind; it does not bind"

/* Why Filter or Bind is refused outside a serving term (verb: "schedule" / "bind"). */
static const char *term_refusal(enum vs_term_state ts, const char *verb)
{
    if (ts == VS_TERM_STARTING)
        return strcmp(verb, "bind") == 0
                   ? "this vgpu-sched replica became the leader and is rebuilding its state from "
                     "the API; it does not bind yet"
                   : "this vgpu-sched replica became the leader and is rebuilding its state from "
                     "the API; it does not schedule yet";
    return strcmp(verb, "bind") == 0
               ? "this vgpu-sched replica is not the leader and does not bind"
               : "this vgpu-sched replica is not the leader and does not schedule";
}

/* POST pods/<name>/eviction for one victim. VS_OK also when the pod is already gone. */
static enum vs_err evict(struct vs_app *a, const struct vs_store_victim *v, struct vs_errbuf *eb)
{
    char *base = pod_path(v->ns, v->name);
    size_t n = base ? strlen(base) + 16 : 0;
    char *path = base ? malloc(n) : NULL;
    json_t *body = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "policy/v1", "kind", "Eviction",
                             "metadata", "name", v->name, "namespace", v->ns);
    enum vs_err err = VS_ERR_NOMEM;
    if (path && body) {
        snprintf(path, n, "%s/eviction", base);
        err = vs_kube_post(a->kube, path, body, NULL, eb);
        if (err == VS_ERR_NOTFOUND)
            err = VS_OK;
        if (err == VS_ERR_AUTH) /* filter-mode preemption is off until it is granted */
            vs_access_report(a->access, VS_API_EVICTION, err);
    } else {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    json_decref(body);
    free(path);
    free(base);
    return err;
}

/* The Eviction API refused because of a PodDisruptionBudget (429 Too Many Requests). */
static bool evict_refused(const char *msg)
{
    return strstr(msg, ": 429 ") != NULL;
}

#define PREEMPT_PLANS_TRIED 3

/* Filter-time preemption (--gpu-preemption=filter) for a pod no candidate fits: a pod that
 * already holds capacity keeps waiting for its victims; otherwise the best plan is committed as
 * its hold and its victims are evicted (429: the hold is dropped and the next plan tried, up to
 * PREEMPT_PLANS_TRIED). On success *node and *victims ("ns/a, ns/b") are set (new strings). */
static void filter_preempt(struct vs_app *a, const struct vs_pod *pod, const char *const *cands,
                           size_t nc, const struct vs_sched_opts *so, int64_t now, char **node,
                           char **victims)
{
    *node = *victims = NULL;
    if (holds_get(a->holds, pod->uid, node, victims)) {
        if (vs_store_reservation(a->store, pod->uid) == VS_RES_OK)
            return; /* still waiting for the victims to terminate */
        free(*node);
        free(*victims);
        *node = *victims = NULL;
        holds_take(a->holds, pod->uid);
    }
    const char **left = calloc(nc ? nc : 1, sizeof(*left));
    if (!left) {
        vs_metrics_preemption(a->metrics, VS_PM_FILTER, VS_PO_ERROR);
        return;
    }
    memcpy(left, cands, nc * sizeof(*left));
    size_t nl = nc;
    enum vs_preempt_outcome outcome = VS_PO_NO_PLAN;
    for (int tries = 0; tries < PREEMPT_PLANS_TRIED; tries++) {
        struct vs_store_plan plan;
        bool found;
        if (vs_store_preempt(a->store, pod, left, nl, so, now, &plan, &found)) {
            outcome = VS_PO_ERROR;
            break;
        }
        if (!found)
            break;
        struct vs_buf text;
        vs_buf_init(&text);
        for (size_t i = 0; i < plan.n; i++)
            vs_buf_printf(&text, "%s%s/%s", i ? ", " : "", plan.victims[i].ns,
                          plan.victims[i].name);
        struct vs_errbuf eb = {{0}};
        enum vs_err err = VS_OK;
        unsigned evicted = 0;
        for (size_t i = 0; i < plan.n && !err; i++) {
            if (!(err = evict(a, &plan.victims[i], &eb)))
                evicted++;
        }
        vs_metrics_victims_evicted(a->metrics, evicted);
        for (size_t i = 0; i < evicted; i++) {
            char msg[512];
            snprintf(msg, sizeof(msg), "Preempted by pod %s on node %s", pod->uid, plan.node);
            pod_event(a, plan.victims[i].ns, plan.victims[i].name, plan.victims[i].uid, "Normal",
                      "Preempted", msg);
        }
        if (!err) {
            struct vs_buf em;
            vs_buf_init(&em);
            vs_buf_printf(&em, "Preempting %s on node %s", text.data ? text.data : "", plan.node);
            pod_event(a, pod->ns, pod->name, pod->uid, "Normal", "Preempting",
                      em.data ? em.data : "Preempting");
            vs_buf_cleanup(&em);
            holds_sweep(a->holds, a->store);
            holds_put(a->holds, pod->uid, plan.node, text.data ? text.data : "");
            *node = strdup(plan.node);
            *victims = text.data ? strdup(text.data) : strdup("");
            vs_log(VS_LOG_INFO, "preempt_evicted", "pod=%s/%s node=%s victims=%zu", pod->ns,
                   pod->name, plan.node, plan.n);
            outcome = VS_PO_PLANNED;
            vs_buf_cleanup(&text);
            vs_store_plan_cleanup(&plan);
            break;
        }
        /* Refused or failed: give the capacity back and try the next node. */
        vs_store_unreserve(a->store, pod->uid, plan.reservation);
        char q[VS_ERRBUF_SIZE + 8];
        vs_log(VS_LOG_WARN, "preempt_eviction_failed", "pod=%s/%s node=%s error=%s", pod->ns,
               pod->name, plan.node, vs_log_quote(eb.msg, q, sizeof(q)));
        outcome = evict_refused(eb.msg) ? VS_PO_PDB_REFUSED : VS_PO_ERROR;
        size_t k = 0;
        for (size_t i = 0; i < nl; i++)
            if (strcmp(left[i], plan.node) != 0)
                left[k++] = left[i];
        nl = k;
        vs_buf_cleanup(&text);
        vs_store_plan_cleanup(&plan);
        if (outcome == VS_PO_ERROR)
            break;
    }
    vs_metrics_preemption(a->metrics, VS_PM_FILTER, outcome);
    free(left);
}

void vs_ext_nudge(void *ctx, const char *uid, const char *ns, const char *name)
{
    struct vs_app *a = ctx;
    char ts[32];
    snprintf(ts, sizeof(ts), "%lld", (long long)a->now());
    json_t *patch =
        json_pack("{s:{s:s,s:{s:s}}}", "metadata", "uid", uid, "annotations", VS_ANNO_REQUEUE, ts);
    char *path = pod_path(ns, name);
    if (patch && path && vs_async_patch_quiet(a->async, path, patch, false) == VS_OK) {
        vs_metrics_requeue_nudge(a->metrics);
        vs_log(VS_LOG_INFO, "requeue_nudge", "pod=%s/%s", ns, name);
    } else if (!path) {
        json_decref(patch);
    }
    free(path);
}

/* Whether a regular container takes cards to itself: all of a card's cores (HAMi's exclusive
 * use) or all of its memory (a bare nvidia.com/gpu asks 100 %). Such pods need idle cards. */
static bool takes_whole_cards(const struct vs_pod_req *r)
{
    for (size_t i = 0; i < r->n_ctrs; i++)
        for (size_t k = 0; k < r->ctrs[i].n; k++) {
            const struct vs_req *q = &r->ctrs[i].r[k];
            if (q->nums > 0 && (q->cores >= 100 || q->pct == 100))
                return true;
        }
    return false;
}

/* A pod deleted while its Filter ran: what the Filter recorded for it after the store's pod
 * hook forgot the pod (pending entry, nudge, decision, expected Bind) is dropped here; what it
 * recorded before, the hook dropped (vs_store_gone). */
static void forget_if_gone(struct vs_app *a, const char *uid)
{
    if (!uid || !*uid || !vs_store_gone(a->store, uid))
        return;
    vs_pending_forget(a->pending, uid);
    vs_requeue_forget(a->requeue, uid);
    vs_decisions_forget(a->decisions, uid);
    if (a->bindq)
        vs_bindq_forget(a->bindq, uid);
}

void vs_ext_filter(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_app *a = ctx;
    double t0 = mono();
    enum vs_filter_outcome outcome = VS_FILTER_ERROR;
    struct vs_filter_args fa;
    struct vs_filter_result r;
    memset(&r, 0, sizeof(r));
    char **busy = NULL;
    struct vs_errbuf eb;
    if (vs_extargs_filter(req->body, req->len, &fa, &eb)) {
        set_json(resp, 400, filter_result(NULL, NULL, NULL, eb.msg));
        goto out;
    }
    json_t *nodes = fa.nodes;
    if (nodes) {
        json_t *res = filter_simulated(a, &fa.pod, nodes);
        if (!res) {
            set_json(resp, 200, filter_result(NULL, NULL, NULL, "out of memory"));
            goto out;
        }
        outcome = VS_FILTER_SCHEDULED;
        set_json(resp, 200, res);
        goto out;
    }
    enum vs_term_state ts;
    if (!vs_leader_term(a->leader, &ts)) {
        set_json(resp, 200, filter_result(NULL, NULL, NULL, term_refusal(ts, "schedule")));
        goto out;
    }
    if (!vs_store_synced(a->store)) {
        set_json(resp, 200,
                 filter_result(NULL, NULL, NULL,
                               "vgpu-sched is not ready: the cluster cache is still syncing"));
        goto out;
    }
    struct vs_pod_req preq;
    bool built = vs_request_build(&fa.pod, a->cfg, &preq, &eb) == VS_OK;
    bool managed = !built || preq.any;
    bool whole = takes_whole_cards(&preq);
    /* The locks its Bind takes (kept with the decision: Bind reads no pod). */
    struct vs_decision dec = {0};
    if (built) {
        dec.managed = preq.any_regular;
        dec.n_stamps = vs_sched_locks(a->cfg->devices, &preq, &dec.needs_lock, dec.stamps);
    }
    vs_pod_req_cleanup(&preq);
    if (!managed) {
        outcome = VS_FILTER_PASSTHROUGH;
        set_json(resp, 200, filter_result(NULL, vs_filter_args_node_names(&fa), NULL, NULL));
        goto out;
    }
    if (!fa.pod.uid || !*fa.pod.uid) {
        set_json(resp, 400,
                 filter_result(NULL, NULL, NULL, "Pod in ExtenderArgs has no metadata.uid"));
        goto out;
    }
    const char *const *cands = fa.names;
    size_t nc = fa.n_names;
    /* Refusal reasons are only read when no node fits (FailedNodes, events, metrics). */
    struct vs_sched_opts so = {.cfg = a->cfg,
                               .node_policy = a->node_policy,
                               .gpu_policy = a->gpu_policy,
                               .lazy_reasons = true,
                               .frag_stats = a->frag_stats};
    /* Nodes with --bind-queue-depth Binds queued or in flight rank after the others, and
     * saturated ones (a new Bind would wait half the lock retry timeout) after those. */
    unsigned *busy_rank = NULL;
    if (a->bindq) {
        so.n_busy = vs_bindq_busy(a->bindq, &busy, &busy_rank);
        so.idle_cards_wanted = vs_bindq_whole(a->bindq) > 0;
    }
    so.busy = (const char *const *)busy;
    so.busy_rank = busy_rank;
    int64_t now = a->now();
    double read_at = mono(); /* usage is read after this: a later freeing change may nudge */
    if (vs_store_filter(a->store, &fa.pod, cands, nc, &so, now, &r)) {
        set_json(resp, 200, filter_result(NULL, NULL, NULL, "out of memory"));
        goto out;
    }
    if (r.gone) {
        /* No Event, pending entry or nudge for a pod that no longer exists. */
        char m[1200];
        snprintf(m, sizeof(m), "pod %s/%s was deleted", fa.pod.ns, fa.pod.name);
        set_json(resp, 200, filter_result(NULL, NULL, NULL, m));
        goto out;
    }
    if (r.bind_node) {
        /* A Bind of this pod holds its reservation (kube-scheduler gave up waiting for that
         * Bind and filters again) or has bound it: the pod is not moved. Nothing is reserved or
         * patched; the answer is that Bind's node when it may still be bound there. */
        if (r.bind_keep) {
            outcome = VS_FILTER_SCHEDULED;
            set_json(resp, 200, filter_result(NULL, json_pack("[s]", r.bind_node), NULL, NULL));
            vs_log(VS_LOG_INFO, "filter_binding", "pod=%s/%s node=%s", fa.pod.ns, fa.pod.name,
                   r.bind_node);
        } else {
            char m[1200];
            if (r.bind_posted)
                snprintf(m, sizeof(m), "pod %s/%s is already bound to node %s", fa.pod.ns,
                         fa.pod.name, r.bind_node);
            else
                snprintf(m, sizeof(m),
                         "pod %s/%s is being bound to node %s; it is not moved while that Bind "
                         "is under way",
                         fa.pod.ns, fa.pod.name, r.bind_node);
            set_json(resp, 200, filter_result(NULL, NULL, NULL, m));
        }
        goto out;
    }
    if (r.error) {
        vs_requeue_forget(a->requeue, fa.pod.uid); /* the pod's own error: capacity won't help */
        vs_pending_refused(a->pending, &fa.pod, NULL, r.error, NULL, NULL, now);
        forget_if_gone(a, fa.pod.uid);
        pod_event(a, fa.pod.ns, fa.pod.name, fa.pod.uid, "Warning", "FilteringFailed", r.error);
        set_json(resp, 200, filter_result(NULL, NULL, NULL, r.error));
        goto out;
    }
    if (!r.managed) {
        outcome = VS_FILTER_PASSTHROUGH;
        set_json(resp, 200, filter_result(NULL, vs_filter_args_node_names(&fa), NULL, NULL));
        goto out;
    }
    if (r.best < 0) {
        outcome = VS_FILTER_UNSCHEDULABLE;
        vs_requeue_refused(a->requeue, fa.pod.uid, fa.pod.ns, fa.pod.name, read_at);
        char *pnode = NULL, *pvictims = NULL;
        if (a->preemption == VS_GPU_PREEMPT_FILTER && a->holds && vs_preempt_allowed(&fa.pod) &&
            vs_access_available(a->access, VS_API_EVICTION))
            filter_preempt(a, &fa.pod, cands, nc, &so, now, &pnode, &pvictims);
        json_t *failed = json_object();
        for (size_t i = 0; i < r.n; i++) {
            if (pnode && strcmp(r.nodes[i].node, pnode) == 0) {
                struct vs_buf rb;
                vs_buf_init(&rb);
                vs_buf_printf(&rb, "%s; preempting %s", r.nodes[i].reason ? r.nodes[i].reason : "",
                              pvictims);
                json_object_set_new(failed, r.nodes[i].node,
                                    json_string(rb.data ? rb.data : r.nodes[i].reason));
                vs_buf_cleanup(&rb);
            } else {
                json_object_set_new(failed, r.nodes[i].node, json_string(r.nodes[i].reason));
            }
            vs_metrics_node_reasons(a->metrics, r.nodes[i].reason);
        }
        vs_pending_refused(a->pending, &fa.pod, &r, NULL, pnode, pvictims, now);
        forget_if_gone(a, fa.pod.uid);
        free(pnode);
        free(pvictims);
        failed_events(a, &fa.pod, &r);
        set_json(resp, 200, filter_result(NULL, NULL, failed, NULL));
        goto out;
    }
    const struct vs_node_fit *f = &r.nodes[r.best];
    char *alloc = decision_devices(a->cfg->devices, f);
    char *path = NULL;
    enum vs_err qerr = VS_ERR_NOMEM;
    /* A decision that removes an annotation the pod carries (a stale MIG record an earlier
     * Filter patch left, before an upgrade or with --patch-at-filter) cannot travel in a
     * Binding, whose annotations only add: that pod is patched now, as HAMi does. */
    bool in_binding = a->decisions && !removes_present(r.annotations, &fa.pod);
    if (alloc && in_binding) {
        /* The decision travels in the pod's Binding (decision.h): nothing is written now. */
        dec.resv = r.reservation;
        dec.node = strdup(f->node);
        dec.annotations = added_only(r.annotations);
        if (vs_decisions_put(a->decisions, fa.pod.uid, &dec))
            qerr = VS_OK;
    } else if (alloc) {
        vs_decisions_forget(a->decisions, fa.pod.uid); /* its Bind reads the patched pod */
        json_t *patch = decision_patch(&r);
        if (patch && (path = pod_path(fa.pod.ns, fa.pod.name)))
            qerr = vs_async_patch_pod(a->async, fa.pod.uid, path, patch,
                                      r.reservation); /* owns patch */
        else
            json_decref(patch);
    }
    if (qerr) {
        vs_store_unreserve(a->store, fa.pod.uid, r.reservation);
        set_json(resp, 200, filter_result(NULL, NULL, NULL, "out of memory"));
    } else {
        outcome = VS_FILTER_SCHEDULED;
        vs_requeue_forget(a->requeue, fa.pod.uid);
        vs_pending_forget(a->pending, fa.pod.uid);
        if (a->bindq && r.lock_shared)
            vs_bindq_expect(a->bindq, f->node, fa.pod.uid, whole);
        succeed_event(a, &fa, &r);
        set_json(resp, 200, filter_result(NULL, json_pack("[s]", f->node), NULL, NULL));
        vs_log(VS_LOG_INFO, "filter", "pod=%s/%s node=%s devices=%s", fa.pod.ns, fa.pod.name,
               f->node, alloc);
    }
    free(path);
    free(alloc);
    forget_if_gone(a, fa.pod.uid);
out:
    if (outcome == VS_FILTER_ERROR && resp->body)
        vs_log(VS_LOG_INFO, "filter_error", "pod=%s/%s", fa.pod.ns ? fa.pod.ns : "",
               fa.pod.name ? fa.pod.name : "");
    vs_metrics_filter(a->metrics, outcome, mono() - t0);
    free(busy);
    vs_filter_result_cleanup(&r);
    vs_filter_args_cleanup(&fa);
}

/* ------------------------------------------------------------------ Preempt */

json_t *vs_ext_preempt_answer(const struct vs_model *m, const struct vs_preempt_args *pa,
                              const struct vs_sched_opts *so, const struct vs_pdb *pdbs,
                              size_t n_pdbs)
{
    json_t *out = json_object(), *map = json_object();
    if (!out || !map || json_object_set_new(out, "NodeNameToMetaVictims", map)) {
        json_decref(out);
        return NULL;
    }
    struct vs_preempt_opts po = {.sched = so, .pdbs = pdbs, .n_pdbs = n_pdbs, .bound_only = true};
    /* A node where the pod fits as it is, or once its terminating pods are gone (the victims
     * of an earlier preemption, still counted here, or already gone here while kube-scheduler's
     * Filter saw them): evict nothing anywhere and let the pod be retried (the victims' updates
     * and deletes requeue it). Seen with kube-scheduler v1.38 in both orders of the race: a
     * second preemption on another node. */
    /* The candidates, and the node the pod is nominated to: kube-scheduler no longer passes
     * that one once the earlier victims are gone in its view (no victim left there), while
     * they may still be counted here. */
    const char *nom = pa->pod.nominated_node;
    bool nom_extra = nom && *nom;
    for (size_t i = 0; nom_extra && i < pa->n_nodes; i++)
        nom_extra = strcmp(pa->nodes[i].node, nom) != 0;
    for (size_t i = 0; i < pa->n_nodes + nom_extra; i++) {
        const char *nname = i < pa->n_nodes ? pa->nodes[i].node : nom;
        const struct vs_node *n = vs_model_node(m, nname);
        if (!n)
            continue;
        size_t nt;
        const struct vs_podent **going = vs_node_terminating(n, &nt);
        if (!going)
            goto oom;
        struct vs_preempt_plan plan;
        bool found;
        enum vs_err err = vs_preempt_node(m, &pa->pod, nname, going, nt, &po, &plan, &found);
        free(going);
        if (err)
            goto oom;
        bool wait = found && plan.n == plan.n_forced;
        vs_preempt_plan_cleanup(&plan);
        if (wait)
            return out;
    }
    for (size_t i = 0; i < pa->n_nodes; i++) {
        const struct vs_preempt_node_args *na = &pa->nodes[i];
        const struct vs_podent **forced = calloc(na->n_uids ? na->n_uids : 1, sizeof(*forced));
        if (!forced)
            goto oom;
        size_t nf = 0;
        for (size_t k = 0; k < na->n_uids; k++) {
            const struct vs_podent *pe = vs_model_pod(m, na->uids[k]);
            /* Victims we do not track (no GPU) stay as kube-scheduler chose them. */
            if (pe && pe->on && strcmp(pe->on->name, na->node) == 0)
                forced[nf++] = pe;
        }
        struct vs_preempt_plan plan;
        bool found;
        enum vs_err err = vs_preempt_node(m, &pa->pod, na->node, forced, nf, &po, &plan, &found);
        free(forced);
        if (err)
            goto oom;
        if (!found)
            continue;
        json_t *pods = json_array(), *v = json_object();
        if (!pods || !v || json_object_set_new(map, na->node, v) ||
            json_object_set_new(v, "Pods", pods)) {
            json_decref(pods);
            vs_preempt_plan_cleanup(&plan);
            goto oom;
        }
        /* kube-scheduler's count covers its victims (pods we may not track), ours the GPU
         * pods of the plan: the larger is a lower bound of the true count. */
        int64_t viol =
            na->pdb_violations > plan.pdb_violations ? na->pdb_violations : plan.pdb_violations;
        json_object_set_new(v, "NumPDBViolations", json_integer(viol));
        for (size_t k = 0; k < na->n_uids; k++)
            json_array_append_new(pods, json_pack("{s:s}", "UID", na->uids[k]));
        for (size_t k = plan.n_forced; k < plan.n; k++)
            json_array_append_new(pods, json_pack("{s:s}", "UID", plan.victims[k]->uid));
        vs_preempt_plan_cleanup(&plan);
    }
    return out;
oom:
    json_decref(out);
    return NULL;
}

struct preempt_ctx {
    const struct vs_preempt_args *pa;
    const struct vs_sched_opts *so;
    json_t *res;
};

static void preempt_locked(void *ctx, const struct vs_model *m, const struct vs_pdb *pdbs,
                           size_t n_pdbs)
{
    struct preempt_ctx *c = ctx;
    c->res = vs_ext_preempt_answer(m, c->pa, c->so, pdbs, n_pdbs);
}

/* The node map of the request as it came (for pods we have no say in). */
static json_t *preempt_echo(const struct vs_preempt_args *pa)
{
    json_t *map = json_object();
    for (size_t i = 0; map && i < pa->n_nodes; i++) {
        json_t *pods = json_array();
        for (size_t k = 0; pods && k < pa->nodes[i].n_uids; k++)
            json_array_append_new(pods, json_pack("{s:s}", "UID", pa->nodes[i].uids[k]));
        json_object_set_new(map, pa->nodes[i].node,
                            json_pack("{s:o?, s:I}", "Pods", pods, "NumPDBViolations",
                                      (json_int_t)pa->nodes[i].pdb_violations));
    }
    return json_pack("{s:o?}", "NodeNameToMetaVictims", map);
}

void vs_ext_preempt(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_app *a = ctx;
    struct vs_preempt_args pa;
    struct vs_errbuf eb;
    if (vs_extargs_preempt(req->body, req->len, &pa, &eb)) {
        set_json(resp, 400, json_pack("{s:s}", "Error", eb.msg));
        goto out;
    }
    enum vs_term_state ts;
    if (!vs_leader_term(a->leader, &ts)) {
        set_json(resp, 503, json_pack("{s:s}", "Error", term_refusal(ts, "schedule")));
        goto out;
    }
    if (!vs_store_synced(a->store)) {
        set_json(resp, 503,
                 json_pack("{s:s}", "Error",
                           "vgpu-sched is not ready: the cluster cache is still syncing"));
        goto out;
    }
    struct vs_pod_req preq;
    enum vs_err rerr = vs_request_build(&pa.pod, a->cfg, &preq, &eb);
    bool managed = rerr == VS_OK && preq.any;
    vs_pod_req_cleanup(&preq);
    if (rerr && rerr != VS_ERR_NOMEM) {
        /* The pod's own GPU request is invalid: no node can take it. */
        set_json(resp, 200, json_pack("{s:{}}", "NodeNameToMetaVictims"));
        goto out;
    }
    if (!managed || a->preemption == VS_GPU_PREEMPT_OFF) {
        set_json(resp, 200, preempt_echo(&pa));
        goto out;
    }
    struct vs_sched_opts so = {
        .cfg = a->cfg, .node_policy = a->node_policy, .gpu_policy = a->gpu_policy};
    struct preempt_ctx pc = {.pa = &pa, .so = &so};
    vs_store_read_pdbs(a->store, preempt_locked, &pc);
    if (!pc.res) {
        set_json(resp, 500, json_pack("{s:s}", "Error", "out of memory"));
        goto out;
    }
    json_t *map = json_object_get(pc.res, "NodeNameToMetaVictims");
    vs_metrics_preemption(a->metrics, VS_PM_VERB,
                          json_object_size(map) ? VS_PO_PLANNED : VS_PO_NO_PLAN);
    vs_log(VS_LOG_INFO, "preempt", "pod=%s/%s candidates=%zu kept=%zu", pa.pod.ns, pa.pod.name,
           pa.n_nodes, json_object_size(map));
    set_json(resp, 200, pc.res);
out:
    vs_preempt_args_cleanup(&pa);
}

/* ------------------------------------------------------------------ Prioritize */

json_t *vs_ext_prioritize_answer(const struct vs_model *m, struct vs_frag_stats *st,
                                 const char *const *names, size_t n, int64_t cpu, int64_t mem)
{
    double *d = calloc(n ? n : 1, sizeof(*d)), *u = calloc(n ? n : 1, sizeof(*u));
    json_t *out = json_array();
    if (!d || !u || !out) {
        free(d);
        free(u);
        json_decref(out);
        return NULL;
    }
    struct vs_frag_ctx x;
    vs_frag_ctx_init(&x, st);
    double lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        d[i] = vs_sched_frag_plain(&x, vs_model_node(m, names[i]), cpu, mem, &u[i]);
        lo = i == 0 || d[i] < lo ? d[i] : lo;
        hi = i == 0 || d[i] > hi ? d[i] : hi;
    }
    /* The idle capacity's range among the nodes of least growth. */
    double ulo = 0, uhi = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (d[i] > lo + VS_FRAG_TIE)
            continue;
        ulo = !any || u[i] < ulo ? u[i] : ulo;
        uhi = !any || u[i] > uhi ? u[i] : uhi;
        any = true;
    }
    for (size_t i = 0; i < n; i++) {
        json_int_t score;
        if (d[i] > lo + VS_FRAG_TIE)
            score = (json_int_t)ceil(4 * (hi - d[i]) / (hi - lo));
        else if (u[i] > ulo + VS_FRAG_TIE)
            score = 5 + (json_int_t)ceil(4 * (uhi - u[i]) / (uhi - ulo));
        else
            score = 10;
        if (json_array_append_new(out, json_pack("{s:s,s:I}", "Host", names[i], "Score", score))) {
            json_decref(out);
            out = NULL;
            break;
        }
    }
    free(d);
    free(u);
    return out;
}

struct prio_ctx {
    struct vs_frag_stats *st;
    const char *const *names;
    size_t n;
    int64_t cpu, mem;
    json_t *res;
};

static void prio_locked(void *ctx, const struct vs_model *m)
{
    struct prio_ctx *c = ctx;
    c->res = vs_ext_prioritize_answer(m, c->st, c->names, c->n, c->cpu, c->mem);
}

void vs_ext_prioritize(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_app *a = ctx;
    struct vs_filter_args fa;
    struct vs_errbuf eb;
    const char **names = NULL;
    size_t n = 0;
    if (vs_extargs_filter(req->body, req->len, &fa, &eb)) {
        vs_http_error(resp, 400, eb.msg);
        goto out;
    }
    if (fa.has_names) {
        names = fa.names;
        n = fa.n_names;
    } else {
        /* Nodes as full objects (nodeCacheCapable: false): their names. */
        json_t *items = vs_json_get_ci(fa.nodes, "items");
        n = json_array_size(items);
        names = calloc(n ? n : 1, sizeof(*names));
        if (!names) {
            vs_http_error(resp, 500, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *md = vs_json_get_ci(json_array_get(items, i), "metadata");
            const char *nm = json_string_value(vs_json_get_ci(md, "name"));
            names[i] = nm ? nm : "";
        }
    }
    if (!vs_store_synced(a->store)) {
        vs_http_error(resp, 503, "vgpu-sched is not ready: the cluster cache is still syncing");
        goto out;
    }
    struct vs_pod_req preq;
    bool managed = vs_request_build(&fa.pod, a->cfg, &preq, &eb) != VS_OK || preq.any;
    vs_pod_req_cleanup(&preq);
    struct vs_podres pr;
    struct prio_ctx pc = {.st = a->frag_stats, .names = names, .n = n};
    if (!managed && a->frag_stats && vs_podres_compute(&fa.pod, &pr, &eb) == VS_OK) {
        pc.cpu = pr.cpu;
        pc.mem = pr.mem;
        vs_store_read(a->store, prio_locked, &pc);
        const char *top = "";
        for (size_t i = 0; pc.res && i < json_array_size(pc.res) && !*top; i++) {
            json_t *e = json_array_get(pc.res, i);
            if (json_integer_value(json_object_get(e, "Score")) == 10)
                top = json_string_value(json_object_get(e, "Host"));
        }
        vs_log(VS_LOG_INFO, "prioritize", "pod=%s/%s nodes=%zu top=%s", fa.pod.ns, fa.pod.name, n,
               top ? top : "");
    } else {
        /* No opinion: every node 0. */
        pc.res = json_array();
        for (size_t i = 0; pc.res && i < n; i++)
            json_array_append_new(pc.res, json_pack("{s:s,s:i}", "Host", names[i], "Score", 0));
    }
    if (!pc.res) {
        vs_http_error(resp, 500, "out of memory");
        goto out;
    }
    set_json(resp, 200, pc.res);
out:
    if (names != fa.names)
        free(names);
    vs_filter_args_cleanup(&fa);
}

/* ------------------------------------------------------------------ Bind */

static json_t *bind_result(const char *err)
{
    return json_pack("{s:s}", "Error", err ? err : "");
}

struct bind_try {
    struct vs_app *a;
    const char *node, *ns, *name, *uid;
    uint64_t hold; /* vs_store_bind_begin's token (0: none) */
};

/* The refusal of a Bind for a pod an earlier Bind of it already bound (kube-scheduler retries a
 * Bind whose call timed out; the first may still have finished): nothing of it is touched. */
static const char *bound_msg(const char *ns, const char *name)
{
    static _Thread_local char m[600];
    snprintf(m, sizeof(m), "pod %s/%s is already bound (an earlier Bind of it succeeded)", ns,
             name);
    return m;
}

/* Why a Bind of pod ns/name to node in reservation state st may not go on, into msg (false: it
 * may). Besides expiry and deletion: kube-scheduler retries a Bind whose call timed out, after
 * filtering the pod again, while the first Bind may still be working here — a Bind whose pod is
 * bound already (an earlier Bind finished), held by an earlier Bind (holder: that Bind's node)
 * or reserved on another node (filtered again before any Bind held it) is stale and touches
 * nothing. `waiting`: the Bind waited for the node's lock. */
static bool state_refusal(enum vs_reservation_state st, const char *ns, const char *name,
                          const char *node, const char *holder, bool waiting, char *msg, size_t cap)
{
    switch (st) {
    case VS_RES_OK:
        return false;
    case VS_RES_BUSY:
        snprintf(msg, cap,
                 "pod %s/%s is being bound to node %s by an earlier Bind; this Bind to %s "
                 "touches nothing",
                 ns, name, holder ? holder : node, node);
        return true;
    case VS_RES_CHANGED:
        snprintf(msg, cap,
                 "the reservation of pod %s/%s on node %s changed while its Bind was under way; "
                 "this Bind is stale",
                 ns, name, node);
        return true;
    case VS_RES_NOMEM:
        snprintf(msg, cap, "out of memory");
        return true;
    case VS_RES_BOUND:
        snprintf(msg, cap, "%s", bound_msg(ns, name));
        return true;
    case VS_RES_MOVED:
        snprintf(msg, cap,
                 "pod %s/%s was filtered again onto another node; this Bind to %s is stale", ns,
                 name, node);
        return true;
    case VS_RES_EXPIRED:
        if (waiting)
            snprintf(msg, cap,
                     "the reservation of pod %s/%s expired while its Bind waited for node %s's "
                     "lock; the pod will be filtered again",
                     ns, name, node);
        else
            snprintf(msg, cap,
                     "the reservation of pod %s/%s expired before it was bound; the pod will be "
                     "filtered again",
                     ns, name);
        return true;
    case VS_RES_MISSING:
        if (waiting)
            snprintf(msg, cap,
                     "the reservation of pod %s/%s is gone while its Bind waited for node %s's "
                     "lock; the pod will be filtered again",
                     ns, name, node);
        else
            snprintf(msg, cap,
                     "the reservation of pod %s/%s is gone; the pod will be filtered again", ns,
                     name);
        return true;
    }
    return false;
}

/* The same for the reservation as the store has it now: through the Bind's hold when it has one
 * (vs_store_bind_check: also a replaced reservation), else by pod and node. */
static bool reservation_refusal(struct vs_store *store, const char *ns, const char *name,
                                const char *uid, const char *node, uint64_t hold, bool waiting,
                                char *msg, size_t cap)
{
    enum vs_reservation_state st = hold ? vs_store_bind_check(store, uid, node, hold)
                                        : vs_store_reservation_on(store, uid, node);
    return state_refusal(st, ns, name, node, NULL, waiting, msg, cap);
}

static enum vs_err take_lock(void *ctx, struct vs_errbuf *eb)
{
    struct bind_try *t = ctx;
    return vs_nodelock_acquire(t->a->lock, t->node, t->ns, t->name, eb);
}

static enum vs_err take_lock_seen(void *ctx, const char *seen, struct vs_errbuf *eb)
{
    struct bind_try *t = ctx;
    return vs_nodelock_acquire_seen(t->a->lock, t->node, seen, t->ns, t->name, eb);
}

/* A waiting Bind whose reservation expired leaves the queue (the pod is filtered again). */
static enum vs_err check_reservation(void *ctx, struct vs_errbuf *eb)
{
    struct bind_try *t = ctx;
    char m[VS_ERRBUF_SIZE];
    if (!reservation_refusal(t->a->store, t->ns, t->name, t->uid, t->node, t->hold, true, m,
                             sizeof(m)))
        return VS_OK;
    return vs_err_set(eb, VS_ERR_CONFLICT, "%s", m);
}

static enum vs_err acquire_lock(struct vs_app *a, const char *node, const char *ns,
                                const char *name, const char *uid, uint64_t hold, double since,
                                double *waited, struct vs_errbuf *eb)
{
    struct bind_try t = {.a = a, .node = node, .ns = ns, .name = name, .uid = uid, .hold = hold};
    *waited = 0;
    if (!a->bindq)
        return take_lock(&t, eb);
    struct vs_bindq_req r = {.node = node,
                             .uid = uid,
                             .ns = ns,
                             .name = name,
                             .take = take_lock,
                             .take_seen = take_lock_seen,
                             .check = *uid ? check_reservation : NULL,
                             .ctx = &t,
                             .since = since};
    return vs_bindq_lock(a->bindq, &r, waited, eb);
}

void vs_ext_bind(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_app *a = ctx;
    double t0 = mono();
    json_t *pod = NULL;
    char *path = NULL;
    bool locked = false, ok = false, mirrored = false, decided = false;
    struct vs_decision dec = {0};
    bool keep_expected = false; /* the refusal concerns another Bind's or decision's pod state */
    uint64_t hold = 0;          /* this Bind's hold on the reservation (vs_store_bind_begin) */
    size_t n_mirrors = 0;
    double waited = 0, t_mirror = 0;
    /* Step ends (debug line bind_steps): Filter's patch sent, pod read, lock taken, binding
     * posted. */
    double t_async = 0, t_get = 0, t_lock = 0, t_post = 0;
    char msg[VS_ERRBUF_SIZE + 128];
    struct vs_errbuf eb;
    struct vs_bind_args ba;
    const struct vs_device *stamps[VS_MAX_DEVICES];
    size_t n_stamps = 0, n_stamped = 0;
    if (vs_extargs_bind(req->body, req->len, &ba, &eb)) {
        set_json(resp, 400, bind_result(eb.msg));
        goto out;
    }
    const char *name = ba.name, *ns = ba.ns, *uid = ba.uid, *node = ba.node;
    enum vs_term_state tstate;
    uint64_t term = vs_leader_term(a->leader, &tstate);
    if (!term) {
        set_json(resp, 200, bind_result(term_refusal(tstate, "bind")));
        goto out;
    }
    /* Hold the reservation first: from now on no Filter moves the pod (kube-scheduler filters it
     * again when this call outlasts its extender timeout), so the node checked below is the
     * node bound. A pod with a reservation elsewhere, held by another Bind or bound is refused
     * untouched; one without any (not filtered here) goes on to the checks below. */
    if (*uid) {
        char *holder = NULL;
        enum vs_reservation_state bs = vs_store_bind_begin(a->store, uid, node, &hold, &holder);
        /* Filter's decision, which the binding carries (decision.h). Without a reservation a
         * pod Filter decided for is refused (it expired or was dropped). */
        decided = a->decisions && vs_decisions_get(a->decisions, uid, &dec);
        bool refused = (bs != VS_RES_MISSING || decided) &&
                       state_refusal(bs, ns, name, node, holder, false, msg, sizeof(msg));
        free(holder);
        if (refused) {
            keep_expected = bs == VS_RES_BUSY || bs == VS_RES_MOVED;
            goto fail;
        }
    }
    path = pod_path(ns, name);
    if (!path) {
        snprintf(msg, sizeof(msg), "bind pod %s/%s: out of memory", ns, name);
        goto fail;
    }
    enum vs_err err = VS_OK;
    /* managed: a regular container asks for a device (Filter placed it: its node and
     * reservation are checked); the locks its backends take (spec/hami-vendors.md §1.10). */
    bool managed = false, needs_lock = false;
    const char *puid = NULL;
    /* The decision must be the one the hold names, or this Bind is stale (a later Filter of
     * the pod is recording its own). */
    if (decided) {
        if (dec.resv != vs_store_bind_resv(a->store, uid, hold)) {
            snprintf(msg, sizeof(msg),
                     "pod %s/%s was filtered again; this Bind to %s is stale and touches nothing",
                     ns, name, node);
            goto fail;
        }
        managed = dec.managed;
        needs_lock = dec.needs_lock;
        n_stamps = dec.n_stamps;
        memcpy(stamps, dec.stamps, n_stamps * sizeof(stamps[0]));
        t_async = t_get = mono();
    } else {
        /* The decision is on the pod (--patch-at-filter, or another process filtered it): the
         * binding must never precede the device annotations Filter queued. */
        if (*uid && vs_async_wait(a->async, uid, a->bind_wait_ms, &eb)) {
            snprintf(msg, sizeof(msg), "pod %s/%s: %s", ns, name, eb.msg);
            goto fail;
        }
        t_async = mono();
        /* The answer to Filter's patch is the pod as of then: no GET unless there is none. */
        pod = *uid ? vs_async_take_pod(a->async, uid) : NULL;
        if (!pod)
            err = vs_kube_get(a->kube, path, &pod, &eb);
        t_get = mono();
        if (err) {
            if (err == VS_ERR_NOTFOUND && *uid)
                vs_store_unreserve(a->store, uid, 0);
            snprintf(msg, sizeof(msg), "get pod %s/%s: %s", ns, name, eb.msg);
            goto fail;
        }
        json_t *md = json_object_get(pod, "metadata");
        puid = json_string_value(json_object_get(md, "uid"));
        if (*uid && puid && strcmp(puid, uid) != 0) {
            snprintf(msg, sizeof(msg), "pod %s/%s has uid %s, not %s", ns, name, puid, uid);
            goto fail;
        }
        /* Bound by an earlier Bind of it (whose caller gave up): nothing of it is touched. */
        const char *pnode =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        if (pnode && *pnode) {
            snprintf(msg, sizeof(msg), "%s", bound_msg(ns, name));
            goto fail;
        }
        const char *vnode = json_string_value(
            json_object_get(json_object_get(md, "annotations"), VS_ANNO_VGPU_NODE));
        struct vs_pod p;
        if (vs_codec_pod_from_json(pod, &p, &eb) == VS_OK) {
            struct vs_pod_req pr;
            if (vs_request_build(&p, a->cfg, &pr, &eb) == VS_OK) {
                managed = pr.any_regular;
                n_stamps = vs_sched_locks(a->cfg->devices, &pr, &needs_lock, stamps);
            }
            vs_pod_req_cleanup(&pr);
        }
        vs_pod_cleanup(&p);
        if (managed && (!vnode || strcmp(vnode, node) != 0)) {
            snprintf(msg, sizeof(msg),
                     "pod %s/%s was not filtered for node %s (hami.io/vgpu-node is \"%s\")", ns,
                     name, node, vnode ? vnode : "");
            goto fail;
        }
    }
    if (managed && *uid) {
        if (reservation_refusal(a->store, ns, name, uid, node, hold, false, msg, sizeof(msg)))
            goto fail;
    }
    /* A term that ended while this Bind waited has no say any more (its reservations are
     * gone): checked before each step that changes the cluster. */
    if (vs_leader_term(a->leader, NULL) != term) {
        snprintf(msg, sizeof(msg), "%s", TERM_ENDED);
        goto fail;
    }
    /* --dra-mirror: the pod's mirror claims exist (allocated) before anything of the binding
     * is written, so kube-scheduler's DRA allocator no longer hands out its cards; a claim that
     * took one of them after Filter fails this Bind (kube-scheduler filters the pod again). */
    if (managed && *uid && a->mirrors) {
        char why[512];
        size_t made = 0;
        mirrored = true;
        err = vs_mirrors_bind(a->mirrors, uid, &made, why, sizeof(why), &eb);
        if (err == VS_ERR_CONFLICT) {
            snprintf(msg, sizeof(msg), "pod %s/%s: %s", ns, name, why);
            goto fail;
        }
        if (err) {
            snprintf(msg, sizeof(msg), "mirror claims of pod %s/%s: %s", ns, name, eb.msg);
            goto fail;
        }
        t_mirror = mono();
        n_mirrors = made;
    }
    if (needs_lock) {
        if ((err = acquire_lock(a, node, ns, name, uid, hold, t0, &waited, &eb))) {
            snprintf(msg, sizeof(msg), "%s", eb.msg);
            goto fail;
        }
        locked = true;
        /* The wait may have been long: a term that ended meanwhile (which drops the
         * reservations it made) is the reason to give; else if an earlier Bind of this pod
         * (whose caller gave up) bound it meanwhile, or a later Filter moved it, leave the pod
         * alone. */
        if (vs_leader_term(a->leader, NULL) != term) {
            snprintf(msg, sizeof(msg), "%s", TERM_ENDED);
            goto fail;
        }
        if (*uid &&
            reservation_refusal(a->store, ns, name, uid, node, hold, true, msg, sizeof(msg)))
            goto fail;
    }
    /* The backends' own locks (Cambricon's), in backend order; none of them waits. */
    for (; n_stamped < n_stamps; n_stamped++) {
        const struct vs_device *d = stamps[n_stamped];
        if ((err = vs_nodelock_stamp_acquire(a->lock, node, d->lock_key, d->lock_ttl, &eb))) {
            snprintf(msg, sizeof(msg), "%s", eb.msg);
            goto fail;
        }
    }
    t_lock = mono();
    if (vs_leader_term(a->leader, NULL) != term) {
        snprintf(msg, sizeof(msg), "%s", TERM_ENDED);
        goto fail;
    }
    /* Once more just before the binding: kube-scheduler may have allocated a card of the pod
     * from a cache that did not have the mirror yet, and its claim arrived meanwhile. */
    if (mirrored) {
        char why[512];
        if (vs_mirrors_taken(a->mirrors, uid, why, sizeof(why))) {
            snprintf(msg, sizeof(msg), "pod %s/%s: %s", ns, name, why);
            goto fail;
        }
    }
    /* Last look before the binding: the hold keeps Filter from moving the pod and the reservation
     * from expiring, but a failed patch, the pod's deletion or a term's end drops it. */
    if (hold && reservation_refusal(a->store, ns, name, uid, node, hold, false, msg, sizeof(msg)))
        goto fail;
    /* bind-phase=allocating and bind-time travel in the Binding's annotations, which the API
     * server copies onto the pod in the same update that sets spec.nodeName (as it does for
     * every binding): the device plugin never sees the phase without the node, a failed
     * binding leaves nothing to undo, and no separate pod PATCH is sent. */
    char bpath[1200], ts[32];
    snprintf(bpath, sizeof(bpath), "%s/binding", path);
    snprintf(ts, sizeof(ts), "%lld", (long long)a->now());
    json_t *binding = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s,s:s}},s:{s:s,s:s,s:s}}",
                                "apiVersion", "v1", "kind", "Binding", "metadata", "name", name,
                                "namespace", ns, "uid", *uid ? uid : (puid ? puid : ""),
                                "annotations", VS_ANNO_BIND_PHASE, "allocating", VS_ANNO_BIND_TIME,
                                ts, "target", "apiVersion", "v1", "kind", "Node", "name", node);
    if (binding && decided) {
        /* Filter's annotations and the label hami.io/vgpu-node ride in the Binding too. */
        json_t *bmd = json_object_get(binding, "metadata");
        if (json_object_update_missing(json_object_get(bmd, "annotations"), dec.annotations) ||
            json_object_set_new(bmd, "labels", json_pack("{s:s}", VS_LABEL_VGPU_NODE, node))) {
            json_decref(binding);
            binding = NULL;
        }
        vs_decisions_posted(a->decisions, uid, dec.resv, true);
    }
    err = binding ? vs_kube_post(a->kube, bpath, binding, NULL, &eb) : VS_ERR_NOMEM;
    json_decref(binding);
    if (err && decided)
        vs_decisions_posted(a->decisions, uid, dec.resv, false);
    if (err) {
        snprintf(msg, sizeof(msg), "bind pod %s/%s to %s: %s", ns, name, node, eb.msg);
        goto fail;
    }
    t_post = mono();
    vs_store_bind_end(a->store, uid, hold, true); /* pinned to node until the watch shows it */
    if (vs_log_enabled(VS_LOG_DEBUG))
        vs_log(VS_LOG_DEBUG, "bind_steps",
               "pod=%s/%s node=%s async_ms=%.1f get_ms=%.1f lock_ms=%.1f wait_ms=%.1f "
               "post_ms=%.1f",
               ns, name, node, (t_async - t0) * 1e3, (t_get - t_async) * 1e3,
               (t_lock - t_get) * 1e3, waited * 1e3, (t_post - t_lock) * 1e3);
    ok = true; /* a bound pod stays in flight on its node until the watch sees the release */
    snprintf(msg, sizeof(msg), "Successfully binding node [%s] to %s/%s", node, ns, name);
    pod_event(a, ns, name, uid, "Normal", "BindingSucceed", msg);
    if (a->holds && uid && *uid) {
        double held = holds_take(a->holds, uid);
        if (held >= 0)
            vs_metrics_preemptor_bound(a->metrics, held);
    }
    if (a->mirrors)
        vs_log(VS_LOG_INFO, "bind",
               "pod=%s/%s node=%s locked=%d wait_s=%.3f mirrors=%zu mirror_s=%.3f", ns, name, node,
               locked, waited, n_mirrors, t_mirror > 0 ? t_mirror - t_get : 0.0);
    else
        vs_log(VS_LOG_INFO, "bind", "pod=%s/%s node=%s locked=%d wait_s=%.3f", ns, name, node,
               locked, waited);
    if (!locked && a->bindq)
        vs_bindq_forget(a->bindq, uid);
    set_json(resp, 200, bind_result(NULL));
    goto out;
fail:
    while (n_stamped > 0) {
        const struct vs_device *d = stamps[--n_stamped];
        if (vs_nodelock_stamp_release(a->lock, node, d->lock_key, &eb)) {
            char q[VS_ERRBUF_SIZE + 8];
            vs_log(VS_LOG_ERROR, "node_lock_release_failed", "node=%s pod=%s/%s lock=%s error=%s",
                   node, ns, name, d->lock_key, vs_log_quote(eb.msg, q, sizeof(q)));
        }
    }
    if (locked) {
        if (vs_nodelock_release(a->lock, node, ns, name, false, &eb)) {
            char q[VS_ERRBUF_SIZE + 8];
            vs_log(VS_LOG_ERROR, "node_lock_release_failed", "node=%s pod=%s/%s error=%s", node, ns,
                   name, vs_log_quote(eb.msg, q, sizeof(q)));
        } else if (a->bindq) {
            vs_bindq_released(a->bindq, node, uid);
        }
    } else if (a->bindq && ba.uid && !keep_expected) {
        vs_bindq_forget(a->bindq, ba.uid);
    }
    if (hold)
        vs_store_bind_end(a->store, uid, hold, false);
    /* The pod's mirrors go with the failed Bind, unless the pod is bound already (an earlier
     * Bind of it succeeded: they are its mirrors). */
    if (mirrored && vs_store_reservation(a->store, uid) != VS_RES_BOUND)
        vs_mirrors_release(a->mirrors, uid);
    {
        char q[sizeof(msg) + 8];
        vs_log(VS_LOG_WARN, "bind_failed", "pod=%s/%s node=%s wait_s=%.3f error=%s", ns, name, node,
               waited, vs_log_quote(msg, q, sizeof(q)));
    }
    pod_event(a, ns, name, uid, "Warning", "BindingFailed", msg);
    set_json(resp, 200, bind_result(msg));
out:
    vs_metrics_bind(a->metrics, ok, mono() - t0);
    json_decref(pod);
    vs_decision_cleanup(&dec);
    vs_bind_args_cleanup(&ba);
    free(path);
}

void vs_ext_pod_bound(void *ctx, const char *uid, const char *ns, const char *name, bool labeled)
{
    struct vs_app *a = ctx;
    char *node = NULL;
    if (!a->decisions || !vs_decisions_seen_bound(a->decisions, uid, labeled, &node))
        return;
    char *path = pod_path(ns, name);
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", VS_LABEL_VGPU_NODE, node);
    /* HAMi's vGPU monitor finds its pods by this label: a failed patch is a warning. */
    if (path && patch && vs_async_patch_quiet(a->async, path, patch, true) == VS_OK)
        vs_log(VS_LOG_DEBUG, "pod_label_patch", "pod=%s/%s node=%s", ns, name, node);
    else
        vs_log(VS_LOG_WARN, "pod_label_patch_failed", "pod=%s/%s error=out of memory", ns, name);
    if (!path)
        json_decref(patch);
    free(path);
    free(node);
}

/* ------------------------------------------------------------------ small routes */

void vs_ext_healthz(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    resp->status = 200;
    resp->content_type = "text/plain";
    resp->body = strdup("ok");
}

void vs_ext_readyz(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_app *a = ctx;
    if (!vs_store_synced(a->store)) {
        vs_http_error(resp, 503, "cluster cache not synced");
        return;
    }
    enum vs_term_state ts;
    if (!vs_leader_term(a->leader, &ts)) {
        vs_http_error(resp, 503,
                      ts == VS_TERM_STARTING ? "new leadership term: rebuilding state from the API"
                                             : "not the leader");
        return;
    }
    /* Ready, perhaps with optional APIs missing: they degrade a feature, never readiness. The
     * DRA guard's findings, when there are any, are named too (they do not stop readiness:
     * vgpu-sched works, kube-scheduler does not ask it). */
    json_t *o = json_pack("{s:s,s:o}", "status", "ok", "degraded", vs_access_degraded(a->access));
    json_t *cf = vs_store_dra_conflicts(a->store);
    if (o && cf && json_array_size(cf) > 0) {
        size_t i;
        json_t *e;
        json_array_foreach(cf, i, e)
        {
            char text[1024];
            snprintf(text, sizeof(text),
                     "kube-scheduler refuses every pod asking %s before vgpu-sched sees it",
                     json_string_value(json_object_get(e, "resource")));
            json_object_set_new(e, "effect", json_string(text));
        }
        json_object_set(o, "draConflicts", cf);
    }
    json_decref(cf);
    set_json(resp, o ? 200 : 500, o);
}

void vs_ext_webhook(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_app *a = ctx;
    if (!a->webhook) {
        vs_http_error(resp, 404, "the webhook is not enabled");
        return;
    }
    char *body = NULL;
    resp->status = vs_webhook_handle(a->webhook, req->body, req->len, &body);
    resp->body = body;
    resp->content_type = "application/json";
}

struct snap_ctx {
    bool legacy;
    struct vs_metrics_snap *snap;
};

static void snap_locked(void *ctx, const struct vs_model *m)
{
    struct snap_ctx *sc = ctx;
    sc->snap = vs_metrics_snap_take(m, sc->legacy);
}

static long metrics_read(void *ctx, char *buf, size_t max)
{
    return vs_metrics_stream_read(ctx, buf, max);
}

static void metrics_free(void *ctx)
{
    vs_metrics_stream_free(ctx);
}

/* A Prometheus label value: backslash, quote and newline escaped (truncated to n). */
static void label_value(const char *v, char *out, size_t n)
{
    size_t o = 0;
    for (; v && *v && o + 3 < n; v++) {
        if (*v == '\\' || *v == '"' || *v == '\n')
            out[o++] = '\\';
        out[o++] = *v == '\n' ? 'n' : *v;
    }
    out[o] = '\0';
}

/* The optional APIs' family and, when the DRA guard found any, the
 * vgpu_sched_dra_extended_resource_conflict family. New string (NULL when out of memory). */
static char *dra_metrics(const struct vs_access *acc, struct vs_store *st)
{
    char *opt = vs_access_metrics(acc);
    json_t *cf = vs_store_dra_conflicts(st);
    if (!opt || !cf || !json_array_size(cf)) {
        json_decref(cf);
        return opt;
    }
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, opt);
    free(opt);
    vs_buf_puts(&b, "# HELP vgpu_sched_dra_extended_resource_conflict 1 for each DeviceClass whose "
                    "extendedResourceName is a resource vgpu-sched schedules: kube-scheduler "
                    "refuses pods asking it before vgpu-sched sees them.\n"
                    "# TYPE vgpu_sched_dra_extended_resource_conflict gauge\n");
    size_t i;
    json_t *e;
    json_array_foreach(cf, i, e)
    {
        char cls[600], res[600];
        label_value(json_string_value(json_object_get(e, "deviceclass")), cls, sizeof(cls));
        label_value(json_string_value(json_object_get(e, "resource")), res, sizeof(res));
        vs_buf_printf(
            &b, "vgpu_sched_dra_extended_resource_conflict{deviceclass=\"%s\",resource=\"%s\"} 1\n",
            cls, res);
    }
    json_decref(cf);
    return vs_buf_steal(&b);
}

void vs_ext_metrics(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_app *a = ctx;
    struct vs_metrics_extra x;
    memset(&x, 0, sizeof(x));
    struct vs_nodelock_stats ls;
    vs_nodelock_stats(a->lock, &ls);
    x.lock_acquired = ls.acquired;
    x.lock_contended = ls.contended;
    x.lock_broken = ls.broken;
    x.lock_released = ls.released;
    x.lock_taken_as_seen = ls.acquired_at;
    x.lock_seen_refused = ls.at_conflicts;
    struct vs_kube_stats ks;
    vs_kube_stats(a->kube, &ks);
    x.api_requests = ks.requests;
    x.api_connections = ks.connections;
    x.api_pool_waits = ks.pool_waits;
    x.http_connections = atomic_load(&a->http_connections);
    memcpy(x.api_errors, ks.errors_by_verb, sizeof(x.api_errors));
    struct vs_store_stats ss;
    vs_store_stats(a->store, &ss);
    x.malformed_pods = ss.malformed_pods;
    x.malformed_nodes = ss.malformed_nodes;
    x.reservations_expired = ss.expired;
    x.commit_conflicts = ss.commit_conflicts;
    x.relists = ss.relists;
    x.leader = vs_leader_term(a->leader, NULL) != 0;
    x.synced = vs_store_synced(a->store);
    x.binds_waiting = a->bindq ? vs_bindq_waiting(a->bindq) : 0;
    x.allocation_s = a->bindq ? vs_bindq_service_s(a->bindq) : 0;
    x.events_queued = a->async ? vs_async_events_pending(a->async, NULL) : 0;
    x.patches_queued = a->async ? vs_async_patches_pending(a->async) : 0;
    /* The lock is held for the copy only; the text is made as the scraper reads it. */
    struct snap_ctx sc = {.legacy = a->legacy_metrics};
    vs_store_read(a->store, snap_locked, &sc);
    struct vs_metrics_stream *st =
        vs_metrics_stream_new(a->metrics, sc.snap, &x, dra_metrics(a->access, a->store));
    if (!st) {
        vs_http_error(resp, 500, "out of memory");
        return;
    }
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4";
    resp->stream_read = metrics_read;
    resp->stream_free = metrics_free;
    resp->stream_ctx = st;
}

bool vs_ext_patch_superseded(void *ctx, const char *uid, uint64_t reservation)
{
    struct vs_app *a = ctx;
    return vs_store_superseded(a->store, uid, reservation);
}

void vs_ext_patch_failed(void *ctx, const char *uid, uint64_t reservation)
{
    struct vs_app *a = ctx;
    /* The decision is void (the pod is gone, or its Bind will fail waiting for the patch): its
     * node stops counting a Bind on the way, unless a later Filter of the pod decided again. */
    if (vs_store_unreserve(a->store, uid, reservation) && a->bindq)
        vs_bindq_forget(a->bindq, uid);
}
