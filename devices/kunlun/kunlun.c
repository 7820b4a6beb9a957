/* kunlun: Kunlunxin whole XPUs, word `kunlun` (spec/hami-vendors.md §2.8.2). One card per unit
 * of the node's status.capacity[kunlunxin.com/xpu] (id <node>-kunlun-<i>, 100 slots, 98304 MiB,
 * the first half NUMA 0 and the rest NUMA 1), requests from kunlunxin.com/xpu (limits, then
 * requests) for 1, 2, 4 or 8 idle cards chosen by the board topology (topo.c, over the sorted
 * candidates as HAMi does), a node-score term rewarding the least fragmented wings, and Filter's
 * hami.io/kunlun-allocated with BAIDU_COM_DEVICE_IDX (the card indices of the last container
 * with cards). A placed card only counts one more user: its memory and cores stay free, as in
 * HAMi, but a card in use is never chosen again. No node lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "devcfg.h"
#include "device.h"
#include "kunlun.h"
#include "model.h"
#include "policy.h"
#include "request.h"

#define WORD   "kunlun"
#define IDX    "BAIDU_COM_DEVICE_IDX"
#define I32MAX 2147483647LL

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const char *caps[] = {d->res_count};
    return d->res_count ? vs_device_fp_node(kn, NULL, 0, caps, 1, NULL, 0) : 0;
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    enum vs_err err = vs_device_cards_from_capacity(kn, d->res_count, "-kunlun-", WORD, out, eb);
    size_t n = out->reg.n;
    for (size_t i = 0; !err && i < n; i++) {
        struct vs_card_reg *c = &out->reg.cards[i];
        c->count = 100;
        c->devmem = 98304;
        c->devcore = 100;
        c->numa = i >= n / 2 ? 1 : 0;
    }
    return err;
}

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

/* FitXPU: an idle healthy card. */
static bool fits(const struct vs_fit_call *fc, const struct vs_scard *s)
{
    return s->used == 0 && s->c->health && !s->unhealthy;
}

static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    return vs_kunlun_fit(fc, fits, true, false, picks, nomem);
}

/* HAMi's AddResourceUsage for whole XPUs: one more user, nothing else. */
static void add_usage(const struct vs_device *d, struct vs_scard *s, const struct vs_pick *p)
{
    s->used += 1;
}

/* The index of card uuid on node n (the first card with that id). */
static bool card_index(const struct vs_node *n, const char *uuid, uint32_t *out)
{
    for (size_t i = 0; i < n->n_cards; i++) {
        if (strcmp(n->cards[i].uuid, uuid) == 0) {
            *out = n->cards[i].index;
            return true;
        }
    }
    return false;
}

static bool add_idx(uint32_t *set, size_t *n, size_t cap, uint32_t v)
{
    for (size_t i = 0; i < *n; i++)
        if (set[i] == v)
            return true;
    if (*n == cap)
        return false;
    set[(*n)++] = v;
    return true;
}

/* HAMi's ScoreNode: 0 when the node holds any card that is not a Kunlun one; else how the
 * busy cards' wings change with the pod's (vs_kunlun_score). */
static double score_node(const struct vs_score_call *sc)
{
    size_t cap = sc->n_before + 8, np = 0, nc = 0;
    uint32_t *prev = calloc(cap, sizeof(*prev)), *cur = calloc(cap, sizeof(*cur));
    double v = 0;
    bool ok = prev && cur;
    for (size_t i = 0; ok && i < sc->n_before; i++) {
        const struct vs_scard *s = &sc->before[i];
        if (!strstr(s->c->type, WORD)) {
            ok = false;
            break;
        }
        if (s->used > 0)
            ok = add_idx(prev, &np, cap, s->c->index);
    }
    for (size_t k = 0; ok && k < sc->devs->n; k++) {
        const struct vs_ctr_devs *cd = &sc->devs->ctrs[k];
        for (size_t j = 0; ok && j < cd->n; j++) {
            uint32_t idx;
            ok = card_index(sc->node, cd->devs[j].uuid, &idx) && add_idx(cur, &nc, cap, idx);
        }
    }
    if (ok)
        v = vs_kunlun_score(prev, np, cur, nc);
    free(prev);
    free(cur);
    return v;
}

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
    for (size_t j = 0; j < last->n; j++) {
        uint32_t idx = 0;
        card_index(n, last->devs[j].uuid, &idx);
        vs_buf_printf(&b, "%s%u", j ? "," : "", idx);
    }
    char *v = vs_buf_steal(&b);
    int rc = v ? json_object_set_new(out, IDX, json_string(v)) : -1;
    free(v);
    return rc ? VS_ERR_NOMEM : VS_OK;
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .fit = fit,
    .add_usage = add_usage,
    .score_node = score_node,
    .annotate = annotate,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    enum vs_err err = vs_kunlun_make_xpu(cfg, set, eb);
    if (err)
        return err;
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->lock = VS_LOCK_NONE;
    const char *count =
        vs_device_cfg_str(cfg, VS_KUNLUN_SECTION, "resourceCountName", "kunlunxin.com/xpu");
    bool ok = vs_device_set_str(&d->res_count, count) &&
              vs_device_set_str(&d->allocated_key, "hami.io/kunlun-allocated") &&
              vs_device_add_managed(d, count);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_kunlun = {.name = "kunlun", .make = make};
