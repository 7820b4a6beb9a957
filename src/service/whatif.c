/* whatif: request decoding, the copy of the live model (vs_model_clone under the model's read
 * lock: every backend's cards, tracked pods, quotas and accounted requests as they are) and the
 * run of the simulate path on a copy of that copy, with Node objects made from it for
 * kube-scheduler's filters (name, unschedulable, allocatable). */
#include "whatif.h"

#include "annot.h"
#include "dash_json.h"
#include "dash_snap.h"
#include "policy.h"
#include "simulate.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the copy */

struct vs_whatif_state {
    struct vs_model *clone; /* the live model, deep-copied (vs_model_clone) */
};

void vs_whatif_state_free(struct vs_whatif_state *st)
{
    if (!st)
        return;
    vs_model_free(st->clone);
    free(st);
}

enum vs_err vs_whatif_copy(const struct vs_model *m, struct vs_whatif_state **out)
{
    *out = NULL;
    struct vs_whatif_state *st = calloc(1, sizeof(*st));
    if (!st || !(st->clone = vs_model_clone(m))) {
        free(st);
        return VS_ERR_NOMEM;
    }
    *out = st;
    return VS_OK;
}

/* ------------------------------------------------------------------ back to objects */

static char *xdup(const char *s)
{
    return strdup(s ? s : "");
}

static bool kv(struct vs_kvlist *l, const char *k, const char *v)
{
    return vs_kv_set(l, k, v) == VS_OK;
}

static bool kv_int(struct vs_kvlist *l, const char *k, long long v, const char *suffix)
{
    char buf[40];
    snprintf(buf, sizeof(buf), "%lld%s", v, suffix);
    return kv(l, k, buf);
}

/* The Node object kube-scheduler's filters see: its name, unschedulable and allocatable (the
 * service keeps no labels or taints). */
static bool node_object(const struct vs_node *n, struct vs_knode *k)
{
    memset(k, 0, sizeof(*k));
    if (!(k->name = xdup(n->name)) || !(k->resource_version = xdup("1")))
        return false;
    k->unschedulable = n->unschedulable;
    if ((n->res.alloc_cpu >= 0 && !kv_int(&k->allocatable, "cpu", n->res.alloc_cpu, "m")) ||
        (n->res.alloc_mem >= 0 && !kv_int(&k->allocatable, "memory", n->res.alloc_mem, "")) ||
        (n->res.alloc_eph >= 0 &&
         !kv_int(&k->allocatable, "ephemeral-storage", n->res.alloc_eph, "")) ||
        (n->res.alloc_pods >= 0 && !kv_int(&k->allocatable, "pods", n->res.alloc_pods, "")))
        return false;
    return true;
}

static bool add_container(struct vs_pod *p, const char *name)
{
    struct vs_container *g = realloc(p->ctrs, (p->n_ctrs + 1) * sizeof(*g));
    if (!g)
        return false;
    p->ctrs = g;
    memset(&g[p->n_ctrs], 0, sizeof(g[0]));
    g[p->n_ctrs].name = xdup(name);
    return g[p->n_ctrs++].name != NULL;
}

static bool pod_base(struct vs_pod *p, const char *ns, const char *name, const char *uid)
{
    memset(p, 0, sizeof(*p));
    return (p->ns = xdup(ns)) && (p->name = xdup(name)) && (p->uid = xdup(uid)) &&
           (p->node_name = xdup("")) && (p->scheduler_name = xdup("")) &&
           (p->phase = xdup("Running")) && (p->resource_version = xdup("1")) &&
           (p->nominated_node = xdup(""));
}

struct objects_ctx {
    struct vs_objset *out;
    size_t cap;
    bool oom;
};

static void add_node_object(void *ctx, const struct vs_node *n)
{
    struct objects_ctx *x = ctx;
    if (x->oom)
        return;
    if (x->out->n_nodes == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 64;
        struct vs_knode *g = realloc(x->out->nodes, nc * sizeof(*g));
        if (!g) {
            x->oom = true;
            return;
        }
        x->out->nodes = g;
        x->cap = nc;
    }
    bool ok = node_object(n, &x->out->nodes[x->out->n_nodes]);
    x->out->n_nodes++;
    x->oom = !ok;
}

enum vs_err vs_whatif_objects(const struct vs_whatif_state *st, const struct vs_devcfg *cfg,
                              struct vs_objset *out)
{
    (void)cfg;
    memset(out, 0, sizeof(*out));
    struct objects_ctx x = {.out = out};
    vs_model_each_node(st->clone, add_node_object, &x);
    if (x.oom) {
        vs_objset_cleanup(out);
        memset(out, 0, sizeof(*out));
        return VS_ERR_NOMEM;
    }
    return VS_OK;
}

/* ------------------------------------------------------------------ requests */

void vs_whatif_req_cleanup(struct vs_whatif_req *r)
{
    vs_objset_cleanup(&r->pods);
    free(r->node_policy);
    free(r->gpu_policy);
    memset(r, 0, sizeof(*r));
}

/* An integer field: absent/null leaves *out; else a whole number within [lo, hi]. */
static enum vs_err int_field(const json_t *o, const char *key, const char *where, long long lo,
                             long long hi, long long *out, bool *set, struct vs_errbuf *eb)
{
    const json_t *v = json_object_get(o, key);
    if (set)
        *set = false;
    if (!v || json_is_null(v))
        return VS_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return vs_err_set(eb, VS_ERR_INVAL, "%s%s must be a whole number from %lld to %lld", where,
                          key, lo, hi);
    *out = json_integer_value(v);
    if (set)
        *set = true;
    return VS_OK;
}

static enum vs_err str_field(const json_t *o, const char *key, const char *where, size_t max,
                             const char **out, struct vs_errbuf *eb)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return VS_OK;
    if (!json_is_string(v) || json_string_length(v) > max ||
        strlen(json_string_value(v)) != json_string_length(v))
        return vs_err_set(eb, VS_ERR_INVAL, "%s%s must be a string of at most %zu bytes", where,
                          key, max);
    *out = json_string_value(v);
    return VS_OK;
}

static enum vs_err known_keys(const json_t *o, const char *where, const char *const *keys,
                              const char *list, struct vs_errbuf *eb)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        bool ok = false;
        for (size_t i = 0; keys[i] && !ok; i++)
            ok = strcmp(keys[i], k) == 0;
        if (!ok) {
            char key[64];
            snprintf(key, sizeof(key), "%.60s", k);
            return vs_err_set(eb, VS_ERR_INVAL, "unknown field \"%s%s\" (want %s)", where, key,
                              list);
        }
    }
    return VS_OK;
}

static enum vs_err shape_pod(const json_t *sh, const struct vs_devcfg *cfg, struct vs_pod *p,
                             struct vs_errbuf *eb)
{
    static const char *const keys[] = {"cards", "memMiB",    "memPct", "coresPct", "type",
                                       "mode",  "namespace", "name",   "priority", NULL};
    enum vs_err err;
    if ((err = known_keys(sh, "shape.", keys,
                          "cards, memMiB, memPct, coresPct, type, mode, namespace, name, priority",
                          eb)))
        return err;
    long long cards = 1, mem = 0, pct = 0, cores = 0, prio = 0;
    bool has_mem, has_pct, has_cores;
    const char *type = NULL, *mode = NULL, *ns = "default", *name = "what-if";
    if ((err = int_field(sh, "cards", "shape.", 1, VS_WHATIF_MAX_CARDS, &cards, NULL, eb)) ||
        (err = int_field(sh, "memMiB", "shape.", 1, 2147483647, &mem, &has_mem, eb)) ||
        (err = int_field(sh, "memPct", "shape.", 1, 100, &pct, &has_pct, eb)) ||
        (err = int_field(sh, "coresPct", "shape.", 0, 100, &cores, &has_cores, eb)) ||
        (err =
             int_field(sh, "priority", "shape.", -2147483647LL - 1, 2147483647, &prio, NULL, eb)) ||
        (err = str_field(sh, "type", "shape.", 256, &type, eb)) ||
        (err = str_field(sh, "mode", "shape.", 16, &mode, eb)) ||
        (err = str_field(sh, "namespace", "shape.", 63, &ns, eb)) ||
        (err = str_field(sh, "name", "shape.", 200, &name, eb)))
        return err;
    if (has_mem && has_pct)
        return vs_err_set(eb, VS_ERR_INVAL, "shape.memMiB and shape.memPct exclude each other");
    if (mode && *mode && strcmp(mode, "hami-core") != 0 && strcmp(mode, "mig") != 0 &&
        strcmp(mode, "mps") != 0)
        return vs_err_set(eb, VS_ERR_INVAL, "shape.mode must be hami-core, mig or mps");
    if (!*ns || !*name)
        return vs_err_set(eb, VS_ERR_INVAL, "shape.namespace and shape.name must not be empty");
    if (!pod_base(p, ns, name, "") || !add_container(p, "main"))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    free(p->phase);
    p->phase = xdup("Pending");
    p->priority = (int32_t)prio;
    struct vs_kvlist *l = &p->ctrs[0].limits;
    if (!p->phase || !kv_int(l, cfg->res_count, cards, "") ||
        (has_mem && !kv_int(l, cfg->res_mem, mem, "")) ||
        (has_pct && !kv_int(l, cfg->res_mem_pct, pct, "")) ||
        (has_cores && !kv_int(l, cfg->res_cores, cores, "")) ||
        (type && *type && !kv(&p->annotations, VS_ANNO_USE_TYPE, type)) ||
        (mode && *mode && !kv(&p->annotations, VS_ANNO_VGPU_MODE, mode)))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    return VS_OK;
}

/* A pasted pod is scheduled afresh: a placement it carries, and the node constraints the
 * service cannot check, are left out. */
static bool strip_pod(struct vs_pod *p, struct vs_whatif_req *r)
{
    static const char *const keys[] = {VS_ANNO_VGPU_NODE, VS_ANNO_ALLOCATED,  VS_ANNO_TO_ALLOCATE,
                                       VS_ANNO_MIG_ALLOC, VS_ANNO_BIND_PHASE, VS_ANNO_BIND_TIME,
                                       VS_ANNO_VGPU_TIME};
    if ((p->node_name && *p->node_name) || vs_kv_get(&p->annotations, VS_ANNO_VGPU_NODE))
        r->dropped_placement = true;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        vs_kv_del(&p->annotations, keys[i]);
    free(p->node_name);
    free(p->nominated_node);
    p->node_name = xdup("");
    p->nominated_node = xdup("");
    if (p->node_selector.n || p->has_required_affinity || p->n_tols)
        r->dropped_selectors = true;
    vs_kv_cleanup(&p->node_selector);
    p->has_required_affinity = false;
    if (!p->ns || !*p->ns) {
        free(p->ns);
        p->ns = xdup("default");
    }
    free(p->phase);
    p->phase = xdup("Pending");
    return p->node_name && p->nominated_node && p->ns && p->phase;
}

/* Keeps the loader's first warning (a kind it skipped) for the error message. */
static void first_warning(void *ctx, const char *msg)
{
    char *w = ctx;
    if (!*w)
        snprintf(w, 200, "%s", msg);
}

static bool grow_pods(struct vs_objset *s, size_t n)
{
    struct vs_pod *g = realloc(s->pods, (s->n_pods + n) * sizeof(*g));
    if (!g)
        return false;
    s->pods = g;
    return true;
}

/* Copies pod n times (names suffixed -1, -2, ... when n > 1), with fresh UIDs. */
static enum vs_err replicate(struct vs_whatif_req *r, const struct vs_pod *src, long long n,
                             size_t *seq, struct vs_errbuf *eb)
{
    if (r->pods.n_pods + (size_t)n > VS_WHATIF_MAX_PODS)
        return vs_err_set(eb, VS_ERR_INVAL, "at most %d pods per what-if", VS_WHATIF_MAX_PODS);
    if (!grow_pods(&r->pods, (size_t)n))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    for (long long i = 0; i < n; i++) {
        struct vs_pod *d = &r->pods.pods[r->pods.n_pods];
        memset(d, 0, sizeof(*d));
        if (vs_pod_copy(d, src)) {
            vs_pod_cleanup(d);
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
        r->pods.n_pods++;
        char uid[48];
        snprintf(uid, sizeof(uid), "what-if-%zu", ++*seq);
        free(d->uid);
        d->uid = xdup(uid);
        if (n > 1) {
            size_t len = strlen(src->name) + 24;
            char *nm = malloc(len);
            if (nm)
                snprintf(nm, len, "%s-%lld", src->name, i + 1);
            free(d->name);
            d->name = nm;
        }
        if (!d->uid || !d->name)
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    return VS_OK;
}

enum vs_err vs_whatif_parse(const char *body, size_t len, const struct vs_devcfg *cfg,
                            struct vs_whatif_req *out, struct vs_errbuf *eb)
{
    static const char *const keys[] = {"shape", "pod", "count", "nodePolicy", "gpuPolicy", NULL};
    memset(out, 0, sizeof(*out));
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    struct vs_objset pasted = {0};
    struct vs_pod shape = {0};
    bool have_shape = false;
    enum vs_err err = VS_OK;
    size_t seq = 0;
    if (!root) {
        err = vs_err_set(eb, VS_ERR_PARSE, "invalid JSON at line %d: %s", je.line, je.text);
        goto out;
    }
    if (!json_is_object(root)) {
        err = vs_err_set(eb, VS_ERR_INVAL, "the body must be a JSON object");
        goto out;
    }
    if ((err = known_keys(root, "", keys, "shape, pod, count, nodePolicy, gpuPolicy", eb)))
        goto out;
    const json_t *sh = json_object_get(root, "shape");
    const json_t *pod = json_object_get(root, "pod");
    if ((sh && !json_is_null(sh)) == (pod && !json_is_null(pod))) {
        err = vs_err_set(eb, VS_ERR_INVAL, "give exactly one of \"shape\" and \"pod\"");
        goto out;
    }
    long long count = 1;
    const char *np = NULL, *gp = NULL;
    if ((err = int_field(root, "count", "", 1, VS_WHATIF_MAX_PODS, &count, NULL, eb)) ||
        (err = str_field(root, "nodePolicy", "", 64, &np, eb)) ||
        (err = str_field(root, "gpuPolicy", "", 256, &gp, eb)))
        goto out;
    const struct vs_node_policy *npol;
    struct vs_gpu_policy gpol;
    if ((np && *np && (err = vs_policy_parse_node(np, "nodePolicy", &npol, eb))) ||
        (gp && *gp && (err = vs_policy_parse_gpu(gp, "gpuPolicy", &gpol, eb))))
        goto out;
    if ((np && *np && !(out->node_policy = strdup(np))) ||
        (gp && *gp && !(out->gpu_policy = strdup(gp)))) {
        err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (sh) {
        if (!json_is_object(sh)) {
            err = vs_err_set(eb, VS_ERR_INVAL, "shape must be an object");
            goto out;
        }
        have_shape = true;
        if ((err = shape_pod(sh, cfg, &shape, eb)) ||
            (err = replicate(out, &shape, count, &seq, eb)))
            goto out;
    } else {
        if (!json_is_string(pod)) {
            err = vs_err_set(eb, VS_ERR_INVAL, "pod must be the pod's JSON or YAML text");
            goto out;
        }
        struct vs_errbuf le;
        char warn[200] = "";
        if (vs_loader_load_buf(json_string_value(pod), json_string_length(pod), "pod", &pasted,
                               first_warning, warn, &le)) {
            err = vs_err_set(eb, VS_ERR_INVAL, "%s", le.msg);
            goto out;
        }
        if (!pasted.n_pods) {
            char why[210] = "";
            if (*warn)
                snprintf(why, sizeof(why), " (%.200s)", warn);
            err = vs_err_set(eb, VS_ERR_INVAL, "pod: the text holds no object of kind Pod%s", why);
            goto out;
        }
        for (size_t i = 0; i < pasted.n_pods; i++) {
            if (!strip_pod(&pasted.pods[i], out)) {
                err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
                goto out;
            }
            if ((err = replicate(out, &pasted.pods[i], count, &seq, eb)))
                goto out;
        }
    }
out:
    if (have_shape)
        vs_pod_cleanup(&shape);
    vs_objset_cleanup(&pasted);
    json_decref(root);
    if (err)
        vs_whatif_req_cleanup(out);
    return err;
}

/* ------------------------------------------------------------------ the answer */

static void devices_json(struct vs_jw *w, const char *devices)
{
    struct vs_pod_devs d = {0};
    struct vs_errbuf eb;
    vs_jw_key(w, "containers");
    vs_jw_arr(w);
    if (devices && vs_annot_parse_devices(VS_ANNO_ALLOCATED, devices, &d, &eb) == VS_OK) {
        for (size_t i = 0; i < d.n; i++) {
            vs_jw_obj(w);
            vs_jw_key(w, "index");
            vs_jw_int(w, (int64_t)i);
            vs_jw_key(w, "devices");
            vs_jw_arr(w);
            for (size_t k = 0; k < d.ctrs[i].n; k++) {
                vs_jw_obj(w);
                vs_jw_key(w, "uuid");
                vs_jw_str(w, d.ctrs[i].devs[k].uuid);
                vs_jw_key(w, "memMiB");
                vs_jw_int(w, d.ctrs[i].devs[k].usedmem);
                vs_jw_key(w, "coresPct");
                vs_jw_int(w, d.ctrs[i].devs[k].usedcores);
                vs_jw_end_obj(w);
            }
            vs_jw_end_arr(w);
            vs_jw_end_obj(w);
        }
    }
    vs_pod_devs_cleanup(&d);
    vs_jw_end_arr(w);
}

/* The card index of uuid on node in the model after the run, -1 when not found. */
static long card_index(const struct vs_model *m, const char *node, const char *uuid)
{
    const struct vs_node *n = vs_model_node(m, node);
    for (size_t i = 0; n && i < n->n_cards; i++)
        if (strcmp(n->cards[i].uuid, uuid) == 0)
            return (long)n->cards[i].index;
    return -1;
}

char *vs_whatif_run(const struct vs_whatif_state *st, struct vs_whatif_req *req,
                    const struct vs_whatif_opts *o)
{
    struct vs_objset cl;
    if (vs_whatif_objects(st, o->cfg, &cl))
        return NULL;
    /* The run changes the model it is given: each run gets a copy of the copy. */
    struct vs_model *work = vs_model_clone(st->clone);
    if (!work) {
        vs_objset_cleanup(&cl);
        return NULL;
    }
    struct vs_sim_run_opts ro = {.cfg = o->cfg,
                                 .model = work,
                                 .node_policy =
                                     req->node_policy ? req->node_policy : o->node_policy,
                                 .gpu_policy = req->gpu_policy ? req->gpu_policy : o->gpu_policy,
                                 .table_full_max = 50,
                                 .frag_stats = o->frag_stats,
                                 .source = "the service's state"};
    struct vs_sim_pod *res = NULL;
    size_t n_res = 0;
    struct vs_model *m = NULL;
    char *text = NULL;
    if (vs_simulate_run(&cl, &req->pods, &ro, NULL, &res, &n_res, &m))
        goto out;
    struct vs_buf b;
    vs_buf_init(&b);
    struct vs_jw w;
    vs_jw_init(&w, &b);
    vs_jw_obj(&w);
    vs_jw_key(&w, "basedOn");
    vs_jw_obj(&w);
    vs_jw_key(&w, "version");
    vs_jw_str(&w, o->version);
    vs_jw_key(&w, "generatedAt");
    vs_jw_int(&w, o->now);
    vs_jw_key(&w, "nodes");
    vs_jw_int(&w, (int64_t)cl.n_nodes);
    vs_jw_end_obj(&w);
    vs_jw_key(&w, "nodePolicy");
    vs_jw_str(&w, ro.node_policy ? ro.node_policy : "binpack");
    vs_jw_key(&w, "gpuPolicy");
    vs_jw_str(&w, ro.gpu_policy ? ro.gpu_policy : "spread");
    vs_jw_key(&w, "notes");
    vs_jw_arr(&w);
    vs_jw_str(&w, "evaluated on a private copy of the service's state: nothing was reserved or "
                  "written");
    if (req->dropped_selectors)
        vs_jw_str(&w, "nodeSelector, node affinity and tolerations were not evaluated: the "
                      "service keeps no node labels or taints");
    if (req->dropped_placement)
        vs_jw_str(&w, "the pod's own node and device placement were left out: it is scheduled "
                      "afresh");
    vs_jw_end_arr(&w);
    vs_jw_key(&w, "results");
    vs_jw_arr(&w);
    for (size_t i = 0; i < n_res; i++) {
        const struct vs_sim_pod *r = &res[i];
        vs_jw_obj(&w);
        vs_jw_key(&w, "pod");
        vs_jw_str(&w, r->pod);
        vs_jw_key(&w, "node");
        vs_jw_str(&w, r->node);
        vs_jw_key(&w, "error");
        vs_jw_str(&w, r->error);
        vs_jw_key(&w, "score");
        if (r->node && r->devices)
            vs_jw_num(&w, r->score);
        else
            vs_jw_null(&w);
        devices_json(&w, r->devices);
        vs_jw_key(&w, "cards");
        vs_jw_arr(&w);
        if (r->node && r->devices) {
            struct vs_pod_devs d = {0};
            struct vs_errbuf eb;
            if (vs_annot_parse_devices(VS_ANNO_ALLOCATED, r->devices, &d, &eb) == VS_OK) {
                for (size_t c = 0; c < d.n; c++)
                    for (size_t k = 0; k < d.ctrs[c].n; k++) {
                        vs_jw_obj(&w);
                        vs_jw_key(&w, "container");
                        vs_jw_int(&w, (int64_t)c);
                        vs_jw_key(&w, "uuid");
                        vs_jw_str(&w, d.ctrs[c].devs[k].uuid);
                        vs_jw_key(&w, "index");
                        long idx = card_index(m, r->node, d.ctrs[c].devs[k].uuid);
                        if (idx >= 0)
                            vs_jw_int(&w, idx);
                        else
                            vs_jw_null(&w);
                        vs_jw_end_obj(&w);
                    }
            }
            vs_pod_devs_cleanup(&d);
        }
        vs_jw_end_arr(&w);
        vs_jw_key(&w, "reasonsSummary");
        vs_jw_bool(&w, r->reasons_summary);
        vs_jw_key(&w, "reasons");
        vs_jw_arr(&w);
        for (size_t k = 0; k < r->reasons.n; k++) {
            vs_jw_obj(&w);
            if (r->reasons_summary) {
                vs_jw_key(&w, "reason");
                vs_jw_str(&w, r->reasons.items[k].key);
                vs_jw_key(&w, "nodes");
                vs_jw_int(&w, strtoll(r->reasons.items[k].val, NULL, 10));
            } else {
                vs_jw_key(&w, "node");
                vs_jw_str(&w, r->reasons.items[k].key);
                vs_jw_key(&w, "reason");
                vs_jw_str(&w, r->reasons.items[k].val);
            }
            vs_jw_end_obj(&w);
        }
        vs_jw_end_arr(&w);
        vs_jw_key(&w, "preemption");
        if (r->n_victims) {
            vs_jw_obj(&w);
            vs_jw_key(&w, "victims");
            vs_jw_arr(&w);
            for (size_t k = 0; k < r->n_victims; k++)
                vs_jw_str(&w, r->victims[k]);
            vs_jw_end_arr(&w);
            vs_jw_end_obj(&w);
        } else {
            vs_jw_null(&w);
        }
        vs_jw_end_obj(&w);
    }
    vs_jw_end_arr(&w);
    vs_jw_end_obj(&w);
    text = vs_buf_steal(&b);
out:
    for (size_t i = 0; i < n_res; i++)
        vs_sim_pod_cleanup(&res[i]);
    free(res);
    vs_model_free(m);
    vs_objset_cleanup(&cl);
    return text;
}
