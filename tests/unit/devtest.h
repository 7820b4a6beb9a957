/* devtest: a small harness for device backend tests. A cluster is written as YAML (Nodes and
 * placed Pods, as `kubectl get -o yaml` prints them) and loaded into a model on a device
 * configuration (optionally a device-config.yaml text and the --enable-* switches); pods are then
 * filtered one at a time, each placed pod committed so the next sees it, and every outcome is
 * rendered as one line of text a test compares exactly:
 *   fit:      "<node> <key>=<value> <key>=<value> ..." (every annotation the decision writes,
 *             keys sorted, hami.io/vgpu-node left out, removals as <key>=null)
 *   refused:  "refused <node>: <reason>; <node>: <reason>"
 *   error:    "error: <message>"
 * Header-only; allocation failures abort. */
#ifndef VS_TEST_DEVTEST_H
#define VS_TEST_DEVTEST_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "devcfg.h"
#include "devcfg_yaml.h"
#include "device.h"
#include "loader.h"
#include "model.h"
#include "request.h"
#include "sched.h"

struct dt {
    struct vs_devcfg cfg;
    struct vs_objset set;
    struct vs_model *m;
    char err[VS_ERRBUF_SIZE]; /* the last load error */
};

static void dt_warn(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

/* A configuration from devcfg (NULL: HAMi's chart defaults) and the switches. On a bad
 * configuration returns false with the message in t->err. */
static inline bool dt_init(struct dt *t, const char *devcfg, bool ascend, bool iluvatar)
{
    struct vs_errbuf eb;
    memset(t, 0, sizeof(*t));
    if (vs_devcfg_init(&t->cfg))
        abort();
    t->cfg.enable_ascend = ascend;
    t->cfg.enable_iluvatar = iluvatar;
    enum vs_err err = devcfg ? vs_devcfg_load_buf(&t->cfg, devcfg, strlen(devcfg), "cfg", &eb)
                             : vs_devcfg_finish(&t->cfg, &eb);
    if (err) {
        snprintf(t->err, sizeof(t->err), "%s", eb.msg);
        return false;
    }
    if (!(t->m = vs_model_new(t->cfg.devices)))
        abort();
    return true;
}

static inline void dt_cleanup(struct dt *t)
{
    vs_model_free(t->m);
    vs_objset_cleanup(&t->set);
    vs_devcfg_cleanup(&t->cfg);
}

/* Loads yaml: its Nodes go into the model (a node's inventory error, if any, into t->err), its
 * pods with hami.io/vgpu-node are tracked; the others wait for dt_filter. */
static inline void dt_load(struct dt *t, const char *yaml)
{
    struct vs_errbuf eb;
    size_t n0 = t->set.n_nodes, p0 = t->set.n_pods;
    if (vs_loader_load_buf(yaml, strlen(yaml), "cluster", &t->set, dt_warn, NULL, &eb)) {
        fprintf(stderr, "devtest: %s\n", eb.msg);
        abort();
    }
    for (size_t i = n0; i < t->set.n_nodes; i++) {
        eb.msg[0] = '\0';
        if (vs_model_upsert_node(t->m, &t->set.nodes[i], &eb) == VS_ERR_NOMEM)
            abort();
        if (eb.msg[0])
            snprintf(t->err, sizeof(t->err), "%s", eb.msg);
    }
    for (size_t i = p0; i < t->set.n_pods; i++) {
        if (vs_kv_get(&t->set.pods[i].annotations, VS_ANNO_VGPU_NODE) &&
            vs_model_upsert_pod(t->m, &t->set.pods[i], &eb) == VS_ERR_NOMEM)
            abort();
    }
}

static inline const struct vs_pod *dt_pod(const struct dt *t, const char *name)
{
    for (size_t i = 0; i < t->set.n_pods; i++)
        if (strcmp(t->set.pods[i].name, name) == 0)
            return &t->set.pods[i];
    fprintf(stderr, "devtest: no pod %s\n", name);
    abort();
}

static inline int dt_key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Filters pod `name` on every loaded node with node and card policies np/gp (NULL: binpack,
 * spread); a placed pod is committed. Returns the outcome line (free with free()). */
static inline char *dt_filter_with(struct dt *t, const char *name, const char *np, const char *gp)
{
    const struct vs_pod *p = dt_pod(t, name);
    const char **cands = calloc(t->set.n_nodes + 1, sizeof(*cands));
    for (size_t i = 0; i < t->set.n_nodes; i++)
        cands[i] = t->set.nodes[i].name;
    struct vs_sched_opts o = {.cfg = &t->cfg, .node_policy = np, .gpu_policy = gp};
    struct vs_filter_result r;
    struct vs_errbuf eb;
    if (vs_sched_filter(t->m, p, cands, t->set.n_nodes, &o, &r))
        abort();
    struct vs_buf b;
    vs_buf_init(&b);
    if (r.error) {
        vs_buf_printf(&b, "error: %s", r.error);
    } else if (!r.managed) {
        vs_buf_puts(&b, "unmanaged");
    } else if (r.best < 0) {
        vs_buf_puts(&b, "refused ");
        for (size_t i = 0; i < r.n; i++)
            vs_buf_printf(&b, "%s%s: %s", i ? "; " : "", r.nodes[i].node,
                          r.nodes[i].reason ? r.nodes[i].reason : "(none)");
    } else {
        const struct vs_node_fit *f = &r.nodes[r.best];
        json_t *an = json_object();
        if (!an || vs_sched_annotations(t->cfg.devices, p, vs_model_node(t->m, f->node), f, 0, an))
            abort();
        const char *keys[64];
        size_t nk = 0;
        const char *k;
        json_t *v;
        json_object_foreach(an, k, v)
        {
            if (strcmp(k, VS_ANNO_VGPU_NODE) != 0 && nk < 64)
                keys[nk++] = k;
        }
        qsort(keys, nk, sizeof(keys[0]), dt_key_cmp);
        vs_buf_puts(&b, f->node);
        for (size_t i = 0; i < nk; i++) {
            v = json_object_get(an, keys[i]);
            vs_buf_printf(&b, " %s=%s", keys[i], json_is_string(v) ? json_string_value(v) : "null");
        }
        json_decref(an);
        if (vs_sched_commit(t->m, p, &r, 0, &eb))
            abort();
    }
    vs_filter_result_cleanup(&r);
    free(cands);
    char *s = vs_buf_steal(&b);
    if (!s)
        abort();
    return s;
}

static inline char *dt_filter(struct dt *t, const char *name)
{
    return dt_filter_with(t, name, NULL, NULL);
}

/* The requests pod `name` makes, as "<word> <nums>,<memreq>,<pct>,<cores>" per container and
 * backend joined with "; " (init containers first; "-" for a container asking for nothing), or
 * "error: <message>". */
static inline char *dt_requests(struct dt *t, const char *name)
{
    const struct vs_pod *p = dt_pod(t, name);
    struct vs_pod_req q;
    struct vs_errbuf eb;
    struct vs_buf b;
    vs_buf_init(&b);
    enum vs_err err = vs_request_build(p, &t->cfg, &q, &eb);
    if (err == VS_ERR_NOMEM)
        abort();
    if (err) {
        vs_buf_printf(&b, "error: %s", eb.msg);
    } else {
        size_t nc = q.n_init + q.n_ctrs;
        for (size_t i = 0; i < nc; i++) {
            const struct vs_ctr_req *cr = i < q.n_init ? &q.init[i] : &q.ctrs[i - q.n_init];
            vs_buf_puts(&b, i ? "; " : "");
            if (!cr->n)
                vs_buf_puts(&b, "-");
            for (size_t k = 0; k < cr->n; k++) {
                const struct vs_req *r = &cr->r[k];
                vs_buf_printf(&b, "%s%s %d,%d,%d,%d", k ? " " : "",
                              t->cfg.devices->dev[r->dev]->word, r->nums, r->memreq, r->pct,
                              r->cores);
            }
        }
    }
    vs_pod_req_cleanup(&q);
    char *s = vs_buf_steal(&b);
    if (!s)
        abort();
    return s;
}

/* The cards the model holds for node `name`, one "<uuid>,<type>,<index>,<count>,<devmem>,
 * <devcore>,<numa>,<health>,<mode>" per card joined with "; ", or "error: <inventory error>". */
static inline char *dt_cards(struct dt *t, const char *name)
{
    const struct vs_node *n = vs_model_node(t->m, name);
    struct vs_buf b;
    vs_buf_init(&b);
    if (!n)
        vs_buf_puts(&b, "no node");
    else if (n->error)
        vs_buf_printf(&b, "error: %s", n->error);
    for (size_t i = 0; n && !n->error && i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        vs_buf_printf(&b, "%s%s,%s,%u,%d,%d,%d,%d,%s,%s", i ? "; " : "", c->uuid, c->type, c->index,
                      c->count, c->devmem, c->devcore, c->numa, c->health ? "true" : "false",
                      c->mode);
    }
    char *s = vs_buf_steal(&b);
    if (!s)
        abort();
    return s;
}

/* What backend `word`'s admission hook makes of every container of pod `name` (init containers
 * first): per container "found" or "-", then its changes (" limit k=v", " request k=v",
 * " env k=v", " annotation k=v", " runtime v"), containers joined with "; "; or
 * "error: <message>" at the first container the hook refuses. */
static inline char *dt_admit(struct dt *t, const char *name, const char *word)
{
    static const char *const kinds[] = {"limit", "request", "env", "annotation", "runtime"};
    const struct vs_pod *p = dt_pod(t, name);
    const struct vs_device *d = vs_devices_find(t->cfg.devices, word);
    struct vs_buf b;
    vs_buf_init(&b);
    if (!d) {
        fprintf(stderr, "devtest: no backend %s\n", word);
        abort();
    }
    for (size_t i = 0; i < p->n_init + p->n_ctrs; i++) {
        const struct vs_container *c = i < p->n_init ? &p->init[i] : &p->ctrs[i - p->n_init];
        struct vs_admit a = {0};
        struct vs_errbuf eb;
        bool found = false;
        enum vs_err err = VS_OK;
        if (d->ops->admit)
            err = d->ops->admit(d, p, c, i < p->n_init, &a, &found, &eb);
        else
            found = d->res_count && vs_kv_get(&c->limits, d->res_count);
        if (err) {
            vs_admit_cleanup(&a);
            vs_buf_cleanup(&b);
            vs_buf_init(&b);
            vs_buf_printf(&b, "error: %s", eb.msg);
            break;
        }
        vs_buf_printf(&b, "%s%s", i ? "; " : "", found ? "found" : "-");
        for (size_t k = 0; k < a.n; k++) {
            if (a.ops[k].kind == VS_ADMIT_RUNTIME)
                vs_buf_printf(&b, " runtime %s", a.ops[k].value);
            else
                vs_buf_printf(&b, " %s %s=%s", kinds[a.ops[k].kind], a.ops[k].key, a.ops[k].value);
        }
        vs_admit_cleanup(&a);
    }
    char *s = vs_buf_steal(&b);
    if (!s)
        abort();
    return s;
}

/* Filters pod `name` (node and card policies np/gp, NULL: binpack, spread) without committing
 * it and renders every node's outcome as "<node>=<score>" (score with 4 decimals) or
 * "<node>: <reason>", joined with "; ". */
static inline char *dt_scores(struct dt *t, const char *name, const char *np, const char *gp)
{
    const struct vs_pod *p = dt_pod(t, name);
    const char **cands = calloc(t->set.n_nodes + 1, sizeof(*cands));
    for (size_t i = 0; i < t->set.n_nodes; i++)
        cands[i] = t->set.nodes[i].name;
    struct vs_sched_opts o = {.cfg = &t->cfg, .node_policy = np, .gpu_policy = gp};
    struct vs_filter_result r;
    if (vs_sched_filter(t->m, p, cands, t->set.n_nodes, &o, &r))
        abort();
    struct vs_buf b;
    vs_buf_init(&b);
    if (r.error)
        vs_buf_printf(&b, "error: %s", r.error);
    for (size_t i = 0; !r.error && i < r.n; i++) {
        if (r.nodes[i].fit)
            vs_buf_printf(&b, "%s%s=%.4f", i ? "; " : "", r.nodes[i].node, r.nodes[i].score);
        else
            vs_buf_printf(&b, "%s%s: %s", i ? "; " : "", r.nodes[i].node,
                          r.nodes[i].reason ? r.nodes[i].reason : "(none)");
    }
    vs_filter_result_cleanup(&r);
    free(cands);
    char *s = vs_buf_steal(&b);
    if (!s)
        abort();
    return s;
}

#endif
