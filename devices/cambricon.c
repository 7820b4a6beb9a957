/* cambricon: Cambricon MLU (spec/hami-vendors.md §2.3). No register annotation: a node's cards
 * come from its status.capacity — one card per 100 of cambricon.com/mlu.smlu.vcore, the node's
 * cambricon.com/mlu.smlu.vmemory (units of 256 MiB) shared evenly, ids <node>-cambricon-mlu-<i>.
 * Requests from the cambricon section's count (chart: cambricon.com/vmlu), memory (units of
 * 256 MiB) and cores (percent, 100 when absent: a bare count takes a whole card); the generic
 * G-Fit with cambricon.com/use-gpuuuid / nouse-gpuuuid and the namespace quota per card (with the
 * card memory a whole-card request resolves to); Filter writes
 * hami.io/cambricon-mlu-devices-to-allocate and -allocated (type MLU), CAMBRICON_DSMLU_ASSIGNED
 * "false" and CAMBRICON_DSMLU_PROFILE "<index>_<cores>_<memory/256>" of the pod's first card.
 * Bind takes the vendor's own lock, cambricon.com/dsmlu.lock (the time it was taken, 2
 * minutes), not the shared one. cambricon.com/use-mlutype is not read (HAMi defines it but
 * never checks it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "request.h"

#define WORD    "MLU"
#define SECTION "cambricon"
#define FACTOR  256
#define I32MAX  2147483647LL
/* At most 1024 cards per node (vcore capacity 102400): far above any real node. */
#define MAX_VCORE 102400LL

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const char *names[] = {d->res_cores, d->res_mem};
    return vs_device_fp_capacity(kn, names, 2);
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    int64_t vcore, vmem;
    enum vs_err err;
    if ((err = vs_device_capacity_max(kn, d->res_cores, MAX_VCORE, &vcore, eb)) ||
        (err = vs_device_capacity_max(kn, d->res_mem, I32MAX, &vmem, eb)))
        return err;
    if (vcore == 0)
        return VS_OK;
    int64_t devmem = vmem * FACTOR * 100 / vcore;
    if (devmem > I32MAX)
        return vs_err_set(eb, VS_ERR_PARSE,
                          "status.capacity[\"%s\"] %lld over %lld cards is more than %lld MiB "
                          "per card",
                          d->res_mem, (long long)vmem, (long long)((vcore + 99) / 100), I32MAX);
    for (int64_t i = 0; i * 100 < vcore; i++) {
        char id[300];
        snprintf(id, sizeof(id), "%s-cambricon-mlu-%lld", kn->name, (long long)i);
        struct vs_card_reg *c = vs_device_add_card(out, id, WORD);
        if (!c)
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        c->count = 100;
        c->devmem = (int32_t)devmem;
        c->devcore = 100;
    }
    return VS_OK;
}

/* count: limits then requests; memory in units of 256 MiB; cores percent, 100 when absent. Pct
 * 100 (the whole card's memory) when no memory is asked. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n, mem = 0, cores = 100;
    bool has;
    enum vs_err err;
    if ((err = vs_device_qty(c, d->res_count, false, 0, I32MAX, &n, &has, eb)) || !has || !n)
        return err;
    if ((err = vs_device_qty(c, d->res_mem, false, 0, I32MAX / FACTOR, &mem, &has, eb)))
        return err;
    if ((err = vs_device_qty(c, d->res_cores, false, 0, I32MAX, &cores, &has, eb)))
        return err;
    if (!has)
        cores = 100;
    out->nums = (int32_t)n;
    out->memreq = (int32_t)(mem * FACTOR);
    out->pct = mem ? 0 : 100;
    out->cores = (int32_t)cores;
    return VS_OK;
}

/* The generic keys, CAMBRICON_DSMLU_ASSIGNED and the profile of the first card of the first
 * container that has cards (its index on the node, cores, memory in 256 MiB units). */
static enum vs_err annotate(const struct vs_device *d, const struct vs_pod *p,
                            const struct vs_node *n, const struct vs_pod_devs *devs,
                            const struct vs_mig_allocs *mig, int64_t now_ns, json_t *out)
{
    enum vs_err err = vs_device_annotate_generic(d, devs, out);
    if (err)
        return err;
    if (json_object_set_new(out, "CAMBRICON_DSMLU_ASSIGNED", json_string("false")))
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < devs->n; i++) {
        if (!devs->ctrs[i].n)
            continue;
        const struct vs_cdev *cd = &devs->ctrs[i].devs[0];
        unsigned index = 0;
        for (size_t k = 0; k < n->n_cards; k++)
            if (n->cards[k].dev == d->id && strcmp(n->cards[k].uuid, cd->uuid) == 0)
                index = n->cards[k].index;
        char v[64];
        snprintf(v, sizeof(v), "%u_%d_%d", index, cd->usedcores, cd->usedmem / FACTOR);
        return json_object_set_new(out, "CAMBRICON_DSMLU_PROFILE", json_string(v)) ? VS_ERR_NOMEM
                                                                                   : VS_OK;
    }
    return VS_OK;
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .annotate = annotate,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->rules = (struct vs_fit_rules){.quota = true,
                                     .clamp_cores = true,
                                     .use_uuid = "cambricon.com/use-gpuuuid",
                                     .nouse_uuid = "cambricon.com/nouse-gpuuuid"};
    d->lock = VS_LOCK_STAMP;
    d->lock_ttl = 120;
    d->mem_factor = FACTOR;
    const char *count = vs_device_cfg_str(cfg, SECTION, "resourceCountName", "cambricon.com/vmlu");
    const char *mem =
        vs_device_cfg_str(cfg, SECTION, "resourceMemoryName", "cambricon.com/mlu.smlu.vmemory");
    const char *cores =
        vs_device_cfg_str(cfg, SECTION, "resourceCoreName", "cambricon.com/mlu.smlu.vcore");
    /* HAMi's chart lists only the count as the extender's: kube-scheduler still checks memory
     * and cores against the node's allocatable. */
    bool ok = vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_mem, mem) &&
              vs_device_set_str(&d->res_cores, cores) &&
              vs_device_set_str(&d->lock_key, "cambricon.com/dsmlu.lock") &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/cambricon-mlu-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/cambricon-mlu-devices-allocated") &&
              vs_device_add_managed(d, count);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_cambricon = {.name = "cambricon", .make = make};
