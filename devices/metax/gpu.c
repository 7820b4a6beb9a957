/* gpu: the Metax-GPU backend (spec/hami-vendors.md §2.4.1): whole cards. A node's cards come from
 * its status.capacity of metax-tech.com/gpu (ids <node>-metax-<i>, one slot, 65536 MiB, 100
 * cores each); a request is a number of whole cards (limits, then requests); the generic G-Fit
 * with HAMi's custom rule (every card of a pod's earlier containers must be this card, so only
 * one container of a pod gets cards); Filter writes hami.io/metax-gpu-devices-to-allocate and
 * -allocated. The node-score term comes from the node's annotations by the node policy:
 * binpack reads metax-tech.com/gpu.topology.losses, spread metax-tech.com/gpu.topology.scores,
 * each a JSON object from a card count to a number, and the term is 2000 minus the entry for the
 * pod's card count (0 when the entry is missing or the object does not parse). No node lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gojson.h"
#include "metax.h"
#include "model.h"
#include "request.h"

#define WORD   "Metax-GPU"
#define LOSSES "metax-tech.com/gpu.topology.losses"
#define SCORES "metax-tech.com/gpu.topology.scores"
#define I32MAX 2147483647LL
/* At most 1024 cards per node. */
#define MAX_CARDS 1024

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const char *names[] = {d->res_count};
    static const char *const keys[] = {LOSSES, SCORES};
    uint64_t c = vs_device_fp_capacity(kn, names, 1);
    uint64_t a = vs_device_fp_annotations(kn, keys, 2);
    return c ? (c ^ a) * 0x100000001b3ULL + 1 : 0;
}

/* Go's strconv.ParseInt(s, 10, 64): an optional sign and decimal digits. */
static bool parse_key(const char *s, long long *out)
{
    const char *p = s;
    bool neg = *p == '-';
    if (*p == '+' || *p == '-')
        p++;
    if (!*p)
        return false;
    unsigned long long v = 0, lim = neg ? 9223372036854775808ULL : 9223372036854775807ULL;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned d = (unsigned)(*p - '0');
        if (v > (lim - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? (long long)(0 - v) : (long long)v;
    return true;
}

/* A topology annotation as HAMi decodes it into map[int]int: an object whose keys are decimal
 * integers and values integers (null reads 0); anything else decodes to nothing. The result maps
 * the canonical decimal key to the value; empty when the text does not decode. NULL on OOM. */
static json_t *parse_table(const char *text)
{
    json_t *out = json_object(), *root = NULL;
    struct vs_errbuf e;
    if (!out || vs_gojson_parse(text, strlen(text), &root, &e) || json_is_null(root))
        goto done;
    if (!json_is_object(root))
        goto done;
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        long long key;
        int64_t x;
        char canon[24];
        if (!parse_key(k, &key) || vs_gojson_int(v, INT64_MIN, INT64_MAX, &x, &e)) {
            json_object_clear(out);
            goto done;
        }
        snprintf(canon, sizeof(canon), "%lld", key);
        if (json_object_set_new(out, canon, json_integer(x))) {
            json_decref(out);
            out = NULL;
            goto done;
        }
    }
done:
    json_decref(root);
    return out;
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    int64_t n;
    enum vs_err err = vs_device_capacity_max(kn, d->res_count, MAX_CARDS, &n, eb);
    if (err || n == 0)
        return err;
    for (int64_t i = 0; i < n; i++) {
        char id[300];
        snprintf(id, sizeof(id), "%s-metax-%lld", kn->name, (long long)i);
        struct vs_card_reg *c = vs_device_add_card(out, id, WORD);
        if (!c)
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        c->count = 1;
        c->devmem = 65536;
        c->devcore = 100;
    }
    /* The node's tables, decoded once: {"losses": {...}, "scores": {...}}, each only when the
     * annotation is there. */
    const char *keys[2] = {LOSSES, SCORES}, *names[2] = {"losses", "scores"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = vs_kv_get(&kn->annotations, keys[i]);
        if (!v)
            continue;
        json_t *t = parse_table(v);
        if (!t || (!out->node_info && !(out->node_info = json_object())) ||
            json_object_set_new(out->node_info, names[i], t))
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    return VS_OK;
}

/* count: limits then requests; always whole cards. */
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
    out->memreq = 0;
    out->pct = 100;
    out->cores = 100;
    return VS_OK;
}

/* 2000 minus the table entry for the pod's number of cards: losses under binpack, scores under
 * spread (exactly those policy names); 0 without the table. Added as is whatever the policy. */
static double score_node(const struct vs_score_call *sc)
{
    const char *table = NULL;
    if (strcmp(sc->node_policy, "binpack") == 0)
        table = "losses";
    else if (strcmp(sc->node_policy, "spread") == 0)
        table = "scores";
    const json_t *info = sc->node->dev_info ? sc->node->dev_info[sc->dev->id] : NULL;
    const json_t *t = table ? json_object_get(info, table) : NULL;
    if (!t)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < sc->devs->n; i++)
        n += sc->devs->ctrs[i].n;
    char key[24];
    snprintf(key, sizeof(key), "%zu", n);
    float x = (float)json_integer_value(json_object_get(t, key));
    return (double)(2000.0f - x);
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .score_node = score_node,
};

enum vs_err vs_metax_make_gpu(const struct vs_devcfg *cfg, struct vs_devices *set,
                              struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, WORD, &ops);
    if (!d)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->rules = (struct vs_fit_rules){.clamp_cores = true, .same_card = true};
    d->lock = VS_LOCK_NONE;
    const char *count =
        vs_device_cfg_str(cfg, VS_METAX_SECTION, "resourceCountName", "metax-tech.com/gpu");
    bool ok = vs_device_set_str(&d->res_count, count) &&
              vs_device_set_str(&d->to_allocate_key, "hami.io/metax-gpu-devices-to-allocate") &&
              vs_device_set_str(&d->allocated_key, "hami.io/metax-gpu-devices-allocated") &&
              vs_device_add_managed(d, count);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}
