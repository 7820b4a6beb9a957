/* request: per-container request derivation (spec §2.2) with range-checked quantities. */
#include "request.h"

#include "quantity.h"

#include <stdlib.h>
#include <string.h>

#define I32MAX 2147483647LL

const char *vs_request_resource(const struct vs_container *c, const char *name)
{
    const char *v = vs_kv_get(&c->limits, name);
    return v ? v : vs_kv_get(&c->requests, name);
}

static enum vs_err one(const struct vs_container *c, const struct vs_devcfg *cfg, struct vs_req *r,
                       struct vs_errbuf *eb)
{
    memset(r, 0, sizeof(*r));
    const char *cname = c->name ? c->name : "";
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

enum vs_err vs_request_build(const struct vs_pod *p, const struct vs_devcfg *cfg,
                             struct vs_pod_req *out, struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    if (p->n_init && !(out->init = calloc(p->n_init, sizeof(*out->init))))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    if (p->n_ctrs && !(out->ctrs = calloc(p->n_ctrs, sizeof(*out->ctrs)))) {
        vs_pod_req_cleanup(out);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    out->n_init = p->n_init;
    out->n_ctrs = p->n_ctrs;
    enum vs_err err;
    for (size_t i = 0; i < p->n_init; i++) {
        if ((err = one(&p->init[i], cfg, &out->init[i], eb))) {
            vs_pod_req_cleanup(out);
            return err;
        }
        out->any |= out->init[i].nums > 0;
    }
    for (size_t i = 0; i < p->n_ctrs; i++) {
        if ((err = one(&p->ctrs[i], cfg, &out->ctrs[i], eb))) {
            vs_pod_req_cleanup(out);
            return err;
        }
        out->any |= out->ctrs[i].nums > 0;
        out->any_regular |= out->ctrs[i].nums > 0;
    }
    return VS_OK;
}

void vs_pod_req_cleanup(struct vs_pod_req *r)
{
    if (!r)
        return;
    free(r->init);
    free(r->ctrs);
    memset(r, 0, sizeof(*r));
}
