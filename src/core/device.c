/* device: building the set of configured backends from the registry, and the small helpers
 * backends share (device.h). */
#include "device.h"

#include "devcfg.h"
#include "model.h"

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
