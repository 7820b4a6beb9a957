/* device: building the set of configured backends from the registry, and the small helpers
 * backends share (device.h). */
#include "device.h"

#include "devcfg.h"
#include "model.h"
#include "quantity.h"

#include <ctype.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct vs_device *vs_device_new(struct vs_devices *set, const char *word,
                                const struct vs_device_ops *ops)
{
    if (set->n >= VS_MAX_DEVICES)
        return NULL;
    struct vs_device *d = calloc(1, sizeof(*d));
    if (!d || !(d->word = strdup(word))) {
        free(d);
        return NULL;
    }
    d->ops = ops;
    d->mem_factor = 1;
    set->dev[set->n++] = d;
    return d;
}

bool vs_device_set_str(char **field, const char *v)
{
    free(*field);
    *field = NULL;
    if (!v || !*v)
        return true;
    return (*field = strdup(v)) != NULL;
}

bool vs_device_add_managed(struct vs_device *d, const char *name)
{
    if (!name || !*name)
        return true;
    char **g = realloc(d->managed, (d->n_managed + 1) * sizeof(*g));
    if (!g)
        return false;
    d->managed = g;
    if (!(g[d->n_managed] = strdup(name)))
        return false;
    d->n_managed++;
    return true;
}

static void device_free(struct vs_device *d)
{
    if (!d)
        return;
    if (d->priv) {
        if (d->ops && d->ops->free_priv)
            d->ops->free_priv(d->priv);
        else
            free(d->priv);
    }
    for (size_t i = 0; i < d->n_managed; i++)
        free(d->managed[i]);
    free(d->managed);
    free(d->word);
    free(d->res_count);
    free(d->res_mem);
    free(d->res_cores);
    free(d->to_allocate_key);
    free(d->allocated_key);
    free(d->lock_key);
    free(d);
}

void vs_devices_cleanup(struct vs_devices *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++)
        device_free(set->dev[i]);
    memset(set, 0, sizeof(*set));
}

static int word_cmp(const void *a, const void *b)
{
    const struct vs_device *x = *(const struct vs_device *const *)a;
    const struct vs_device *y = *(const struct vs_device *const *)b;
    return strcmp(x->word, y->word);
}

enum vs_err vs_devices_build(const struct vs_devcfg *cfg, struct vs_devices *set,
                             struct vs_errbuf *eb)
{
    memset(set, 0, sizeof(*set));
    for (size_t i = 0; i < vs_n_device_classes; i++) {
        enum vs_err err = vs_device_classes[i]->make(cfg, set, eb);
        if (err) {
            vs_devices_cleanup(set);
            return err;
        }
    }
    /* Byte-wise word order: HAMi locks in this order at Bind, and it is our fixed order for
     * everything a pod asks of several backends (hami-vendors §5.5). */
    qsort(set->dev, set->n, sizeof(set->dev[0]), word_cmp);
    for (size_t i = 0; i < set->n; i++) {
        if (i && strcmp(set->dev[i - 1]->word, set->dev[i]->word) == 0) {
            enum vs_err err = vs_err_set(eb, VS_ERR_PARSE, "two device backends use the word %s",
                                         set->dev[i]->word);
            vs_devices_cleanup(set);
            return err;
        }
        set->dev[i]->id = (uint16_t)i;
    }
    return VS_OK;
}

const struct vs_device *vs_devices_find(const struct vs_devices *set, const char *word)
{
    for (size_t i = 0; set && i < set->n; i++)
        if (strcmp(set->dev[i]->word, word) == 0)
            return set->dev[i];
    return NULL;
}

bool vs_device_candidate(const struct vs_device *d, const struct vs_card *c)
{
    return c->dev == d->id && strcasestr(c->type, d->word) != NULL;
}

enum vs_err vs_device_annotate_generic(const struct vs_device *d, const struct vs_pod_devs *devs,
                                       json_t *out)
{
    char *v = vs_annot_format_devices(devs);
    if (!v)
        return VS_ERR_NOMEM;
    int rc = 0;
    if (d->to_allocate_key)
        rc |= json_object_set_new(out, d->to_allocate_key, json_string(v));
    if (d->allocated_key)
        rc |= json_object_set_new(out, d->allocated_key, json_string(v));
    free(v);
    return rc ? VS_ERR_NOMEM : VS_OK;
}

const char *vs_device_res(const struct vs_container *c, const char *name, bool limits_only)
{
    if (!name || !*name)
        return NULL;
    const char *v = vs_kv_get(&c->limits, name);
    if (v || limits_only)
        return v;
    return vs_kv_get(&c->requests, name);
}

const char *vs_devcfg_str(const json_t *doc, const char *section, const char *key)
{
    return json_string_value(json_object_get(json_object_get(doc, section), key));
}

void vs_admit_set(struct vs_admit *a, enum vs_admit_kind kind, const char *key, const char *value)
{
    if (a->oom)
        return;
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 4;
        struct vs_admit_op *g = realloc(a->ops, nc * sizeof(*g));
        if (!g) {
            a->oom = true;
            return;
        }
        a->ops = g;
        a->cap = nc;
    }
    struct vs_admit_op *o = &a->ops[a->n];
    o->kind = kind;
    o->key = strdup(key ? key : "");
    o->value = strdup(value ? value : "");
    if (!o->key || !o->value) {
        free(o->key);
        free(o->value);
        a->oom = true;
        return;
    }
    a->n++;
}

void vs_admit_cleanup(struct vs_admit *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free(a->ops[i].key);
        free(a->ops[i].value);
    }
    free(a->ops);
    memset(a, 0, sizeof(*a));
}

const char *vs_device_cfg_str(const struct vs_devcfg *cfg, const char *section, const char *key,
                              const char *dflt)
{
    if (!cfg->doc)
        return dflt;
    const char *v = vs_devcfg_str(cfg->doc, section, key);
    return v ? v : "";
}

enum vs_err vs_device_cfg_int(const struct vs_devcfg *cfg, const char *section, const char *key,
                              int64_t dflt, int64_t *out, struct vs_errbuf *eb)
{
    const json_t *v = cfg->doc ? json_object_get(json_object_get(cfg->doc, section), key) : NULL;
    *out = dflt;
    if (!v || json_is_null(v))
        return VS_OK;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return VS_OK;
    }
    const char *s = json_string_value(v);
    char *end;
    long long x = s ? strtoll(s, &end, 10) : 0;
    if (s && *s && !*end) {
        *out = x;
        return VS_OK;
    }
    return vs_err_set(eb, VS_ERR_PARSE, "%s.%s: expected an integer", section, key);
}

static enum vs_err qty(const struct vs_container *c, const char *name, bool limits_only,
                       int64_t min, int64_t max, bool ceil, int64_t *out, bool *present,
                       struct vs_errbuf *eb)
{
    *present = false;
    const char *v = vs_device_res(c, name, limits_only);
    if (!v)
        return VS_OK;
    int64_t x;
    enum vs_err e = ceil ? vs_quantity_ceil(v, &x) : vs_quantity_int(v, &x);
    if (e || x < min || x > max)
        return vs_err_set(eb, VS_ERR_INVAL,
                          "invalid %s \"%s\" in container %s: must be a whole number between "
                          "%lld and %lld",
                          name, v, c->name ? c->name : "", (long long)min, (long long)max);
    *present = true;
    *out = x;
    return VS_OK;
}

enum vs_err vs_device_qty(const struct vs_container *c, const char *name, bool limits_only,
                          int64_t min, int64_t max, int64_t *out, bool *present,
                          struct vs_errbuf *eb)
{
    return qty(c, name, limits_only, min, max, false, out, present, eb);
}

enum vs_err vs_device_qty_ceil(const struct vs_container *c, const char *name, bool limits_only,
                               int64_t min, int64_t max, int64_t *out, bool *present,
                               struct vs_errbuf *eb)
{
    return qty(c, name, limits_only, min, max, true, out, present, eb);
}

/* Whether any comma-separated, blank-trimmed item of list is a case-insensitive substring of
 * type; *any tells whether the list had an item at all. */
static bool list_hits(const char *type, const char *list, bool *any)
{
    *any = false;
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *a = p, *b = p + n;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a) {
            *any = true;
            char item[256];
            snprintf(item, sizeof(item), "%.*s", (int)(b - a), a);
            if (strcasestr(type, item))
                return true;
        }
        p = e ? e + 1 : p + n;
    }
    return false;
}

bool vs_device_type_lists(const char *type, const char *use, const char *nouse)
{
    bool any;
    if (!list_hits(type, use, &any) && any)
        return false;
    return !list_hits(type, nouse, &any);
}

enum vs_err vs_device_inventory_register(const struct vs_knode *kn, const char *key,
                                         struct vs_inventory *out, struct vs_errbuf *eb)
{
    const char *v = vs_kv_get(&kn->annotations, key);
    if (!v)
        return VS_OK;
    return vs_annot_parse_register_as(key, v, &out->reg, eb);
}

enum vs_err vs_device_register_inventory(const struct vs_device *d, const struct vs_knode *kn,
                                         struct vs_inventory *out, struct vs_errbuf *eb)
{
    enum vs_err err = vs_device_inventory_register(kn, d->register_key, out, eb);
    for (size_t i = 0; !err && d->register_devcore && i < out->reg.n; i++)
        out->reg.cards[i].devcore = d->register_devcore;
    return err;
}

uint64_t vs_device_register_fp(const struct vs_device *d, const struct vs_knode *kn)
{
    return vs_device_fp_annotations(kn, &d->register_key, 1);
}

/* Folds the values of keys in l into *h; *any tells whether one was present. */
static void fp_kv(uint64_t *h, const struct vs_kvlist *l, const char *const *keys, size_t n,
                  bool *any)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = vs_kv_get(l, keys[i]);
        *any |= v != NULL;
        for (const char *p = v ? v : ""; *p; p++)
            *h = (*h ^ (unsigned char)*p) * 0x100000001b3ULL;
        *h = (*h ^ (v ? 0xfeu : 0xffu)) * 0x100000001b3ULL;
    }
}

uint64_t vs_device_fp_annotations(const struct vs_knode *kn, const char *const *keys, size_t n)
{
    return vs_device_fp_node(kn, keys, n, NULL, 0, NULL, 0);
}

uint64_t vs_device_fp_node(const struct vs_knode *kn, const char *const *annos, size_t na,
                           const char *const *caps, size_t nc, const char *const *labels, size_t nl)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    bool any = false;
    fp_kv(&h, &kn->annotations, annos, na, &any);
    fp_kv(&h, &kn->capacity, caps, nc, &any);
    fp_kv(&h, &kn->labels, labels, nl, &any);
    return any ? (h ? h : 1) : 0;
}

bool vs_device_capacity(const struct vs_knode *kn, const char *name, int64_t *out)
{
    const char *v = name && *name ? vs_kv_get(&kn->capacity, name) : NULL;
    *out = 0;
    return !v || vs_quantity_int(v, out) == VS_OK;
}

void vs_reasons_add(struct vs_reasons *r, const char *word, size_t k)
{
    if (!k)
        return;
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(r->word[i], word) == 0) {
            r->count[i] += k;
            return;
        }
    }
    if (r->n < sizeof(r->word) / sizeof(r->word[0])) {
        r->word[r->n] = word;
        r->count[r->n++] = k;
    }
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *vs_reasons_text(const struct vs_reasons *r, size_t total, bool *nomem)
{
    char *items[16];
    size_t n = 0, len = 1;
    for (size_t i = 0; i < r->n; i++) {
        size_t l = strlen(r->word[i]) + 48;
        if (!(items[n] = malloc(l)))
            break;
        snprintf(items[n], l, "%zu/%zu %s", r->count[i], total, r->word[i]);
        len += strlen(items[n++]) + 2;
    }
    char *out = n == r->n ? malloc(len) : NULL;
    if (out) {
        qsort(items, n, sizeof(items[0]), str_cmp);
        out[0] = '\0';
        for (size_t i = 0; i < n; i++) {
            if (i)
                strcat(out, ", ");
            strcat(out, items[i]);
        }
    } else {
        *nomem = true;
    }
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    return out;
}

enum vs_err vs_device_cards_from_capacity(const struct vs_knode *kn, const char *res,
                                          const char *infix, const char *type,
                                          struct vs_inventory *out, struct vs_errbuf *eb)
{
    const char *v = res && *res ? vs_kv_get(&kn->capacity, res) : NULL;
    int64_t n = 0;
    if (!v)
        return VS_OK;
    if (vs_quantity_int(v, &n) || n < 0 || n > VS_DEVICE_MAX_CAP_CARDS)
        return vs_err_set(
            eb, VS_ERR_PARSE,
            "invalid status.capacity[\"%s\"] \"%s\": must be a whole number between 0 "
            "and %d",
            res, v, VS_DEVICE_MAX_CAP_CARDS);
    if (!n)
        return VS_OK;
    if (!(out->reg.cards = calloc((size_t)n, sizeof(*out->reg.cards))))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        struct vs_card_reg *c = &out->reg.cards[i];
        out->reg.n++;
        size_t len = strlen(kn->name) + strlen(infix) + 24;
        if (!(c->uuid = malloc(len)) || !(c->type = strdup(type)) || !(c->mode = strdup(""))) {
            vs_register_cleanup(&out->reg);
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
        snprintf(c->uuid, len, "%s%s%lld", kn->name, infix, (long long)i);
        c->index = (uint32_t)i;
        c->health = true;
    }
    return VS_OK;
}

/* Whether id is an item of the comma list (items trimmed of blanks), Go's
 * slices.Contains(strings.Split(list, ","), TrimSpace(item) == id). */
static bool list_has_id(const char *list, const char *id)
{
    size_t idn = strlen(id);
    for (const char *p = list;;) {
        const char *e = strchr(p, ',');
        const char *a = p, *b = e ? e : p + strlen(p);
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if ((size_t)(b - a) == idn && memcmp(a, id, idn) == 0)
            return true;
        if (!e)
            return false;
        p = e + 1;
    }
}

/* Whether s holds anything but blanks. */
static bool not_blank(const char *s)
{
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s))
            return true;
    return false;
}

bool vs_device_uuid_ok(const struct vs_pod *p, const char *use_key, const char *nouse_key,
                       const char *id)
{
    const char *use = use_key ? vs_kv_get(&p->annotations, use_key) : NULL;
    const char *nouse = nouse_key ? vs_kv_get(&p->annotations, nouse_key) : NULL;
    if (not_blank(use) && !list_has_id(use, id))
        return false;
    return !(not_blank(nouse) && list_has_id(nouse, id));
}

uint64_t vs_device_fp_capacity(const struct vs_knode *kn, const char *const *names, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const char *v = names[i] ? vs_kv_get(&kn->capacity, names[i]) : NULL;
        any |= v != NULL;
        for (const char *p = v ? v : ""; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
        h = (h ^ (v ? 0xfeu : 0xffu)) * 0x100000001b3ULL;
    }
    return any ? (h ? h : 1) : 0;
}

enum vs_err vs_device_capacity_max(const struct vs_knode *kn, const char *name, int64_t max,
                                   int64_t *out, struct vs_errbuf *eb)
{
    *out = 0;
    const char *v = name ? vs_kv_get(&kn->capacity, name) : NULL;
    if (!v)
        return VS_OK;
    int64_t x;
    if (vs_quantity_int(v, &x) || x < 0 || x > max)
        return vs_err_set(eb, VS_ERR_PARSE,
                          "invalid status.capacity[\"%s\"] \"%s\": not a whole number between 0 "
                          "and %lld",
                          name, v, (long long)max);
    *out = x;
    return VS_OK;
}

struct vs_card_reg *vs_device_add_card(struct vs_inventory *inv, const char *uuid, const char *type)
{
    struct vs_register *r = &inv->reg;
    struct vs_card_reg *g = realloc(r->cards, (r->n + 1) * sizeof(*g));
    if (!g)
        return NULL;
    r->cards = g;
    struct vs_card_reg *c = &g[r->n];
    memset(c, 0, sizeof(*c));
    c->uuid = strdup(uuid);
    c->type = strdup(type);
    c->mode = strdup("");
    if (!c->uuid || !c->type || !c->mode) {
        free(c->uuid);
        free(c->type);
        free(c->mode);
        return NULL;
    }
    c->index = (uint32_t)r->n;
    c->health = true;
    r->n++;
    return c;
}
