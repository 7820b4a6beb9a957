/* amd: AMD GPUs, word `AMD` (spec/hami-vendors.md §2.10). Cards from the device plugin's
 * hami.io/node-amd-register (JSON; devcore is the card's compute units, type its product name,
 * which must contain AMD), kept only while the node's status.capacity[amd.com/gpu] is a non-zero
 * whole number (HAMi's health rule: a node reporting no AMD GPUs has none). Requests read the
 * container's limits only: amd.com/gpu, amd.com/gpumem (MiB; none = the whole card's memory) and
 * amd.com/gpucores (percent 1..100, default 100), the percentage becoming a number of compute
 * units on each card. Card selection by amd.com/use-gputype / nouse-gputype and
 * amd.com/use-gpu-uuid / nouse-gpu-uuid. Filter writes hami.io/amd-devices-to-allocate and
 * -allocated with the card's product name as the type field. Shared node lock. Metrics report
 * its cores as a percentage of the card (vs_device.cores_percent). */
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "policy.h"
#include "quantity.h"
#include "request.h"

#define WORD       "AMD"
#define SECTION    "amd"
#define REGISTER   "hami.io/node-amd-register"
#define USE_TYPE   "amd.com/use-gputype"
#define NOUSE_TYPE "amd.com/nouse-gputype"
#define USE_UUID   "amd.com/use-gpu-uuid"
#define NOUSE_UUID "amd.com/nouse-gpu-uuid"
#define I32MAX     2147483647LL

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    static const char *const annos[] = {REGISTER};
    const char *caps[] = {d->res_count};
    return vs_device_fp_node(kn, annos, 1, caps, d->res_count ? 1 : 0, NULL, 0);
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    int64_t n;
    if (d->res_count && (!vs_kv_get(&kn->capacity, d->res_count) ||
                         !vs_device_capacity(kn, d->res_count, &n) || n == 0))
        return VS_OK;
    return vs_device_inventory_register(kn, REGISTER, out, eb);
}

static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n, mem = 0, cores = 100;
    bool has;
    enum vs_err err = vs_device_qty(c, d->res_count, true, 0, I32MAX, &n, &has, eb);
    if (err || !has || !n)
        return err;
    if ((err = vs_device_qty(c, d->res_mem, true, 0, I32MAX, &mem, &has, eb)))
        return err;
    if ((err = vs_device_qty(c, d->res_cores, true, 1, 100, &cores, &has, eb)))
        return err;
    if (!has)
        cores = 100;
    *out = (struct vs_req){
        .nums = (int32_t)n, .memreq = (int32_t)mem, .pct = 0, .cores = (int32_t)cores};
    return VS_OK;
}

/* HAMi's MutateAdmission: with the count in limits a core limit must be a whole percentage; any
 * of the three resources in limits routes the pod here. */
static enum vs_err admit(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *c, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb)
{
    const struct vs_kvlist *l = &c->limits;
    bool count = d->res_count && vs_kv_get(l, d->res_count);
    const char *core = d->res_cores ? vs_kv_get(l, d->res_cores) : NULL;
    int64_t pct;
    if (count && core && (vs_quantity_int(core, &pct) || pct < 1 || pct > 100))
        return vs_err_set(eb, VS_ERR_INVAL, "%s must be an integer percentage between 1 and 100",
                          d->res_cores);
    *found = count || (d->res_mem && vs_kv_get(l, d->res_mem)) || core;
    return VS_OK;
}

static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    const struct vs_req *r = fc->req;
    const struct vs_kvlist *an = &fc->pod->annotations;
    struct vs_reasons why = {.n = 0};
    size_t got = 0;
    for (size_t i = fc->n_cands; i-- > 0;) {
        struct vs_scard *s = fc->cands[i];
        const struct vs_card *c = s->c;
        if (!c->health || s->unhealthy) {
            vs_reasons_add(&why, VS_WHY_HEALTH, 1);
            continue;
        }
        if (!vs_device_type_lists(c->type, vs_kv_get(an, USE_TYPE), vs_kv_get(an, NOUSE_TYPE))) {
            vs_reasons_add(&why, VS_WHY_TYPE, 1);
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
        int64_t mem = r->memreq;
        if (mem <= 0 && c->devmem > 0)
            mem = c->devmem;
        if (c->devmem - s->usedmem < mem) {
            vs_reasons_add(&why, VS_WHY_MEM, 1);
            continue;
        }
        /* The percentage as compute units of this card: at least one, at most all. */
        int64_t cu = 0;
        if (r->cores > 0) {
            if (c->devcore <= 0) {
                vs_reasons_add(&why, VS_WHY_CORE, 1);
                continue;
            }
            cu = (int64_t)c->devcore * r->cores / 100;
            cu = cu < 1 ? 1 : cu > c->devcore ? c->devcore : cu;
        } else if (c->devmem > 0 && mem >= c->devmem) {
            cu = c->devcore;
        }
        if (c->devcore - s->usedcores < cu) {
            vs_reasons_add(&why, VS_WHY_CORE, 1);
            continue;
        }
        picks[got++] = (struct vs_pick){.card = s, .mem = mem, .cores = cu};
        if (got == (size_t)r->nums)
            return NULL;
    }
    vs_reasons_add(&why, VS_WHY_INSUFF, got);
    return vs_reasons_text(&why, fc->n_cands, nomem);
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .fit = fit,
    .admit = admit,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->lock = VS_LOCK_SHARED;
    d->type_is_model = true;
    d->cores_percent = true;
    const char *count = vs_device_cfg_str(cfg, SECTION, "resourceCountName", "amd.com/gpu");
    const char *mem = vs_device_cfg_str(cfg, SECTION, "resourceMemoryName", "amd.com/gpumem");
    const char *cores = vs_device_cfg_str(cfg, SECTION, "resourceCoreName", "amd.com/gpucores");
    bool ok = vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_mem, mem) &&
              vs_device_set_str(&d->res_cores, cores) &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/amd-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/amd-devices-allocated") &&
              vs_device_add_managed(d, count) && vs_device_add_managed(d, mem) &&
              vs_device_add_managed(d, cores);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_amd = {.name = "amd", .make = make};
