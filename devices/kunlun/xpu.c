/* xpu: Kunlunxin vXPU shares, word `XPU` (spec/hami-vendors.md §2.8.3). Cards from the device
 * plugin's hami.io/node-register-xpu (JSON), requests from kunlunxin.com/vxpu and
 * kunlunxin.com/vxpu-memory (MiB, rounded up to a share of 24576, 49152 or 98304; without memory
 * a whole XPU), cards chosen by the board topology (topo.c) among those with room where every
 * share is the requested size, and Filter's hami.io/xpu-devices-to-allocate and -allocated.
 * The webhook rounds the memory limit (and request) up to the share size. Shared node lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "kunlun.h"
#include "model.h"
#include "policy.h"
#include "quantity.h"
#include "request.h"

#define WORD       "XPU"
#define REGISTER   "hami.io/node-register-xpu"
#define MAX_MEMORY 98304
#define I32MAX     2147483647LL

/* HAMi's trimMemory: the share size a memory amount rounds up to. */
static int64_t trim_memory(int64_t m)
{
    return m <= 24576 ? 24576 : m <= 49152 ? 49152 : MAX_MEMORY;
}

/* Memory rounded to a share size (any whole number, 0 and negatives included: the smallest
 * share); cores the share's part of an XPU (25, 50, 100). */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n, mem;
    bool has;
    enum vs_err err = vs_device_qty(c, d->res_count, false, 0, I32MAX, &n, &has, eb);
    if (err || !has || !n)
        return err;
    if ((err = vs_device_qty(c, d->res_mem, false, INT64_MIN, INT64_MAX, &mem, &has, eb)))
        return err;
    if (!has) {
        *out = (struct vs_req){.nums = (int32_t)n, .memreq = MAX_MEMORY, .pct = 100, .cores = 100};
        return VS_OK;
    }
    mem = trim_memory(mem);
    *out = (struct vs_req){.nums = (int32_t)n,
                           .memreq = (int32_t)mem,
                           .pct = 0,
                           .cores = (int32_t)(mem * 100 / MAX_MEMORY)};
    return VS_OK;
}

/* HAMi's MutateAdmission: found when the count is in limits; a memory limit becomes the share
 * size in limits and requests. */
static enum vs_err admit(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *c, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb)
{
    if (!d->res_count || !vs_kv_get(&c->limits, d->res_count))
        return VS_OK;
    *found = true;
    const char *m = d->res_mem ? vs_kv_get(&c->limits, d->res_mem) : NULL;
    int64_t v;
    if (m && vs_quantity_ceil(m, &v) == VS_OK) {
        char num[24];
        snprintf(num, sizeof(num), "%lld", (long long)trim_memory(v));
        vs_admit_set(a, VS_ADMIT_LIMIT, d->res_mem, num);
        vs_admit_set(a, VS_ADMIT_REQUEST, d->res_mem, num);
    }
    return VS_OK;
}

/* FitVXPU: healthy, room for the share, and every share already there of the same size. The
 * card's slot count is not checked (HAMi does not). */
static bool fits(const struct vs_fit_call *fc, const struct vs_scard *s)
{
    const struct vs_card *c = s->c;
    int64_t req = fc->req->memreq;
    if (!c->health || s->unhealthy || req + s->usedmem > c->devmem)
        return false;
    return s->used == 0 || s->usedmem / s->used == req;
}

static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    return vs_kunlun_fit(fc, fits, false, true, picks, nomem);
}

static const struct vs_device_ops ops = {
    .inventory = vs_device_register_inventory,
    .inventory_fp = vs_device_register_fp,
    .request = request,
    .fit = fit,
    .admit = admit,
};

enum vs_err vs_kunlun_make_xpu(const struct vs_devcfg *cfg, struct vs_devices *set,
                               struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->register_key = REGISTER;
    d->lock = VS_LOCK_SHARED;
    const char *count =
        vs_device_cfg_str(cfg, VS_KUNLUN_SECTION, "resourceVCountName", "kunlunxin.com/vxpu");
    const char *mem = vs_device_cfg_str(cfg, VS_KUNLUN_SECTION, "resourceVMemoryName",
                                        "kunlunxin.com/vxpu-memory");
    bool ok = vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_mem, mem) &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/xpu-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/xpu-devices-allocated") &&
              vs_device_add_managed(d, count) && vs_device_add_managed(d, mem);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}
