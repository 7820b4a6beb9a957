/* request: per-container request derivation over every backend (device.h), and NVIDIA's rules
 * (spec §2.2) with range-checked quantities. */
#include "request.h"

#include "device.h"
#include "quantity.h"

#include <stdlib.h>
#include <string.h>

#define I32MAX 2147483647LL

const char *vs_request_resource(const struct vs_container *c, const char *name)
{
    const char *v = vs_kv_get(&c->limits, name);
    return v ? v : vs_kv_get(&c->requests, name);
}

enum vs_err vs_request_nvidia(const struct vs_container *c, const struct vs_devcfg *cfg,
                              struct vs_req *r, struct vs_errbuf *eb)
{
    memset(r, 0, sizeof(*r));
    const char *cname = c->name ? c->name : "";
    if (!cfg->res_count || !*cfg->res_count)
        return VS_OK;
    const char *v = vs_request_resource(c, cfg->res_count);
    int64_t n;
    if (!v)
        return VS_OK;
    if (vs_quantity_int(v, &n) || n < 0 || n > I32MAX)
        return vs_err_set(eb, VS_ERR_INVAL,
                          "invalid %s \"%s\" in container %s: must be a whole number of cards",
                          cfg->res_count, v, cname);
    if (n == 0)
        return VS_OK;
    int64_t factor = cfg->memory_factor > 1 ? cfg->memory_factor : 1;
    int64_t mem = 0, pct = VS_PCT_UNSET, cores = cfg->default_cores;
    if ((v = vs_request_resource(c, cfg->res_mem))) {
        int64_t max = I32MAX / factor;
        if (vs_quantity_int(v, &mem) || mem < 0 || mem > max)
            return vs_err_set(eb, VS_ERR_INVAL,
                              "invalid %s \"%s\" in container %s: must be a whole number of MiB "
                              "between 0 and %lld",
                              cfg->res_mem, v, cname, (long long)max);
        mem *= factor;
    }
    if ((v = vs_request_resource(c, cfg->res_mem_pct))) {
        int64_t x;
        if (vs_quantity_int(v, &x) || x < 0 || x > 100)
            return vs_err_set(eb, VS_ERR_INVAL,
                              "invalid %s value %s in container %s: must be an integer between "
                              "0 and 100",
                              cfg->res_mem_pct, v, cname);
        if (x > 0)
            pct = x;
    }
    if (pct == VS_PCT_UNSET && mem == 0) {
        if (cfg->default_memory != 0)
            mem = cfg->default_memory;
        else
            pct = 100;
    }
    if ((v = vs_request_resource(c, cfg->res_cores))) {
        if (vs_quantity_int(v, &cores) || cores < 0)
            return vs_err_set(eb, VS_ERR_INVAL,
                              "invalid %s \"%s\" in container %s: must be a whole number of "
                              "percent (values over 100 mean 100)",
                              cfg->res_cores, v, cname);
        if (cores > I32MAX)
            cores = I32MAX;
    }
    r->nums = (int32_t)n;
    r->memreq = (int32_t)mem;
    r->pct = (int32_t)pct;
    r->cores = (int32_t)cores;
    return VS_OK;
}

/* The requests of one container over every backend, appended to out->all. */
static enum vs_err container(const struct vs_pod *p, const struct vs_container *c, bool init,
                             const struct vs_devices *set, struct vs_pod_req *out, size_t *n_all,
                             struct vs_ctr_req *cr, struct vs_errbuf *eb)
{
    cr->r = NULL;
    cr->n = 0;
    size_t first = *n_all;
    for (size_t d = 0; d < set->n; d++) {
        const struct vs_device *dev = set->dev[d];
        struct vs_req r;
        memset(&r, 0, sizeof(r));
        enum vs_err err = dev->ops->request(dev, p, c, init, &r, eb);
        if (err)
            return err;
        if (r.nums <= 0)
            continue;
        r.dev = dev->id;
        cr->n++;
        out->ctrs_all[(*n_all)++] = r;
        out->any = true;
        out->devs |= 1ull << dev->id;
        if (!init) {
            out->any_regular = true;
            out->regular |= 1ull << dev->id;
        }
    }
    /* Pointers are set once every container is in (ctrs_all does not move after that). */
    cr->r = (struct vs_req *)(uintptr_t)first;
    return VS_OK;
}

enum vs_err vs_request_build(const struct vs_pod *p, const struct vs_devcfg *cfg,
                             struct vs_pod_req *out, struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    const struct vs_devices *set = cfg->devices;
    size_t n_ctr = p->n_init + p->n_ctrs;
    if (p->n_init && !(out->init = calloc(p->n_init, sizeof(*out->init))))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    if (p->n_ctrs && !(out->ctrs = calloc(p->n_ctrs, sizeof(*out->ctrs)))) {
        vs_pod_req_cleanup(out);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    if (n_ctr && set->n && !(out->ctrs_all = calloc(n_ctr * set->n, sizeof(*out->ctrs_all)))) {
        vs_pod_req_cleanup(out);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    out->n_init = p->n_init;
    out->n_ctrs = p->n_ctrs;
    size_t n_all = 0;
    enum vs_err err;
    for (size_t i = 0; i < p->n_init; i++)
        if ((err = container(p, &p->init[i], true, set, out, &n_all, &out->init[i], eb)))
            goto fail;
    for (size_t i = 0; i < p->n_ctrs; i++)
        if ((err = container(p, &p->ctrs[i], false, set, out, &n_all, &out->ctrs[i], eb)))
            goto fail;
    for (size_t i = 0; i < p->n_init; i++)
        out->init[i].r = out->ctrs_all + (uintptr_t)out->init[i].r;
    for (size_t i = 0; i < p->n_ctrs; i++)
        out->ctrs[i].r = out->ctrs_all + (uintptr_t)out->ctrs[i].r;
    return VS_OK;
fail:
    vs_pod_req_cleanup(out);
    return err;
}

const struct vs_req *vs_ctr_req_get(const struct vs_ctr_req *c, uint16_t dev)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->r[i].dev == dev)
            return &c->r[i];
    return NULL;
}

void vs_pod_req_cleanup(struct vs_pod_req *r)
{
    if (!r)
        return;
    free(r->init);
    free(r->ctrs);
    free(r->ctrs_all);
    memset(r, 0, sizeof(*r));
}
