/* vastai: Vastai cards and dies, word `Vastai` (spec/hami-vendors.md §2.12). Cards from the device
 * plugin's hami.io/node-va-register (JSON; devcore set to 100; custominfo DeviceStrategy "die"
 * marks a die, AIC the physical card it belongs to), requests from vastaitech.com/va (limits, then
 * requests), HAMi's slot-only Fit (no memory or core accounting), vastaitech.com/use-gpuuuid /
 * nouse-gpuuuid, and Filter's hami.io/Vastai-devices-to-allocate and -allocated. Shared lock.
 *
 * In die mode (the first candidate is a die) every usable die is collected, and several dies are
 * taken from as few physical cards as possible: cards by their number of usable dies, most first.
 * Under `mutex` a die on a card that has any die in use is a conflict. The node-score term adds,
 * per container, the share of its dies on its most used card (0..1, whatever the node policy).
 * HAMi leaves the order of cards with equally many dies to Go's map order; we take them in the
 * order their first die was collected. A die without an AIC is a card of its own (HAMi leaves it
 * out and may place fewer dies than asked). */
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "policy.h"
#include "request.h"

#define WORD       "Vastai"
#define SECTION    "vastai"
#define REGISTER   "hami.io/node-va-register"
#define USE_UUID   "vastaitech.com/use-gpuuuid"
#define NOUSE_UUID "vastaitech.com/nouse-gpuuuid"
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

/* The card's AIC (a string in its custominfo), NULL when it has none. */
static const char *aic_of(const struct vs_card *c)
{
    return json_string_value(json_object_get(c->custom, "AIC"));
}

static bool is_die(const struct vs_card *c)
{
    const char *s = json_string_value(json_object_get(c->custom, "DeviceStrategy"));
    return s && strcmp(s, "die") == 0;
}

/* Whether some candidate on physical card `aic` is in use. */
static bool aic_busy(const struct vs_fit_call *fc, const char *aic)
{
    for (size_t i = 0; aic && i < fc->n_cands; i++) {
        const char *a = aic_of(fc->cands[i]->c);
        if (fc->cands[i]->used > 0 && a && strcmp(a, aic) == 0)
            return true;
    }
    return false;
}

/* HAMi's computeBestCombination over the collected dies col[0..n): dies grouped by AIC (in the
 * order each group's first die was collected), groups by size, largest first (stable), taken
 * whole until nums. Writes the chosen positions in col to out. */
static void best_combination(struct vs_scard **col, size_t n, size_t nums, size_t *out)
{
    size_t *group = malloc(n * sizeof(*group)), *size = calloc(n, sizeof(*size));
    size_t *order = malloc(n * sizeof(*order)), ng = 0, got = 0;
    if (!group || !size || !order) {
        for (size_t i = 0; i < nums; i++) /* out of memory: the first ones collected */
            out[i] = i;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const char *a = aic_of(col[i]->c);
        size_t g = ng;
        for (size_t j = 0; a && j < i; j++) {
            const char *b = aic_of(col[j]->c);
            if (b && strcmp(a, b) == 0) {
                g = group[j];
                break;
            }
        }
        if (g == ng)
            order[ng++] = g;
        group[i] = g;
        size[g]++;
    }
    for (size_t i = 1; i < ng; i++) { /* stable insertion sort, larger groups first */
        size_t t = order[i], j = i;
        while (j > 0 && size[order[j - 1]] < size[t]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = t;
    }
    for (size_t k = 0; k < ng && got < nums; k++)
        for (size_t i = 0; i < n && got < nums; i++)
            if (group[i] == order[k])
                out[got++] = i;
done:
    free(group);
    free(size);
    free(order);
}

static char *fit(const struct vs_fit_call *fc, struct vs_pick *picks, bool *nomem)
{
    struct vs_reasons why = {.n = 0};
    size_t nums = (size_t)fc->req->nums, got = 0;
    bool die = fc->n_cands && is_die(fc->cands[0]->c);
    struct vs_scard **col = die ? calloc(fc->n_cands, sizeof(*col)) : NULL;
    if (die && !col) {
        *nomem = true;
        return NULL;
    }
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
        if (fc->gpu->mutex && (s->used > 0 || (die && aic_busy(fc, aic_of(c))))) {
            vs_reasons_add(&why, VS_WHY_EXCLUSIVE, 1);
            continue;
        }
        if (die) {
            col[got++] = s;
            continue;
        }
        picks[got++] = (struct vs_pick){.card = s};
        if (got == nums)
            return NULL;
    }
    if (die && got >= nums) {
        size_t *idx = malloc(nums * sizeof(*idx));
        if (!idx) {
            free(col);
            *nomem = true;
            return NULL;
        }
        if (got == nums || nums == 1)
            for (size_t k = 0; k < nums; k++)
                idx[k] = k;
        else
            best_combination(col, got, nums, idx);
        for (size_t k = 0; k < nums; k++)
            picks[k] = (struct vs_pick){.card = col[idx[k]]};
        free(idx);
        free(col);
        return NULL;
    }
    free(col);
    vs_reasons_add(&why, VS_WHY_INSUFF, got);
    return vs_reasons_text(&why, fc->n_cands, nomem);
}

/* HAMi's ScoreNode: per container with dies, the share of them on its most used physical card;
 * 0 for the node as soon as a chosen card is not a die with an AIC. */
static double score_node(const struct vs_score_call *sc)
{
    double score = 0;
    for (size_t k = 0; k < sc->devs->n; k++) {
        const struct vs_ctr_devs *cd = &sc->devs->ctrs[k];
        size_t best = 0, total = 0;
        for (size_t j = 0; j < cd->n; j++) {
            const struct vs_card *c = NULL;
            for (size_t i = 0; i < sc->node->n_cards && !c; i++)
                if (strcmp(sc->node->cards[i].uuid, cd->devs[j].uuid) == 0)
                    c = &sc->node->cards[i];
            if (!c || !c->custom)
                return 0;
            const json_t *st = json_object_get(c->custom, "DeviceStrategy");
            if (json_is_string(st) && strcmp(json_string_value(st), "die") != 0)
                return 0;
            const json_t *aic = json_object_get(c->custom, "AIC");
            if (!aic)
                return 0;
            if (!json_is_string(aic))
                continue;
            total++;
            size_t same = 0;
            for (size_t m = 0; m < cd->n; m++) {
                const struct vs_card *o = NULL;
                for (size_t i = 0; i < sc->node->n_cards && !o; i++)
                    if (strcmp(sc->node->cards[i].uuid, cd->devs[m].uuid) == 0)
                        o = &sc->node->cards[i];
                same += o && strcmp(aic_of(o) ? aic_of(o) : "", json_string_value(aic)) == 0;
            }
            best = same > best ? same : best;
        }
        if (total)
            score += (double)((float)best / (float)total);
    }
    return score;
}

static const struct vs_device_ops ops = {
    .inventory = vs_device_register_inventory,
    .inventory_fp = vs_device_register_fp,
    .request = request,
    .fit = fit,
    .score_node = score_node,
};

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->register_key = REGISTER;
    d->register_devcore = 100;
    d->lock = VS_LOCK_SHARED;
    const char *count = vs_device_cfg_str(cfg, SECTION, "resourceCountName", "vastaitech.com/va");
    bool ok = vs_device_set_str(&d->res_count, count) &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/Vastai-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/Vastai-devices-allocated") &&
              vs_device_add_managed(d, count);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

const struct vs_device_class vs_device_class_vastai = {.name = "vastai", .make = make};
