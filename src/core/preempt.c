/* preempt: victim selection and plan ranking (see preempt.h). */
#include "preempt.h"

#include "request.h"

#include <stdlib.h>
#include <string.h>

/* Combinations looked at (fit evaluated or not) per node, whatever the fit budget. */
#define COMBO_CAP      200000
#define DEFAULT_BUDGET 1024

void vs_pdb_cleanup(struct vs_pdb *p)
{
    if (!p)
        return;
    free(p->ns);
    free(p->name);
    vs_kv_cleanup(&p->match_labels);
    for (size_t i = 0; i < p->n_exprs; i++) {
        free(p->exprs[i].key);
        for (size_t k = 0; k < p->exprs[i].n_values; k++)
            free(p->exprs[i].values[k]);
        free(p->exprs[i].values);
    }
    free(p->exprs);
    vs_kv_cleanup(&p->disrupted);
    memset(p, 0, sizeof(*p));
}

static bool expr_ok(const struct vs_sel_expr *e, const struct vs_kvlist *labels)
{
    const char *v = vs_kv_get(labels, e->key);
    bool in = false;
    for (size_t k = 0; v && k < e->n_values; k++)
        if (strcmp(v, e->values[k]) == 0)
            in = true;
    switch (e->op) {
    case VS_SEL_IN:
        return in;
    case VS_SEL_NOT_IN:
        return !in;
    case VS_SEL_EXISTS:
        return v != NULL;
    case VS_SEL_NOT_EXISTS:
        return v == NULL;
    }
    return false;
}

bool vs_pdb_selects(const struct vs_pdb *p, const char *ns, const struct vs_kvlist *labels)
{
    if (!p->has_selector || (p->match_labels.n == 0 && p->n_exprs == 0))
        return false;
    if (strcmp(p->ns ? p->ns : "", ns ? ns : "") != 0)
        return false;
    for (size_t i = 0; i < p->match_labels.n; i++) {
        const char *v = vs_kv_get(labels, p->match_labels.items[i].key);
        if (!v || strcmp(v, p->match_labels.items[i].val) != 0)
            return false;
    }
    for (size_t i = 0; i < p->n_exprs; i++)
        if (!expr_ok(&p->exprs[i], labels))
            return false;
    return true;
}

bool vs_preempt_allowed(const struct vs_pod *pod)
{
    return !pod->preempt_never;
}

void vs_preempt_plan_cleanup(struct vs_preempt_plan *p)
{
    if (!p)
        return;
    free(p->node);
    free(p->victims);
    vs_filter_result_cleanup(&p->fit);
    memset(p, 0, sizeof(*p));
}

void vs_preempt_plans_free(struct vs_preempt_plan *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++)
        vs_preempt_plan_cleanup(&p[i]);
    free(p);
}

/* Start time as kube-scheduler's GetPodStartTime reads it: unknown means "now", the latest. */
static int64_t start_of(const struct vs_podent *pe)
{
    return pe->start_time > 0 ? pe->start_time : INT64_MAX;
}

/* kube-scheduler's MoreImportantPod, then namespace/name so the order is total. */
static int importance_cmp(const struct vs_podent *a, const struct vs_podent *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    int64_t sa = start_of(a), sb = start_of(b);
    if (sa != sb)
        return sa < sb ? -1 : 1;
    int c = strcmp(a->ns, b->ns);
    return c ? c : strcmp(a->name, b->name);
}

static int importance_qcmp(const void *a, const void *b)
{
    return importance_cmp(*(const struct vs_podent *const *)a, *(const struct vs_podent *const *)b);
}

/* The ranking key of a victim set (smaller ranks first, field by field). */
struct rank {
    int64_t pdb;
    int32_t max_prio;
    int64_t sum;
    size_t count;
    int64_t earliest_top; /* larger ranks first */
};

static int rank_cmp(const struct rank *a, const struct rank *b)
{
    if (a->pdb != b->pdb)
        return a->pdb < b->pdb ? -1 : 1;
    if (a->max_prio != b->max_prio)
        return a->max_prio < b->max_prio ? -1 : 1;
    if (a->sum != b->sum)
        return a->sum < b->sum ? -1 : 1;
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    if (a->earliest_top != b->earliest_top)
        return a->earliest_top > b->earliest_top ? -1 : 1;
    return 0;
}

int vs_preempt_plan_cmp(const struct vs_preempt_plan *a, const struct vs_preempt_plan *b)
{
    struct rank ra = {a->pdb_violations, a->max_priority, a->priority_sum, a->n, a->earliest_top};
    struct rank rb = {b->pdb_violations, b->max_priority, b->priority_sum, b->n, b->earliest_top};
    return rank_cmp(&ra, &rb);
}

/* Search state for one node. `all` holds the forced victims, then the candidates; `order` is
 * every index of `all` by decreasing importance; `match[i*np+j]` says PDB j selects all[i]. */
struct search {
    const struct vs_model *m;
    const struct vs_pod *pod;
    const char *node;
    const struct vs_preempt_opts *o;
    const struct vs_podent **all;
    size_t n_forced, n_all;
    size_t *order;
    const struct vs_pdb **pdbs; /* the PDBs selecting some pod of `all` */
    size_t np;
    bool *match;
    int64_t *allowed;                 /* scratch, np */
    const struct vs_podent **without; /* scratch for vs_sched_opts.without */
    size_t evals, budget;
    /* Counting precheck (nodes without MIG cards): a set is evaluated only if every container
     * could find enough cards with room once the set is gone. */
    const struct vs_node *n;
    bool pre;
    struct vs_pod_req req;
    int64_t *base; /* 3 per card: used, usedmem, usedcores without the pod's own reservation */
    int64_t *scratch;
};

static void sub_usage(const struct vs_node *n, const struct vs_podent *pe, int64_t *v)
{
    for (size_t u = 0; u < pe->n_usage; u++) {
        for (size_t c = 0; c < n->n_cards; c++) {
            if (strcmp(n->cards[c].uuid, pe->usage[u].uuid) == 0) {
                v[3 * c] -= pe->usage[u].slots;
                v[3 * c + 1] -= pe->usage[u].mem;
                v[3 * c + 2] -= pe->usage[u].cores;
            }
        }
    }
}

/* A necessary condition of Fit with the pods of `in` gone: every container asking for k cards
 * finds k cards with a free slot, its memory and its cores. Type, UUID, NUMA, exclusivity and
 * quota rules only refuse more, so a set failing this cannot fit. */
static bool may_fit(struct search *s, const bool *in)
{
    if (!s->pre)
        return true;
    const struct vs_node *n = s->n;
    memcpy(s->scratch, s->base, 3 * n->n_cards * sizeof(*s->scratch));
    for (size_t i = 0; i < s->n_all; i++)
        if (in[i])
            sub_usage(n, s->all[i], s->scratch);
    size_t nr = s->req.n_init + s->req.n_ctrs;
    const struct vs_devices *set = s->o->sched->cfg->devices;
    for (size_t k = 0; k < nr; k++) {
        const struct vs_ctr_req *cr =
            k < s->req.n_init ? &s->req.init[k] : &s->req.ctrs[k - s->req.n_init];
        for (size_t q = 0; q < cr->n; q++) {
            const struct vs_req *r = &cr->r[q];
            const struct vs_device *d = set->dev[r->dev];
            /* Only the generic Fit's rules are known here: a backend with its own Fit or its
             * own core total may fit where this count would not. */
            if (r->nums <= 0 || d->ops->fit || d->ops->total_cores)
                continue;
            int64_t cores = d->rules.clamp_cores && r->cores > 100 ? 100 : r->cores;
            int32_t ok = 0;
            for (size_t c = 0; c < n->n_cards && ok < r->nums; c++) {
                const struct vs_card *cd = &n->cards[c];
                if (!cd->cand || cd->dev != r->dev)
                    continue;
                int64_t mem = r->memreq > 0            ? r->memreq
                              : r->pct != VS_PCT_UNSET ? (int64_t)cd->devmem * r->pct / 100
                                                       : 0;
                if (cd->count - s->scratch[3 * c] >= 1 &&
                    cd->devmem - s->scratch[3 * c + 1] >= mem &&
                    cd->devcore - s->scratch[3 * c + 2] >= cores)
                    ok++;
            }
            if (ok < r->nums)
                return false;
        }
    }
    return true;
}

/* The rank of the set `in` (flags over all). */
static struct rank rank_of(struct search *s, const bool *in)
{
    struct rank r = {0, INT32_MIN, 0, 0, INT64_MAX};
    for (size_t j = 0; j < s->np; j++)
        s->allowed[j] = s->pdbs[j]->allowed;
    bool top_set = false;
    for (size_t k = 0; k < s->n_all; k++) {
        size_t i = s->order[k];
        if (!in[i])
            continue;
        const struct vs_podent *pe = s->all[i];
        bool violated = false;
        for (size_t j = 0; j < s->np; j++) {
            if (!s->match[i * s->np + j] || vs_kv_get(&s->pdbs[j]->disrupted, pe->name))
                continue;
            if (--s->allowed[j] < 0)
                violated = true;
        }
        r.pdb += violated;
        if (!top_set) {
            r.max_prio = pe->priority;
            top_set = true;
        }
        if (pe->priority == r.max_prio && start_of(pe) < r.earliest_top)
            r.earliest_top = start_of(pe);
        r.sum += (int64_t)pe->priority + ((int64_t)INT32_MAX + 1);
        r.count++;
    }
    return r;
}

/* Whether the pod fits on the node with the pods of `in` gone; with keep, the result is left in
 * *res (else cleaned up). */
static enum vs_err fits(struct search *s, const bool *in, bool *ok, struct vs_filter_result *res)
{
    if (!res && !may_fit(s, in)) {
        *ok = false;
        return VS_OK;
    }
    size_t n = 0;
    for (size_t i = 0; i < s->n_all; i++)
        if (in[i])
            s->without[n++] = s->all[i];
    struct vs_sched_opts so = *s->o->sched;
    so.without = s->without;
    so.n_without = n;
    so.lazy_reasons = true;
    so.what_if = true;
    struct vs_filter_result r;
    s->evals++;
    if (vs_sched_filter(s->m, s->pod, &s->node, 1, &so, &r))
        return VS_ERR_NOMEM;
    *ok = !r.error && r.managed && r.best == 0;
    if (res)
        *res = r;
    else
        vs_filter_result_cleanup(&r);
    return VS_OK;
}

static bool is_candidate(const struct vs_podent *pe, const struct vs_pod *pod,
                         const struct vs_preempt_opts *o)
{
    if (pe->terminating || pe->expired || pe->malformed || pe->priority >= pod->priority)
        return false;
    if (o->bound_only && !pe->bound)
        return false;
    if (pod->uid && strcmp(pe->uid, pod->uid) == 0)
        return false;
    return pe->n_usage > 0 || pe->mig.n > 0;
}

static void search_free(struct search *s)
{
    vs_pod_req_cleanup(&s->req);
    free(s->base);
    free(s->scratch);
    free(s->all);
    free(s->order);
    free(s->pdbs);
    free(s->match);
    free(s->allowed);
    free(s->without);
}

struct idx_pe {
    const struct vs_podent *pe;
    size_t i;
};

static int idx_qcmp(const void *a, const void *b)
{
    return importance_cmp(((const struct idx_pe *)a)->pe, ((const struct idx_pe *)b)->pe);
}

/* Fills the plan from the set `in` and the fit result r (taken over). */
static enum vs_err make_plan(struct search *s, const bool *in, struct vs_filter_result *r,
                             struct vs_preempt_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->fit = *r;
    memset(r, 0, sizeof(*r));
    struct rank rk = rank_of(s, in);
    out->pdb_violations = rk.pdb;
    out->max_priority = rk.max_prio;
    out->priority_sum = rk.sum;
    out->earliest_top = rk.earliest_top;
    out->node = strdup(s->node);
    out->victims = calloc(s->n_all ? s->n_all : 1, sizeof(*out->victims));
    if (!out->node || !out->victims)
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < s->n_forced; i++)
        out->victims[out->n++] = s->all[i];
    out->n_forced = s->n_forced;
    for (size_t k = 0; k < s->n_all; k++) {
        size_t i = s->order[k];
        if (in[i] && i >= s->n_forced)
            out->victims[out->n++] = s->all[i];
    }
    return VS_OK;
}

/* kube-scheduler's SelectVictimsOnNode over `all` (everything gone fits already): reprieve the
 * candidates from the most important down, PDB-violating ones first; a pod stays a victim only
 * when the pod no longer fits with it back. */
static enum vs_err reprieve(struct search *s, bool *in)
{
    for (size_t i = 0; i < s->n_all; i++)
        in[i] = true;
    /* Which candidates would violate a PDB if all were evicted, in importance order. */
    bool *viol = calloc(s->n_all ? s->n_all : 1, sizeof(*viol));
    if (!viol)
        return VS_ERR_NOMEM;
    for (size_t j = 0; j < s->np; j++)
        s->allowed[j] = s->pdbs[j]->allowed;
    for (size_t k = 0; k < s->n_all; k++) {
        size_t i = s->order[k];
        for (size_t j = 0; j < s->np; j++) {
            if (!s->match[i * s->np + j] || vs_kv_get(&s->pdbs[j]->disrupted, s->all[i]->name))
                continue;
            if (--s->allowed[j] < 0)
                viol[i] = true;
        }
    }
    enum vs_err err = VS_OK;
    for (int pass = 0; pass < 2 && !err; pass++) {
        for (size_t k = 0; k < s->n_all; k++) {
            size_t i = s->order[k];
            if (i < s->n_forced || viol[i] != (pass == 0))
                continue;
            in[i] = false;
            bool ok;
            if ((err = fits(s, in, &ok, NULL)))
                break;
            if (!ok)
                in[i] = true;
        }
    }
    free(viol);
    return err;
}

enum vs_err vs_preempt_node(const struct vs_model *m, const struct vs_pod *pod, const char *node,
                            const struct vs_podent *const *forced, size_t n_forced,
                            const struct vs_preempt_opts *o, struct vs_preempt_plan *out,
                            bool *found)
{
    memset(out, 0, sizeof(*out));
    out->fit.best = -1;
    *found = false;
    if (!vs_preempt_allowed(pod))
        return VS_OK;
    const struct vs_node *n = vs_model_node(m, node);
    if (!n || !n->present)
        return VS_OK;
    struct search s = {.m = m, .pod = pod, .node = node, .o = o, .n_forced = n_forced};
    s.budget = o->budget ? o->budget : DEFAULT_BUDGET;
    size_t cap = n_forced + n->n_pods;
    enum vs_err err = VS_ERR_NOMEM;
    bool *in = NULL, *best_in = NULL;
    struct vs_filter_result r = {.best = -1};
    s.all = calloc(cap ? cap : 1, sizeof(*s.all));
    s.without = calloc(cap ? cap : 1, sizeof(*s.without));
    s.order = calloc(cap ? cap : 1, sizeof(*s.order));
    if (!s.all || !s.without || !s.order)
        goto out;
    for (size_t i = 0; i < n_forced; i++)
        s.all[s.n_all++] = forced[i];
    for (const struct vs_podent *pe = n->pods; pe; pe = pe->next) {
        bool dup = false;
        for (size_t i = 0; i < n_forced; i++)
            dup |= forced[i] == pe;
        if (!dup && is_candidate(pe, pod, o))
            s.all[s.n_all++] = pe;
    }
    /* Candidates in a stable order (least important first) so enumeration is deterministic. */
    qsort(s.all + n_forced, s.n_all - n_forced, sizeof(*s.all), importance_qcmp);
    for (size_t i = n_forced, j = s.n_all; j-- > i; i++) {
        const struct vs_podent *t = s.all[i];
        s.all[i] = s.all[j];
        s.all[j] = t;
    }
    struct idx_pe *ip = calloc(s.n_all ? s.n_all : 1, sizeof(*ip));
    if (!ip)
        goto out;
    for (size_t i = 0; i < s.n_all; i++)
        ip[i] = (struct idx_pe){s.all[i], i};
    qsort(ip, s.n_all, sizeof(*ip), idx_qcmp);
    for (size_t i = 0; i < s.n_all; i++)
        s.order[i] = ip[i].i;
    free(ip);
    s.pdbs = calloc(o->n_pdbs ? o->n_pdbs : 1, sizeof(*s.pdbs));
    if (!s.pdbs)
        goto out;
    for (size_t j = 0; j < o->n_pdbs; j++) {
        for (size_t i = 0; i < s.n_all; i++) {
            if (vs_pdb_selects(&o->pdbs[j], s.all[i]->ns, vs_podent_labels(s.all[i]))) {
                s.pdbs[s.np++] = &o->pdbs[j];
                break;
            }
        }
    }
    /* The counting precheck (not for MIG nodes, whose placements it does not model). */
    struct vs_errbuf reb;
    s.n = n;
    if (!o->no_precheck && !n->has_mig && n->n_cards &&
        !vs_request_build(pod, o->sched->cfg, &s.req, &reb)) {
        s.base = calloc(3 * n->n_cards, sizeof(*s.base));
        s.scratch = calloc(3 * n->n_cards, sizeof(*s.scratch));
        if (!s.base || !s.scratch)
            goto out;
        for (size_t c = 0; c < n->n_cards; c++) {
            s.base[3 * c] = n->cards[c].used;
            s.base[3 * c + 1] = n->cards[c].usedmem;
            s.base[3 * c + 2] = n->cards[c].usedcores;
        }
        const struct vs_podent *own = pod->uid && *pod->uid ? vs_model_pod(m, pod->uid) : NULL;
        if (own && own->on == n)
            sub_usage(n, own, s.base);
        s.pre = true;
    }
    size_t n_match = s.n_all * s.np;
    s.match = calloc(n_match ? n_match : 1, sizeof(*s.match));
    s.allowed = calloc(s.np ? s.np : 1, sizeof(*s.allowed));
    in = calloc(s.n_all ? s.n_all : 1, sizeof(*in));
    best_in = calloc(s.n_all ? s.n_all : 1, sizeof(*best_in));
    if (!s.match || !s.allowed || !in || !best_in)
        goto out;
    for (size_t i = 0; i < s.n_all; i++)
        for (size_t j = 0; j < s.np; j++)
            s.match[i * s.np + j] =
                vs_pdb_selects(s.pdbs[j], s.all[i]->ns, vs_podent_labels(s.all[i]));

    bool ok;
    /* The forced victims alone. */
    for (size_t i = 0; i < s.n_all; i++)
        in[i] = i < n_forced;
    if (fits(&s, in, &ok, &r))
        goto out;
    if (ok) {
        if ((err = make_plan(&s, in, &r, out)))
            goto out;
        *found = true;
        goto done;
    }
    vs_filter_result_cleanup(&r);
    if (s.n_all == n_forced || r.error)
        goto done;
    /* Everything lower gone: if that does not fit, nothing does. */
    for (size_t i = 0; i < s.n_all; i++)
        in[i] = true;
    if (fits(&s, in, &ok, NULL))
        goto out;
    if (!ok)
        goto done;
    if (reprieve(&s, best_in))
        goto out;
    struct rank best = rank_of(&s, best_in);
    /* Enumerate sets of extra victims by size; evaluate only sets that would rank better (a set
     * that fits and ranks better than every set found has no fitting subset: a subset always
     * ranks better, so it would have been found first). */
    size_t nc = s.n_all - n_forced;
    size_t *c = calloc(nc + 1, sizeof(*c));
    if (!c)
        goto out;
    size_t combos = 0;
    int32_t forced_max = INT32_MIN;
    int64_t low_sum = 0; /* smallest possible priority sum of k extra victims, plus the forced */
    for (size_t i = 0; i < n_forced; i++) {
        if (s.all[i]->priority > forced_max)
            forced_max = s.all[i]->priority;
        low_sum += (int64_t)s.all[i]->priority + ((int64_t)INT32_MAX + 1);
    }
    for (size_t k = 1; k <= nc && s.evals < s.budget && combos < COMBO_CAP; k++) {
        /* Candidates are by ascending priority: no k-set has a lower highest priority than the
         * k-th, nor a smaller sum than the first k. */
        int32_t low_max = s.all[n_forced + k - 1]->priority;
        if (low_max < forced_max)
            low_max = forced_max;
        low_sum += (int64_t)s.all[n_forced + k - 1]->priority + ((int64_t)INT32_MAX + 1);
        if (best.pdb == 0 &&
            (low_max > best.max_prio || (low_max == best.max_prio && low_sum > best.sum)))
            break;
        /* With no PDB violation to beat, a pod above the best plan's highest priority can never
         * be in a better set: enumerate only the candidates up to it. */
        size_t ne = nc;
        if (best.pdb == 0)
            while (ne > 0 && s.all[n_forced + ne - 1]->priority > best.max_prio)
                ne--;
        if (k > ne)
            break;
        for (size_t i = 0; i < k; i++)
            c[i] = i;
        for (;;) {
            if (++combos > COMBO_CAP || s.evals >= s.budget)
                break;
            for (size_t i = 0; i < s.n_all; i++)
                in[i] = i < n_forced;
            for (size_t i = 0; i < k; i++)
                in[n_forced + c[i]] = true;
            struct rank rk = rank_of(&s, in);
            if (rank_cmp(&rk, &best) < 0) {
                if (fits(&s, in, &ok, NULL)) {
                    free(c);
                    goto out;
                }
                if (ok) {
                    best = rk;
                    memcpy(best_in, in, s.n_all * sizeof(*in));
                }
            }
            /* next combination of k out of ne */
            size_t i = k;
            while (i > 0 && c[i - 1] == ne - k + i - 1)
                i--;
            if (i == 0)
                break;
            c[i - 1]++;
            for (size_t j = i; j < k; j++)
                c[j] = c[j - 1] + 1;
        }
    }
    free(c);
    if (fits(&s, best_in, &ok, &r))
        goto out;
    if (!ok) {
        /* Cannot happen (the set was checked); refuse rather than hand out a wrong plan. */
        vs_filter_result_cleanup(&r);
        goto done;
    }
    if ((err = make_plan(&s, best_in, &r, out)))
        goto out;
    *found = true;
done:
    err = VS_OK;
out:
    if (err) {
        vs_preempt_plan_cleanup(out);
        *found = false;
    }
    vs_filter_result_cleanup(&r);
    free(in);
    free(best_in);
    search_free(&s);
    return err;
}

/* Whether some pod on the node could be a victim (most nodes of a busy cluster have none for
 * a pod of the common priority: they are skipped without a fit evaluation). */
static bool any_candidate(const struct vs_model *m, const struct vs_pod *pod, const char *node,
                          const struct vs_preempt_opts *o)
{
    const struct vs_node *n = vs_model_node(m, node);
    for (const struct vs_podent *pe = n ? n->pods : NULL; pe; pe = pe->next)
        if (is_candidate(pe, pod, o))
            return true;
    return false;
}

struct ranked {
    struct vs_preempt_plan plan;
    size_t pos;
};

static int ranked_cmp(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    int c = vs_preempt_plan_cmp(&x->plan, &y->plan);
    if (c)
        return c;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

enum vs_err vs_preempt_plans(const struct vs_model *m, const struct vs_pod *pod,
                             const char *const *cands, size_t n_cands,
                             const struct vs_preempt_opts *o, struct vs_preempt_plan **out,
                             size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    struct ranked *rs = calloc(n_cands ? n_cands : 1, sizeof(*rs));
    if (!rs)
        return VS_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < n_cands && vs_preempt_allowed(pod); i++) {
        bool found;
        if (!any_candidate(m, pod, cands[i], o))
            continue;
        if (vs_preempt_node(m, pod, cands[i], NULL, 0, o, &rs[n].plan, &found)) {
            for (size_t k = 0; k < n; k++)
                vs_preempt_plan_cleanup(&rs[k].plan);
            free(rs);
            return VS_ERR_NOMEM;
        }
        if (found && rs[n].plan.n == 0) {
            vs_preempt_plan_cleanup(&rs[n].plan);
            continue;
        }
        if (found) {
            rs[n].pos = i;
            n++;
        }
    }
    qsort(rs, n, sizeof(*rs), ranked_cmp);
    struct vs_preempt_plan *p = calloc(n ? n : 1, sizeof(*p));
    if (!p) {
        for (size_t k = 0; k < n; k++)
            vs_preempt_plan_cleanup(&rs[k].plan);
        free(rs);
        return VS_ERR_NOMEM;
    }
    for (size_t k = 0; k < n; k++)
        p[k] = rs[k].plan;
    free(rs);
    *out = p;
    *n_out = n;
    return VS_OK;
}
