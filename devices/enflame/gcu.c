/* gcu: Enflame whole GCU cards (spec/hami-vendors.md §2.7.1): one card per unit of the node's
 * status.capacity[enflame.com/gcu] (id <node>-GCU-<i>, count 1, devmem 100, devcore 100), requests
 * from enflame.com/gcu (limits, then requests), HAMi's short Fit (health, type, a card already in
 * use is ExclusiveDeviceAllocateConflict: every card is exclusive), and Filter's
 * hami.io/enflame-gcu-devices-to-allocate and -allocated with type GCU. No node lock. */
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "enflame.h"
#include "model.h"
#include "policy.h"
#include "request.h"

#define WORD   "GCU"
#define I32MAX 2147483647LL

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const char *caps[] = {d->res_count};
    return d->res_count ? vs_device_fp_node(kn, NULL, 0, caps, 1, NULL, 0) : 0;
}

/* HAMi reports the vendor unhealthy (no cards) when the capacity is absent or 0. */
static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    enum vs_err err = vs_device_cards_from_capacity(kn, d->res_count, "-GCU-", WORD, out, eb);
    for (size_t i = 0; !err && i < out->reg.n; i++) {
        struct vs_card_reg *c = &out->reg.cards[i];
        c->count = 1;
        c->devmem = 100;
        c->devcore = 100;
    }
    return err;
}

/* Whole cards: memory 100 (of 100), cores 100, Pct 100. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n;
    bool has;
    enum vs_err err = vs_device_qty(c, d->res_count, false, 0, I32MAX, &n, &has, eb);
    if (err || !has || !n)
        return err;
    out->nums = (int32_t)n;
    out->memreq = 100;
    out->pct = 100;
    out->cores = 100;
    return VS_OK;
}

/* HAMi's GCU Fit: no UUID, slot or mutex checks; a used card is always a conflict. */
static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    struct vs_reasons why = {.n = 0};
    size_t got = 0, need = (size_t)fc->req->nums;
    for (size_t i = fc->n_cands; i-- > 0;) {
        struct vs_scard *s = fc->cands[i];
        if (!s->c->health || s->unhealthy) {
            vs_reasons_add(&why, VS_WHY_HEALTH, 1);
            continue;
        }
        if (s->used > 0) {
            vs_reasons_add(&why, VS_WHY_EXCLUSIVE, 1);
            continue;
        }
        picks[got++] = (struct vs_pick){.card = s, .mem = fc->req->memreq, .cores = fc->req->cores};
        if (got == need)
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
};

enum vs_err vs_enflame_make_gcu(const struct vs_devcfg *cfg, struct vs_devices *set,
                                struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->lock = VS_LOCK_NONE;
    const char *count =
        vs_device_cfg_str(cfg, VS_ENFLAME_SECTION, "resourceNameGCU", "enflame.com/gcu");
    bool ok = vs_device_set_str(&d->res_count, count) &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/enflame-gcu-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/enflame-gcu-devices-allocated") &&
              vs_device_add_managed(d, count);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}
