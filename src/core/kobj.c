/* kobj: ownership helpers for the plain Node/Pod structs. Lists are small (tens of keys), so
 * lookups are linear scans; nothing here is on a per-card hot path. */
#include "kobj.h"

#include <stdlib.h>
#include <string.h>

char *vs_strdup0(const char *s)
{
    return strdup(s ? s : "");
}

const char *vs_kv_get(const struct vs_kvlist *l, const char *key)
{
    for (size_t i = 0; l && i < l->n; i++)
        if (strcmp(l->items[i].key, key) == 0)
            return l->items[i].val;
    return NULL;
}

enum vs_err vs_kv_set(struct vs_kvlist *l, const char *key, const char *val)
{
    char *v = vs_strdup0(val);
    if (!v)
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->items[i].key, key) == 0) {
            free(l->items[i].val);
            l->items[i].val = v;
            return VS_OK;
        }
    }
    char *k = strdup(key);
    struct vs_kv *grown = realloc(l->items, (l->n + 1) * sizeof(*grown));
    if (!k || !grown) {
        free(k);
        free(v);
        if (grown)
            l->items = grown;
        return VS_ERR_NOMEM;
    }
    l->items = grown;
    l->items[l->n].key = k;
    l->items[l->n].val = v;
    l->n++;
    return VS_OK;
}

void vs_kv_del(struct vs_kvlist *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->items[i].key, key) == 0) {
            free(l->items[i].key);
            free(l->items[i].val);
            memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(l->items[0]));
            l->n--;
            return;
        }
    }
}

enum vs_err vs_kv_copy(struct vs_kvlist *dst, const struct vs_kvlist *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (vs_kv_set(dst, src->items[i].key, src->items[i].val) != VS_OK)
            return VS_ERR_NOMEM;
    return VS_OK;
}

void vs_kv_cleanup(struct vs_kvlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].val);
    }
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

void vs_container_cleanup(struct vs_container *c)
{
    free(c->name);
    vs_kv_cleanup(&c->limits);
    vs_kv_cleanup(&c->requests);
    memset(c, 0, sizeof(*c));
}

static void tols_free(struct vs_toleration *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].key);
        free(t[i].op);
        free(t[i].value);
        free(t[i].effect);
    }
    free(t);
}

static void taints_free(struct vs_taint *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].key);
        free(t[i].value);
        free(t[i].effect);
    }
    free(t);
}

static void reqs_free(struct vs_nsreq *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].key);
        free(r[i].op);
        for (size_t j = 0; j < r[i].n_values; j++)
            free(r[i].values[j]);
        free(r[i].values);
    }
    free(r);
}

static void terms_free(struct vs_nsterm *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        reqs_free(t[i].exprs, t[i].n_exprs);
        reqs_free(t[i].fields, t[i].n_fields);
    }
    free(t);
}

static void containers_free(struct vs_container *cs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        vs_container_cleanup(&cs[i]);
    free(cs);
}

void vs_pod_cleanup(struct vs_pod *p)
{
    if (!p)
        return;
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->node_name);
    free(p->scheduler_name);
    free(p->phase);
    free(p->resource_version);
    free(p->nominated_node);
    vs_kv_cleanup(&p->annotations);
    vs_kv_cleanup(&p->labels);
    vs_kv_cleanup(&p->node_selector);
    containers_free(p->init, p->n_init);
    containers_free(p->ctrs, p->n_ctrs);
    free(p->init_status);
    vs_kv_cleanup(&p->overhead);
    vs_kv_cleanup(&p->pod_requests);
    vs_kv_cleanup(&p->pod_limits);
    tols_free(p->tols, p->n_tols);
    terms_free(p->aff_terms, p->n_aff_terms);
    memset(p, 0, sizeof(*p));
}

void vs_knode_cleanup(struct vs_knode *n)
{
    if (!n)
        return;
    free(n->name);
    free(n->resource_version);
    vs_kv_cleanup(&n->annotations);
    vs_kv_cleanup(&n->labels);
    vs_kv_cleanup(&n->allocatable);
    vs_kv_cleanup(&n->capacity);
    taints_free(n->taints, n->n_taints);
    memset(n, 0, sizeof(*n));
}

static enum vs_err containers_copy(struct vs_container **dst, const struct vs_container *src,
                                   size_t n)
{
    *dst = NULL;
    if (n == 0)
        return VS_OK;
    struct vs_container *cs = calloc(n, sizeof(*cs));
    if (!cs)
        return VS_ERR_NOMEM;
    *dst = cs;
    for (size_t i = 0; i < n; i++) {
        cs[i].privileged = src[i].privileged;
        cs[i].restart_always = src[i].restart_always;
        cs[i].name = vs_strdup0(src[i].name);
        if (!cs[i].name || vs_kv_copy(&cs[i].limits, &src[i].limits) ||
            vs_kv_copy(&cs[i].requests, &src[i].requests))
            return VS_ERR_NOMEM;
    }
    return VS_OK;
}

static enum vs_err reqs_copy(struct vs_nsreq **dst, const struct vs_nsreq *src, size_t n)
{
    *dst = n ? calloc(n, sizeof(**dst)) : NULL;
    if (n && !*dst)
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        struct vs_nsreq *r = &(*dst)[i];
        r->key = vs_strdup0(src[i].key);
        r->op = vs_strdup0(src[i].op);
        if (!r->key || !r->op)
            return VS_ERR_NOMEM;
        if (src[i].n_values) {
            r->values = calloc(src[i].n_values, sizeof(*r->values));
            if (!r->values)
                return VS_ERR_NOMEM;
            for (size_t j = 0; j < src[i].n_values; j++) {
                r->values[j] = vs_strdup0(src[i].values[j]);
                if (!r->values[j])
                    return VS_ERR_NOMEM;
                r->n_values = j + 1;
            }
        }
    }
    return VS_OK;
}

static enum vs_err sched_copy(struct vs_pod *dst, const struct vs_pod *src)
{
    if (vs_kv_copy(&dst->overhead, &src->overhead) ||
        vs_kv_copy(&dst->pod_requests, &src->pod_requests) ||
        vs_kv_copy(&dst->pod_limits, &src->pod_limits))
        return VS_ERR_NOMEM;
    if (src->n_tols) {
        dst->tols = calloc(src->n_tols, sizeof(*dst->tols));
        if (!dst->tols)
            return VS_ERR_NOMEM;
        dst->n_tols = src->n_tols;
        for (size_t i = 0; i < src->n_tols; i++) {
            struct vs_toleration *t = &dst->tols[i];
            t->key = vs_strdup0(src->tols[i].key);
            t->op = vs_strdup0(src->tols[i].op);
            t->value = vs_strdup0(src->tols[i].value);
            t->effect = vs_strdup0(src->tols[i].effect);
            if (!t->key || !t->op || !t->value || !t->effect)
                return VS_ERR_NOMEM;
        }
    }
    dst->has_required_affinity = src->has_required_affinity;
    if (src->n_aff_terms) {
        dst->aff_terms = calloc(src->n_aff_terms, sizeof(*dst->aff_terms));
        if (!dst->aff_terms)
            return VS_ERR_NOMEM;
        dst->n_aff_terms = src->n_aff_terms;
        for (size_t i = 0; i < src->n_aff_terms; i++) {
            struct vs_nsterm *t = &dst->aff_terms[i];
            const struct vs_nsterm *s = &src->aff_terms[i];
            enum vs_err e = reqs_copy(&t->exprs, s->exprs, s->n_exprs);
            t->n_exprs = t->exprs ? s->n_exprs : 0;
            if (e)
                return e;
            e = reqs_copy(&t->fields, s->fields, s->n_fields);
            t->n_fields = t->fields ? s->n_fields : 0;
            if (e)
                return e;
        }
    }
    return VS_OK;
}

enum vs_err vs_pod_copy(struct vs_pod *dst, const struct vs_pod *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->deleting = src->deleting;
    dst->priority = src->priority;
    dst->preempt_never = src->preempt_never;
    dst->start_time = src->start_time;
    dst->ns = vs_strdup0(src->ns);
    dst->name = vs_strdup0(src->name);
    dst->uid = vs_strdup0(src->uid);
    dst->node_name = vs_strdup0(src->node_name);
    dst->scheduler_name = vs_strdup0(src->scheduler_name);
    dst->phase = vs_strdup0(src->phase);
    dst->resource_version = vs_strdup0(src->resource_version);
    dst->nominated_node = vs_strdup0(src->nominated_node);
    if (!dst->ns || !dst->name || !dst->uid || !dst->node_name || !dst->scheduler_name ||
        !dst->phase || !dst->resource_version || !dst->nominated_node)
        goto fail;
    if (vs_kv_copy(&dst->annotations, &src->annotations) ||
        vs_kv_copy(&dst->labels, &src->labels) ||
        vs_kv_copy(&dst->node_selector, &src->node_selector))
        goto fail;
    dst->n_init = src->n_init;
    dst->n_ctrs = src->n_ctrs;
    if (containers_copy(&dst->init, src->init, src->n_init) ||
        containers_copy(&dst->ctrs, src->ctrs, src->n_ctrs))
        goto fail;
    if (src->n_init_status) {
        dst->init_status = malloc(src->n_init_status * sizeof(*dst->init_status));
        if (!dst->init_status)
            goto fail;
        memcpy(dst->init_status, src->init_status, src->n_init_status * sizeof(*dst->init_status));
        dst->n_init_status = src->n_init_status;
    }
    if (sched_copy(dst, src))
        goto fail;
    return VS_OK;
fail:
    vs_pod_cleanup(dst);
    return VS_ERR_NOMEM;
}

enum vs_err vs_knode_copy(struct vs_knode *dst, const struct vs_knode *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->unschedulable = src->unschedulable;
    dst->name = vs_strdup0(src->name);
    dst->resource_version = vs_strdup0(src->resource_version);
    if (!dst->name || !dst->resource_version || vs_kv_copy(&dst->annotations, &src->annotations) ||
        vs_kv_copy(&dst->labels, &src->labels) ||
        vs_kv_copy(&dst->allocatable, &src->allocatable) ||
        vs_kv_copy(&dst->capacity, &src->capacity))
        goto fail;
    if (src->n_taints) {
        dst->taints = calloc(src->n_taints, sizeof(*dst->taints));
        if (!dst->taints)
            goto fail;
        dst->n_taints = src->n_taints;
        for (size_t i = 0; i < src->n_taints; i++) {
            struct vs_taint *t = &dst->taints[i];
            t->key = vs_strdup0(src->taints[i].key);
            t->value = vs_strdup0(src->taints[i].value);
            t->effect = vs_strdup0(src->taints[i].effect);
            if (!t->key || !t->value || !t->effect)
                goto fail;
        }
    }
    return VS_OK;
fail:
    vs_knode_cleanup(dst);
    return VS_ERR_NOMEM;
}

void vs_kquota_cleanup(struct vs_kquota *q)
{
    if (!q)
        return;
    free(q->ns);
    free(q->name);
    vs_kv_cleanup(&q->hard);
    memset(q, 0, sizeof(*q));
}
