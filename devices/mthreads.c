/* mthreads: Moore Threads (spec/hami-vendors.md §2.6). No register annotation: a node's cards
 * come from its status.capacity — one card per 16 of mthreads.com/sgpu-core, the node's
 * mthreads.com/sgpu-memory (units of 512 MiB) shared evenly, ids <node>-mthreads-<i>, 16 cores
 * each. Requests from the mthreads section's count, memory (units of 512 MiB) and cores (16 per
 * card, 0 when absent), given per container and divided by the count; the generic G-Fit with a
 * case-sensitive type check, mthreads.ai/use-gpuuuid / nouse-gpuuuid and HAMi's custom rule (all
 * of a pod's containers on one card). Filter writes only hami.io/mthreads-vgpu-devices-allocated,
 * mthreads.com/gpu-index (the card indices of the last container with cards),
 * mthreads.com/predicate-node and mthreads.com/predicate-time. Admission forces whole cards for
 * more than one card and for one card without a memory limit, and checks the memory against
 * the valid sGPU sizes. No node lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "quantity.h"
#include "request.h"

#define WORD    "Mthreads"
#define SECTION "mthreads"
#define FACTOR  512
#define CORES   16 /* cores per card */
#define MEMORY  96 /* memory units per card (512 MiB each) */
#define I32MAX  2147483647LL
/* At most 1024 cards per node (sgpu-core capacity 16384). */
#define MAX_CORES (CORES * 1024LL)

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const char *names[] = {d->res_cores, d->res_mem};
    return vs_device_fp_capacity(kn, names, 2);
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    int64_t cores, mem;
    enum vs_err err;
    if ((err = vs_device_capacity_max(kn, d->res_cores, MAX_CORES, &cores, eb)) ||
        (err = vs_device_capacity_max(kn, d->res_mem, I32MAX, &mem, eb)))
        return err;
    if (cores == 0)
        return VS_OK;
    int64_t devmem = mem * FACTOR * CORES / cores;
    if (devmem > I32MAX)
        return vs_err_set(eb, VS_ERR_PARSE,
                          "status.capacity[\"%s\"] %lld over %lld cards is more than %lld MiB "
                          "per card",
                          d->res_mem, (long long)mem, (long long)((cores + CORES - 1) / CORES),
                          I32MAX);
    for (int64_t i = 0; i * CORES < cores; i++) {
        char id[300];
        snprintf(id, sizeof(id), "%s-mthreads-%lld", kn->name, (long long)i);
        struct vs_card_reg *c = vs_device_add_card(out, id, WORD);
        if (!c)
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        c->count = 100;
        c->devmem = (int32_t)devmem;
        c->devcore = CORES;
    }
    return VS_OK;
}

/* count: limits then requests, 1..2^31-1; memory in units of 512 MiB; cores 0 when absent; both
 * given for the container and split over its cards. Pct 100 (the whole card's memory) when no
 * memory is asked. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n, mem = 0, cores = 0;
    bool has;
    enum vs_err err;
    if ((err = vs_device_qty(c, d->res_count, false, 0, I32MAX, &n, &has, eb)) || !has || !n)
        return err;
    if ((err = vs_device_qty(c, d->res_mem, false, 0, I32MAX / FACTOR, &mem, &has, eb)))
        return err;
    if ((err = vs_device_qty(c, d->res_cores, false, 0, I32MAX, &cores, &has, eb)))
        return err;
    out->nums = (int32_t)n;
    out->memreq = (int32_t)(mem * FACTOR / n);
    out->pct = mem ? 0 : 100;
    out->cores = (int32_t)(cores / n);
    return VS_OK;
}

/* HAMi's check is a case-sensitive "the card type contains the word". */
static bool type_ok(const struct vs_device *d, const void *ctx, const struct vs_card *c)
{
    return strstr(c->type, d->word) != NULL;
}

/* type_ok reads nothing of the pod. */
static uint64_t pod_sig(const void *ctx, uint64_t h)
{
    return h;
}

/* The allocated key, the card indices of the last container that has cards, the node, and the
 * time (Unix nanoseconds). */
static enum vs_err annotate(const struct vs_device *d, const struct vs_pod *p,
                            const struct vs_node *n, const struct vs_pod_devs *devs,
                            const struct vs_mig_allocs *mig, int64_t now_ns, json_t *out)
{
    enum vs_err err = vs_device_annotate_generic(d, devs, out);
    if (err)
        return err;
    const struct vs_ctr_devs *last = NULL;
    for (size_t i = 0; i < devs->n; i++)
        if (devs->ctrs[i].n)
            last = &devs->ctrs[i];
    if (!last)
        return VS_OK;
    struct vs_buf b;
    vs_buf_init(&b);
    for (size_t k = 0; k < last->n; k++) {
        unsigned index = 0;
        for (size_t j = 0; j < n->n_cards; j++)
            if (n->cards[j].dev == d->id && strcmp(n->cards[j].uuid, last->devs[k].uuid) == 0)
                index = n->cards[j].index;
        vs_buf_printf(&b, "%s%u", k ? "," : "", index);
    }
    char *v = vs_buf_steal(&b);
    int rc = !v || json_object_set_new(out, "mthreads.com/gpu-index", json_string(v)) ||
             json_object_set_new(out, "mthreads.com/predicate-node", json_string(n->name));
    free(v);
    if (!rc && now_ns > 0) {
        char ts[32];
        snprintf(ts, sizeof(ts), "%lld", (long long)now_ns);
        rc = json_object_set_new(out, "mthreads.com/predicate-time", json_string(ts));
    }
    return rc ? VS_ERR_NOMEM : VS_OK;
}

/* Found when the count is in the limits or the requests; it must be above 0. More than one
 * card: whole cards (16 cores and 96 memory units each) and the pod annotation
 * mthreads.com/request-gpu-num. One card: whole when no memory limit is set, else the memory
 * must be one of the sGPU sizes. */
static enum vs_err admit(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *c, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb)
{
    static const int64_t sizes[] = {2, 4, 8, 16, 32, 64, 96};
    *found = false;
    const char *v = vs_device_res(c, d->res_count, false);
    if (!v)
        return VS_OK;
    int64_t n;
    bool has;
    if (vs_quantity_ceil(v, &n) || n > I32MAX)
        return vs_err_set(eb, VS_ERR_INVAL,
                          "invalid %s \"%s\" in container %s: must be a whole number between 1 "
                          "and %lld",
                          d->res_count, v, c->name ? c->name : "", I32MAX);
    if (n <= 0)
        return vs_err_set(eb, VS_ERR_INVAL, "%s must be greater than 0", d->res_count);
    *found = true;
    char num[24];
    const char *mem = d->res_mem ? vs_kv_get(&c->limits, d->res_mem) : NULL;
    if (n > 1 || !mem) {
        if (d->res_cores) {
            snprintf(num, sizeof(num), "%lld", (long long)(n * CORES));
            vs_admit_set(a, VS_ADMIT_LIMIT, d->res_cores, num);
        }
        if (d->res_mem) {
            snprintf(num, sizeof(num), "%lld", (long long)(n * MEMORY));
            vs_admit_set(a, VS_ADMIT_LIMIT, d->res_mem, num);
        }
        if (n > 1) {
            snprintf(num, sizeof(num), "%lld", (long long)n);
            vs_admit_set(a, VS_ADMIT_ANNOTATION, "mthreads.com/request-gpu-num", num);
        }
        return VS_OK;
    }
    int64_t m;
    if (vs_device_qty(c, d->res_mem, true, 0, INT64_MAX, &m, &has, eb) != VS_OK)
        m = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (m == sizes[i])
            return VS_OK;
    return vs_err_set(eb, VS_ERR_INVAL,
                      "sGPU memory request value is invalid, valid values are [2, 4, 8, 16, 32, "
                      "64, 96]");
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .type_ok = type_ok,
    .pod_sig = pod_sig,
    .annotate = annotate,
    .admit = admit,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->rules = (struct vs_fit_rules){.clamp_cores = true,
                                     .same_card = true,
                                     .use_uuid = "mthreads.ai/use-gpuuuid",
                                     .nouse_uuid = "mthreads.ai/nouse-gpuuuid"};
    d->lock = VS_LOCK_NONE;
    d->mem_factor = FACTOR;
    const char *count = vs_device_cfg_str(cfg, SECTION, "resourceCountName", "mthreads.com/vgpu");
    const char *mem =
        vs_device_cfg_str(cfg, SECTION, "resourceMemoryName", "mthreads.com/sgpu-memory");
    const char *cores =
        vs_device_cfg_str(cfg, SECTION, "resourceCoreName", "mthreads.com/sgpu-core");
    /* HAMi registers hami.io/mthreads-vgpu-devices-to-allocate but never writes it; the chart
     * lists only the count as the extender's. */
    bool ok = vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_mem, mem) &&
              vs_device_set_str(&d->res_cores, cores) &&
              vs_device_set_str(&d->allocated_key, "hami.io/mthreads-vgpu-devices-allocated") &&
              vs_device_add_managed(d, count);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_mthreads = {.name = "mthreads", .make = make};
