/* iluvatar: Iluvatar CoreX (spec/hami-vendors.md §2.5), only with --enable-iluvatar: one backend
 * per entry of the iluvatars list (chart: MR-V100, MR-V50, BI-V150, BI-V100), its word the
 * entry's commonWord. Cards from hami.io/node-<word>-register (the device plugin's legacy text;
 * JSON is read too); requests from the entry's count, memory (units of 256 MiB) and cores
 * (percent, 0 when absent); the generic G-Fit with hami.io/use-<word>-uuid /
 * hami.io/no-use-<word>-uuid; Filter writes hami.io/<word>-devices-to-allocate and -allocated.
 * Admission: a container asking for more than one card gets its cores limit set to 100 per card
 * (whole cards), and env SOL_CONTINER_NAME (HAMi's spelling) = its name unless it has one. Bind
 * takes the shared lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devcfg.h"
#include "device.h"
#include "model.h"
#include "request.h"

#define SECTION "iluvatars"
#define FACTOR  256
#define I32MAX  2147483647LL

/* The backend's annotation keys (rules.use_uuid / nouse_uuid point here). */
struct ilu {
    char *reg;        /* hami.io/node-<word>-register */
    char *use_uuid;   /* hami.io/use-<word>-uuid */
    char *nouse_uuid; /* hami.io/no-use-<word>-uuid */
};

static void ilu_free(void *priv)
{
    struct ilu *x = priv;
    free(x->reg);
    free(x->use_uuid);
    free(x->nouse_uuid);
    free(x);
}

static uint64_t inventory_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    const struct ilu *x = d->priv;
    const char *keys[] = {x->reg};
    return vs_device_fp_annotations(kn, keys, 1);
}

static enum vs_err inventory(const struct vs_device *d, const struct vs_knode *kn,
                             struct vs_inventory *out, struct vs_errbuf *eb)
{
    const struct ilu *x = d->priv;
    return vs_device_inventory_register(kn, x->reg, out, eb);
}

/* count: limits then requests; memory in units of 256 MiB; cores percent, 0 when absent. Pct
 * 100 (the whole card's memory) when no memory is asked. */
static enum vs_err request(const struct vs_device *d, const struct vs_pod *p,
                           const struct vs_container *c, bool init, struct vs_req *out,
                           struct vs_errbuf *eb)
{
    int64_t n, mem = 0, cores = 0;
    bool has;
    enum vs_err err;
    if ((err = vs_device_qty(c, d->res_count, false, 0, I32MAX, &n, &has, eb)) || !has || !n)
        return err;
    if ((err = vs_device_qty(c, d->res_mem, false, 0, I32MAX / FACTOR, &mem, &has, eb)))
        return err;
    if ((err = vs_device_qty(c, d->res_cores, false, 0, I32MAX, &cores, &has, eb)))
        return err;
    out->nums = (int32_t)n;
    out->memreq = (int32_t)(mem * FACTOR);
    out->pct = mem ? 0 : 100;
    out->cores = (int32_t)cores;
    return VS_OK;
}

/* Found when the count is in the limits. More than one card: cores = 100 per card. The
 * container's name in SOL_CONTINER_NAME unless it has that env already. */
static enum vs_err admit(const struct vs_device *d, const struct vs_pod *p,
                         const struct vs_container *c, bool init, struct vs_admit *a, bool *found,
                         struct vs_errbuf *eb)
{
    const char *v = d->res_count ? vs_kv_get(&c->limits, d->res_count) : NULL;
    *found = v != NULL;
    if (!v)
        return VS_OK;
    int64_t n;
    bool has;
    enum vs_err err = vs_device_qty_ceil(c, d->res_count, true, 0, I32MAX, &n, &has, eb);
    if (err)
        return err;
    if (n > 1 && d->res_cores) {
        char num[24];
        snprintf(num, sizeof(num), "%lld", (long long)(n * 100));
        vs_admit_set(a, VS_ADMIT_LIMIT, d->res_cores, num);
    }
    if (c->name && *c->name)
        vs_admit_set(a, VS_ADMIT_ENV_UNSET, "SOL_CONTINER_NAME", c->name);
    return VS_OK;
}

static const struct vs_device_ops ops = {
    .inventory = inventory,
    .inventory_fp = inventory_fp,
    .request = request,
    .admit = admit,
    .free_priv = ilu_free,
};

static char *fmt(const char *a, const char *word, const char *b)
{
    size_t n = strlen(a) + strlen(word) + strlen(b) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, word, b);
    return s;
}

/* One backend for a chip: its word and resource names. */
static enum vs_err add_chip(struct vs_devices *set, const char *word, const char *count,
                            const char *mem, const char *cores, struct vs_errbuf *eb)
{
    struct vs_device *d = vs_device_new(set, word, &ops);
    struct ilu *x = d ? calloc(1, sizeof(*x)) : NULL;
    if (!x)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    d->priv = x;
    x->reg = fmt("hami.io/node-", word, "-register");
    x->use_uuid = fmt("hami.io/use-", word, "-uuid");
    x->nouse_uuid = fmt("hami.io/no-use-", word, "-uuid");
    char *to_alloc = fmt("hami.io/", word, "-devices-to-allocate");
    char *alloc = fmt("hami.io/", word, "-devices-allocated");
    d->rules = (struct vs_fit_rules){
        .clamp_cores = true, .use_uuid = x->use_uuid, .nouse_uuid = x->nouse_uuid};
    d->lock = VS_LOCK_SHARED;
    d->mem_factor = FACTOR;
    bool ok = x->reg && x->use_uuid && x->nouse_uuid && to_alloc && alloc &&
              vs_device_set_str(&d->res_count, count) && vs_device_set_str(&d->res_mem, mem) &&
              vs_device_set_str(&d->res_cores, cores) &&
              vs_device_set_str(&d->to_allocate_key, to_alloc) &&
              vs_device_set_str(&d->allocated_key, alloc) && vs_device_add_managed(d, count) &&
              vs_device_add_managed(d, mem) && vs_device_add_managed(d, cores);
    free(to_alloc);
    free(alloc);
    return ok ? VS_OK : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
}

/* A string key of entry i of the iluvatars list ("" when absent); VS_ERR_PARSE for another
 * type. */
static enum vs_err entry_str(const json_t *e, size_t i, const char *key, const char **out,
                             struct vs_errbuf *eb)
{
    const json_t *v = json_object_get(e, key);
    *out = "";
    if (!v || json_is_null(v))
        return VS_OK;
    if (!json_is_string(v))
        return vs_err_set(eb, VS_ERR_PARSE, "%s[%zu].%s: expected a string", SECTION, i, key);
    *out = json_string_value(v);
    return VS_OK;
}

static enum vs_err make(const struct vs_devcfg *cfg, struct vs_devices *set, struct vs_errbuf *eb)
{
    if (!cfg->enable_iluvatar)
        return VS_OK;
    if (!cfg->doc) {
        /* HAMi's chart: four chips, resources iluvatar.ai/<chip>-vgpu, .vMem, .vCore. */
        static const char *const chips[] = {"MR-V100", "MR-V50", "BI-V150", "BI-V100"};
        for (size_t i = 0; i < sizeof(chips) / sizeof(chips[0]); i++) {
            char *count = fmt("iluvatar.ai/", chips[i], "-vgpu");
            char *mem = fmt("iluvatar.ai/", chips[i], ".vMem");
            char *cores = fmt("iluvatar.ai/", chips[i], ".vCore");
            enum vs_err err = count && mem && cores ? add_chip(set, chips[i], count, mem, cores, eb)
                                                    : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            free(count);
            free(mem);
            free(cores);
            if (err)
                return err;
        }
        return VS_OK;
    }
    const json_t *list = json_object_get(cfg->doc, SECTION);
    if (!list || json_is_null(list))
        return VS_OK;
    if (!json_is_array(list))
        return vs_err_set(eb, VS_ERR_PARSE, "%s: expected a list", SECTION);
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e)
    {
        if (!json_is_object(e))
            return vs_err_set(eb, VS_ERR_PARSE, "%s[%zu]: expected a mapping", SECTION, i);
        const char *word, *count, *mem, *cores;
        enum vs_err err;
        if ((err = entry_str(e, i, "commonWord", &word, eb)) ||
            (err = entry_str(e, i, "resourceCountName", &count, eb)) ||
            (err = entry_str(e, i, "resourceMemoryName", &mem, eb)) ||
            (err = entry_str(e, i, "resourceCoreName", &cores, eb)))
            return err;
        if (!*word)
            return vs_err_set(eb, VS_ERR_PARSE, "%s[%zu].commonWord: missing", SECTION, i);
        if ((err = add_chip(set, word, count, mem, cores, eb)))
            return err;
    }
    return VS_OK;
}

const struct vs_device_class vs_device_class_iluvatar = {.name = "iluvatar", .make = make};
