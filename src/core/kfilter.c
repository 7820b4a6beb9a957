/* kfilter: kube-scheduler's pre-extender filters, as its plugins read the Node and the Pod:
 * a toleration matches a taint by effect, key and operator; node affinity ORs its terms and ANDs
 * a term's requirements, with labels.Requirement semantics (NotIn and DoesNotExist match an
 * absent label, Gt/Lt compare base-10 int64 values); NodeResourcesFit counts the pods on the
 * node and compares each requested resource with allocatable minus what is requested there. */
#include "kfilter.h"

#include "quantity.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool vs_kfilter_tolerates(const struct vs_toleration *t, const char *key, const char *value,
                          const char *effect)
{
    if (*t->effect && strcmp(t->effect, effect) != 0)
        return false;
    if (*t->key && strcmp(t->key, key) != 0)
        return false;
    if (!*t->op || strcmp(t->op, "Equal") == 0)
        return strcmp(t->value, value) == 0;
    return strcmp(t->op, "Exists") == 0;
}

static bool tolerated(const struct vs_pod *p, const char *key, const char *value,
                      const char *effect)
{
    for (size_t i = 0; i < p->n_tols; i++)
        if (vs_kfilter_tolerates(&p->tols[i], key, value, effect))
            return true;
    return false;
}

/* strconv.ParseInt(s, 10, 64). */
static bool parse_i64(const char *s, int64_t *out)
{
    if (!*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || ((*s == '-' || *s == '+') && end == s + 1))
        return false;
    *out = v;
    return true;
}

static bool in_values(const struct vs_nsreq *q, const char *v)
{
    for (size_t i = 0; i < q->n_values; i++)
        if (strcmp(q->values[i], v) == 0)
            return true;
    return false;
}

/* One requirement against value v (NULL: the label is absent). *bad is set for a requirement
 * labels.NewRequirement would reject: its term then matches nothing. */
static bool req_match(const struct vs_nsreq *q, const char *v, bool *bad)
{
    const char *op = q->op;
    if (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0) {
        if (q->n_values == 0) {
            *bad = true;
            return false;
        }
        bool in = v && in_values(q, v);
        return op[0] == 'I' ? in : !in;
    }
    if (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0) {
        if (q->n_values != 0) {
            *bad = true;
            return false;
        }
        return op[0] == 'E' ? v != NULL : v == NULL;
    }
    if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) {
        int64_t want, have;
        if (q->n_values != 1 || !parse_i64(q->values[0], &want)) {
            *bad = true;
            return false;
        }
        if (!v || !parse_i64(v, &have))
            return false;
        return op[0] == 'G' ? have > want : have < want;
    }
    *bad = true;
    return false;
}

static bool term_match(const struct vs_nsterm *t, const struct vs_knode *kn)
{
    bool ok = true, bad = false;
    for (size_t i = 0; i < t->n_exprs; i++)
        ok &= req_match(&t->exprs[i], vs_kv_get(&kn->labels, t->exprs[i].key), &bad);
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct vs_nsreq *q = &t->fields[i];
        /* Only metadata.name with In/NotIn and exactly one value is a valid field selector. */
        if (strcmp(q->key, "metadata.name") != 0 || q->n_values != 1 ||
            (strcmp(q->op, "In") != 0 && strcmp(q->op, "NotIn") != 0)) {
            bad = true;
            continue;
        }
        ok &= req_match(q, kn->name, &bad);
    }
    return ok && !bad;
}

static bool affinity_ok(const struct vs_pod *p, const struct vs_knode *kn)
{
    for (size_t i = 0; i < p->node_selector.n; i++) {
        const char *v = vs_kv_get(&kn->labels, p->node_selector.items[i].key);
        if (!v || strcmp(v, p->node_selector.items[i].val) != 0)
            return false;
    }
    if (!p->has_required_affinity)
        return true;
    for (size_t i = 0; i < p->n_aff_terms; i++) {
        const struct vs_nsterm *t = &p->aff_terms[i];
        if (t->n_exprs == 0 && t->n_fields == 0)
            continue; /* an empty term selects nothing */
        if (term_match(t, kn))
            return true;
    }
    return false;
}

static bool short_of(int64_t want, int64_t alloc, int64_t used)
{
    return alloc >= 0 && want > 0 && want > alloc - used;
}

const char *vs_kfilter_node(const struct vs_pod *p, const struct vs_podres *r,
                            const struct vs_knode *kn, const struct vs_node *n,
                            const struct vs_kf_scalar *sc, char buf[VS_KF_REASON_SIZE])
{
    if (kn->unschedulable && !tolerated(p, "node.kubernetes.io/unschedulable", "", "NoSchedule"))
        return VS_KF_UNSCHEDULABLE;
    for (size_t i = 0; i < kn->n_taints; i++) {
        const struct vs_taint *t = &kn->taints[i];
        if (strcmp(t->effect, "NoSchedule") != 0 && strcmp(t->effect, "NoExecute") != 0)
            continue;
        if (!tolerated(p, t->key, t->value, t->effect))
            return VS_KF_TAINT;
    }
    if (!affinity_ok(p, kn))
        return VS_KF_AFFINITY;
    if (!n)
        return NULL;
    const struct vs_node_res *nr = &n->res;
    const char *parts[4];
    size_t k = 0;
    if (nr->alloc_pods >= 0 && nr->pods + 1 > nr->alloc_pods)
        parts[k++] = VS_KF_TOO_MANY_PODS;
    if (short_of(r->cpu, nr->alloc_cpu, nr->cpu))
        parts[k++] = VS_KF_CPU;
    if (short_of(r->mem, nr->alloc_mem, nr->mem))
        parts[k++] = VS_KF_MEMORY;
    if (short_of(r->eph, nr->alloc_eph, nr->eph))
        parts[k++] = VS_KF_EPHEMERAL;
    size_t o = 0;
    for (size_t i = 0; i < k; i++)
        o += (size_t)snprintf(buf + o, VS_KF_REASON_SIZE - o, "%s%s", i ? ", " : "", parts[i]);
    for (size_t i = 0; sc && sc->req && i < sc->req->n; i++) {
        const struct vs_kv *q = &sc->req->items[i];
        int64_t want = strtoll(q->val, NULL, 10), alloc = 0, used = 0;
        const char *a = vs_kv_get(&kn->allocatable, q->key);
        const char *u = sc->used ? vs_kv_get(sc->used, q->key) : NULL;
        if (a && (vs_quantity_ceil(a, &alloc) || alloc < 0))
            alloc = 0;
        if (u)
            used = strtoll(u, NULL, 10);
        if (want <= 0 || want <= alloc - used || o >= VS_KF_REASON_SIZE - 1)
            continue;
        o += (size_t)snprintf(buf + o, VS_KF_REASON_SIZE - o, "%sInsufficient %s", o ? ", " : "",
                              q->key);
        k++;
    }
    return k ? buf : NULL;
}

/* leastRequestedScore: (capacity - requested) * 100 / capacity, 0 past capacity. */
static int64_t least(int64_t requested, int64_t capacity)
{
    if (requested > capacity)
        return 0;
    return (int64_t)((__int128)(capacity - requested) * 100 / capacity);
}

int64_t vs_kfilter_least_allocated(const struct vs_node *n, const struct vs_podres *r)
{
    /* leastResourceScorer: a resource with no allocatable is left out of the weighted mean. */
    int64_t sum = 0, weights = 0;
    if (n->res.alloc_cpu > 0) {
        sum += least(n->res.nz_cpu + r->nz_cpu, n->res.alloc_cpu);
        weights++;
    }
    if (n->res.alloc_mem > 0) {
        sum += least(n->res.nz_mem + r->nz_mem, n->res.alloc_mem);
        weights++;
    }
    return weights ? sum / weights : 0;
}
