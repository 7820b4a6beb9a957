/* dashboard: routing under the base path, the security headers, ETags, and the API handlers.
 * Each handler copies what it needs (the model under the store's read lock, the pending table
 * under its mutex, counters by atomic loads) and encodes outside every lock. */
#include "dashboard.h"

#include "annot.h"
#include "dash_assets.h"
#include "dash_json.h"
#include "dash_snap.h"
#include "k8s_codec.h"
#include "log.h"
#include "pending.h"
#include "policy.h"
#include "request.h"
#include "whatif.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MISS_MAX  200 /* pending entries whose nearest miss one answer works out */
#define FIND_MAX  50  /* pods one search returns */
#define QUERY_MAX 128 /* bytes of a search */

struct vs_dashboard {
    struct vs_dashboard_opts o;
    const struct vs_app *a;
    char *base;      /* "/" or "/x/" */
    char *base_bare; /* "/x" (redirected to base), NULL when base is "/" */
    char *whatif;    /* base + "api/v1/whatif" */
    char *csp;
    char boot[32];             /* ETag prefix: one process's versions never match another's */
    pthread_mutex_t whatif_mu; /* one what-if at a time */
    struct vs_route routes[VS_DASH_ROUTES];
    size_t n_routes;
};

enum api_kind {
    A_SNAPSHOT,
    A_NODE,
    A_PENDING,
    A_PENDING_ONE,
    A_PODS,
    A_POD,
    A_FRAG,
    A_HEALTH,
    A_OPENAPI,
    A_WHATIF
};

/* Every API endpoint, under the base path; docs/dashboard-api.json describes each (a test
 * checks both ways). {x} matches one path segment. */
const struct vs_dash_endpoint vs_dash_endpoints[] = {
    {"GET", "/api/v1/snapshot"},      {"GET", "/api/v1/nodes/{name}"},
    {"GET", "/api/v1/pending"},       {"GET", "/api/v1/pending/{namespace}/{name}"},
    {"GET", "/api/v1/pods"},          {"GET", "/api/v1/pods/{namespace}/{name}"},
    {"GET", "/api/v1/fragmentation"}, {"GET", "/api/v1/health"},
    {"GET", "/api/v1/openapi.json"},  {"POST", "/api/v1/whatif"},
};
const size_t vs_dash_n_endpoints = sizeof(vs_dash_endpoints) / sizeof(vs_dash_endpoints[0]);

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* ------------------------------------------------------------------ options */

static bool base_ok(const char *b)
{
    if (b[0] != '/' || strlen(b) > 200 || strstr(b, "//") || strstr(b, "/./") || strstr(b, "/../"))
        return false;
    for (const char *p = b; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("/-._~", *p))
            return false;
    size_t n = strlen(b);
    return !(n >= 2 && strcmp(b + n - 2, "/.") == 0) && !(n >= 3 && strcmp(b + n - 3, "/..") == 0);
}

/* frame-ancestors sources: 'none', 'self', or scheme/host sources, separated by spaces. */
static bool ancestors_ok(const char *v)
{
    if (!*v || strlen(v) > 512)
        return false;
    char *copy = strdup(v), *save = NULL;
    if (!copy)
        return false;
    bool ok = true, any = false;
    for (char *t = strtok_r(copy, " ", &save); t && ok; t = strtok_r(NULL, " ", &save)) {
        any = true;
        if (strcmp(t, "'none'") == 0 || strcmp(t, "'self'") == 0)
            continue;
        for (const char *p = t; *p && ok; p++)
            ok = isalnum((unsigned char)*p) || strchr(":/.-*_", *p);
    }
    free(copy);
    return ok && any;
}

struct vs_dashboard *vs_dashboard_new(const struct vs_dashboard_opts *o, struct vs_errbuf *eb)
{
    const char *base = o->base_path && *o->base_path ? o->base_path : "/";
    const char *fa = o->frame_ancestors && *o->frame_ancestors ? o->frame_ancestors : "'none'";
    if (!base_ok(base)) {
        vs_err_set(eb, VS_ERR_INVAL,
                   "invalid --dashboard-base-path \"%.200s\": want an absolute path of letters, "
                   "digits and -._~ such as /vgpu-sched/",
                   base);
        return NULL;
    }
    if (!ancestors_ok(fa)) {
        vs_err_set(eb, VS_ERR_INVAL,
                   "invalid --dashboard-frame-ancestors \"%.200s\": want 'none', 'self' or "
                   "sources like https://portal.example.com, separated by spaces",
                   fa);
        return NULL;
    }
    struct vs_dashboard *d = calloc(1, sizeof(*d));
    if (!d) {
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    d->o = *o;
    d->a = o->app;
    if (!d->o.detail_max_nodes)
        d->o.detail_max_nodes = VS_DASH_DETAIL_NODES;
    size_t bl = strlen(base);
    bool slash = base[bl - 1] == '/';
    d->base = malloc(bl + 2);
    d->whatif = malloc(bl + 32);
    d->csp = malloc(strlen(fa) + 256);
    if (d->base) {
        snprintf(d->base, bl + 2, "%s%s", base, slash ? "" : "/");
        if (strcmp(d->base, "/") != 0)
            d->base_bare = strndup(d->base, strlen(d->base) - 1);
    }
    if (!d->base || !d->whatif || !d->csp ||
        (strcmp(d->base ? d->base : "/", "/") && !d->base_bare)) {
        vs_dashboard_free(d);
        vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(d->whatif, bl + 32, "%s%s", d->base, vs_dash_endpoints[A_WHATIF].path + 1);
    snprintf(d->csp, strlen(fa) + 256,
             "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
             "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
             "frame-ancestors %s",
             fa);
    snprintf(d->boot, sizeof(d->boot), "%llx%x", (unsigned long long)now_s(), (unsigned)getpid());
    pthread_mutex_init(&d->whatif_mu, NULL);
    return d;
}

void vs_dashboard_free(struct vs_dashboard *d)
{
    if (!d)
        return;
    free(d->base);
    free(d->base_bare);
    free(d->whatif);
    free(d->csp);
    pthread_mutex_destroy(&d->whatif_mu);
    free(d);
}

const char *vs_dashboard_base(const struct vs_dashboard *d)
{
    return d->base;
}

/* ------------------------------------------------------------------ responses */

static void headers(struct vs_dashboard *d, struct vs_http_resp *resp)
{
    vs_http_add_header(resp, "Content-Security-Policy", d->csp);
    vs_http_add_header(resp, "X-Content-Type-Options", "nosniff");
    vs_http_add_header(resp, "Referrer-Policy", "no-referrer");
    vs_http_add_header(resp, "Cache-Control", "no-cache");
}

static void json_error(struct vs_http_resp *resp, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void json_error(struct vs_http_resp *resp, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "{\"error\":");
    vs_dash_json_string(&b, msg);
    vs_buf_puts(&b, "}");
    resp->status = status;
    resp->content_type = "application/json";
    resp->body = vs_buf_steal(&b);
}

static void json_ok(struct vs_http_resp *resp, char *body, const char *etag)
{
    if (!body) {
        json_error(resp, 500, "out of memory");
        return;
    }
    resp->status = 200;
    resp->content_type = "application/json";
    resp->body = body;
    if (etag)
        vs_http_add_header(resp, "ETag", etag);
}

bool vs_dash_etag_match(const char *h, const char *etag)
{
    if (!h || !etag)
        return false;
    size_t el = strlen(etag);
    for (const char *p = h; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        if (*p == '*')
            return true;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        if (*p != '"')
            return false; /* not a list of entity tags */
        const char *end = strchr(p + 1, '"');
        if (!end)
            return false;
        size_t len = (size_t)(end - p) + 1;
        if (len == el && memcmp(p, etag, el) == 0)
            return true;
        p = end + 1;
    }
    return false;
}

/* 304 when the request's If-None-Match names etag. */
static bool not_modified(const struct vs_http_req *req, struct vs_http_resp *resp, const char *etag)
{
    if (!vs_dash_etag_match(vs_http_req_header(req, "If-None-Match"), etag))
        return false;
    resp->status = 304;
    resp->body = NULL;
    vs_http_add_header(resp, "ETag", etag);
    return true;
}

static const struct vs_dash_asset *asset(const char *name)
{
    for (size_t i = 0; i < vs_dash_n_assets; i++)
        if (strcmp(vs_dash_assets[i].name, name) == 0)
            return &vs_dash_assets[i];
    return NULL;
}

static void serve_asset(const struct vs_http_req *req, struct vs_http_resp *resp,
                        const struct vs_dash_asset *as)
{
    resp->content_type = as->content_type;
    if (not_modified(req, resp, as->etag))
        return;
    resp->status = 200;
    resp->static_body = as->data;
    resp->static_len = as->len;
    vs_http_add_header(resp, "ETag", as->etag);
}

/* ------------------------------------------------------------------ shared reads */

static void meta_of(const struct vs_dashboard *d, struct vs_dash_meta *m, const char *version)
{
    const struct vs_app *a = d->a;
    m->version = version;
    m->node_policy = a->node_policy ? a->node_policy : "binpack";
    m->gpu_policy = a->gpu_policy ? a->gpu_policy : "spread";
    m->leader = vs_leader_term(a->leader, NULL) != 0;
    m->synced = vs_store_synced(a->store);
    m->pending = a->pending ? vs_pending_count(a->pending) : 0;
}

struct copy_req {
    const struct vs_dashboard *d;
    struct vs_dash_copy_opts o;
    struct vs_dash_snap *snap;
    uint64_t version;
    enum vs_err err;
};

static void copy_locked(void *ctx, const struct vs_model *m)
{
    struct copy_req *c = ctx;
    c->version = vs_store_version(c->d->a->store);
    c->err = vs_dash_snap_copy(m, &c->o, c->version, now_s(), &c->snap);
}

/* A copy of the model (detail per opts); NULL when out of memory. */
static struct vs_dash_snap *copy_model(const struct vs_dashboard *d,
                                       const struct vs_dash_copy_opts *o)
{
    struct copy_req c = {.d = d, .o = *o};
    vs_store_read(d->a->store, copy_locked, &c);
    return c.err ? NULL : c.snap;
}

static void state_etag(const struct vs_dashboard *d, char *out, size_t len, const char *kind,
                       uint64_t store_v)
{
    const struct vs_app *a = d->a;
    uint64_t pv = a->pending ? vs_pending_version(a->pending) : 0;
    bool leader = vs_leader_term(a->leader, NULL) != 0, synced = vs_store_synced(a->store);
    snprintf(out, len, "\"%s.%s.%llu.%llu.%d%d\"", d->boot, kind, (unsigned long long)store_v,
             (unsigned long long)pv, leader, synced);
}

/* ------------------------------------------------------------------ API: state */

static void api_snapshot(struct vs_dashboard *d, const struct vs_http_req *req,
                         struct vs_http_resp *resp)
{
    char etag[128];
    state_etag(d, etag, sizeof(etag), "s", vs_store_version(d->a->store));
    if (not_modified(req, resp, etag))
        return;
    struct vs_dash_copy_opts o = {.detail_max_nodes = d->o.detail_max_nodes,
                                  .cards = VS_DASH_CARDS_DETAIL};
    struct vs_dash_snap *s = copy_model(d, &o);
    if (!s) {
        json_error(resp, 500, "out of memory");
        return;
    }
    state_etag(d, etag, sizeof(etag), "s", s->version);
    struct vs_dash_meta meta;
    char ver[128];
    snprintf(ver, sizeof(ver), "%.*s", (int)strlen(etag) - 2, etag + 1);
    meta_of(d, &meta, ver);
    json_ok(resp, vs_dash_json_snapshot(s, &meta), etag);
    vs_dash_snap_free(s);
}

static void api_node(struct vs_dashboard *d, const struct vs_http_req *req,
                     struct vs_http_resp *resp, const char *name)
{
    char etag[160];
    state_etag(d, etag, sizeof(etag), "n", vs_store_version(d->a->store));
    if (not_modified(req, resp, etag))
        return;
    struct vs_dash_copy_opts o = {.only_node = name};
    struct vs_dash_snap *s = copy_model(d, &o);
    if (!s) {
        json_error(resp, 500, "out of memory");
        return;
    }
    if (!s->n_nodes) {
        json_error(resp, 404, "no node %.200s", name);
        vs_dash_snap_free(s);
        return;
    }
    state_etag(d, etag, sizeof(etag), "n", s->version);
    struct vs_dash_meta meta;
    char ver[160];
    snprintf(ver, sizeof(ver), "%.*s", (int)strlen(etag) - 2, etag + 1);
    meta_of(d, &meta, ver);
    json_ok(resp, vs_dash_json_node(s, &meta), etag);
    vs_dash_snap_free(s);
}

static void api_pending(struct vs_dashboard *d, const struct vs_http_req *req,
                        struct vs_http_resp *resp)
{
    char etag[128];
    state_etag(d, etag, sizeof(etag), "p", vs_store_version(d->a->store));
    if (not_modified(req, resp, etag))
        return;
    struct vs_pending_entry *v = NULL;
    size_t n = 0;
    uint64_t pv = 0, dropped = 0;
    if (d->a->pending && vs_pending_list(d->a->pending, now_s(), false, &v, &n, &pv, &dropped)) {
        json_error(resp, 500, "out of memory");
        return;
    }
    struct vs_dash_copy_opts o = {0};
    struct vs_dash_snap *s = n ? copy_model(d, &o) : NULL;
    json_ok(resp, vs_dash_json_pending(v, n, s, MISS_MAX, pv, dropped, now_s()), etag);
    vs_dash_snap_free(s);
    vs_pending_list_free(v, n);
}

static void api_pending_one(struct vs_dashboard *d, struct vs_http_resp *resp, const char *ns,
                            const char *name)
{
    struct vs_pending_entry e;
    if (!d->a->pending || !vs_pending_get(d->a->pending, ns, name, now_s(), &e)) {
        json_error(resp, 404, "no pending pod %.100s/%.100s", ns, name);
        return;
    }
    struct vs_dash_copy_opts o = {0};
    struct vs_dash_snap *s = copy_model(d, &o);
    json_ok(resp, vs_dash_json_pending_one(&e, s, now_s()), NULL);
    vs_dash_snap_free(s);
    vs_pending_entry_cleanup(&e);
}

static void api_fragmentation(struct vs_dashboard *d, struct vs_http_resp *resp)
{
    struct vs_dash_copy_opts o = {0};
    struct vs_dash_snap *s = copy_model(d, &o);
    if (!s) {
        json_error(resp, 500, "out of memory");
        return;
    }
    struct vs_frag_ctx x;
    memset(&x, 0, sizeof(x));
    if (d->a->frag_stats)
        vs_frag_ctx_init(&x, d->a->frag_stats);
    json_ok(resp, vs_dash_json_frag(s, &x), NULL);
    vs_dash_snap_free(s);
}

/* ------------------------------------------------------------------ API: pods */

struct find_req {
    const char *q;
    struct vs_dash_snap *s;
    bool more;
    enum vs_err err;
};

static void find_locked(void *ctx, const struct vs_model *m)
{
    struct find_req *f = ctx;
    f->err = vs_dash_find_pods(m, f->q, FIND_MAX, &f->s, &f->more);
}

static void api_search(struct vs_dashboard *d, const struct vs_http_req *req,
                       struct vs_http_resp *resp)
{
    const char *q = vs_http_req_arg(req, "q");
    if (!q || !*q) {
        json_error(resp, 400,
                   "the query parameter q (part of a pod's name or namespace) is "
                   "required");
        return;
    }
    if (strlen(q) > QUERY_MAX) {
        json_error(resp, 400, "q is longer than %d bytes", QUERY_MAX);
        return;
    }
    struct find_req f = {.q = q};
    vs_store_read(d->a->store, find_locked, &f);
    struct vs_pending_entry *v = NULL;
    size_t n = 0, k = 0;
    if (f.err ||
        (d->a->pending && vs_pending_list(d->a->pending, now_s(), false, &v, &n, NULL, NULL))) {
        vs_dash_snap_free(f.s);
        json_error(resp, 500, "out of memory");
        return;
    }
    /* pending pods matching, after the tracked ones */
    for (size_t i = 0; i < n; i++) {
        bool hit = strcasestr(v[i].name, q) || strcasestr(v[i].ns, q);
        if (hit && k < FIND_MAX) {
            if (k != i) {
                struct vs_pending_entry t = v[k];
                v[k] = v[i];
                v[i] = t;
            }
            k++;
        }
    }
    json_ok(resp, vs_dash_json_search(q, f.s, f.more || k == FIND_MAX, v, k), NULL);
    vs_dash_snap_free(f.s);
    vs_pending_list_free(v, n);
}

static char *pod_api_path(const char *ns, const char *name)
{
    char *ens = vs_kube_escape(ns), *ename = vs_kube_escape(name);
    char *p = NULL;
    if (ens && ename) {
        size_t n = strlen(ens) + strlen(ename) + 40;
        if ((p = malloc(n)))
            snprintf(p, n, "/api/v1/namespaces/%s/pods/%s", ens, ename);
    }
    free(ens);
    free(ename);
    return p;
}

struct pod_req {
    const struct vs_dashboard *d;
    const char *uid;
    struct vs_dash_snap *s;
    bool found;
    enum vs_err err;
};

static void pod_locked(void *ctx, const struct vs_model *m)
{
    struct pod_req *p = ctx;
    p->err =
        vs_dash_pod_copy(m, p->uid, vs_store_version(p->d->a->store), now_s(), &p->s, &p->found);
}

static void kstr(struct vs_jw *w, const char *k, const char *v)
{
    vs_jw_key(w, k);
    vs_jw_str(w, v);
}

static void kint(struct vs_jw *w, const char *k, int64_t v)
{
    vs_jw_key(w, k);
    vs_jw_int(w, v);
}

/* The card (index, model) of uuid in the pod's node copy, or NULL. */
static const struct vs_dash_card *card_of(const struct vs_dash_snap *s, const char *uuid)
{
    for (size_t i = 0; s && i < s->n_cards; i++)
        if (strcmp(s->cards[i].uuid, uuid) == 0)
            return &s->cards[i];
    return NULL;
}

static void containers_json(struct vs_jw *w, const struct vs_pod *pod, bool have_pod,
                            const struct vs_dash_snap *s, const struct vs_devcfg *cfg)
{
    /* Every backend's allocation annotation, decoded (one entry per container). */
    const struct vs_devices *set = cfg->devices;
    struct vs_pod_devs devs[VS_MAX_DEVICES];
    bool have_devs[VS_MAX_DEVICES] = {0};
    struct vs_errbuf eb;
    memset(devs, 0, sizeof(devs));
    for (size_t d = 0; have_pod && d < set->n; d++) {
        const char *key = set->dev[d]->allocated_key;
        const char *alloc = key ? vs_kv_get(&pod->annotations, key) : NULL;
        have_devs[d] = alloc && vs_annot_parse_devices(key, alloc, &devs[d], &eb) == VS_OK;
    }
    struct vs_pod_req preq;
    bool have_req = have_pod && vs_request_build(pod, cfg, &preq, &eb) == VS_OK;
    vs_jw_key(w, "containers");
    vs_jw_arr(w);
    size_t n = have_pod ? pod->n_init + pod->n_ctrs : 0;
    for (size_t i = 0; i < n; i++) {
        bool init = i < pod->n_init;
        const struct vs_container *c = init ? &pod->init[i] : &pod->ctrs[i - pod->n_init];
        const struct vs_ctr_req *cr =
            have_req ? (init ? &preq.init[i] : &preq.ctrs[i - pod->n_init]) : NULL;
        /* The container's first backend's request (most ask one). */
        const struct vs_req *r = cr && cr->n ? &cr->r[0] : NULL;
        vs_jw_obj(w);
        kstr(w, "name", c->name);
        vs_jw_key(w, "init");
        vs_jw_bool(w, init);
        vs_jw_key(w, "request");
        if (r && r->nums > 0) {
            vs_jw_obj(w);
            kstr(w, "vendor", set->dev[r->dev]->word);
            kint(w, "cards", r->nums);
            vs_jw_key(w, "memMiB");
            if (r->memreq > 0)
                vs_jw_int(w, r->memreq);
            else
                vs_jw_null(w);
            vs_jw_key(w, "memPct");
            if (r->memreq == 0 && r->pct != VS_PCT_UNSET)
                vs_jw_int(w, r->pct);
            else
                vs_jw_null(w);
            kint(w, "coresPct", r->cores);
            vs_jw_end_obj(w);
        } else {
            vs_jw_null(w);
        }
        vs_jw_key(w, "devices");
        vs_jw_arr(w);
        for (size_t d = 0; d < set->n; d++) {
            for (size_t k = 0; have_devs[d] && i < devs[d].n && k < devs[d].ctrs[i].n; k++) {
                const struct vs_cdev *dv = &devs[d].ctrs[i].devs[k];
                const struct vs_dash_card *cd = card_of(s, dv->uuid);
                vs_jw_obj(w);
                kstr(w, "uuid", dv->uuid);
                vs_jw_key(w, "index");
                if (cd)
                    vs_jw_int(w, cd->index);
                else
                    vs_jw_null(w);
                kstr(w, "type", cd ? cd->type : NULL);
                kstr(w, "vendor", set->dev[d]->word);
                kint(w, "memMiB", dv->usedmem);
                kint(w, "coresPct", dv->usedcores);
                vs_jw_end_obj(w);
            }
        }
        vs_jw_end_arr(w);
        vs_jw_end_obj(w);
    }
    vs_jw_end_arr(w);
    if (have_req)
        vs_pod_req_cleanup(&preq);
    for (size_t d = 0; d < set->n; d++)
        vs_pod_devs_cleanup(&devs[d]);
}

static void mig_json(struct vs_jw *w, const struct vs_pod *pod, bool have_pod)
{
    struct vs_mig_allocs m = {0};
    struct vs_errbuf eb;
    const char *v = have_pod ? vs_kv_get(&pod->annotations, VS_ANNO_MIG_ALLOC) : NULL;
    vs_jw_key(w, "mig");
    vs_jw_arr(w);
    if (v && vs_annot_parse_mig(v, &m, &eb) == VS_OK) {
        for (size_t i = 0; i < m.n; i++) {
            vs_jw_obj(w);
            kint(w, "container", m.items[i].container_index);
            kstr(w, "gpu", m.items[i].gpu_uuid);
            kstr(w, "profile", m.items[i].profile);
            kint(w, "placementStart", m.items[i].placement.start);
            kint(w, "placementSize", m.items[i].placement.size);
            kstr(w, "migUuid", m.items[i].has_runtime ? m.items[i].mig_uuid : NULL);
            vs_jw_end_obj(w);
        }
    }
    vs_mig_allocs_cleanup(&m);
    vs_jw_end_arr(w);
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 253 && !strchr(s, '/');
}

static void api_pod(struct vs_dashboard *d, struct vs_http_resp *resp, const char *ns,
                    const char *name)
{
    const struct vs_app *a = d->a;
    if (!name_ok(ns) || !name_ok(name)) {
        json_error(resp, 404, "no pod %.100s/%.100s", ns, name);
        return;
    }
    struct vs_pod pod;
    memset(&pod, 0, sizeof(pod));
    bool have_pod = false;
    char api_err[VS_ERRBUF_SIZE] = "";
    bool api_404 = false;
    char *path = pod_api_path(ns, name);
    json_t *obj = NULL;
    struct vs_errbuf eb;
    enum vs_err err = path ? vs_kube_get(a->kube, path, &obj, &eb) : VS_ERR_NOMEM;
    free(path);
    if (err == VS_ERR_NOTFOUND)
        api_404 = true;
    else if (err)
        snprintf(api_err, sizeof(api_err), "%s", err == VS_ERR_NOMEM ? "out of memory" : eb.msg);
    else if (vs_codec_pod_from_json(obj, &pod, &eb) == VS_OK)
        have_pod = true;
    else
        snprintf(api_err, sizeof(api_err), "%s", eb.msg);
    json_decref(obj);
    /* the model knows pods by UID: the API object's, else a pending entry's */
    struct vs_pending_entry pe;
    bool pending = a->pending && vs_pending_get(a->pending, ns, name, now_s(), &pe);
    const char *uid = have_pod ? pod.uid : pending ? pe.uid : NULL;
    struct pod_req pr = {.d = d, .uid = uid};
    if (uid)
        vs_store_read(a->store, pod_locked, &pr);
    if (pr.err) {
        json_error(resp, 500, "out of memory");
        goto out;
    }
    const struct vs_dash_pod *mp = pr.found && pr.s->n_pods ? &pr.s->pods[0] : NULL;
    if (!have_pod && !mp && !pending) {
        if (api_404 || !*api_err)
            json_error(resp, 404, "no pod %.100s/%.100s", ns, name);
        else
            json_error(resp, 502, "cannot read pod %.100s/%.100s: %.300s", ns, name, api_err);
        goto out;
    }
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    kint(&w, "generatedAt", now_s());
    kstr(&w, "namespace", ns);
    kstr(&w, "name", name);
    kstr(&w, "uid", uid);
    kstr(&w, "phase", have_pod && *pod.phase ? pod.phase : NULL);
    const char *vnode = have_pod ? vs_kv_get(&pod.annotations, VS_ANNO_VGPU_NODE) : NULL;
    const char *node = mp && *mp->node_name                          ? mp->node_name
                       : have_pod && pod.node_name && *pod.node_name ? pod.node_name
                                                                     : vnode;
    kstr(&w, "node", node);
    const char *state = mp ? vs_dash_state_name(mp->state) : pending ? "pending" : "untracked";
    kstr(&w, "state", state);
    struct vs_pod_req preq;
    vs_jw_key(&w, "asksGpu");
    if (have_pod && vs_request_build(&pod, a->cfg, &preq, &eb) == VS_OK) {
        vs_jw_bool(&w, preq.any);
        vs_pod_req_cleanup(&preq);
    } else {
        vs_jw_null(&w);
    }
    /* the mode: the cards' where the pod is placed, else what it asks for */
    const char *mode = NULL;
    for (size_t i = 0; mp && i < pr.s->n_cards && !mode; i++)
        if (pr.s->cards[i].n_shares)
            mode = pr.s->cards[i].mode ? pr.s->cards[i].mode : "hami-core";
    if (!mode && have_pod)
        mode = vs_kv_get(&pod.annotations, VS_ANNO_VGPU_MODE);
    kstr(&w, "mode", mode);
    kstr(&w, "bindPhase", have_pod ? vs_kv_get(&pod.annotations, VS_ANNO_BIND_PHASE) : NULL);
    const char *bt = have_pod ? vs_kv_get(&pod.annotations, VS_ANNO_BIND_TIME) : NULL;
    vs_jw_key(&w, "bindTime");
    if (bt && strtoll(bt, NULL, 10) > 0)
        vs_jw_int(&w, strtoll(bt, NULL, 10));
    else
        vs_jw_null(&w);
    vs_jw_key(&w, "filteredAt");
    if (mp && mp->filtered_at)
        vs_jw_int(&w, mp->filtered_at);
    else
        vs_jw_null(&w);
    vs_jw_key(&w, "priority");
    if (have_pod)
        vs_jw_int(&w, pod.priority);
    else
        vs_jw_null(&w);
    const char *pn = have_pod ? vs_kv_get(&pod.annotations, VS_ANNO_NODE_POLICY) : NULL;
    const char *pg = have_pod ? vs_kv_get(&pod.annotations, VS_ANNO_GPU_POLICY) : NULL;
    vs_jw_key(&w, "policies");
    vs_jw_obj(&w);
    kstr(&w, "node", pn && *pn ? pn : a->node_policy ? a->node_policy : "binpack");
    kstr(&w, "nodeFrom", pn && *pn ? "annotation" : "default");
    kstr(&w, "gpu", pg && *pg ? pg : a->gpu_policy ? a->gpu_policy : "spread");
    kstr(&w, "gpuFrom", pg && *pg ? "annotation" : "default");
    vs_jw_end_obj(&w);
    vs_jw_key(&w, "cards");
    vs_jw_arr(&w);
    for (size_t i = 0; mp && i < pr.s->n_cards; i++) {
        const struct vs_dash_card *c = &pr.s->cards[i];
        if (!c->n_shares)
            continue;
        const struct vs_dash_share *sh = &pr.s->shares[c->first_share];
        vs_jw_obj(&w);
        kstr(&w, "uuid", c->uuid);
        kint(&w, "index", c->index);
        kstr(&w, "vendor", c->vendor);
        kstr(&w, "type", c->type);
        kstr(&w, "mode", c->mode);
        kint(&w, "memMiB", sh->mem);
        kint(&w, "coresPct", sh->cores);
        kint(&w, "slots", sh->slots);
        kint(&w, "cardMemTotalMiB", c->devmem);
        kint(&w, "cardMemUsedMiB", c->usedmem);
        kint(&w, "cardCoresUsedPct", c->usedcores);
        vs_jw_end_obj(&w);
    }
    vs_jw_end_arr(&w);
    containers_json(&w, &pod, have_pod, pr.found ? pr.s : NULL, a->cfg);
    mig_json(&w, &pod, have_pod);
    char *pnode = NULL, *pvict = NULL;
    vs_jw_key(&w, "preemption");
    if (uid && vs_holds_get(a->holds, uid, &pnode, &pvict)) {
        vs_jw_obj(&w);
        kstr(&w, "node", pnode);
        kstr(&w, "victims", pvict);
        vs_jw_end_obj(&w);
    } else {
        vs_jw_null(&w);
    }
    free(pnode);
    free(pvict);
    vs_jw_key(&w, "pending");
    if (pending) {
        struct vs_dash_copy_opts o = {0};
        struct vs_dash_snap *s = copy_model(d, &o);
        vs_dash_json_pending_entry(&w, &pe, s, true);
        vs_dash_snap_free(s);
    } else {
        vs_jw_null(&w);
    }
    vs_jw_key(&w, "api");
    vs_jw_obj(&w);
    kstr(&w, "error", *api_err ? api_err : api_404 && (mp || pending) ? "not found" : NULL);
    vs_jw_end_obj(&w);
    vs_jw_end_obj(&w);
    json_ok(resp, vs_buf_steal(&b), NULL);
out:
    if (pending)
        vs_pending_entry_cleanup(&pe);
    vs_dash_snap_free(pr.s);
    vs_pod_cleanup(&pod);
}

/* ------------------------------------------------------------------ API: health */

static void hist_json(struct vs_jw *w, const char *key, const struct vs_metrics_hist *h)
{
    vs_jw_key(w, key);
    vs_jw_obj(w);
    kint(w, "count", (int64_t)h->count);
    vs_jw_key(w, "meanSeconds");
    vs_jw_num(w, h->count ? h->sum_s / (double)h->count : NAN);
    vs_jw_key(w, "p50Seconds");
    vs_jw_num(w, vs_metrics_quantile(h, 0.5));
    vs_jw_key(w, "p99Seconds");
    vs_jw_num(w, vs_metrics_quantile(h, 0.99));
    vs_jw_end_obj(w);
}

static void api_health(struct vs_dashboard *d, struct vs_http_resp *resp)
{
    const struct vs_app *a = d->a;
    struct vs_metrics_view mv;
    vs_metrics_read(a->metrics, &mv);
    struct vs_bindq_node_view *bv = NULL;
    size_t nb = a->bindq ? vs_bindq_nodes(a->bindq, &bv) : 0;
    struct vs_nodelock_stats ls = {0};
    if (a->lock)
        vs_nodelock_stats(a->lock, &ls);
    struct vs_store_stats ss;
    vs_store_stats(a->store, &ss);
    struct vs_dash_copy_opts o = {.cards = VS_DASH_CARDS_UNUSABLE};
    struct vs_dash_snap *s = copy_model(d, &o);
    if (!s) {
        vs_bindq_nodes_free(bv, nb);
        json_error(resp, 500, "out of memory");
        return;
    }
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    kint(&w, "generatedAt", now_s());
    vs_jw_key(&w, "leader");
    vs_jw_bool(&w, vs_leader_term(a->leader, NULL) != 0);
    vs_jw_key(&w, "synced");
    vs_jw_bool(&w, vs_store_synced(a->store));
    vs_jw_key(&w, "filter");
    vs_jw_obj(&w);
    static const char *const oc[] = {"scheduled", "unschedulable", "error", "passthrough"};
    vs_jw_key(&w, "results");
    vs_jw_obj(&w);
    for (int i = 0; i < VS_FILTER_OUTCOMES; i++)
        kint(&w, oc[i], (int64_t)mv.filter[i]);
    vs_jw_end_obj(&w);
    hist_json(&w, "latency", &mv.filter_h);
    vs_jw_key(&w, "nodeRejections");
    vs_jw_arr(&w);
    for (size_t i = 0; i < mv.n_reasons; i++) {
        vs_jw_obj(&w);
        kstr(&w, "reason", mv.reason[i]);
        kint(&w, "count", (int64_t)mv.rejections[i]);
        vs_jw_end_obj(&w);
    }
    vs_jw_end_arr(&w);
    vs_jw_end_obj(&w);
    vs_jw_key(&w, "bind");
    vs_jw_obj(&w);
    kint(&w, "ok", (int64_t)mv.binds_ok);
    kint(&w, "error", (int64_t)mv.binds_failed);
    hist_json(&w, "latency", &mv.bind_h);
    hist_json(&w, "queueWait", &mv.bind_wait_h);
    hist_json(&w, "lockHold", &mv.lock_hold_h);
    kint(&w, "waiting", a->bindq ? (int64_t)vs_bindq_waiting(a->bindq) : 0);
    double alloc_s = a->bindq ? vs_bindq_service_s(a->bindq) : 0;
    vs_jw_key(&w, "allocationSeconds");
    vs_jw_num(&w, alloc_s > 0 ? alloc_s : NAN);
    vs_jw_end_obj(&w);
    vs_jw_key(&w, "nodeLocks");
    vs_jw_obj(&w);
    kint(&w, "acquired", (int64_t)ls.acquired);
    kint(&w, "contended", (int64_t)ls.contended);
    kint(&w, "broken", (int64_t)ls.broken);
    kint(&w, "released", (int64_t)ls.released);
    vs_jw_key(&w, "nodes");
    vs_jw_arr(&w);
    for (size_t i = 0; i < nb; i++) {
        vs_jw_obj(&w);
        kstr(&w, "node", bv[i].node);
        kstr(&w, "holder", bv[i].owner);
        vs_jw_key(&w, "ageSeconds");
        vs_jw_num(&w, bv[i].owner_age_s >= 0 ? bv[i].owner_age_s : NAN);
        vs_jw_key(&w, "released");
        vs_jw_bool(&w, bv[i].owner_done);
        kstr(&w, "takenHere", bv[i].holder);
        kint(&w, "waiting", (int64_t)bv[i].waiting);
        kint(&w, "inFlight", (int64_t)bv[i].in_flight);
        vs_jw_end_obj(&w);
    }
    vs_jw_end_arr(&w);
    vs_jw_end_obj(&w);
    vs_jw_key(&w, "cards");
    vs_jw_arr(&w);
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct vs_dash_node *n = &s->nodes[i];
        for (uint32_t k = 0; k < n->n_copied; k++) {
            const struct vs_dash_card *c = &s->cards[n->first_card + k];
            if (vs_dash_card_usable(c))
                continue;
            vs_jw_obj(&w);
            kstr(&w, "node", n->name);
            kint(&w, "index", c->index);
            kstr(&w, "uuid", c->uuid);
            kstr(&w, "problem",
                 !c->health    ? "unhealthy"
                 : c->cordoned ? "cordoned"
                               : "mig-bookkeeping");
            vs_jw_end_obj(&w);
        }
    }
    vs_jw_end_arr(&w);
    vs_jw_key(&w, "nodes");
    vs_jw_arr(&w);
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct vs_dash_node *n = &s->nodes[i];
        if (!n->error && !n->unschedulable)
            continue;
        vs_jw_obj(&w);
        kstr(&w, "node", n->name);
        kstr(&w, "error", n->error);
        vs_jw_key(&w, "schedulable");
        vs_jw_bool(&w, !n->unschedulable);
        vs_jw_end_obj(&w);
    }
    vs_jw_end_arr(&w);
    /* The DRA guard: DeviceClasses that map a resource vgpu-sched schedules to DRA. */
    vs_jw_key(&w, "draConflicts");
    vs_jw_arr(&w);
    json_t *cf = vs_store_dra_conflicts(a->store);
    size_t ci;
    json_t *ce;
    json_array_foreach(cf, ci, ce)
    {
        vs_jw_obj(&w);
        kstr(&w, "deviceclass", json_string_value(json_object_get(ce, "deviceclass")));
        kstr(&w, "resource", json_string_value(json_object_get(ce, "resource")));
        vs_jw_end_obj(&w);
    }
    json_decref(cf);
    vs_jw_end_arr(&w);
    vs_jw_key(&w, "handshake");
    vs_jw_null(&w);
    kstr(&w, "handshakeNote",
         "not reported: vgpu-sched reads hami.io/node-nvidia-register "
         "and neither reads nor writes hami.io/node-handshake");
    vs_jw_key(&w, "store");
    vs_jw_obj(&w);
    kint(&w, "malformedPods", (int64_t)ss.malformed_pods);
    kint(&w, "malformedNodes", (int64_t)ss.malformed_nodes);
    kint(&w, "reservationsExpired", (int64_t)ss.expired);
    kint(&w, "commitConflicts", (int64_t)ss.commit_conflicts);
    kint(&w, "relists", (int64_t)ss.relists);
    kint(&w, "requeueNudges", (int64_t)mv.requeue_nudges);
    vs_jw_end_obj(&w);
    vs_jw_end_obj(&w);
    json_ok(resp, vs_buf_steal(&b), NULL);
    vs_dash_snap_free(s);
    vs_bindq_nodes_free(bv, nb);
}

/* ------------------------------------------------------------------ API: what-if */

struct wi_req {
    struct vs_whatif_state *st;
    uint64_t version;
    const struct vs_dashboard *d;
    enum vs_err err;
};

static void wi_locked(void *ctx, const struct vs_model *m)
{
    struct wi_req *r = ctx;
    r->version = vs_store_version(r->d->a->store);
    r->err = vs_whatif_copy(m, &r->st);
}

static void api_whatif(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_dashboard *d = ctx;
    const struct vs_app *a = d->a;
    headers(d, resp);
    if (req->len > VS_WHATIF_MAX_BODY) {
        json_error(resp, 413, "the what-if body is larger than %u bytes", VS_WHATIF_MAX_BODY);
        return;
    }
    struct vs_whatif_req wr;
    struct vs_errbuf eb;
    if (vs_whatif_parse(req->body, req->len, a->cfg, &wr, &eb)) {
        json_error(resp, 400, "%s", eb.msg);
        return;
    }
    if (pthread_mutex_trylock(&d->whatif_mu) != 0) {
        vs_whatif_req_cleanup(&wr);
        json_error(resp, 429, "another what-if is being evaluated; try again in a moment");
        vs_http_add_header(resp, "Retry-After", "1");
        return;
    }
    struct wi_req r = {.d = d};
    vs_store_read(a->store, wi_locked, &r);
    char ver[64];
    snprintf(ver, sizeof(ver), "%s.s.%llu", d->boot, (unsigned long long)r.version);
    struct vs_whatif_opts o = {.cfg = a->cfg,
                               .node_policy = a->node_policy,
                               .gpu_policy = a->gpu_policy,
                               .frag_stats = a->frag_stats,
                               .version = ver,
                               .now = now_s()};
    char *out = r.err ? NULL : vs_whatif_run(r.st, &wr, &o);
    pthread_mutex_unlock(&d->whatif_mu);
    vs_whatif_state_free(r.st);
    vs_whatif_req_cleanup(&wr);
    json_ok(resp, out, NULL);
}

/* ------------------------------------------------------------------ routing */

/* Matches path (after the base, no leading '/') against template t (with its leading '/');
 * the {x} segments go to seg[] (at most 2, each < 256 bytes). */
static bool match(const char *t, const char *path, char seg[2][256])
{
    size_t ns = 0;
    t++;
    while (*t) {
        const char *te = strchr(t, '/'), *pe = strchr(path, '/');
        size_t tl = te ? (size_t)(te - t) : strlen(t), pl = pe ? (size_t)(pe - path) : strlen(path);
        if (t[0] == '{') {
            if (!pl || pl >= 256 || ns >= 2)
                return false;
            memcpy(seg[ns], path, pl);
            seg[ns++][pl] = '\0';
        } else if (tl != pl || memcmp(t, path, tl) != 0) {
            return false;
        }
        t += tl;
        path += pl;
        if (!*t)
            return !*path;
        if (*path != '/')
            return false;
        t++;
        path++;
    }
    return !*path;
}

static void api(struct vs_dashboard *d, const struct vs_http_req *req, struct vs_http_resp *resp,
                const char *rest)
{
    char seg[2][256];
    for (size_t i = 0; i < vs_dash_n_endpoints; i++) {
        if (strcmp(vs_dash_endpoints[i].method, "GET") != 0 ||
            !match(vs_dash_endpoints[i].path, rest, seg))
            continue;
        switch ((enum api_kind)i) {
        case A_SNAPSHOT:
            api_snapshot(d, req, resp);
            return;
        case A_NODE:
            api_node(d, req, resp, seg[0]);
            return;
        case A_PENDING:
            api_pending(d, req, resp);
            return;
        case A_PENDING_ONE:
            api_pending_one(d, resp, seg[0], seg[1]);
            return;
        case A_PODS:
            api_search(d, req, resp);
            return;
        case A_POD:
            api_pod(d, resp, seg[0], seg[1]);
            return;
        case A_FRAG:
            api_fragmentation(d, resp);
            return;
        case A_HEALTH:
            api_health(d, resp);
            return;
        case A_OPENAPI: {
            const struct vs_dash_asset *as = asset("api/v1/openapi.json");
            if (as) {
                serve_asset(req, resp, as);
                return;
            }
            break;
        }
        case A_WHATIF:
            break;
        }
    }
    json_error(resp, 404, "no such path: %.200s", req->path);
}

static void dash_get(void *ctx, const struct vs_http_req *req, struct vs_http_resp *resp)
{
    struct vs_dashboard *d = ctx;
    headers(d, resp);
    size_t bl = strlen(d->base);
    if (strncmp(req->path, d->base, bl) != 0) {
        /* the routes "/" (also a prefix of every path) and the bare base */
        if (strcmp(req->path, "/") != 0 && strcmp(req->path, d->base_bare) != 0) {
            json_error(resp, 404, "no such path: %.200s", req->path);
            return;
        }
        resp->status = 302;
        resp->content_type = "text/plain; charset=utf-8";
        vs_http_add_header(resp, "Location", d->base);
        resp->body = strdup("the dashboard is under its base path\n");
        return;
    }
    const char *rest = req->path + bl;
    if (strncmp(rest, "api/", 4) == 0) {
        api(d, req, resp, rest);
        return;
    }
    const struct vs_dash_asset *as = asset(*rest ? rest : "index.html");
    if (as) {
        serve_asset(req, resp, as);
        return;
    }
    json_error(resp, 404, "no such path: %.200s", req->path);
}

size_t vs_dashboard_routes(struct vs_dashboard *d, struct vs_route *out)
{
    size_t n = 0;
    out[n++] = (struct vs_route){"GET", d->base, dash_get, d, false, false};
    out[n++] = (struct vs_route){"POST", d->whatif, api_whatif, d, true, false};
    if (d->base_bare) {
        out[n++] = (struct vs_route){"GET", "/", dash_get, d, false, false};
        out[n++] = (struct vs_route){"GET", d->base_bare, dash_get, d, false, false};
    }
    return n;
}
