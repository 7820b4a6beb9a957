/* mirror: the mirror ResourceClaims the model calls for, their bodies, and the reconcile diff
 * (see mirror.h). Sets are kept sorted by name so a diff is one merge pass. */
#include "mirror.h"

#include "annot.h"
#include "dra.h"
#include "model.h"
#include "sorted.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum vs_err vs_mirror_mode_parse(const char *s, enum vs_mirror_mode *out, struct vs_errbuf *eb)
{
    static const char *const names[] = {"off", "fence", "share"};
    for (size_t i = 0; i < 3; i++)
        if (s && strcasecmp(s, names[i]) == 0) {
            *out = (enum vs_mirror_mode)i;
            return VS_OK;
        }
    return vs_err_set(eb, VS_ERR_INVAL, "invalid --dra-mirror \"%s\" (want off, fence or share)",
                      s ? s : "");
}

const char *vs_mirror_mode_name(enum vs_mirror_mode m)
{
    return m == VS_MIRROR_FENCE ? "fence" : m == VS_MIRROR_SHARE ? "share" : "off";
}

void vs_mirror_cleanup(struct vs_mirror *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->devs[i].driver);
        free(m->devs[i].pool);
        free(m->devs[i].device);
    }
    free(m->devs);
    free(m->name);
    free(m->pod_uid);
    free(m->pod);
    free(m->node);
    free(m->card);
    memset(m, 0, sizeof(*m));
}

void vs_mirror_set_cleanup(struct vs_mirror_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        vs_mirror_cleanup(&s->items[i]);
    free(s->items);
    memset(s, 0, sizeof(*s));
}

/* Index of name in s, or where it would go (*found false). */
static size_t set_find(const struct vs_mirror_set *s, const char *name, bool *found)
{
    return vs_sorted_find(s->items, s->n, sizeof(*s->items), offsetof(struct vs_mirror, name), name,
                          found);
}

const struct vs_mirror *vs_mirror_set_find(const struct vs_mirror_set *s, const char *name)
{
    bool found;
    size_t i = set_find(s, name, &found);
    return found ? &s->items[i] : NULL;
}

static bool dup_opt(char **dst, const char *s)
{
    *dst = NULL;
    return !s || (*dst = strdup(s)) != NULL;
}

static bool mirror_copy(struct vs_mirror *d, const struct vs_mirror *m)
{
    memset(d, 0, sizeof(*d));
    d->mem_mib = m->mem_mib;
    d->cores = m->cores;
    d->allocated = m->allocated;
    bool ok = dup_opt(&d->name, m->name) && dup_opt(&d->pod_uid, m->pod_uid) &&
              dup_opt(&d->pod, m->pod) && dup_opt(&d->node, m->node) &&
              dup_opt(&d->card, m->card) && (!m->n || (d->devs = calloc(m->n, sizeof(*d->devs))));
    for (size_t i = 0; ok && i < m->n; i++) {
        struct vs_mirror_dev *dd = &d->devs[d->n++];
        dd->share = m->devs[i].share;
        ok = dup_opt(&dd->driver, m->devs[i].driver) && dup_opt(&dd->pool, m->devs[i].pool) &&
             dup_opt(&dd->device, m->devs[i].device);
    }
    if (!ok)
        vs_mirror_cleanup(d);
    return ok;
}

bool vs_mirror_set_add(struct vs_mirror_set *s, const struct vs_mirror *m)
{
    bool found;
    size_t at = set_find(s, m->name, &found);
    struct vs_mirror c;
    if (!mirror_copy(&c, m))
        return false;
    if (found) {
        vs_mirror_cleanup(&s->items[at]);
        s->items[at] = c;
        return true;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        struct vs_mirror *g = realloc(s->items, cap * sizeof(*g));
        if (!g) {
            vs_mirror_cleanup(&c);
            return false;
        }
        s->items = g;
        s->cap = cap;
    }
    memmove(&s->items[at + 1], &s->items[at], (s->n - at) * sizeof(s->items[0]));
    s->items[at] = c;
    s->n++;
    return true;
}

/* FNV-1a, 32 bits: part of the claim name, so fixed forever. */
static uint32_t fnv32(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

bool vs_mirror_name(const char *pod_uid, const char *card, char *out, size_t n)
{
    if (!*pod_uid)
        return false;
    /* An object name is a DNS subdomain: lowercase alphanumerics, '-' and '.'. */
    for (const char *p = pod_uid; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '.'))
            return false;
    int w = snprintf(out, n, "vgpu-mirror-%s-%08x", pod_uid, fnv32(card));
    return w > 0 && (size_t)w < n && w <= 253;
}

bool vs_mirror_card_name(const char *node, const char *card, char *out, size_t n)
{
    int w = snprintf(out, n, "vgpu-mirror-card-%08x-%08x", fnv32(node), fnv32(card));
    return w > 0 && (size_t)w < n;
}

/* RFC 4122 form in lowercase: what the API server accepts as a shareID. */
static bool lower_uuid(const char *s)
{
    if (strlen(s) != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !(isdigit((unsigned char)s[i]) || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return true;
}

static int dev_cmp(const void *x, const void *y)
{
    const struct vs_mirror_dev *a = x, *b = y;
    int c = strcmp(a->driver, b->driver);
    if (!c)
        c = strcmp(a->pool, b->pool);
    return c ? c : strcmp(a->device, b->device);
}

struct desired_ctx {
    const struct vs_model *m;
    enum vs_mirror_mode mode;
    struct vs_mirror_set *out;
    struct vs_mirror cur; /* the mirror being built */
    bool share_ok;        /* the pod's uid can be a shareID */
    bool oom;
};

static void add_dev(void *ctx, const struct vs_dra_slice *s, const struct vs_dra_slice_dev *d,
                    bool by_parent)
{
    struct desired_ctx *c = ctx;
    if (c->oom)
        return;
    struct vs_mirror_dev *g = realloc(c->cur.devs, (c->cur.n + 1) * sizeof(*g));
    if (!g) {
        c->oom = true;
        return;
    }
    c->cur.devs = g;
    struct vs_mirror_dev *nd = &g[c->cur.n];
    memset(nd, 0, sizeof(*nd));
    nd->share = c->mode == VS_MIRROR_SHARE && c->share_ok && d->multi && !by_parent;
    if (!(nd->driver = strdup(s->driver)) || !(nd->pool = strdup(s->pool)) ||
        !(nd->device = strdup(d->name))) {
        free(nd->driver);
        free(nd->pool);
        c->oom = true;
        return;
    }
    c->cur.n++;
}

/* Moves the devices of c->cur whose share flag is `share` into a new mirror named name (added
 * to c->out unless one of that name is there). pod_uid NULL: the card's mirror. */
static void add_part(struct desired_ctx *c, const struct vs_podent *pe, const struct vs_usage *u,
                     bool share, const char *name)
{
    if (vs_mirror_set_find(c->out, name))
        return; /* the card's mirror for an earlier pod, or the same card twice */
    struct vs_mirror mr = {.allocated = true};
    bool ok = (mr.devs = calloc(c->cur.n, sizeof(*mr.devs))) != NULL;
    for (size_t i = 0; ok && i < c->cur.n; i++) {
        const struct vs_mirror_dev *d = &c->cur.devs[i];
        if (d->share != share)
            continue;
        struct vs_mirror_dev *nd = &mr.devs[mr.n++];
        nd->share = share;
        ok = (nd->driver = strdup(d->driver)) && (nd->pool = strdup(d->pool)) &&
             (nd->device = strdup(d->device));
    }
    if (ok && mr.n) {
        ok =
            (mr.name = strdup(name)) && (mr.node = strdup(pe->node)) && (mr.card = strdup(u->uuid));
        if (ok && share) {
            mr.mem_mib = u->mem;
            mr.cores = u->cores;
            size_t pl = strlen(pe->ns) + 1 + strlen(pe->name) + 1;
            if ((mr.pod = malloc(pl)))
                snprintf(mr.pod, pl, "%s/%s", pe->ns, pe->name);
            ok = mr.pod && (mr.pod_uid = strdup(pe->uid));
        }
        /* A copy is cheap next to the API calls this set causes. */
        ok = ok && vs_mirror_set_add(c->out, &mr);
    }
    if (!ok)
        c->oom = true;
    vs_mirror_cleanup(&mr);
}

static void desired_pod(void *ctx, const struct vs_podent *pe)
{
    struct desired_ctx *c = ctx;
    if (c->oom || pe->expired || !pe->node || !*pe->node || !pe->n_usage)
        return;
    c->share_ok = lower_uuid(pe->uid);
    for (size_t u = 0; u < pe->n_usage && !c->oom; u++) {
        const struct vs_usage *us = &pe->usage[u];
        char pname[320], cname[64];
        if (!us->uuid || !vs_mirror_card_name(pe->node, us->uuid, cname, sizeof(cname)))
            continue;
        memset(&c->cur, 0, sizeof(c->cur));
        vs_model_dra_devices(c->m, pe->node, us->uuid, add_dev, c);
        if (!c->oom && c->cur.n) {
            qsort(c->cur.devs, c->cur.n, sizeof(c->cur.devs[0]), dev_cmp);
            add_part(c, pe, us, false, cname);
            if (vs_mirror_name(pe->uid, us->uuid, pname, sizeof(pname)))
                add_part(c, pe, us, true, pname);
        }
        vs_mirror_cleanup(&c->cur);
    }
}

enum vs_err vs_mirror_desired(const struct vs_model *m, enum vs_mirror_mode mode,
                              struct vs_mirror_set *out)
{
    memset(out, 0, sizeof(*out));
    if (mode == VS_MIRROR_OFF)
        return VS_OK;
    struct desired_ctx c = {.m = m, .mode = mode, .out = out};
    vs_model_each_pod(m, desired_pod, &c);
    if (c.oom) {
        vs_mirror_set_cleanup(out);
        return VS_ERR_NOMEM;
    }
    return VS_OK;
}

/* A string value of object o's key k, or NULL. */
static const char *str_of(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

enum vs_err vs_mirror_from_claim(const json_t *claim, struct vs_mirror *out, struct vs_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    struct vs_dra_claim c;
    enum vs_err err = vs_dra_claim_from_json(claim, &c, eb);
    if (err)
        return err;
    if (!c.mirror_of) {
        err = vs_err_set(eb, VS_ERR_PARSE, "ResourceClaim %s/%s: no " VS_LABEL_MIRROR_OF " label",
                         c.ns, c.name);
        goto out;
    }
    const json_t *meta = json_object_get(claim, "metadata");
    const json_t *an = json_object_get(meta, "annotations");
    const json_t *st = json_object_get(claim, "status");
    out->allocated = json_is_object(json_object_get(st, "allocation"));
    bool card = strcmp(c.mirror_of, VS_MIRROR_CARD) == 0;
    bool ok = dup_opt(&out->name, c.name) && dup_opt(&out->pod_uid, card ? NULL : c.mirror_of) &&
              dup_opt(&out->pod, str_of(an, VS_ANNO_MIRROR_POD)) &&
              dup_opt(&out->node, str_of(an, VS_ANNO_MIRROR_NODE)) &&
              dup_opt(&out->card, str_of(an, VS_ANNO_MIRROR_CARD)) &&
              (!c.n || (out->devs = calloc(c.n, sizeof(*out->devs))));
    bool amounts = false;
    for (size_t i = 0; ok && i < c.n; i++) {
        const struct vs_dra_result *r = &c.res[i];
        struct vs_mirror_dev *d = &out->devs[out->n++];
        d->share = r->share != NULL;
        if (d->share && !amounts) {
            amounts = true;
            out->mem_mib = r->has_mem ? r->mem_mib : 0;
            out->cores = r->has_cores ? r->cores : 0;
        }
        ok = dup_opt(&d->driver, r->driver) && dup_opt(&d->pool, r->pool) &&
             dup_opt(&d->device, r->device);
    }
    if (!ok) {
        vs_mirror_cleanup(out);
        err = vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (out->n)
        qsort(out->devs, out->n, sizeof(out->devs[0]), dev_cmp);
out:
    vs_dra_claim_cleanup(&c);
    return err;
}

static json_t *capacity_json(const struct vs_mirror *m)
{
    char mem[32];
    char cores[32];
    snprintf(mem, sizeof(mem), "%lldMi", (long long)m->mem_mib);
    snprintf(cores, sizeof(cores), "%lld", (long long)m->cores);
    return json_pack("{s:s,s:s}", "memory", mem, "cores", cores);
}

json_t *vs_mirror_claim_json(const struct vs_mirror *m, const char *ns)
{
    json_t *reqs = json_array();
    for (size_t i = 0; reqs && i < m->n; i++) {
        char rn[32];
        snprintf(rn, sizeof(rn), "r%zu", i);
        json_t *ex = json_pack("{s:s,s:s,s:i}", "deviceClassName", m->devs[i].driver,
                               "allocationMode", "ExactCount", "count", 1);
        if (ex && m->devs[i].share &&
            json_object_set_new(ex, "capacity", json_pack("{s:o*}", "requests", capacity_json(m))))
            json_decref(ex), ex = NULL;
        if (!ex || json_array_append_new(reqs, json_pack("{s:s,s:o}", "name", rn, "exactly", ex))) {
            json_decref(reqs);
            return NULL;
        }
    }
    if (!reqs)
        return NULL;
    json_t *an = json_pack("{s:s,s:s}", VS_ANNO_MIRROR_NODE, m->node, VS_ANNO_MIRROR_CARD, m->card);
    if (an && m->pod && json_object_set_new(an, VS_ANNO_MIRROR_POD, json_string(m->pod)))
        json_decref(an), an = NULL;
    if (!an) {
        json_decref(reqs);
        return NULL;
    }
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:o},s:{s:{s:o}}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "name", m->name,
                     "namespace", ns, "labels", VS_LABEL_MIRROR_OF,
                     m->pod_uid ? m->pod_uid : VS_MIRROR_CARD, "annotations", an, "spec", "devices",
                     "requests", reqs);
}

json_t *vs_mirror_status_json(const struct vs_mirror *m)
{
    json_t *res = json_array();
    for (size_t i = 0; res && i < m->n; i++) {
        const struct vs_mirror_dev *d = &m->devs[i];
        char rn[32];
        snprintf(rn, sizeof(rn), "r%zu", i);
        json_t *r = json_pack("{s:s,s:s,s:s,s:s}", "request", rn, "driver", d->driver, "pool",
                              d->pool, "device", d->device);
        if (r && d->share &&
            (json_object_set_new(r, "shareID", json_string(m->pod_uid)) ||
             json_object_set_new(r, "consumedCapacity", capacity_json(m))))
            json_decref(r), r = NULL;
        if (!r || json_array_append_new(res, r)) {
            json_decref(res);
            return NULL;
        }
    }
    if (!res)
        return NULL;
    return json_pack("{s:{s:{s:o},s:{s:[{s:[{s:s,s:s,s:[s]}]}]}}}", "allocation", "devices",
                     "results", res, "nodeSelector", "nodeSelectorTerms", "matchFields", "key",
                     "metadata.name", "operator", "In", "values", m->node);
}

static bool str_eq(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

bool vs_mirror_same(const struct vs_mirror *want, const struct vs_mirror *have)
{
    if (!have->allocated || !str_eq(want->name, have->name) || !str_eq(want->node, have->node) ||
        !str_eq(want->card, have->card) || !str_eq(want->pod_uid, have->pod_uid) ||
        want->n != have->n)
        return false;
    bool shares = false;
    for (size_t i = 0; i < want->n; i++) {
        const struct vs_mirror_dev *a = &want->devs[i], *b = &have->devs[i];
        if (a->share != b->share || dev_cmp(a, b) != 0)
            return false;
        shares |= a->share;
    }
    return !shares || (want->mem_mib == have->mem_mib && want->cores == have->cores);
}

static bool push(size_t **v, size_t *n, size_t x)
{
    size_t *g = realloc(*v, (*n + 1) * sizeof(*g));
    if (!g)
        return false;
    g[(*n)++] = x;
    *v = g;
    return true;
}

enum vs_err vs_mirror_diff(const struct vs_mirror_set *want, const struct vs_mirror_set *have,
                           struct vs_mirror_diff *out)
{
    memset(out, 0, sizeof(*out));
    size_t i = 0, j = 0;
    bool ok = true;
    while (ok && (i < want->n || j < have->n)) {
        int c = i == want->n   ? 1
                : j == have->n ? -1
                               : strcmp(want->items[i].name, have->items[j].name);
        if (c < 0) {
            ok = push(&out->create, &out->n_create, i++);
        } else if (c > 0) {
            ok = push(&out->remove, &out->n_remove, j++);
        } else {
            /* Not allocated yet: completed (a Bind may be writing it right now), never deleted
             * first, which would leave its devices free for a moment. */
            if (!vs_mirror_same(&want->items[i], &have->items[j]))
                ok = (!have->items[j].allocated || push(&out->remove, &out->n_remove, j)) &&
                     push(&out->create, &out->n_create, i);
            i++;
            j++;
        }
    }
    if (!ok) {
        vs_mirror_diff_cleanup(out);
        return VS_ERR_NOMEM;
    }
    return VS_OK;
}

enum vs_err vs_mirror_desired_pod(const struct vs_model *m, enum vs_mirror_mode mode,
                                  const char *uid, struct vs_mirror_set *out)
{
    memset(out, 0, sizeof(*out));
    const struct vs_podent *pe = mode == VS_MIRROR_OFF ? NULL : vs_model_pod(m, uid);
    if (!pe)
        return VS_OK;
    struct desired_ctx c = {.m = m, .mode = mode, .out = out};
    desired_pod(&c, pe);
    if (c.oom) {
        vs_mirror_set_cleanup(out);
        return VS_ERR_NOMEM;
    }
    return VS_OK;
}

void vs_mirror_mark_held(const struct vs_model *m, struct vs_mirror_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct vs_mirror *mr = &s->items[i];
        mr->dra_held = false;
        const struct vs_node *nd = mr->pod_uid || !mr->node ? NULL : vs_model_node(m, mr->node);
        for (size_t k = 0; nd && mr->card && k < nd->n_cards; k++) {
            const struct vs_card *c = &nd->cards[k];
            if (strcmp(c->uuid, mr->card) == 0)
                mr->dra_held = c->dra_slots || c->dra_mem || c->dra_cores;
        }
    }
}

bool vs_mirror_taken(const struct vs_model *m, const char *uid, char *why, size_t n)
{
    const struct vs_podent *pe = vs_model_pod(m, uid);
    const struct vs_node *nd = pe && pe->node ? vs_model_node(m, pe->node) : NULL;
    if (!nd)
        return false;
    for (size_t u = 0; u < pe->n_usage; u++)
        for (size_t i = 0; i < nd->n_cards; i++) {
            const struct vs_card *c = &nd->cards[i];
            if (strcmp(c->uuid, pe->usage[u].uuid) != 0 ||
                !(c->dra_slots || c->dra_mem || c->dra_cores))
                continue;
            if (c->used > c->count || c->usedmem > c->devmem || c->usedcores > c->devcore) {
                snprintf(why, n, "card %s on node %s is held by DRA (%s %s), taken after Filter",
                         c->uuid, nd->name, nd->n_dra_holders > 1 ? "claims" : "claim",
                         nd->dra_holders ? nd->dra_holders : "?");
                return true;
            }
        }
    return false;
}

void vs_mirror_diff_cleanup(struct vs_mirror_diff *d)
{
    free(d->create);
    free(d->remove);
    memset(d, 0, sizeof(*d));
}
