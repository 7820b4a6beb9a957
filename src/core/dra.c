/* dra: the DeviceClass decoder and the guard's set of conflicting classes. */
#include "dra.h"

#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vs_dra_class_cleanup(struct vs_dra_class *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->ext_name);
    c->name = c->ext_name = NULL;
}

enum vs_err vs_dra_class_from_json(const json_t *obj, struct vs_dra_class *out,
                                   struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_object(obj))
        return vs_err_set(eb, VS_ERR_PARSE, "DeviceClass: not a JSON object");
    const json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta))
        return vs_err_set(eb, VS_ERR_PARSE, "DeviceClass: metadata is missing or not an object");
    const json_t *name = json_object_get(meta, "name");
    if (!json_is_string(name) || !*json_string_value(name))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "DeviceClass: metadata.name is missing, empty or not a string");
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *ext = NULL;
    if (spec && !json_is_null(spec)) {
        if (!json_is_object(spec))
            return vs_err_set(eb, VS_ERR_PARSE, "DeviceClass %s: spec is not an object",
                              json_string_value(name));
        ext = json_object_get(spec, "extendedResourceName");
        if (ext && !json_is_null(ext) && !json_is_string(ext))
            return vs_err_set(eb, VS_ERR_PARSE,
                              "DeviceClass %s: spec.extendedResourceName is not a string",
                              json_string_value(name));
    }
    out->name = strdup(json_string_value(name));
    const char *e = json_is_string(ext) ? json_string_value(ext) : "";
    if (*e)
        out->ext_name = strdup(e);
    if (!out->name || (*e && !out->ext_name)) {
        vs_dra_class_cleanup(out);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    return VS_OK;
}

enum vs_err vs_dra_class_from_text(const char *text, size_t len, struct vs_dra_class *out,
                                   struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return vs_err_set(eb, VS_ERR_PARSE, "DeviceClass: invalid JSON: %s at line %d column %d",
                          je.text, je.line, je.column);
    enum vs_err err = vs_dra_class_from_json(o, out, eb);
    json_decref(o);
    return err;
}

const char *vs_dra_class_conflict(const struct vs_dra_class *c, const struct vs_devices *devs)
{
    if (!c->ext_name || !devs)
        return NULL;
    for (size_t i = 0; i < devs->n; i++) {
        const char *r = devs->dev[i]->res_count;
        if (r && strcmp(r, c->ext_name) == 0)
            return c->ext_name;
    }
    return NULL;
}

void vs_dra_warning(const char *cls, const char *resource, char *out, size_t n)
{
    snprintf(out, n,
             "DeviceClass %s maps %s to DRA: kube-scheduler will refuse this pod before "
             "vgpu-sched sees it",
             cls, resource);
}

/* Index of cls, or where it goes (*found false). */
static size_t guard_find(const struct vs_dra_guard *g, const char *cls, bool *found)
{
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->items[mid].cls, cls);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static bool guard_grow(struct vs_dra_guard *g)
{
    if (g->n < g->cap)
        return true;
    size_t nc = g->cap ? g->cap * 2 : 4;
    struct vs_dra_conflict *ni = realloc(g->items, nc * sizeof(*ni));
    if (!ni)
        return false;
    g->items = ni;
    g->cap = nc;
    return true;
}

bool vs_dra_guard_set(struct vs_dra_guard *g, const struct vs_dra_class *c,
                      const struct vs_devices *devs, char **before, const char **after)
{
    const char *res = vs_dra_class_conflict(c, devs);
    *before = NULL;
    *after = NULL;
    if (!res) {
        *before = vs_dra_guard_remove(g, c->name);
        return true;
    }
    bool found;
    size_t i = guard_find(g, c->name, &found);
    char *r = strdup(res);
    if (!r)
        return false;
    if (found) {
        *before = g->items[i].resource;
        g->items[i].resource = r;
    } else {
        char *name = strdup(c->name);
        if (!name || !guard_grow(g)) {
            free(name);
            free(r);
            return false;
        }
        memmove(&g->items[i + 1], &g->items[i], (g->n - i) * sizeof(g->items[0]));
        g->items[i] = (struct vs_dra_conflict){.cls = name, .resource = r};
        g->n++;
    }
    *after = r;
    return true;
}

char *vs_dra_guard_remove(struct vs_dra_guard *g, const char *name)
{
    bool found;
    size_t i = guard_find(g, name, &found);
    if (!found)
        return NULL;
    char *r = g->items[i].resource;
    free(g->items[i].cls);
    memmove(&g->items[i], &g->items[i + 1], (g->n - i - 1) * sizeof(g->items[0]));
    g->n--;
    return r;
}

void vs_dra_guard_cleanup(struct vs_dra_guard *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->items[i].cls);
        free(g->items[i].resource);
    }
    free(g->items);
    memset(g, 0, sizeof(*g));
}

json_t *vs_dra_guard_json(const struct vs_dra_guard *g)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < g->n; i++)
        if (json_array_append_new(a, json_pack("{s:s,s:s}", "deviceclass", g->items[i].cls,
                                               "resource", g->items[i].resource))) {
            json_decref(a);
            return NULL;
        }
    return a;
}
