/* dra: the DeviceClass decoder and the guard's set of conflicting classes. */
#include "dra.h"

#include "annot.h"
#include "device.h"
#include "quantity.h"
#include "sorted.h"

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
    return vs_sorted_find(g->items, g->n, sizeof(*g->items), offsetof(struct vs_dra_conflict, cls),
                          cls, found);
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

/* ------------------------------------------------------------------ ResourceSlice */

/* The name after a qualified attribute or capacity name's last '/'. */
static const char *base_name(const char *k)
{
    const char *s = strrchr(k, '/');
    return s ? s + 1 : k;
}

/* A non-empty string field, or NULL. */
static const char *str_field(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) && *json_string_value(v) ? json_string_value(v) : NULL;
}

static bool dup_into(char **dst, const char *s)
{
    if (!s) {
        *dst = NULL;
        return true;
    }
    return (*dst = strdup(s)) != NULL;
}

void vs_dra_slice_cleanup(struct vs_dra_slice *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->devs[i].name);
        free(s->devs[i].uuid);
        free(s->devs[i].parent);
    }
    free(s->devs);
    free(s->name);
    free(s->node);
    free(s->driver);
    free(s->pool);
    memset(s, 0, sizeof(*s));
}

/* The string of attribute `want` (compared by base name) of device i: VS_OK with *out NULL when
 * absent. */
static enum vs_err slice_attr(const char *slice, size_t i, const json_t *attrs, const char *want,
                              const char **out, struct vs_errbuf *eb)
{
    *out = NULL;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)attrs, k, v)
    {
        if (strcmp(base_name(k), want) != 0)
            continue;
        if (!json_is_object(v))
            return vs_err_set(eb, VS_ERR_PARSE,
                              "ResourceSlice %s: spec.devices[%zu].attributes[%s] is not an object",
                              slice, i, k);
        const json_t *s = json_object_get(v, "string");
        if (s && !json_is_null(s) && !json_is_string(s))
            return vs_err_set(eb, VS_ERR_PARSE,
                              "ResourceSlice %s: spec.devices[%zu].attributes[%s].string is not a "
                              "string",
                              slice, i, k);
        if (json_is_string(s) && *json_string_value(s))
            *out = json_string_value(s);
        return VS_OK;
    }
    return VS_OK;
}

enum vs_err vs_dra_slice_from_json(const json_t *obj, struct vs_dra_slice *out,
                                   struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_object(obj))
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceSlice: not a JSON object");
    const json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_is_object(meta) ? str_field(meta, "name") : NULL;
    if (!name)
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceSlice: metadata.name is missing, empty or not a string");
    const json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceSlice %s: spec is missing or not an object",
                          name);
    const json_t *nn = json_object_get(spec, "nodeName");
    if (nn && !json_is_null(nn) && !json_is_string(nn))
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceSlice %s: spec.nodeName is not a string",
                          name);
    const char *driver = str_field(spec, "driver");
    if (!driver)
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceSlice %s: spec.driver is missing, empty or not a string", name);
    const json_t *pool = json_object_get(spec, "pool");
    const char *pool_name = json_is_object(pool) ? str_field(pool, "name") : NULL;
    if (!pool_name)
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceSlice %s: spec.pool.name is missing, empty or not a string",
                          name);
    const json_t *devs = json_object_get(spec, "devices");
    if (devs && !json_is_null(devs) && !json_is_array(devs))
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceSlice %s: spec.devices is not an array", name);
    size_t nd = json_is_array(devs) ? json_array_size(devs) : 0;
    /* Validate everything before allocating. */
    for (size_t i = 0; i < nd; i++) {
        const json_t *d = json_array_get(devs, i);
        if (!json_is_object(d) || !str_field(d, "name"))
            return vs_err_set(eb, VS_ERR_PARSE,
                              "ResourceSlice %s: spec.devices[%zu].name is missing, empty or not a "
                              "string",
                              name, i);
        const json_t *attrs = json_object_get(d, "attributes");
        if (attrs && !json_is_null(attrs) && !json_is_object(attrs))
            return vs_err_set(eb, VS_ERR_PARSE,
                              "ResourceSlice %s: spec.devices[%zu].attributes is not an object",
                              name, i);
        const char *u;
        if (json_is_object(attrs) && (slice_attr(name, i, attrs, "uuid", &u, eb) ||
                                      slice_attr(name, i, attrs, "parentUUID", &u, eb)))
            return VS_ERR_PARSE;
        const json_t *mu = json_object_get(d, "allowMultipleAllocations");
        if (mu && !json_is_null(mu) && !json_is_boolean(mu))
            return vs_err_set(eb, VS_ERR_PARSE,
                              "ResourceSlice %s: spec.devices[%zu].allowMultipleAllocations is not "
                              "a boolean",
                              name, i);
    }
    bool ok =
        dup_into(&out->name, name) &&
        dup_into(&out->node,
                 json_is_string(nn) && *json_string_value(nn) ? json_string_value(nn) : NULL) &&
        dup_into(&out->driver, driver) && dup_into(&out->pool, pool_name) &&
        (!nd || (out->devs = calloc(nd, sizeof(*out->devs))));
    for (size_t i = 0; ok && i < nd; i++) {
        const json_t *d = json_array_get(devs, i);
        const json_t *attrs = json_object_get(d, "attributes");
        const char *u = NULL, *p = NULL;
        if (json_is_object(attrs)) {
            slice_attr(name, i, attrs, "uuid", &u, NULL);
            slice_attr(name, i, attrs, "parentUUID", &p, NULL);
        }
        out->n++;
        out->devs[i].multi = json_is_true(json_object_get(d, "allowMultipleAllocations"));
        ok = dup_into(&out->devs[i].name, str_field(d, "name")) &&
             dup_into(&out->devs[i].uuid, u) && dup_into(&out->devs[i].parent, p);
    }
    if (!ok) {
        vs_dra_slice_cleanup(out);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    return VS_OK;
}

enum vs_err vs_dra_slice_from_text(const char *text, size_t len, struct vs_dra_slice *out,
                                   struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceSlice: invalid JSON: %s at line %d column %d",
                          je.text, je.line, je.column);
    enum vs_err err = vs_dra_slice_from_json(o, out, eb);
    json_decref(o);
    return err;
}

/* ------------------------------------------------------------------ ResourceClaim */

void vs_dra_claim_cleanup(struct vs_dra_claim *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        struct vs_dra_result *r = &c->res[i];
        free(r->request);
        free(r->driver);
        free(r->pool);
        free(r->device);
        free(r->share);
    }
    free(c->res);
    free(c->ns);
    free(c->name);
    free(c->uid);
    free(c->mirror_of);
    memset(c, 0, sizeof(*c));
}

/* Object-or-absent field k of o: VS_OK with *out NULL when absent or null. */
static bool opt_obj(const json_t *o, const char *k, const json_t **out)
{
    const json_t *v = json_object_get(o, k);
    *out = json_is_object(v) ? v : NULL;
    return !v || json_is_null(v) || json_is_object(v);
}

/* Checks result i (r) and decodes its consumedCapacity into res (strings not copied). */
static enum vs_err claim_result(const char *ns, const char *name, size_t i, const json_t *r,
                                struct vs_dra_result *res, struct vs_errbuf *eb)
{
    memset(res, 0, sizeof(*res));
    if (!json_is_object(r))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceClaim %s/%s: status.allocation.devices.results[%zu] is not an "
                          "object",
                          ns, name, i);
    static const char *const fields[] = {"request", "driver", "pool", "device"};
    for (size_t f = 0; f < 4; f++)
        if (!str_field(r, fields[f]))
            return vs_err_set(eb, VS_ERR_PARSE,
                              "ResourceClaim %s/%s: status.allocation.devices.results[%zu].%s is "
                              "missing, empty or not a string",
                              ns, name, i, fields[f]);
    const json_t *a = json_object_get(r, "adminAccess");
    if (a && !json_is_null(a) && !json_is_boolean(a))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceClaim %s/%s: status.allocation.devices.results[%zu].adminAccess "
                          "is not a boolean",
                          ns, name, i);
    res->admin = json_is_true(a);
    const json_t *sh = json_object_get(r, "shareID");
    if (sh && !json_is_null(sh) && !json_is_string(sh))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceClaim %s/%s: status.allocation.devices.results[%zu].shareID is "
                          "not a string",
                          ns, name, i);
    const json_t *cc = json_object_get(r, "consumedCapacity");
    if (cc && !json_is_null(cc) && !json_is_object(cc))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceClaim %s/%s: status.allocation.devices.results[%zu]."
                          "consumedCapacity is not an object",
                          ns, name, i);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)cc, k, v)
    {
        int64_t q;
        if (!json_is_string(v) || vs_quantity_ceil(json_string_value(v), &q) != VS_OK || q < 0)
            return vs_err_set(eb, VS_ERR_PARSE,
                              "ResourceClaim %s/%s: status.allocation.devices.results[%zu]."
                              "consumedCapacity[%s] is not a non-negative quantity",
                              ns, name, i, k);
        const char *b = base_name(k);
        if (strcmp(b, "memory") == 0) {
            res->has_mem = true;
            res->mem_mib = q / (1024 * 1024) + (q % (1024 * 1024) != 0);
        } else if (strcmp(b, "cores") == 0) {
            res->has_cores = true;
            res->cores = q;
        }
    }
    return VS_OK;
}

enum vs_err vs_dra_claim_from_json(const json_t *obj, struct vs_dra_claim *out,
                                   struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_object(obj))
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceClaim: not a JSON object");
    const json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta))
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceClaim: metadata is missing or not an object");
    static const char *const mf[] = {"namespace", "name", "uid"};
    for (size_t f = 0; f < 3; f++)
        if (!str_field(meta, mf[f]))
            return vs_err_set(eb, VS_ERR_PARSE,
                              "ResourceClaim: metadata.%s is missing, empty or not a string",
                              mf[f]);
    const char *ns = str_field(meta, "namespace"), *name = str_field(meta, "name");
    const json_t *labels;
    if (!opt_obj(meta, "labels", &labels))
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceClaim %s/%s: metadata.labels is not an object",
                          ns, name);
    const json_t *mo = labels ? json_object_get(labels, VS_LABEL_MIRROR_OF) : NULL;
    if (mo && !json_is_string(mo))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceClaim %s/%s: metadata.labels[" VS_LABEL_MIRROR_OF
                          "] is not a string",
                          ns, name);
    const json_t *st, *al = NULL, *dv = NULL;
    if (!opt_obj(obj, "status", &st))
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceClaim %s/%s: status is not an object", ns,
                          name);
    if (st && !opt_obj(st, "allocation", &al))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceClaim %s/%s: status.allocation is not an object", ns, name);
    if (al && !opt_obj(al, "devices", &dv))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceClaim %s/%s: status.allocation.devices is not an object", ns,
                          name);
    const json_t *rs = dv ? json_object_get(dv, "results") : NULL;
    if (rs && !json_is_null(rs) && !json_is_array(rs))
        return vs_err_set(eb, VS_ERR_PARSE,
                          "ResourceClaim %s/%s: status.allocation.devices.results is not an array",
                          ns, name);
    size_t nr = json_is_array(rs) ? json_array_size(rs) : 0;
    struct vs_dra_result tmp;
    for (size_t i = 0; i < nr; i++)
        if (claim_result(ns, name, i, json_array_get(rs, i), &tmp, eb))
            return VS_ERR_PARSE;
    bool ok = dup_into(&out->ns, ns) && dup_into(&out->name, name) &&
              dup_into(&out->uid, str_field(meta, "uid")) &&
              dup_into(&out->mirror_of, mo ? json_string_value(mo) : NULL) &&
              (!nr || (out->res = calloc(nr, sizeof(*out->res))));
    for (size_t i = 0; ok && i < nr; i++) {
        const json_t *r = json_array_get(rs, i);
        struct vs_dra_result *d = &out->res[i];
        claim_result(ns, name, i, r, d, NULL);
        out->n++;
        const json_t *sh = json_object_get(r, "shareID");
        ok = dup_into(&d->request, str_field(r, "request")) &&
             dup_into(&d->driver, str_field(r, "driver")) &&
             dup_into(&d->pool, str_field(r, "pool")) &&
             dup_into(&d->device, str_field(r, "device")) &&
             dup_into(&d->share, json_is_string(sh) ? json_string_value(sh) : NULL);
    }
    if (!ok) {
        vs_dra_claim_cleanup(out);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    return VS_OK;
}

enum vs_err vs_dra_claim_from_text(const char *text, size_t len, struct vs_dra_claim *out,
                                   struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return vs_err_set(eb, VS_ERR_PARSE, "ResourceClaim: invalid JSON: %s at line %d column %d",
                          je.text, je.line, je.column);
    enum vs_err err = vs_dra_claim_from_json(o, out, eb);
    json_decref(o);
    return err;
}
