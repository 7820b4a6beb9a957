/* ascend: Huawei Ascend NPUs (spec/hami-vendors.md §2.1), one backend per vnpus.configs[] entry
 * (Ascend910A, 910B2, 910B3, 910B4-1, 910B4, 310P, 910C with HAMi's chart defaults), made only
 * with --enable-ascend. Cards come from hami.io/node-register-<word> (JSON, custominfo.NetworkID);
 * requests from huawei.com/<word>, -memory (MiB x memoryFactor) and -core; the webhook rounds
 * memory to the chip's vNPU templates, rewrites a 910C superPod request of 1 to 2 and keeps
 * -core to hami-core pods (huawei.com/vnpu-mode: hami-core), which need a node whose
 * hami-vnpu-core annotation (or vnpus.hamiVnpuCore) says so (ModeNotFit) and count every card
 * as 100 cores. Multi-NPU requests on 910 chips take cards of one NetworkID group first, 910C
 * requests whole modules (NPU pairs 2k, 2k+1); groups of equal size keep the order in which the
 * walk met them (HAMi leaves that to Go's map order). Filter writes
 * hami.io/<word>-devices-to-allocate and -allocated, predicate-time and huawei.com/<word> (the
 * device plugin's runtime JSON). Bind takes the shared lock. Backends are immutable. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "devcfg.h"
#include "device.h"
#include "json_text.h"
#include "model.h"
#include "policy.h"
#include "quantity.h"
#include "request.h"

#define SECTION       "vnpus"
#define PREFIX_910    "Ascend910"
#define WORD_910C     "Ascend910C"
#define MODE_ANNO     "huawei.com/vnpu-mode"
#define MODE_HAMICORE "hami-core"
#define NODE_ANNO     "hami-vnpu-core"
#define NETWORK_ID    "NetworkID"
#define NET_WEIGHT    10.0f
#define I32MAX        2147483647LL

struct tmpl {
    char *name;
    int64_t memory;
};

/* One chip's configuration (a vnpus.configs[] entry) and the keys made from its word. */
struct chip {
    char *register_key, *json_key, *use_uuid, *nouse_uuid;
    int64_t mem_alloc, mem_cap; /* memoryAllocatable, memoryCapacity (MiB) */
    int64_t factor;             /* memoryFactor (<= 1: none) */
    char *runtime_class;        /* "" = none */
    bool overwrite_env, super_pod;
    bool hami_core_default; /* vnpus.hamiVnpuCore: nodes without the annotation */
    bool is910, is910c;
    struct tmpl *t; /* by memory, ascending (stable: equal memories keep file order) */
    size_t n_t;
    char **counts; /* every configured chip's count resource (overwriteEnv) */
    size_t n_counts;
};

static void chip_free(void *priv)
{
    struct chip *c = priv;
    if (!c)
        return;
    free(c->register_key);
    free(c->json_key);
    free(c->use_uuid);
    free(c->nouse_uuid);
    free(c->runtime_class);
    for (size_t i = 0; i < c->n_t; i++)
        free(c->t[i].name);
    free(c->t);
    for (size_t i = 0; i < c->n_counts; i++)
        free(c->counts[i]);
    free(c->counts);
    free(c);
}

/* HAMi's trimMemory: the first template holding m (its memory and name), else the whole card
 * (memoryAllocatable, no name) up to memoryCapacity, else 0. */
static int64_t trim_memory(const struct chip *c, int64_t m, const char **name)
{
    *name = NULL;
    for (size_t i = 0; i < c->n_t; i++) {
        if (m <= c->t[i].memory) {
            *name = c->t[i].name;
            return c->t[i].memory;
        }
    }
    return m <= c->mem_cap ? c->mem_alloc : 0;
}

/* ---- inventory ---- */

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const struct chip *c = d->priv;
    const char *keys[] = {c->register_key, NODE_ANNO};
    return vs_device_fp_annotations(kn, keys, 2);
}

/* The cards of hami.io/node-register-<word>, and whether the node runs hami-vnpu-core (its
 * annotation, kept as node_info {"hamiVnpuCore": bool} when present). */
static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    const struct chip *c = d->priv;
    enum vs_err err = vs_device_inventory_register(kn, c->register_key, out, eb);
    if (err || !out->reg.n)
        return err;
    const char *v = vs_kv_get(&kn->annotations, NODE_ANNO);
    if (v && !(out->node_info = json_pack("{sb}", "hamiVnpuCore", strcmp(v, "true") == 0)))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    return VS_OK;
}

/* ---- requests ---- */

/* count: limits then requests, 0..2^31-1 (0: none); memory MiB x memoryFactor; cores rounded
 * up. Pct 100 (the whole card's memory) when no memory is asked. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *ctr, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    const struct chip *c = d->priv;
    int64_t n, mem = 0, cores = 0, factor = c->factor > 1 ? c->factor : 1;
    bool has;
    enum vs_err err;
    if ((err = vs_device_qty(ctr, d->res_count, false, 0, I32MAX, &n, &has, eb)) || !has || !n)
        return err;
    if ((err = vs_device_qty(ctr, d->res_mem, false, 0, I32MAX / factor, &mem, &has, eb)))
        return err;
    if ((err = vs_device_qty_ceil(ctr, d->res_cores, false, 0, I32MAX, &cores, &has, eb)))
        return err;
    out->nums = (int32_t)n;
    out->memreq = (int32_t)(mem * factor);
    out->pct = mem ? 0 : 100;
    out->cores = (int32_t)cores;
    return VS_OK;
}

/* ---- Fit ---- */

/* The pod context is whether the pod runs in hami-core mode: a pointer to one of two constants,
 * nothing to free. */
static const bool hami_core_yes = true, hami_core_no = false;

static bool pod_hami_core(const struct vs_pod *p)
{
    const char *v = vs_kv_get(&p->annotations, MODE_ANNO);
    return v && strcmp(v, MODE_HAMICORE) == 0;
}

static enum vs_err pod_begin(const struct vs_device *d, const struct vs_pod *p, void **ctx,
                             struct vs_errbuf *eb)
{
    *ctx = (void *)(pod_hami_core(p) ? &hami_core_yes : &hami_core_no);
    return VS_OK;
}

static uint64_t pod_sig(const void *ctx, uint64_t h)
{
    return (h ^ (*(const bool *)ctx ? 0xa5u : 0x5au)) * 0x100000001b3ULL;
}

/* hami-core pods count every card as 100 cores, whatever the plugin advertises. */
static int64_t total_cores(const struct vs_device *d, const void *ctx, const struct vs_card *c)
{
    return *(const bool *)ctx ? 100 : c->devcore;
}

/* A hami-core pod needs a node running hami-vnpu-core: its annotation when present, else
 * vnpus.hamiVnpuCore. */
static const char *node_check(const struct vs_device *d, const void *ctx, const struct vs_node *n)
{
    const struct chip *c = d->priv;
    if (!*(const bool *)ctx)
        return NULL;
    const json_t *info = n->dev_info ? n->dev_info[d->id] : NULL;
    const json_t *v = json_object_get(info, "hamiVnpuCore");
    bool supports = v ? json_is_true(v) : c->hami_core_default;
    return supports ? NULL : "ModeNotFit";
}

/* A card's NetworkID: a JSON number in custominfo (a real is truncated, as Go's int() does). */
static bool network_id(const struct vs_card *c, int64_t *out)
{
    const json_t *v = json_object_get(c->custom, NETWORK_ID);
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (x > -9.2e18 && x < 9.2e18) {
            *out = (int64_t)x;
            return true;
        }
    }
    return false;
}

/* Multi-NPU requests on 910 chips choose among every passing card. */
static bool collects(const struct vs_device *d, const void *ctx, const struct vs_req *r)
{
    const struct chip *c = d->priv;
    return c->is910 && r->nums > 1;
}

/* Groups of collected cards (indices into picks, in walk order) by a key, ordered by size
 * descending, equal sizes in the order the walk met them. */
struct group {
    int64_t key;
    size_t first; /* position of the group's first card in the walk */
    size_t n;
    size_t *at;
};

static int group_cmp(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Groups picks[0..n) by keys[i]; g has room for n groups, at for n indices. Returns the number of
 * groups, sorted. */
static size_t make_groups(const int64_t *keys, size_t n, struct group *g, size_t *at)
{
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < ng && g[k].key != keys[i])
            k++;
        if (k == ng)
            g[ng++] = (struct group){.key = keys[i], .first = i};
        g[k].n++;
    }
    /* Each group's slice of `at`, filled in walk order. */
    size_t off = 0;
    for (size_t k = 0; k < ng; k++) {
        g[k].at = at + off;
        off += g[k].n;
        g[k].n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (g[k].key != keys[i])
            k++;
        g[k].at[g[k].n++] = i;
    }
    qsort(g, ng, sizeof(*g), group_cmp);
    return ng;
}

/* 910C: whole modules only (NPUs 2k and 2k+1), largest groups first, until the request is met;
 * anything but exactly Nums cards fails with "<taken>/<Nums> AllocatedCardsInsufficientRequest"
 * (HAMi's denominator for this failure, for every reason item). */
static bool select_910c(const struct vs_fit_call *fc, const struct vs_pick *picks, size_t n,
                        size_t *out, size_t *got, size_t *denominator, bool *report_zero,
                        int64_t *keys, struct group *g, size_t *at)
{
    size_t nums = (size_t)fc->req->nums, taken = 0;
    for (size_t i = 0; i < n; i++)
        keys[i] = picks[i].card->c->index / 2;
    size_t ng = make_groups(keys, n, g, at);
    for (size_t k = 0; k < ng && taken < nums; k++) {
        /* A module is whole when both its NPUs passed (a repeated index is not a second NPU). */
        if (g[k].n != 2 || picks[g[k].at[0]].card->c->index == picks[g[k].at[1]].card->c->index)
            continue;
        for (size_t j = 0; j < 2; j++) {
            if (taken < nums)
                out[taken] = g[k].at[j];
            taken++;
        }
    }
    if (taken == nums)
        return true;
    *got = taken;
    *denominator = nums;
    *report_zero = true;
    return false;
}

/* Other 910 chips: with a NetworkID on every candidate, the cards of the largest NetworkID
 * groups first; otherwise (or with exactly Nums passing) the first Nums in walk order, as a
 * plain walk takes them. */
static bool select_cards(const struct vs_fit_call *fc, const struct vs_pick *picks, size_t n,
                         size_t *out, size_t *got, size_t *denominator, bool *report_zero)
{
    const struct chip *c = fc->dev->priv;
    size_t nums = (size_t)fc->req->nums;
    int64_t keys_buf[32];
    struct group g_buf[32];
    size_t at_buf[32];
    int64_t *keys = n <= 32 ? keys_buf : calloc(n, sizeof(*keys));
    struct group *g = n <= 32 ? g_buf : calloc(n, sizeof(*g));
    size_t *at = n <= 32 ? at_buf : calloc(n, sizeof(*at));
    bool ok = false;
    if (!keys || !g || !at) {
        /* Out of memory: refuse the node with the walk's words rather than guess. */
        *got = 0;
        goto out;
    }
    if (c->is910c) {
        ok = select_910c(fc, picks, n, out, got, denominator, report_zero, keys, g, at);
        goto out;
    }
    if (n < nums)
        goto out;
    bool topo = n > nums;
    for (size_t i = 0; topo && i < fc->n_cands; i++) {
        int64_t id;
        topo = network_id(fc->cands[i]->c, &id);
    }
    if (!topo) {
        for (size_t i = 0; i < nums; i++)
            out[i] = i;
        ok = true;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        network_id(picks[i].card->c, &keys[i]);
    size_t ng = make_groups(keys, n, g, at), k = 0;
    for (size_t gi = 0; gi < ng && k < nums; gi++)
        for (size_t j = 0; j < g[gi].n && k < nums; j++)
            out[k++] = g[gi].at[j];
    ok = true;
out:
    if (keys != keys_buf)
        free(keys);
    if (g != g_buf)
        free(g);
    if (at != at_buf)
        free(at);
    return ok;
}

/* ---- score ---- */

static const struct vs_card *node_card(const struct vs_device *d, const struct vs_node *n,
                                       const char *uuid)
{
    for (size_t i = 0; i < n->n_cards; i++)
        if (n->cards[i].dev == d->id && strcmp(n->cards[i].uuid, uuid) == 0)
            return &n->cards[i];
    return NULL;
}

/* Per container with cards: the share of its cards in its largest NetworkID group; times 10.
 * A chosen card without a NetworkID makes the whole term 0 (HAMi). Float, as HAMi's float32. */
static double score_node(const struct vs_score_call *sc)
{
    float score = 0;
    for (size_t i = 0; i < sc->devs->n; i++) {
        const struct vs_ctr_devs *cd = &sc->devs->ctrs[i];
        if (!cd->n)
            continue;
        int64_t ids[64];
        size_t cnt[64], ng = 0, total = 0, best = 0;
        for (size_t j = 0; j < cd->n; j++) {
            const struct vs_card *c = node_card(sc->dev, sc->node, cd->devs[j].uuid);
            int64_t id;
            if (!c || !network_id(c, &id))
                return 0;
            size_t k = 0;
            while (k < ng && ids[k] != id)
                k++;
            if (k == ng) {
                if (ng == 64)
                    continue; /* more groups than any node has cards: not counted */
                ids[ng] = id;
                cnt[ng++] = 0;
            }
            cnt[k]++;
            total++;
            if (cnt[k] > best)
                best = cnt[k];
        }
        if (total)
            score += (float)best / (float)total;
    }
    return (double)(score * NET_WEIGHT);
}

/* ---- annotations ---- */

/* A string as Go's encoding/json writes it (json.Marshal): the common writer's literal (UTF-8
 * checked, U+FFFD for bad bytes), then <, >, & and U+2028/U+2029 as \u escapes and backspace
 * and form feed in their short forms, as Go does. */
static void put_go_string(struct vs_buf *b, const char *s)
{
    struct vs_buf t;
    vs_buf_init(&t);
    if (!vs_json_put_string(&t, s) || !t.data) {
        b->oom = true;
        vs_buf_cleanup(&t);
        return;
    }
    const unsigned char *p = (const unsigned char *)t.data;
    for (size_t i = 0; i < t.len; i++) {
        if (p[i] == '\\' && i + 5 < t.len && p[i + 1] == 'u' &&
            (memcmp(p + i + 2, "0008", 4) == 0 || memcmp(p + i + 2, "000c", 4) == 0)) {
            vs_buf_puts(b, p[i + 5] == '8' ? "\\b" : "\\f");
            i += 5;
        } else if (p[i] == '\\') { /* any other escape is copied whole (at least its next char) */
            vs_buf_append(b, (const char *)p + i, 2);
            i++;
        } else if (p[i] == '<' || p[i] == '>' || p[i] == '&') {
            vs_buf_puts(b, p[i] == '<' ? "\\u003c" : p[i] == '>' ? "\\u003e" : "\\u0026");
        } else if (p[i] == 0xE2 && i + 2 < t.len && p[i + 1] == 0x80 &&
                   (p[i + 2] == 0xA8 || p[i + 2] == 0xA9)) {
            vs_buf_puts(b, p[i + 2] == 0xA8 ? "\\u2028" : "\\u2029");
            i += 2;
        } else {
            vs_buf_append(b, (const char *)p + i, 1);
        }
    }
    vs_buf_cleanup(&t);
}

/* huawei.com/<word>: one object per chosen card over all containers, in order: UUID, temp (the
 * template of the card's memory; never in hami-core mode), memory, core; empty ones left out. */
static char *runtime_json(const struct chip *c, const struct vs_pod *p,
                          const struct vs_pod_devs *devs)
{
    bool hami_core = pod_hami_core(p);
    struct vs_buf b;
    vs_buf_init(&b);
    vs_buf_puts(&b, "[");
    bool first = true;
    for (size_t i = 0; i < devs->n; i++) {
        for (size_t j = 0; j < devs->ctrs[i].n; j++) {
            const struct vs_cdev *cd = &devs->ctrs[i].devs[j];
            const char *temp = NULL;
            if (!hami_core)
                trim_memory(c, cd->usedmem, &temp);
            bool any = false;
            vs_buf_puts(&b, first ? "{" : ",{");
            first = false;
            if (cd->uuid && *cd->uuid) {
                vs_buf_puts(&b, "\"UUID\":");
                put_go_string(&b, cd->uuid);
                any = true;
            }
            if (temp && *temp) {
                vs_buf_puts(&b, any ? ",\"temp\":" : "\"temp\":");
                put_go_string(&b, temp);
                any = true;
            }
            if (cd->usedmem) {
                vs_buf_printf(&b, "%s\"memory\":%d", any ? "," : "", cd->usedmem);
                any = true;
            }
            if (cd->usedcores)
                vs_buf_printf(&b, "%s\"core\":%d", any ? "," : "", cd->usedcores);
            vs_buf_puts(&b, "}");
        }
    }
    vs_buf_puts(&b, "]");
    return vs_buf_steal(&b);
}

static enum vs_err annotate(const struct vs_device *d, const struct vs_pod *p,
                            const struct vs_node *n, const struct vs_pod_devs *devs,
                            const struct vs_mig_allocs *mig, int64_t now_ns, json_t *out)
{
    const struct chip *c = d->priv;
    enum vs_err err = vs_device_annotate_generic(d, devs, out);
    if (err)
        return err;
    int rc = 0;
    if (now_ns > 0) {
        char ts[32];
        snprintf(ts, sizeof(ts), "%lld", (long long)(now_ns / 1000000000));
        rc |= json_object_set_new(out, "predicate-time", json_string(ts));
    }
    char *v = runtime_json(c, p, devs);
    if (!v)
        return VS_ERR_NOMEM;
    rc |= json_object_set_new(out, c->json_key, json_string(v));
    free(v);
    return rc ? VS_ERR_NOMEM : VS_OK;
}

/* ---- admission ---- */

/* A quantity of the container as Go's Quantity.Value() reads it (rounded up), any sign. */
static enum vs_err qty_value(const struct vs_container *ctr, const char *name, bool limits_only,
                             int64_t *out, bool *has, struct vs_errbuf *eb)
{
    const char *v = vs_device_res(ctr, name, limits_only);
    *has = v != NULL;
    if (v && vs_quantity_ceil(v, out))
        return vs_err_set(eb, VS_ERR_INVAL, "invalid %s \"%s\" in container %s: not a quantity",
                          name, v, ctr->name ? ctr->name : "");
    return VS_OK;
}

/* HAMi's MutateAdmission for one container (spec/hami-vendors.md §2.1.4). */
static enum vs_err admit(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *ctr, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb)
{
    const struct chip *c = d->priv;
    int64_t count, cores, mem, trimmed = c->mem_alloc;
    bool has;
    enum vs_err err;
    char num[24];
    *found = false;
    if ((err = qty_value(ctr, d->res_count, true, &count, &has, eb)))
        return err;
    if (!has) {
        /* Hides the node's NPUs from a container that asks for none. HAMi also tells a
         * container that asks for another chip to see none (each chip checks only its own
         * count), which would override what that chip's device plugin sets. */
        bool any = false;
        for (size_t i = 0; i < c->n_counts && !any; i++)
            any = vs_kv_get(&ctr->limits, c->counts[i]) != NULL;
        if (c->overwrite_env && !any)
            vs_admit_set(a, VS_ADMIT_ENV, "ASCEND_VISIBLE_DEVICES", "");
        return a->oom ? vs_err_set(eb, VS_ERR_NOMEM, "out of memory") : VS_OK;
    }
    if (c->is910c && c->super_pod) {
        if (count == 1) {
            /* The smallest unit is a module of 2 NPUs. */
            vs_admit_set(a, VS_ADMIT_LIMIT, d->res_count, "2");
            if (vs_kv_get(&ctr->requests, d->res_count))
                vs_admit_set(a, VS_ADMIT_REQUEST, d->res_count, "2");
        } else if (count % 2 != 0) {
            return vs_err_set(eb, VS_ERR_INVAL,
                              "Ascend910C device request must be 1 or 2*n, got %lld",
                              (long long)count);
        }
    }
    bool hami_core = pod_hami_core(p);
    if (!hami_core && d->res_cores) {
        if ((err = qty_value(ctr, d->res_cores, false, &cores, &has, eb)))
            return err;
        if (has && cores > 0)
            return vs_err_set(eb, VS_ERR_INVAL,
                              "%s is only supported in hami-core (soft split) mode", d->res_cores);
    }
    if ((err = qty_value(ctr, d->res_mem, true, &mem, &has, eb)))
        return err;
    if (has && hami_core) {
        trimmed = mem;
    } else if (has) {
        const char *name;
        trimmed = trim_memory(c, mem, &name);
        if (trimmed <= 0)
            return vs_err_set(eb, VS_ERR_INVAL, "%s %lld is invalid", d->res_mem, (long long)mem);
    }
    *found = true;
    /* The original count: a 910C request rewritten from 1 to 2 is not "multiple" here. */
    if (count > 1 && !hami_core && trimmed != c->mem_alloc)
        return vs_err_set(eb, VS_ERR_INVAL, "vNPU not supported for multiple devices");
    if (d->res_mem) {
        snprintf(num, sizeof(num), "%lld", (long long)trimmed);
        vs_admit_set(a, VS_ADMIT_LIMIT, d->res_mem, num);
        vs_admit_set(a, VS_ADMIT_REQUEST, d->res_mem, num);
    }
    if (*c->runtime_class)
        vs_admit_set(a, VS_ADMIT_RUNTIME, "", c->runtime_class);
    return a->oom ? vs_err_set(eb, VS_ERR_NOMEM, "out of memory") : VS_OK;
}

static const struct vs_device_ops ops_910 = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .pod_begin = pod_begin,
    .pod_sig = pod_sig,
    .total_cores = total_cores,
    .node_check = node_check,
    .collects = collects,
    .select = select_cards,
    .score_node = score_node,
    .annotate = annotate,
    .admit = admit,
    .free_priv = chip_free,
};

/* Other chips (310P): no NetworkID groups, no score term. */
static const struct vs_device_ops ops_other = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .pod_begin = pod_begin,
    .pod_sig = pod_sig,
    .total_cores = total_cores,
    .node_check = node_check,
    .annotate = annotate,
    .admit = admit,
    .free_priv = chip_free,
};

/* ---- configuration ---- */

/* HAMi's chart defaults (charts/hami device-configmap.yaml). */
struct default_tmpl {
    const char *name;
    int64_t memory;
};
static const struct default_chip {
    const char *word;
    int64_t alloc, cap, factor;
    bool super_pod;
    struct default_tmpl t[4];
} defaults[] = {
    {"Ascend910A",
     32768,
     32768,
     1,
     false,
     {{"vir02", 2184}, {"vir04", 4369}, {"vir08", 8738}, {"vir16", 17476}}},
    {"Ascend910B2",
     65536,
     65536,
     1,
     false,
     {{"vir03_1c_8g", 8192}, {"vir06_1c_16g", 16384}, {"vir12_3c_32g", 32768}}},
    {"Ascend910B3", 65536, 65536, 1, false, {{"vir05_1c_16g", 16384}, {"vir10_3c_32g", 32768}}},
    {"Ascend910B4-1", 65536, 65536, 1, false, {{"vir05_1c_16g", 16384}, {"vir10_3c_32g", 32768}}},
    {"Ascend910B4", 32768, 32768, 1, false, {{"vir05_1c_8g", 8192}, {"vir10_3c_16g", 16384}}},
    {"Ascend310P", 21527, 24576, 1, false, {{"vir01", 3072}, {"vir02", 6144}, {"vir04", 12288}}},
    {"Ascend910C", 65536, 65536, 0, true, {{"vir05_1c_16g", 16384}, {"vir10_3c_32g", 32768}}},
};

/* A string key of a configs[] entry: a YAML scalar as text (absent or null: ""). */
static enum vs_err entry_str(const json_t *e, size_t i, const char *key, char *buf, size_t len,
                             const char **out, struct vs_errbuf *eb)
{
    const json_t *v = json_object_get(e, key);
    *out = "";
    if (!v || json_is_null(v))
        return VS_OK;
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return VS_OK;
    }
    if (json_is_integer(v)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
        *out = buf;
        return VS_OK;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v) ? "true" : "false";
        return VS_OK;
    }
    return vs_err_set(eb, VS_ERR_PARSE, SECTION ".configs[%zu].%s: expected a string", i, key);
}

/* An integer key (a YAML integer or a decimal string) in [min, max]; absent or null: 0. */
static enum vs_err entry_int(const json_t *e, const char *where, size_t i, const char *key,
                             int64_t min, int64_t max, int64_t *out, struct vs_errbuf *eb)
{
    const json_t *v = json_object_get(e, key);
    *out = 0;
    if (!v || json_is_null(v))
        return VS_OK;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
    } else {
        const char *s = json_string_value(v);
        char *end;
        long long x = s && *s ? strtoll(s, &end, 10) : 0;
        if (!s || !*s || *end)
            return vs_err_set(eb, VS_ERR_PARSE, SECTION ".configs[%zu]%s.%s: expected an integer",
                              i, where, key);
        *out = x;
    }
    if (*out < min || *out > max)
        return vs_err_set(eb, VS_ERR_PARSE,
                          SECTION ".configs[%zu]%s.%s: %lld is out of range [%lld, %lld]", i, where,
                          key, (long long)*out, (long long)min, (long long)max);
    return VS_OK;
}

/* A bool key: YAML true/false; absent or null: false. */
static enum vs_err entry_bool(const json_t *e, const char *what, const char *key, bool *out,
                              struct vs_errbuf *eb)
{
    const json_t *v = json_object_get(e, key);
    *out = false;
    if (!v || json_is_null(v))
        return VS_OK;
    if (!json_is_boolean(v))
        return vs_err_set(eb, VS_ERR_PARSE, "%s.%s: expected true or false", what, key);
    *out = json_is_true(v);
    return VS_OK;
}

static int tmpl_cmp(const void *a, const void *b)
{
    const struct tmpl *x = a, *y = b;
    return x->memory < y->memory ? -1 : x->memory > y->memory;
}

/* Makes the backend of one chip: its word, resource names, numbers and templates (names are
 * copied; templates sorted by memory, equal memories in the given order). */
struct chip_spec {
    const char *word, *res, *res_mem, *res_core, *runtime_class;
    int64_t alloc, cap, factor;
    bool overwrite_env, super_pod, hami_core;
    const char *t_name[64];
    int64_t t_mem[64];
    size_t n_t;
};

static enum vs_err add_chip(struct vs_devices *set, const struct chip_spec *s, struct vs_errbuf *eb)
{
    bool is910 = strncmp(s->word, PREFIX_910, strlen(PREFIX_910)) == 0;
    struct vs_device *d = vs_device_new(set, s->word, is910 ? &ops_910 : &ops_other);
    struct chip *c = d ? calloc(1, sizeof(*c)) : NULL;
    if (!c)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->priv = c;
    c->mem_alloc = s->alloc;
    c->mem_cap = s->cap;
    c->factor = s->factor;
    c->overwrite_env = s->overwrite_env;
    c->super_pod = s->super_pod;
    c->hami_core_default = s->hami_core;
    c->is910 = is910;
    c->is910c = strcmp(s->word, WORD_910C) == 0;
    struct vs_buf k[4];
    const char *fmt[4] = {"hami.io/node-register-%s", "huawei.com/%s", "hami.io/use-%s-uuid",
                          "hami.io/no-use-%s-uuid"};
    char **dst[4] = {&c->register_key, &c->json_key, &c->use_uuid, &c->nouse_uuid};
    bool ok = true;
    for (size_t i = 0; i < 4; i++) {
        vs_buf_init(&k[i]);
        vs_buf_printf(&k[i], fmt[i], s->word);
        ok &= (*dst[i] = vs_buf_steal(&k[i])) != NULL;
    }
    ok = ok && (c->runtime_class = strdup(s->runtime_class));
    if (ok && s->n_t && !(c->t = calloc(s->n_t, sizeof(*c->t))))
        ok = false;
    for (size_t i = 0; ok && i < s->n_t; i++) {
        c->t[i].memory = s->t_mem[i];
        ok = (c->t[i].name = strdup(s->t_name[i])) != NULL;
        c->n_t += ok;
    }
    /* Insertion sort: stable, and template lists are short. */
    for (size_t i = 1; ok && i < c->n_t; i++)
        for (size_t j = i; j > 0 && tmpl_cmp(&c->t[j - 1], &c->t[j]) > 0; j--) {
            struct tmpl t = c->t[j];
            c->t[j] = c->t[j - 1];
            c->t[j - 1] = t;
        }
    d->rules = (struct vs_fit_rules){
        .clamp_cores = true, .use_uuid = c->use_uuid, .nouse_uuid = c->nouse_uuid};
    d->lock = VS_LOCK_SHARED;
    d->mem_factor = s->factor > 1 ? (int32_t)s->factor : 1;
    struct vs_buf ta, al;
    vs_buf_init(&ta);
    vs_buf_init(&al);
    vs_buf_printf(&ta, "hami.io/%s-devices-to-allocate", s->word);
    vs_buf_printf(&al, "hami.io/%s-devices-allocated", s->word);
    char *tas = vs_buf_steal(&ta), *als = vs_buf_steal(&al);
    ok = ok && tas && als && vs_device_set_str(&d->res_count, s->res) &&
         vs_device_set_str(&d->res_mem, s->res_mem) &&
         vs_device_set_str(&d->res_cores, s->res_core) &&
         vs_device_set_str(&d->to_allocate_key, tas) && vs_device_set_str(&d->allocated_key, als) &&
         vs_device_add_managed(d, s->res) && vs_device_add_managed(d, s->res_mem) &&
         vs_device_add_managed(d, s->res_core);
    free(tas);
    free(als);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

static enum vs_err make_defaults(struct vs_devices *set, struct vs_errbuf *eb)
{
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        const struct default_chip *dc = &defaults[i];
        char res[64], mem[80], core[80];
        snprintf(res, sizeof(res), "huawei.com/%s", dc->word);
        snprintf(mem, sizeof(mem), "%s-memory", res);
        snprintf(core, sizeof(core), "%s-core", res);
        struct chip_spec s = {.word = dc->word,
                              .res = res,
                              .res_mem = mem,
                              .res_core = core,
                              .runtime_class = "",
                              .alloc = dc->alloc,
                              .cap = dc->cap,
                              .factor = dc->factor,
                              .super_pod = dc->super_pod};
        for (size_t t = 0; t < 4 && dc->t[t].name; t++) {
            s.t_name[t] = dc->t[t].name;
            s.t_mem[t] = dc->t[t].memory;
            s.n_t++;
        }
        enum vs_err err = add_chip(set, &s, eb);
        if (err)
            return err;
    }
    return VS_OK;
}

/* One vnpus.configs[] entry. */
static enum vs_err make_entry(struct vs_devices *set, const json_t *e, size_t i, bool hami_core,
                              struct vs_errbuf *eb)
{
    char b[5][24], what[48];
    struct chip_spec s = {.hami_core = hami_core};
    enum vs_err err;
    snprintf(what, sizeof(what), SECTION ".configs[%zu]", i);
    if (!json_is_object(e))
        return vs_err_set(eb, VS_ERR_PARSE, "%s: expected a mapping", what);
    if ((err = entry_str(e, i, "commonWord", b[0], 24, &s.word, eb)) ||
        (err = entry_str(e, i, "resourceName", b[1], 24, &s.res, eb)) ||
        (err = entry_str(e, i, "resourceMemoryName", b[2], 24, &s.res_mem, eb)) ||
        (err = entry_str(e, i, "resourceCoreName", b[3], 24, &s.res_core, eb)) ||
        (err = entry_str(e, i, "runtimeClassName", b[4], 24, &s.runtime_class, eb)) ||
        (err = entry_int(e, "", i, "memoryAllocatable", INT64_MIN, INT64_MAX, &s.alloc, eb)) ||
        (err = entry_int(e, "", i, "memoryCapacity", INT64_MIN, INT64_MAX, &s.cap, eb)) ||
        (err = entry_int(e, "", i, "memoryFactor", -I32MAX - 1, I32MAX, &s.factor, eb)) ||
        (err = entry_bool(e, what, "overwriteEnv", &s.overwrite_env, eb)) ||
        (err = entry_bool(e, what, "superPod", &s.super_pod, eb)))
        return err;
    if (!*s.word)
        return vs_err_set(eb, VS_ERR_PARSE, "%s.commonWord: missing", what);
    const json_t *ts = json_object_get(e, "templates");
    if (ts && !json_is_null(ts) && !json_is_array(ts))
        return vs_err_set(eb, VS_ERR_PARSE, "%s.templates: expected a list", what);
    if (json_array_size(ts) > sizeof(s.t_name) / sizeof(s.t_name[0]))
        return vs_err_set(eb, VS_ERR_PARSE, "%s.templates: more than %zu templates", what,
                          sizeof(s.t_name) / sizeof(s.t_name[0]));
    for (size_t t = 0; t < json_array_size(ts); t++) {
        const json_t *te = json_array_get(ts, t);
        char where[32];
        snprintf(where, sizeof(where), ".templates[%zu]", t);
        if (!json_is_object(te))
            return vs_err_set(eb, VS_ERR_PARSE, "%s%s: expected a mapping", what, where);
        const json_t *nm = json_object_get(te, "name");
        if (nm && !json_is_null(nm) && !json_is_string(nm))
            return vs_err_set(eb, VS_ERR_PARSE, "%s%s.name: expected a string", what, where);
        s.t_name[t] = json_is_string(nm) ? json_string_value(nm) : "";
        if ((err = entry_int(te, where, i, "memory", INT64_MIN, INT64_MAX, &s.t_mem[t], eb)))
            return err;
        s.n_t++;
    }
    return add_chip(set, &s, eb);
}

/* Gives every chip made since set->dev[first] the list of all their count resources. */
static enum vs_err share_counts(struct vs_devices *set, size_t first, struct vs_errbuf *eb)
{
    for (size_t i = first; i < set->n; i++) {
        struct chip *c = set->dev[i]->priv;
        if (!(c->counts = calloc(set->n - first, sizeof(*c->counts))))
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        for (size_t j = first; j < set->n; j++) {
            const char *r = set->dev[j]->res_count;
            if (r && !(c->counts[c->n_counts++] = strdup(r)))
                return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
    }
    return VS_OK;
}

static enum vs_err make_chips(const struct vs_devcfg *cfg, struct vs_devices *set,
                              struct vs_errbuf *eb)
{
    if (!cfg->doc)
        return make_defaults(set, eb);
    const json_t *sec = json_object_get(cfg->doc, SECTION);
    if (!sec || json_is_null(sec))
        return VS_OK; /* as HAMi: no section, no chips */
    if (!json_is_object(sec))
        return vs_err_set(eb, VS_ERR_PARSE, SECTION ": expected a mapping");
    bool hami_core;
    enum vs_err err = entry_bool(sec, SECTION, "hamiVnpuCore", &hami_core, eb);
    if (err)
        return err;
    const json_t *cs = json_object_get(sec, "configs");
    if (cs && !json_is_null(cs) && !json_is_array(cs))
        return vs_err_set(eb, VS_ERR_PARSE, SECTION ".configs: expected a list");
    for (size_t i = 0; i < json_array_size(cs); i++)
        if ((err = make_entry(set, json_array_get(cs, i), i, hami_core, eb)))
            return err;
    return VS_OK;
}

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    if (!cfg->enable_ascend)
        return VS_OK;
    size_t first = set->n;
    enum vs_err err = make_chips(cfg, set, eb);
    return err ? err : share_counts(set, first, eb);
}

const struct vs_device_class vs_device_class_ascend = {.name = "ascend", .make = make};
