/* nvidia: the NVIDIA backend (spec/hami-compat.md): cards from hami.io/node-nvidia-register
 * (JSON or the legacy colon form) with NVLink/PCIe pair scores from hami.io/node-nvidia-score,
 * requests from nvidia.com/gpu, gpumem, gpumem-percentage and gpucores (the nvidia section of
 * device-config.yaml), the card selectors nvidia.com/use-gputype, nouse-gputype and vgpu-mode,
 * MIG cards, and Filter's hami.io/vgpu-devices-* and hami.io/vgpu-mig-allocations annotations. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "request.h"

/* A copy of the nvidia section's request keys: the backend outlives the vs_devcfg value it was
 * made from (callers copy and swap configurations). */
static void cfg_free(void *priv)
{
    struct vs_devcfg *c = priv;
    free(c->res_count);
    free(c->res_mem);
    free(c->res_mem_pct);
    free(c->res_cores);
    free(c);
}

static struct vs_devcfg *cfg_copy(const struct vs_devcfg *src)
{
    struct vs_devcfg *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->res_count = strdup(src->res_count ? src->res_count : "");
    c->res_mem = strdup(src->res_mem ? src->res_mem : "");
    c->res_mem_pct = strdup(src->res_mem_pct ? src->res_mem_pct : "");
    c->res_cores = strdup(src->res_cores ? src->res_cores : "");
    c->default_memory = src->default_memory;
    c->default_cores = src->default_cores;
    c->memory_factor = src->memory_factor;
    if (!c->res_count || !c->res_mem || !c->res_mem_pct || !c->res_cores) {
        cfg_free(c);
        return NULL;
    }
    return c;
}

/* ---- inventory ---- */

static uint64_t fnv(uint64_t h, const char *s)
{
    if (!s)
        return (h ^ 0xffu) * 0x100000001b3ULL;
    size_t n = 0;
    for (; s[n]; n++)
        h = (h ^ (unsigned char)s[n]) * 0x100000001b3ULL;
    return (h ^ n) * 0x100000001b3ULL;
}

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const char *reg = vs_kv_get(&kn->annotations, VS_ANNO_REGISTER);
    const char *score = vs_kv_get(&kn->annotations, VS_ANNO_SCORE);
    if (!reg && !score)
        return 0;
    uint64_t h = fnv(fnv(0xcbf29ce484222325ULL, reg), score);
    return h ? h : 1;
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    const char *reg = vs_kv_get(&kn->annotations, VS_ANNO_REGISTER);
    const char *score = vs_kv_get(&kn->annotations, VS_ANNO_SCORE);
    struct vs_topo topo = {0};
    enum vs_err err;
    if (!reg)
        return VS_OK;
    if ((err = vs_annot_parse_register(reg, &out->reg, eb)))
        return err;
    if (score && (err = vs_annot_parse_score(score, &topo, eb)))
        return err;
    size_t n = out->reg.n;
    if (topo.n) {
        out->topo = calloc(n * n, sizeof(*out->topo));
        if (!out->topo) {
            vs_topo_cleanup(&topo);
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
    }
    for (size_t t = 0; t < topo.n; t++) {
        size_t i;
        for (i = 0; i < n; i++)
            if (strcmp(out->reg.cards[i].uuid, topo.items[t].uuid) == 0)
                break;
        if (i == n)
            continue;
        for (size_t s = 0; s < topo.items[t].n; s++)
            for (size_t j = 0; j < n; j++)
                if (strcmp(out->reg.cards[j].uuid, topo.items[t].scores[s].other) == 0)
                    out->topo[i * n + j] = topo.items[t].scores[s].score;
    }
    vs_topo_cleanup(&topo);
    return VS_OK;
}

/* ---- requests and per-pod selectors ---- */

static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    return vs_request_nvidia(c, d->priv, out, eb);
}

struct podctx {
    struct vs_strlist use_type, nouse_type;
    const char *vgpu_mode; /* borrowed from the pod; NULL when absent */
    bool any_type;         /* no selector at all: every card's type is fine */
};

static void pod_end(void *ctx)
{
    struct podctx *x = ctx;
    if (!x)
        return;
    vs_strlist_cleanup(&x->use_type);
    vs_strlist_cleanup(&x->nouse_type);
    free(x);
}

static enum vs_err pod_begin(const struct vs_device *d, const struct vs_pod *p, void **ctx,
                             struct vs_errbuf *eb)
{
    struct podctx *x = calloc(1, sizeof(*x));
    if (!x)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    const struct vs_kvlist *an = &p->annotations;
    if (vs_annot_parse_list(vs_kv_get(an, VS_ANNO_USE_TYPE), &x->use_type) ||
        vs_annot_parse_list(vs_kv_get(an, VS_ANNO_NOUSE_TYPE), &x->nouse_type)) {
        pod_end(x);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    x->vgpu_mode = vs_kv_get(an, VS_ANNO_VGPU_MODE);
    x->any_type = !x->use_type.n && !x->nouse_type.n && !x->vgpu_mode;
    *ctx = x;
    return VS_OK;
}

/* nvidia.com/use-gputype, nouse-gputype (case-insensitive substrings of the model) and
 * nvidia.com/vgpu-mode (the card's mode must be named in it), compat §4.4. */
static bool type_ok(const struct vs_device *d, const void *ctx, const struct vs_card *c)
{
    const struct podctx *x = ctx;
    if (x->any_type)
        return true;
    if (x->use_type.n || x->nouse_type.n) {
        bool any_use = false, any_nouse = false;
        for (size_t i = 0; i < x->use_type.n; i++)
            any_use |= strcasestr(c->type, x->use_type.items[i]) != NULL;
        for (size_t i = 0; i < x->nouse_type.n; i++)
            any_nouse |= strcasestr(c->type, x->nouse_type.items[i]) != NULL;
        if ((x->use_type.n && !any_use) || any_nouse)
            return false;
    }
    if (x->vgpu_mode && !strstr(x->vgpu_mode, c->mode))
        return false;
    return true;
}

static uint64_t fold(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (h ^ 0xffu) * 0x100000001b3ULL;
}

/* What type_ok reads of the pod, folded into h. */
static uint64_t pod_sig(const void *ctx, uint64_t h)
{
    const struct podctx *x = ctx;
    for (size_t i = 0; i < x->use_type.n; i++)
        h = fold(h, x->use_type.items[i]);
    h = fold(h, "|");
    for (size_t i = 0; i < x->nouse_type.n; i++)
        h = fold(h, x->nouse_type.items[i]);
    h = fold(h, "|");
    return fold(h, x->vgpu_mode ? x->vgpu_mode : "\x01");
}

/* MIG cards count as several instances unless nvidia.com/vgpu-mode leaves mig out. */
static bool partitions_ok(const struct vs_device *d, const void *ctx)
{
    const struct podctx *x = ctx;
    return !x->vgpu_mode || strstr(x->vgpu_mode, "mig");
}

/* ---- annotations ---- */

static enum vs_err annotate(const struct vs_device *d, const struct vs_pod *p,
                            const struct vs_node *n, const struct vs_pod_devs *devs,
                            const struct vs_mig_allocs *mig, int64_t now_ns, json_t *out)
{
    enum vs_err err = vs_device_annotate_generic(d, devs, out);
    if (err)
        return err;
    if (mig && mig->n) {
        char *v = vs_annot_format_mig(mig);
        if (!v)
            return VS_ERR_NOMEM;
        int rc = json_object_set_new(out, VS_ANNO_MIG_ALLOC, json_string(v));
        free(v);
        return rc ? VS_ERR_NOMEM : VS_OK;
    }
    /* A stale MIG record from an earlier decision would fail MIG cards closed (compat
     * §11.12): removed whenever the new decision has none. */
    return json_object_set_new(out, VS_ANNO_MIG_ALLOC, json_null()) ? VS_ERR_NOMEM : VS_OK;
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .pod_begin = pod_begin,
    .pod_end = pod_end,
    .type_ok = type_ok,
    .partitions_ok = partitions_ok,
    .pod_sig = pod_sig,
    .annotate = annotate,
    .free_priv = cfg_free,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, VS_VENDOR, &ops);
    if (!d || !(d->priv = cfg_copy(cfg)))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->rules = (struct vs_fit_rules){.cordon = true,
                                     .numa = true,
                                     .quota = true,
                                     .clamp_cores = true,
                                     .topology = true,
                                     .partitions = true,
                                     .use_uuid = VS_ANNO_USE_UUID,
                                     .nouse_uuid = VS_ANNO_NOUSE_UUID};
    d->lock = VS_LOCK_SHARED;
    d->mem_factor = cfg->memory_factor > 1 ? cfg->memory_factor : 1;
    const char *managed[] = {cfg->res_count, cfg->res_mem, cfg->res_mem_pct, cfg->res_cores,
                             cfg->res_priority};
    bool ok = vs_device_set_str(&d->res_count, cfg->res_count) &&
              vs_device_set_str(&d->res_mem, cfg->res_mem) &&
              vs_device_set_str(&d->res_cores, cfg->res_cores) &&
              vs_device_set_str(&d->to_allocate_key, VS_ANNO_TO_ALLOCATE) &&
              vs_device_set_str(&d->allocated_key, VS_ANNO_ALLOCATED);
    for (size_t i = 0; ok && i < sizeof(managed) / sizeof(managed[0]); i++)
        ok = vs_device_add_managed(d, managed[i]);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_nvidia = {.name = "nvidia", .make = make};
