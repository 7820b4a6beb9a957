/* podres: kube-scheduler's effective pod request (component-helpers resource.PodRequests), one
 * resource at a time, as Go's ResourceList arithmetic does it. */
#include "podres.h"

#include "quantity.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { R_CPU, R_MEM, R_EPH, R_N };

static const char *const res_name[R_N] = {"cpu", "memory", "ephemeral-storage"};

/* One container's value of resource r: *present false when neither requests nor limits name it. */
static enum vs_err ctr_value(const struct vs_container *c, const char *base, size_t idx, int r,
                             int64_t *out, bool *present, struct vs_errbuf *eb)
{
    const char *field = "requests";
    const char *v = vs_kv_get(&c->requests, res_name[r]);
    if (!v) {
        field = "limits";
        v = vs_kv_get(&c->limits, res_name[r]);
    }
    *present = v != NULL;
    *out = 0;
    if (!v)
        return VS_OK;
    enum vs_err e = r == R_CPU ? vs_quantity_milli_ceil(v, out) : vs_quantity_ceil(v, out);
    if (e || *out < 0)
        return vs_err_set(eb, VS_ERR_PARSE, "%s[%zu].resources.%s[\"%s\"]: invalid quantity \"%s\"",
                          base, idx, field, res_name[r], v);
    return VS_OK;
}

static int64_t add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* The pod's request for resource r; with dflt > 0 a container missing r counts as dflt. */
static enum vs_err pod_value(const struct vs_pod *p, int r, int64_t dflt, int64_t *out,
                             struct vs_errbuf *eb)
{
    int64_t app = 0, sidecars = 0, init_max = 0, v;
    bool present;
    enum vs_err e;
    for (size_t i = 0; i < p->n_ctrs; i++) {
        if ((e = ctr_value(&p->ctrs[i], "spec.containers", i, r, &v, &present, eb)))
            return e;
        app = add_sat(app, present ? v : dflt);
    }
    for (size_t i = 0; i < p->n_init; i++) {
        if ((e = ctr_value(&p->init[i], "spec.initContainers", i, r, &v, &present, eb)))
            return e;
        if (!present)
            v = dflt;
        if (p->init[i].restart_always) {
            /* A sidecar keeps running: it adds to the app side and to every later init step. */
            app = add_sat(app, v);
            sidecars = add_sat(sidecars, v);
            init_max = max64(init_max, sidecars);
        } else {
            init_max = max64(init_max, add_sat(v, sidecars));
        }
    }
    int64_t total = max64(app, init_max);
    /* Pod-level requests (PodLevelResources, on by default since v1.34) replace the containers'
     * cpu and memory (resource.PodRequests' applyPodLevelResources). */
    const char *pl = r == R_EPH ? NULL : vs_kv_get(&p->pod_requests, res_name[r]);
    if (pl) {
        e = r == R_CPU ? vs_quantity_milli_ceil(pl, &v) : vs_quantity_ceil(pl, &v);
        if (e || v < 0)
            return vs_err_set(eb, VS_ERR_PARSE,
                              "spec.resources.requests[\"%s\"]: invalid quantity \"%s\"",
                              res_name[r], pl);
        total = v;
    }
    const char *oh = vs_kv_get(&p->overhead, res_name[r]);
    if (oh) {
        e = r == R_CPU ? vs_quantity_milli_ceil(oh, &v) : vs_quantity_ceil(oh, &v);
        if (e || v < 0)
            return vs_err_set(eb, VS_ERR_PARSE, "spec.overhead[\"%s\"]: invalid quantity \"%s\"",
                              res_name[r], oh);
        total = add_sat(total, v);
    }
    *out = total < VS_PODRES_MAX ? total : VS_PODRES_MAX;
    return VS_OK;
}

enum vs_err vs_podres_compute(const struct vs_pod *p, struct vs_podres *out, struct vs_errbuf *eb)
{
    enum vs_err e;
    memset(out, 0, sizeof(*out));
    if ((e = pod_value(p, R_CPU, 0, &out->cpu, eb)) ||
        (e = pod_value(p, R_MEM, 0, &out->mem, eb)) ||
        (e = pod_value(p, R_EPH, 0, &out->eph, eb)) ||
        (e = pod_value(p, R_CPU, VS_PODRES_DEFAULT_CPU, &out->nz_cpu, eb)) ||
        (e = pod_value(p, R_MEM, VS_PODRES_DEFAULT_MEM, &out->nz_mem, eb)))
        return e;
    return VS_OK;
}

bool vs_podres_is_scalar(const char *name)
{
    if (strncmp(name, "hugepages-", 10) == 0 || strncmp(name, "attachable-volumes-", 19) == 0)
        return true;
    return strchr(name, '/') != NULL && strncmp(name, "requests.", 9) != 0;
}

/* One container's value of scalar resource name (requests, else limits), 0 when absent. */
static enum vs_err scalar_value(const struct vs_container *c, const char *base, size_t idx,
                                const char *name, int64_t *out, struct vs_errbuf *eb)
{
    const char *field = "requests";
    const char *v = vs_kv_get(&c->requests, name);
    if (!v) {
        field = "limits";
        v = vs_kv_get(&c->limits, name);
    }
    *out = 0;
    if (!v)
        return VS_OK;
    if (vs_quantity_ceil(v, out) || *out < 0)
        return vs_err_set(eb, VS_ERR_PARSE, "%s[%zu].resources.%s[\"%s\"]: invalid quantity \"%s\"",
                          base, idx, field, name, v);
    return VS_OK;
}

/* The pod's request of scalar resource name. */
static enum vs_err scalar_total(const struct vs_pod *p, const char *name, int64_t *out,
                                struct vs_errbuf *eb)
{
    int64_t app = 0, sidecars = 0, init_max = 0, v;
    enum vs_err e;
    for (size_t i = 0; i < p->n_ctrs; i++) {
        if ((e = scalar_value(&p->ctrs[i], "spec.containers", i, name, &v, eb)))
            return e;
        app = add_sat(app, v);
    }
    for (size_t i = 0; i < p->n_init; i++) {
        if ((e = scalar_value(&p->init[i], "spec.initContainers", i, name, &v, eb)))
            return e;
        if (p->init[i].restart_always) {
            app = add_sat(app, v);
            sidecars = add_sat(sidecars, v);
            init_max = max64(init_max, sidecars);
        } else {
            init_max = max64(init_max, add_sat(v, sidecars));
        }
    }
    int64_t total = max64(app, init_max);
    const char *oh = vs_kv_get(&p->overhead, name);
    if (oh) {
        if (vs_quantity_ceil(oh, &v) || v < 0)
            return vs_err_set(eb, VS_ERR_PARSE, "spec.overhead[\"%s\"]: invalid quantity \"%s\"",
                              name, oh);
        total = add_sat(total, v);
    }
    *out = total;
    return VS_OK;
}

static void note_names(const struct vs_kvlist *l, struct vs_kvlist *names,
                       bool (*skip)(void *ctx, const char *name), void *ctx, bool *nomem)
{
    for (size_t i = 0; i < l->n && !*nomem; i++) {
        const char *k = l->items[i].key;
        if (!vs_podres_is_scalar(k) || vs_kv_get(names, k) || (skip && skip(ctx, k)))
            continue;
        *nomem = vs_kv_set(names, k, "") != VS_OK;
    }
}

static int kv_key_cmp(const void *a, const void *b)
{
    return strcmp(((const struct vs_kv *)a)->key, ((const struct vs_kv *)b)->key);
}

enum vs_err vs_podres_scalar(const struct vs_pod *p, bool (*skip)(void *ctx, const char *name),
                             void *ctx, struct vs_kvlist *out, struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    bool nomem = false;
    for (size_t i = 0; i < p->n_ctrs; i++) {
        note_names(&p->ctrs[i].requests, out, skip, ctx, &nomem);
        note_names(&p->ctrs[i].limits, out, skip, ctx, &nomem);
    }
    for (size_t i = 0; i < p->n_init; i++) {
        note_names(&p->init[i].requests, out, skip, ctx, &nomem);
        note_names(&p->init[i].limits, out, skip, ctx, &nomem);
    }
    note_names(&p->overhead, out, skip, ctx, &nomem);
    if (nomem) {
        vs_kv_cleanup(out);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    if (out->n > 1) /* items is NULL when there are none (qsort's argument must not be) */
        qsort(out->items, out->n, sizeof(out->items[0]), kv_key_cmp);
    for (size_t i = 0; i < out->n; i++) {
        int64_t v = 0;
        enum vs_err e = scalar_total(p, out->items[i].key, &v, eb);
        char buf[24];
        snprintf(buf, sizeof(buf), "%lld", (long long)v);
        char *d = e ? NULL : strdup(buf);
        if (e || !d) {
            vs_kv_cleanup(out);
            return e ? e : vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        }
        free(out->items[i].val);
        out->items[i].val = d;
    }
    return VS_OK;
}
