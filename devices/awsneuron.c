/* awsneuron: AWS Neuron devices, word `AWSNeuron` (spec/hami-vendors.md §2.9). One card per unit
 * of the node's status.capacity[aws.amazon.com/neuron]; each has P = neuroncore / neuron cores,
 * its devcore the core bit-mask 2^P - 1 and its count P slots, and carries the node's instance
 * type (label node.kubernetes.io/instance-type). A container asks for whole devices
 * (aws.amazon.com/neuron) or cores (aws.amazon.com/neuroncore: 1, or a multiple of 2 as whole
 * devices). Several devices are chosen as a run of consecutive idle devices: any start on
 * Inferentia
 * (`inf` instance types), aligned to 4, 8 or 16 elsewhere; one device by HAMi's walk, its cores
 * recorded as a mask. Filter writes hami.io/aws-neuron-devices-allocated and the plugin's
 * AWS_NEURON_IDS (device or core indices, accumulated over the containers), NEURON_ALLOC_TIME,
 * NEURON_ALLOCATED, NEURON_RESOURCE_TYPE and aws.amazon.com/predicate-node. No node lock.
 *
 * Where HAMi differs (docs/vendors.md "AWS Neuron"): P is each node's own (HAMi learns it from the
 * first node it ever reads and keeps it for the process); a core request is split in pairs (HAMi:
 * min(P, 2), which is 2 for every instance type with 2 or more cores per device) and a device
 * request takes every core of the chosen device (HAMi: P of that first node); runs of devices are
 * looked for in device index order over the devices themselves (HAMi finds them over the sorted
 * positions and then takes the devices whose indices equal those positions, which differs under
 * the `mutex` card policy and may take a busy device). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "policy.h"
#include "quantity.h"
#include "request.h"

#define WORD          "AWSNeuron"
#define SECTION       "awsneuron"
#define INSTANCE_TYPE "node.kubernetes.io/instance-type"
#define NODE_TYPE     "AWSNodeType"
#define USE_UUID      "aws.amazon.com/use-neuron-uuid"
#define NOUSE_UUID    "aws.amazon.com/nouse-neuron-uuid"
#define I32MAX        2147483647LL
#define PAIR          2 /* cores per device a core request is split by */

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const char *caps[] = {d->res_count, d->res_cores};
    static const char *const labels[] = {INSTANCE_TYPE};
    if (!d->res_count)
        return 0;
    return vs_device_fp_node(kn, NULL, 0, caps, d->res_cores ? 2 : 1, labels, 1);
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    enum vs_err err = vs_device_cards_from_capacity(kn, d->res_count, "-AWSNeuron-", WORD, out, eb);
    if (err || !out->reg.n)
        return err;
    int64_t cores = 0;
    if (!vs_device_capacity(kn, d->res_cores, &cores) || cores < 0)
        cores = 0;
    int64_t p = cores / (int64_t)out->reg.n;
    if (p > 30) {
        vs_register_cleanup(&out->reg);
        return vs_err_set(eb, VS_ERR_PARSE,
                          "%lld cores per %s device (status.capacity %s / %s): at most 30",
                          (long long)p, WORD, d->res_cores, d->res_count);
    }
    const char *itype = vs_kv_get(&kn->labels, INSTANCE_TYPE);
    for (size_t i = 0; i < out->reg.n; i++) {
        struct vs_card_reg *c = &out->reg.cards[i];
        c->count = (int32_t)p;
        c->devcore = (int32_t)((1LL << p) - 1);
        if (!(c->custom = json_pack("{s:s}", NODE_TYPE, itype ? itype : ""))) {
            vs_register_cleanup(&out->reg);
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
    }
    return VS_OK;
}

/* Devices: {n, cores 0 = every core of the device}; cores: 1 or 2 on one device, else pairs. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n;
    bool has;
    enum vs_err err = vs_device_qty(c, d->res_count, false, 1, I32MAX, &n, &has, eb);
    if (err)
        return err;
    if (has) {
        *out = (struct vs_req){.nums = (int32_t)n};
        return VS_OK;
    }
    if ((err = vs_device_qty(c, d->res_cores, false, 1, 2 * I32MAX, &n, &has, eb)) || !has)
        return err;
    if (n <= PAIR) {
        *out = (struct vs_req){.nums = 1, .cores = (int32_t)n};
        return VS_OK;
    }
    if (n % PAIR)
        return vs_err_set(
            eb, VS_ERR_INVAL, "invalid %s \"%s\" in container %s: must be 1 or a multiple of %d",
            d->res_cores, vs_device_res(c, d->res_cores, false), c->name ? c->name : "", PAIR);
    *out = (struct vs_req){.nums = (int32_t)(n / PAIR), .cores = PAIR};
    return VS_OK;
}

/* HAMi's validateResourceRequest wording. */
static enum vs_err validate(const char *v, const char *name, int64_t max, int64_t *out,
                            struct vs_errbuf *eb)
{
    if (vs_quantity_int(v, out))
        return vs_err_set(eb, VS_ERR_INVAL, "%s must be an integer", name);
    if (*out <= 0)
        return vs_err_set(eb, VS_ERR_INVAL, "%s must be greater than 0", name);
    if (*out > max)
        return vs_err_set(eb, VS_ERR_INVAL, "%s must not exceed %lld", name, (long long)max);
    return VS_OK;
}

static enum vs_err admit(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *c, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb)
{
    const char *v = vs_device_res(c, d->res_count, false);
    int64_t n;
    enum vs_err err;
    if (v) {
        if ((err = validate(v, d->res_count, I32MAX, &n, eb)))
            return err;
        *found = true;
        return VS_OK;
    }
    if (!(v = vs_device_res(c, d->res_cores, false)))
        return VS_OK;
    if ((err = validate(v, d->res_cores, 2 * I32MAX, &n, eb)))
        return err;
    if (n > PAIR && n % PAIR)
        return vs_err_set(eb, VS_ERR_INVAL, "%s must be 1 or a multiple of %d, got %lld",
                          d->res_cores, PAIR, (long long)n);
    *found = true;
    return VS_OK;
}

/* ---- Fit ---- */

static int popcount(int64_t mask)
{
    return mask > 0 ? __builtin_popcountll((unsigned long long)mask) : 0;
}

/* HAMi's addCoreUsage: the mask a pick records for `need` cores on a card whose masks so far sum
 * to `used`. */
static int64_t core_mask(int64_t used, int64_t need)
{
    if (used == 0 && need == 2)
        return 3;
    if (used == 0 && need == 1)
        return 1;
    return 3 - used;
}

static int by_index(const void *a, const void *b)
{
    const struct vs_scard *x = *(struct vs_scard *const *)a, *y = *(struct vs_scard *const *)b;
    if (x->c->index != y->c->index)
        return x->c->index < y->c->index ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Several whole devices: the first run of `nums` idle healthy devices in index order, starting
 * anywhere on Inferentia and at multiples of nums (4, 8 or 16 only) elsewhere. */
static char *fit_run(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    size_t n = fc->n_cands, nums = (size_t)fc->req->nums;
    struct vs_scard **v = malloc(n * sizeof(*v));
    if (!v) {
        *nomem = true;
        return NULL;
    }
    memcpy(v, fc->cands, n * sizeof(*v));
    qsort(v, n, sizeof(*v), by_index);
    const char *itype = json_string_value(json_object_get(v[0]->c->custom, NODE_TYPE));
    bool inf = itype && (strstr(itype, "inf") || strstr(itype, "Inf"));
    size_t step = inf ? 1 : nums;
    bool aligned_ok = nums == 4 || nums == 8 || nums == 16;
    for (size_t start = 0; (inf || aligned_ok) && start + nums <= n; start += step) {
        size_t k = 0;
        while (k < nums && v[start + k]->used == 0 && v[start + k]->c->health &&
               !v[start + k]->unhealthy)
            k++;
        if (k < nums)
            continue;
        for (k = 0; k < nums; k++) {
            const struct vs_card *c = v[start + k]->c;
            picks[k] =
                (struct vs_pick){.card = v[start + k], .mem = c->devmem, .cores = c->devcore};
        }
        free(v);
        return NULL;
    }
    free(v);
    struct vs_reasons why = {.n = 0};
    vs_reasons_add(&why, VS_WHY_NUMA, 1);
    return vs_reasons_text(&why, n, nomem);
}

static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    if (fc->req->nums > 1)
        return fit_run(fc, picks, nomem);
    struct vs_reasons why = {.n = 0};
    for (size_t i = fc->n_cands; i-- > 0;) {
        struct vs_scard *s = fc->cands[i];
        const struct vs_card *c = s->c;
        if (!c->health || s->unhealthy) {
            vs_reasons_add(&why, VS_WHY_HEALTH, 1);
            continue;
        }
        if (!strstr(c->type, WORD)) {
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
        /* A device request takes every core of this node's devices. */
        int64_t need = fc->req->cores ? fc->req->cores : c->count;
        if (popcount(c->devcore) - popcount(s->usedcores) < need) {
            vs_reasons_add(&why, VS_WHY_CORE, 1);
            continue;
        }
        picks[0] = (struct vs_pick){.card = s, .mem = 0, .cores = core_mask(s->usedcores, need)};
        return NULL;
    }
    return vs_reasons_text(&why, fc->n_cands, nomem);
}

/* ---- annotations ---- */

static const struct vs_card *card_of(const struct vs_node *n, const char *uuid)
{
    for (size_t i = 0; i < n->n_cards; i++)
        if (strcmp(n->cards[i].uuid, uuid) == 0)
            return &n->cards[i];
    return NULL;
}

static const struct vs_container *ctr_at(const struct vs_pod *p, size_t i)
{
    if (i < p->n_init)
        return &p->init[i];
    return i - p->n_init < p->n_ctrs ? &p->ctrs[i - p->n_init] : NULL;
}

static bool set_str(json_t *out, const char *k, const char *v)
{
    return json_object_set_new(out, k, json_string(v)) == 0;
}

/* The device plugin's ids: a container asking devices in its limits gets device indices, any
 * other its cores' indices (P x index and P x index + 1 by the mask's two bits). */
static enum vs_err annotate(const struct vs_device *d, const struct vs_pod *p,
                            const struct vs_node *n, const struct vs_pod_devs *devs,
                            const struct vs_mig_allocs *mig, int64_t now_ns, json_t *out)
{
    enum vs_err err = vs_device_annotate_generic(d, devs, out);
    if (err)
        return err;
    struct vs_buf b;
    vs_buf_init(&b);
    bool ok = true;
    for (size_t i = 0; ok && i < devs->n; i++) {
        const struct vs_container *c = ctr_at(p, i);
        if (!devs->ctrs[i].n || !c)
            continue;
        const char *lim = d->res_count ? vs_kv_get(&c->limits, d->res_count) : NULL;
        int64_t count = 0;
        if (lim && vs_quantity_int(lim, &count))
            count = 0;
        for (size_t j = 0; j < devs->ctrs[i].n; j++) {
            const struct vs_cdev *cd = &devs->ctrs[i].devs[j];
            const struct vs_card *card = card_of(n, cd->uuid);
            int64_t idx = card ? card->index : 0, per = card ? card->count : 0;
            if (lim) {
                if (count > 0)
                    vs_buf_printf(&b, "%lld,", (long long)idx);
                continue;
            }
            for (int bit = 0; bit < 2; bit++) {
                if (!(cd->usedcores & (1 << bit)))
                    continue;
                vs_buf_printf(&b, "%lld,", (long long)(per * idx + bit));
                ok = ok && set_str(out, "NEURON_RESOURCE_TYPE", d->res_cores ? d->res_cores : "");
            }
        }
    }
    char *ids = vs_buf_steal(&b);
    if (!ids)
        return VS_ERR_NOMEM;
    if (ok && *ids) {
        ids[strlen(ids) - 1] = '\0'; /* the trailing comma */
        ok = set_str(out, "AWS_NEURON_IDS", ids) && set_str(out, "NEURON_ALLOCATED", "false") &&
             set_str(out, "aws.amazon.com/predicate-node", n->name);
        if (ok && now_ns > 0) {
            char ts[24];
            snprintf(ts, sizeof(ts), "%lld", (long long)now_ns);
            ok = set_str(out, "NEURON_ALLOC_TIME", ts);
        }
    }
    free(ids);
    return ok ? VS_OK : VS_ERR_NOMEM;
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .fit = fit,
    .annotate = annotate,
    .admit = admit,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->lock = VS_LOCK_NONE;
    const char *count =
        vs_device_cfg_str(cfg, SECTION, "resourceCountName", "aws.amazon.com/neuron");
    const char *cores =
        vs_device_cfg_str(cfg, SECTION, "resourceCoreName", "aws.amazon.com/neuroncore");
    bool ok = vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_cores, cores) &&
              vs_device_set_str(&d->allocated_key, "hami.io/aws-neuron-devices-allocated") &&
              vs_device_add_managed(d, count) && vs_device_add_managed(d, cores);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_awsneuron = {.name = "awsneuron", .make = make};
