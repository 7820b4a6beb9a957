/* biren: Biren GPUs, word `Biren` (spec/hami-vendors.md §2.11). Cards from the device plugin's
 * hami.io/node-biren-register (JSON; devcore set to 100, which only the card score reads), requests
 * from birentech.com/gpu (limits, then requests), HAMi's Fit over slots alone (no memory or core
 * accounting: a card takes as many containers as its count), birentech.com/use-gpuuuid /
 * nouse-gpuuuid, and Filter's hami.io/Biren-devices-to-allocate and -allocated. Shared node lock.
 */
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "policy.h"
#include "request.h"

#define WORD       "Biren"
#define SECTION    "biren"
#define REGISTER   "hami.io/node-biren-register"
#define USE_UUID   "birentech.com/use-gpuuuid"
#define NOUSE_UUID "birentech.com/nouse-gpuuuid"
#define I32MAX     2147483647LL

static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n;
    bool has;
    enum vs_err err = vs_device_qty(c, d->res_count, false, 0, I32MAX, &n, &has, eb);
    if (err || !has || !n)
        return err;
    *out = (struct vs_req){.nums = (int32_t)n, .memreq = 0, .pct = 100, .cores = 0};
    return VS_OK;
}

/* Health, UUID selectors, a free slot, `mutex`; the first Nums cards walked from the end. */
static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    struct vs_reasons why = {.n = 0};
    size_t got = 0;
    for (size_t i = fc->n_cands; i-- > 0;) {
        struct vs_scard *s = fc->cands[i];
        const struct vs_card *c = s->c;
        if (!c->health || s->unhealthy) {
            vs_reasons_add(&why, VS_WHY_HEALTH, 1);
            continue;
        }
        if (!vs_device_uuid_ok(fc->pod, USE_UUID, NOUSE_UUID, c->uuid)) {
            vs_reasons_add(&why, VS_WHY_UUID, 1);
            continue;
        }
        if (c->count <= s->used) {
            vs_reasons_add(&why, VS_WHY_SLICING, 1);
            continue;
        }
        if (fc->gpu->mutex && s->used > 0) {
            vs_reasons_add(&why, VS_WHY_EXCLUSIVE, 1);
            continue;
        }
        picks[got++] = (struct vs_pick){.card = s};
        if (got == (size_t)fc->req->nums)
            return NULL;
    }
    vs_reasons_add(&why, VS_WHY_INSUFF, got);
    return vs_reasons_text(&why, fc->n_cands, nomem);
}

static const struct vs_device_ops ops = {
    .inventory = vs_device_register_inventory,
    .inventory_fp = vs_device_register_fp,
    .request = request,
    .fit = fit,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->register_key = REGISTER;
    d->register_devcore = 100;
    d->lock = VS_LOCK_SHARED;
    const char *count = vs_device_cfg_str(cfg, SECTION, "resourceCountName", "birentech.com/gpu");
    bool ok = vs_device_set_str(&d->res_count, count) &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/Biren-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/Biren-devices-allocated") &&
              vs_device_add_managed(d, count);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_biren = {.name = "biren", .make = make};
