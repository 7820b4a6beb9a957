/* builders: compact constructors of Node/Pod structs and a model for engine tests. Header-only
 * (static functions) so each test file stays self-contained. Allocation failures abort. */
#ifndef VS_TEST_BUILDERS_H
#define VS_TEST_BUILDERS_H

#include "annot.h"
#include "devcfg.h"
#include "kobj.h"
#include "model.h"
#include "sched.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline char *tb_strdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        abort();
    return d;
}

/* One card of a register annotation: id, index, numa, count, devmem, devcore, health. */
static inline void tb_card(char *buf, size_t len, const char *id, int index, int numa, int count,
                           int devmem, int devcore, int health)
{
    snprintf(buf, len,
             "{\"id\":\"%s\",\"index\":%d,\"count\":%d,\"devmem\":%d,\"devcore\":%d,"
             "\"type\":\"NVIDIA\",\"numa\":%d,\"health\":%s,\"mode\":\"hami-core\"}",
             id, index, count, devmem, devcore, numa, health ? "true" : "false");
}

/* Adds a node whose register annotation is `reg`; optional score and cordon annotations. */
static inline void tb_node(struct vs_model *m, const char *name, const char *reg, const char *score,
                           const char *cordon)
{
    struct vs_knode n;
    memset(&n, 0, sizeof(n));
    n.name = tb_strdup(name);
    n.resource_version = tb_strdup("1");
    if (reg)
        vs_kv_set(&n.annotations, VS_ANNO_REGISTER, reg);
    if (score)
        vs_kv_set(&n.annotations, VS_ANNO_SCORE, score);
    if (cordon)
        vs_kv_set(&n.annotations, VS_ANNO_CORDON, cordon);
    struct vs_errbuf eb;
    if (vs_model_upsert_node(m, &n, &eb) == VS_ERR_NOMEM)
        abort();
    vs_knode_cleanup(&n);
}

static inline void tb_pod(struct vs_pod *p, const char *ns, const char *name, const char *uid)
{
    memset(p, 0, sizeof(*p));
    p->ns = tb_strdup(ns);
    p->name = tb_strdup(name);
    p->uid = tb_strdup(uid);
    p->node_name = tb_strdup("");
    p->scheduler_name = tb_strdup("");
    p->phase = tb_strdup("Pending");
    p->resource_version = tb_strdup("1");
}

/* Appends a container; NULL resources are absent. */
static inline struct vs_container *tb_ctr(struct vs_pod *p, int init, const char *name,
                                          const char *gpu, const char *mem, const char *pct,
                                          const char *cores)
{
    struct vs_container **arr = init ? &p->init : &p->ctrs;
    size_t *n = init ? &p->n_init : &p->n_ctrs;
    *arr = realloc(*arr, (*n + 1) * sizeof(**arr));
    if (!*arr)
        abort();
    struct vs_container *c = &(*arr)[(*n)++];
    memset(c, 0, sizeof(*c));
    c->name = tb_strdup(name);
    if (gpu)
        vs_kv_set(&c->limits, "nvidia.com/gpu", gpu);
    if (mem)
        vs_kv_set(&c->limits, "nvidia.com/gpumem", mem);
    if (pct)
        vs_kv_set(&c->limits, "nvidia.com/gpumem-percentage", pct);
    if (cores)
        vs_kv_set(&c->limits, "nvidia.com/gpucores", cores);
    return c;
}

static inline void tb_anno(struct vs_pod *p, const char *k, const char *v)
{
    vs_kv_set(&p->annotations, k, v);
}

/* A running pod already placed on `node` with allocation `alloc` (one container per entry
 * unless the caller adds containers itself). */
static inline void tb_place(struct vs_model *m, const char *uid, const char *node,
                            const char *alloc)
{
    struct vs_pod p;
    tb_pod(&p, "default", uid, uid);
    free(p.phase);
    p.phase = tb_strdup("Running");
    tb_anno(&p, VS_ANNO_VGPU_NODE, node);
    tb_anno(&p, VS_ANNO_ALLOCATED, alloc);
    struct vs_errbuf eb;
    vs_model_upsert_pod(m, &p, &eb);
    vs_pod_cleanup(&p);
}

/* `n` slots of usage on card `uuid` totalling mem/cores (n app entries). */
static inline void tb_use(struct vs_model *m, const char *uid, const char *node, const char *uuid,
                          int slots, int mem, int cores)
{
    size_t cap = (size_t)slots * 96 + 16;
    char *s = calloc(1, cap);
    if (!s)
        abort();
    for (int i = 0; i < slots; i++) {
        char e[128];
        snprintf(e, sizeof(e), "%s,NVIDIA,%d,%d:;", uuid, i == 0 ? mem : 0, i == 0 ? cores : 0);
        strcat(s, e);
    }
    tb_place(m, uid, node, s);
    free(s);
}

/* Runs Filter over the named candidates with the given default policies. */
static inline void tb_filter(const struct vs_model *m, const struct vs_pod *p,
                             const char *node_policy, const char *gpu_policy,
                             const char *const *cands, size_t n, struct vs_filter_result *r)
{
    static struct vs_devcfg cfg;
    static int init;
    if (!init) {
        vs_devcfg_init(&cfg);
        init = 1;
    }
    struct vs_sched_opts o = {.cfg = &cfg, .node_policy = node_policy, .gpu_policy = gpu_policy};
    if (vs_sched_filter(m, p, cands, n, &o, r))
        abort();
}

/* The NVIDIA backend's id in the model's set. */
static inline uint16_t tb_nv(const struct vs_model *m)
{
    return vs_devices_find(vs_model_devices(m), VS_VENDOR)->id;
}

/* Namespace ns's quota on NVIDIA (the namespace must have a quota entry). */
static inline const struct vs_quota_res *tb_quota(const struct vs_model *m, const char *ns)
{
    return &vs_model_quota(m, ns)->res[tb_nv(m)];
}

/* vs_model_reserve of NVIDIA picks devs. */
static inline enum vs_err tb_reserve(struct vs_model *m, const struct vs_pod *p, const char *node,
                                     const struct vs_pod_devs *devs, int64_t now)
{
    struct vs_dev_alloc a = {.dev = tb_nv(m), .devs = *devs};
    return vs_model_reserve(m, p, node, &a, 1, NULL, now);
}

/* Encoded devices of the chosen node: its first backend's ("" when none). New string. */
static inline char *tb_devices(const struct vs_filter_result *r)
{
    if (r->best < 0 || r->nodes[r->best].n_allocs == 0)
        return tb_strdup("");
    return vs_annot_format_devices(&r->nodes[r->best].allocs[0].devs);
}

#endif
