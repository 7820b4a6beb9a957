/* hygon: Hygon DCU (spec/hami-vendors.md §2.2): cards from hami.io/node-dcu-register (the device
 * plugin's legacy text; JSON is read too), requests from hygon.com/dcunum, dcumem (MiB, times the
 * section's memoryFactor) and dcucores (percent, 100 when absent: a bare count takes a whole card),
 * card selection by hygon.com/use-dcutype / nouse-dcutype (case-insensitive substrings of the
 * model) and hygon.com/use-gpuuuid / nouse-gpuuuid, the generic G-Fit, and Filter's
 * hami.io/dcu-devices-to-allocate and -allocated with type DCU. Bind takes the shared lock. */
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "request.h"

#define WORD       "DCU"
#define SECTION    "hygon"
#define REGISTER   "hami.io/node-dcu-register"
#define USE_TYPE   "hygon.com/use-dcutype"
#define NOUSE_TYPE "hygon.com/nouse-dcutype"
#define I32MAX     2147483647LL

/* count: limits then requests, 1..2^31-1; memory MiB x memoryFactor; cores percent, 100 when
 * absent. Pct 100 (the whole card's memory) when no memory is asked. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n, mem = 0, cores = 100, factor = d->mem_factor > 1 ? d->mem_factor : 1;
    bool has;
    enum vs_err err;
    if ((err = vs_device_qty(c, d->res_count, false, 0, I32MAX, &n, &has, eb)) || !has || !n)
        return err;
    if ((err = vs_device_qty(c, d->res_mem, false, 0, I32MAX / factor, &mem, &has, eb)))
        return err;
    if ((err = vs_device_qty(c, d->res_cores, false, 0, I32MAX, &cores, &has, eb)))
        return err;
    if (!has)
        cores = 100;
    out->nums = (int32_t)n;
    out->memreq = (int32_t)(mem * factor);
    out->pct = mem ? 0 : 100;
    out->cores = (int32_t)cores;
    return VS_OK;
}

static enum vs_err pod_begin(const struct vs_device *d, const struct vs_pod *p, void **ctx,
                             struct vs_errbuf *eb)
{
    *ctx = (void *)p; /* the selectors are read from the pod's annotations as needed */
    return VS_OK;
}

static bool type_ok(const struct vs_device *d, const void *ctx, const struct vs_card *c)
{
    const struct vs_pod *p = ctx;
    return vs_device_type_lists(c->type, vs_kv_get(&p->annotations, USE_TYPE),
                                vs_kv_get(&p->annotations, NOUSE_TYPE));
}

static uint64_t pod_sig(const void *ctx, uint64_t h)
{
    const struct vs_pod *p = ctx;
    const char *v[2] = {vs_kv_get(&p->annotations, USE_TYPE),
                        vs_kv_get(&p->annotations, NOUSE_TYPE)};
    for (size_t i = 0; i < 2; i++) {
        for (const char *s = v[i] ? v[i] : ""; *s; s++)
            h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
        h = (h ^ (v[i] ? 0xfeu : 0xffu)) * 0x100000001b3ULL;
    }
    return h;
}

static const struct vs_device_ops ops = {
    .inventory = vs_device_register_inventory,
    .inventory_fp = vs_device_register_fp,
    .request = request,
    .pod_begin = pod_begin,
    .type_ok = type_ok,
    .pod_sig = pod_sig,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    int64_t factor;
    enum vs_err err = vs_device_cfg_int(cfg, SECTION, "memoryFactor", 1, &factor, eb);
    if (err)
        return err;
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->register_key = REGISTER;
    d->rules = (struct vs_fit_rules){.clamp_cores = true,
                                     .use_uuid = "hygon.com/use-gpuuuid",
                                     .nouse_uuid = "hygon.com/nouse-gpuuuid"};
    d->lock = VS_LOCK_SHARED;
    d->mem_factor = factor > 1 && factor <= I32MAX ? (int32_t)factor : 1;
    const char *count = vs_device_cfg_str(cfg, SECTION, "resourceCountName", "hygon.com/dcunum");
    const char *mem = vs_device_cfg_str(cfg, SECTION, "resourceMemoryName", "hygon.com/dcumem");
    const char *cores = vs_device_cfg_str(cfg, SECTION, "resourceCoreName", "hygon.com/dcucores");
    bool ok = vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_mem, mem) &&
              vs_device_set_str(&d->res_cores, cores) &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/dcu-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/dcu-devices-allocated") &&
              vs_device_add_managed(d, count) && vs_device_add_managed(d, mem) &&
              vs_device_add_managed(d, cores);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_hygon = {.name = "hygon", .make = make};
