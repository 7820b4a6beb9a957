/* sched: per-node fit of every container, card and node scoring, node choice and the
 * compare-and-commit of the decision. Everything a Filter computes lives in per-evaluation
 * scratch (struct vs_scard arrays); the model is only read, until vs_sched_commit. */
#include "sched.h"

#include "buf.h"
#include "device.h"
#include "frag.h"
#include "hash.h"
#include "mig.h"
#include "policy.h"
#include "request.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum reason {
    R_TYPE,
    R_UUID,
    R_SLICING,
    R_CU_EXHAUSTED,
    R_MEM,
    R_CORE,
    R_HEALTH,
    R_CORDON,
    R_NUMA,
    R_EXCLUSIVE,
    R_CUSTOM,
    R_MIG,
    R_ALLOC_INSUFF,
    R_QUOTA,
    R_COUNT
};

_Static_assert(R_COUNT == VS_REASON_COUNT, "reason table size");

const char *const vs_reason_words[VS_REASON_COUNT] = {
    "CardTypeMismatch",
    "CardUuidMismatch",
    "CardTimeSlicingExhausted",
    "CardComputeUnitsExhausted",
    "CardInsufficientMemory",
    "CardInsufficientCore",
    "CardNotHealth",
    "CardCordoned",
    "NumaNotFit",
    "ExclusiveDeviceAllocateConflict",
    "CardNotFoundCustomFilterRule",
    "CardMigTopologyInfeasible",
    "AllocatedCardsInsufficientRequest",
    "ResourceQuotaNotFit",
};

/* Pods whose usage a view leaves out: the pod's own previous reservation and, for a preemption
 * what-if, the victims. */
struct gone {
    const struct vs_podent *own;
    const struct vs_podent *const *v;
    size_t n;
    const struct vs_sched_extra *extra; /* added, not gone: nominated pods held on nodes */
    size_t n_extra;
};

/* What one Filter call knows about the pod for one backend it asks for. */
struct devpod {
    const struct vs_device *d;
    void *ctx;                              /* d->ops->pod_begin's */
    struct vs_strlist use_uuid, nouse_uuid; /* d->rules.use_uuid / nouse_uuid */
    bool quota;                             /* the namespace has a quota on this backend */
    int64_t q_mem_used, q_cores_used;       /* its usage without the pod's own reservation */
};

/* What one Filter call knows about the pod, shared by all node evaluations. */

struct fit_ctx {
    const struct vs_pod *pod;
    const struct vs_devices *set;
    struct vs_pod_req req;
    struct vs_gpu_policy gpu;
    bool numa_bind;
    struct vs_weights w;
    struct devpod dp[VS_MAX_DEVICES]; /* by backend id; d set for the backends the pod asks */
    /* The pod names card types: use-gputype (names_use) or either selector (names_types);
     * the fragmentation measure's type terms read them. */
    bool names_use, names_types;
    bool need_devs; /* some backend scores nodes by the picks: every node gets its devices */
    const struct vs_node_policy *node_policy;
    const struct vs_podent *own; /* the pod's current reservation, excluded from usage */
    struct gone gone;            /* own plus vs_sched_opts.without */
    const struct vs_quota *quota;
    const struct vs_req *quick; /* the request quick_scan can decide, NULL if none */
    /* policy fragmentation (node or card policy): the workload it measures against */
    struct vs_frag_ctx *frag;
    bool frag_node, frag_card;
    bool frag_known; /* the node being evaluated is the choice: its growth is already known */
    /* What decides which cards Fit allows x->quick besides the cards (card_verdict's inputs
     * from the pod and the policy), hashed: the node memo's request key. */
    uint64_t frag_req_sig;
    int64_t pod_cpu, pod_mem; /* the pod's cpu (milli) and memory (bytes) requests */
    /* The pressure on each card type of the cluster (vs_frag_type_pressure, by vs_card.type_id)
     * for a pod that names no card type while pods that do were seen; tp_n 0 otherwise. */
    double tp[VS_FRAG_MAX_TYPES];
    size_t tp_n;
};

#define pick vs_pick

/* The picks of earlier containers of the pod on the node being evaluated, per backend (for the
 * same-card rule and the quota, which look at them), and the memory and cores they take. */
struct sofar {
    const char *uuids[64]; /* cards picked (the first 64) */
    size_t n;
    int64_t mem, cores;
};

/* ------------------------------------------------------------------ snapshot */

/* Views of up to this many cards live in the caller's stack buffer, larger ones on the heap. */
#define SCARD_STACK 16

static void scards_free(struct vs_scard *s, size_t n, struct vs_scard *buf)
{
    for (size_t i = 0; s && i < n; i++)
        free(s[i].occ);
    if (s != buf)
        free(s);
}

static struct vs_scard *scards_alloc(size_t n, struct vs_scard *buf)
{
    if (n <= SCARD_STACK) {
        memset(buf, 0, (n ? n : 1) * sizeof(*buf));
        return buf;
    }
    return calloc(n, sizeof(*buf));
}

static bool occ_push(struct vs_scard *s, struct vs_mig_placement pl)
{
    if (s->n_occ == s->cap_occ) {
        size_t nc = s->cap_occ ? s->cap_occ * 2 : 4;
        struct vs_mig_placement *g = realloc(s->occ, nc * sizeof(*g));
        if (!g)
            return false;
        s->occ = g;
        s->cap_occ = nc;
    }
    s->occ[s->n_occ++] = pl;
    return true;
}

static bool is_gone(const struct gone *g, const struct vs_podent *pe)
{
    if (pe == g->own)
        return pe != NULL;
    for (size_t i = 0; i < g->n; i++)
        if (g->v[i] == pe)
            return true;
    return false;
}

static void subtract_usage(struct vs_scard *s, const struct vs_node *n, const struct vs_podent *pe)
{
    if (!pe || pe->on != n)
        return;
    for (size_t u = 0; u < pe->n_usage; u++) {
        for (size_t i = 0; i < n->n_cards; i++) {
            if (strcmp(n->cards[i].uuid, pe->usage[u].uuid) == 0) {
                s[i].used -= pe->usage[u].slots;
                s[i].usedmem -= pe->usage[u].mem;
                s[i].usedcores -= pe->usage[u].cores;
            }
        }
    }
}

static void add_usage(struct vs_scard *s, const struct vs_node *n, const struct vs_usage *u,
                      size_t nu)
{
    for (size_t k = 0; k < nu; k++) {
        for (size_t i = 0; i < n->n_cards; i++) {
            if (strcmp(n->cards[i].uuid, u[k].uuid) == 0) {
                s[i].used += u[k].slots;
                s[i].usedmem += u[k].mem;
                s[i].usedcores += u[k].cores;
            }
        }
    }
}

/* Whether some nominated pod is held on node n. */
static bool has_extra(const struct gone *g, const struct vs_node *n)
{
    for (size_t i = 0; i < g->n_extra; i++)
        if (strcmp(g->extra[i].node, n->name) == 0)
            return true;
    return false;
}

/* Base view of a node's cards, without the pods in g and with its nominated pods. */
static struct vs_scard *snapshot(const struct vs_node *n, const struct gone *g,
                                 struct vs_scard *buf)
{
    struct vs_scard *s = scards_alloc(n->n_cards, buf);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        s[i].c = c;
        s[i].pos = i;
        s[i].used = c->used;
        s[i].usedmem = c->usedmem;
        s[i].usedcores = c->usedcores;
        s[i].unhealthy = c->mig_unhealthy;
        for (size_t k = 0; k < c->n_occ; k++) {
            if (g && is_gone(g, c->occ[k].owner))
                continue;
            if (!occ_push(&s[i], c->occ[k].placement)) {
                scards_free(s, n->n_cards, buf);
                return NULL;
            }
        }
    }
    if (g) {
        subtract_usage(s, n, g->own);
        for (size_t k = 0; k < g->n; k++)
            if (g->v[k] != g->own)
                subtract_usage(s, n, g->v[k]);
        for (size_t k = 0; k < g->n_extra; k++)
            if (strcmp(g->extra[k].node, n->name) == 0)
                add_usage(s, n, g->extra[k].usage, g->extra[k].n_usage);
    }
    return s;
}

static struct vs_scard *clone(const struct vs_scard *b, size_t n, struct vs_scard *buf)
{
    struct vs_scard *s = scards_alloc(n, buf);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        s[i] = b[i];
        s[i].occ = NULL;
        s[i].n_occ = s[i].cap_occ = 0;
        for (size_t k = 0; k < b[i].n_occ; k++) {
            if (!occ_push(&s[i], b[i].occ[k])) {
                scards_free(s, n, buf);
                return NULL;
            }
        }
    }
    return s;
}

static float score_of_sums(int64_t used, int64_t count, int64_t uc, int64_t tc, int64_t um,
                           int64_t tm)
{
    if (count == 0 || tc == 0 || tm == 0)
        return 0;
    float a = (float)used / (float)count;
    float b = (float)uc / (float)tc;
    float c = (float)um / (float)tm;
    return 10.0f * (a + b + c);
}

static float node_score_of(const struct vs_scard *s, size_t n)
{
    int64_t used = 0, count = 0, uc = 0, tc = 0, um = 0, tm = 0;
    for (size_t i = 0; i < n; i++) {
        used += s[i].used;
        count += s[i].c->count;
        uc += s[i].usedcores;
        tc += s[i].c->devcore;
        um += s[i].usedmem;
        tm += s[i].c->devmem;
    }
    return score_of_sums(used, count, uc, tc, um, tm);
}

float vs_sched_node_score(const struct vs_node *n)
{
    struct vs_scard buf[SCARD_STACK];
    struct vs_scard *s = snapshot(n, NULL, buf);
    if (!s)
        return 0;
    float f = node_score_of(s, n->n_cards);
    scards_free(s, n->n_cards, buf);
    return f;
}

/* ------------------------------------------------------------------ fragmentation inputs */

static struct vs_frag_req frag_req_of(const struct vs_req *r, int64_t cpu, int64_t mem)
{
    struct vs_frag_req q = {.nums = r->nums,
                            .cores = r->cores > 100 ? 100 : r->cores,
                            .mempct = -1,
                            .cpu_milli = cpu,
                            .mem_bytes = mem};
    if (r->memreq > 0)
        q.memmib = r->memreq;
    else if (r->pct != VS_PCT_UNSET)
        q.mempct = r->pct;
    return q;
}

/* Whether the measure counts the card's capacity at all. */
static bool frag_usable(const struct vs_card *c, bool unhealthy)
{
    return c->cand && c->health && !c->cordoned && !unhealthy;
}

static void frag_card_of(struct vs_frag_ctx *fx, const struct vs_card *c, int64_t used,
                         int64_t usedmem, int64_t usedcores, bool unhealthy,
                         struct vs_frag_card *out)
{
    out->count = c->count;
    out->devmem = c->devmem;
    out->devcore = c->devcore;
    out->used = used;
    out->usedmem = usedmem;
    out->usedcores = usedcores;
    out->usable = frag_usable(c, unhealthy);
    out->accept = vs_frag_accept(fx, c->type);
}

/* The measure's view of scratch cards (n <= VS_FRAG_MAX_CARDS). */
static void frag_cards_view(const struct fit_ctx *x, const struct vs_scard *s, size_t n,
                            struct vs_frag_card *out)
{
    for (size_t i = 0; i < n; i++)
        frag_card_of(x->frag, s[i].c, s[i].used, s[i].usedmem, s[i].usedcores, s[i].unhealthy,
                     &out[i]);
}

/* What the node has left of cpu and memory (allocatable minus the requests of its pods);
 * unlimited when the Node does not list the resource. */
static void frag_node_free(const struct vs_node *n, int64_t *cpu, int64_t *mem)
{
    *cpu = n->res.alloc_cpu < 0 ? INT64_MAX : n->res.alloc_cpu - n->res.cpu;
    *mem = n->res.alloc_mem < 0 ? INT64_MAX : n->res.alloc_mem - n->res.mem;
}

static const struct vs_req *shape_request(const struct vs_pod_req *q);

/* The node's idle capacity (cards) as the measure counts it (vs_frag_idle over its cards; the
 * type masks play no part). */
static double node_idle(const struct vs_node *n)
{
    double u = 0;
    for (size_t i = 0; i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        struct vs_frag_card fc = {.devmem = c->devmem,
                                  .devcore = c->devcore,
                                  .usedmem = c->usedmem,
                                  .usedcores = c->usedcores,
                                  .usable = frag_usable(c, c->mig_unhealthy)};
        u += vs_frag_idle(&fc);
    }
    return u;
}

/* The cpu-stranding term for the pod of x on node n (with the measure, n <= VS_FRAG_MAX_CARDS),
 * the GPU capacity it takes sized on the node's first card. Pods that name the card types they
 * may use (use-gputype) go without it: their choice is the measure's type terms' (with the term
 * they lost up to 1.2 points on the openb gpuspec workloads, docs/benchmarks.md
 * "The cpu-stranding term"). */
static double pod_strand(const struct fit_ctx *x, const struct vs_node *n)
{
    double cpc = x->frag->cpu_per_card;
    if (cpc <= 0 || n->n_cards == 0 || n->n_cards > VS_FRAG_MAX_CARDS || x->names_use)
        return 0;
    int64_t cpu_free, mem_free;
    frag_node_free(n, &cpu_free, &mem_free);
    if (cpu_free == INT64_MAX)
        return 0;
    /* Each card idles at most 1: when the cpu left after the pod feeds all the cards (then
     * n_cards - g of them, g the pod's share), it strands nothing after, so the term cannot
     * grow (most nodes, without the card loop). */
    int64_t left = cpu_free - x->pod_cpu;
    double feed = (left > 0 ? (double)left : 0) / cpc;
    if ((double)n->n_cards <= feed)
        return 0;
    const struct vs_req *r = shape_request(&x->req);
    if (!r)
        return 0;
    struct vs_frag_req q = frag_req_of(r, 0, 0);
    double g = r->nums * vs_frag_req_idle(&q, n->cards[0].devmem, n->cards[0].devcore);
    if ((double)n->n_cards - g <= feed)
        return 0;
    return vs_frag_strand_growth(x->frag, node_idle(n), cpu_free, g, x->pod_cpu);
}

/* The type-pressure term for the pod of x on node n (ours): the GPU capacity it takes (sized
 * on the node's first card) times the pressure on that card's type (fit_ctx.tp), times
 * VS_FRAG_TYPE_W. */
static double pod_type_term(const struct fit_ctx *x, const struct vs_node *n)
{
    if (!x->tp_n || n->n_cards == 0)
        return 0;
    const struct vs_card *c = &n->cards[0];
    if (c->type_id < 0 || (size_t)c->type_id >= x->tp_n || x->tp[c->type_id] <= 0)
        return 0;
    const struct vs_req *r = shape_request(&x->req);
    if (!r)
        return 0;
    struct vs_frag_req q = frag_req_of(r, 0, 0);
    double g = r->nums * vs_frag_req_idle(&q, c->devmem, c->devcore);
    return VS_FRAG_TYPE_W * x->tp[c->type_id] * g;
}

/* The pressure on the cluster's card types into x->tp (by vs_card.type_id) for a pod that
 * names no card type, once pods naming types were seen; x->tp_n stays 0 otherwise (and when
 * the cluster has more than VS_FRAG_MAX_TYPES types). */
static void type_pressure(struct fit_ctx *x, struct vs_frag_stats *st, const struct vs_model *m)
{
    if (x->names_types || !st || !vs_frag_stats_typed(st))
        return;
    const char *const *types;
    const int64_t *cards;
    size_t nt = vs_model_card_types(m, &types, &cards);
    if (nt == 0 || nt > VS_FRAG_MAX_TYPES)
        return;
    double caps[VS_FRAG_MAX_TYPES];
    for (size_t i = 0; i < nt; i++)
        caps[i] = (double)cards[i];
    vs_frag_type_pressure(st, types, caps, nt, x->tp);
    x->tp_n = nt;
}

/* ------------------------------------------------------------------ card scoring and order */

static void card_score(struct vs_scard *s, const struct vs_req *r, const struct vs_weights *w)
{
    const struct vs_card *c = s->c;
    if (c->count == 0 || c->devcore == 0 || c->devmem == 0) {
        s->score = 0;
        return;
    }
    /* The request always counts: its vendor equals the card's vendor (design.md §4). */
    int64_t req = 1, core = r->cores, mem;
    if (r->pct != 0 && r->pct != VS_PCT_UNSET)
        mem = (int64_t)c->devmem * r->pct / 100;
    else
        mem = r->memreq;
    float us = (float)(req + s->used) / (float)c->count;
    float cs = (float)(core + s->usedcores) / (float)c->devcore;
    float ms = (float)(mem + s->usedmem) / (float)c->devmem;
    s->score = 10.0f * ((float)w->slot * us + (float)w->core * cs + (float)w->mem * ms);
}

/* Stable insertion sort (cards per node are few); equal cards keep their previous order. */
static void sort_cards(struct vs_scard *s, size_t n, const struct fit_ctx *x)
{
    for (size_t i = 1; i < n; i++) {
        struct vs_scard t = s[i];
        size_t j = i;
        while (j > 0 && vs_policy_card_cmp(&x->gpu, x->numa_bind, &s[j - 1], &t) > 0) {
            s[j] = s[j - 1];
            j--;
        }
        s[j] = t;
    }
}

/* ------------------------------------------------------------------ reasons */

/* Decimal text of v at p; returns the end. */
static char *put_uint(char *p, size_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* "<c>/<total> <Reason>" items sorted as plain strings, joined with ", " (HAMi GenReason).
 * Formatted by hand into one allocation: a refused pod asks this of every node. */
static char *gen_reason(const size_t counts[R_COUNT], uint32_t zero_too, size_t total)
{
    char items[R_COUNT][80];
    char *ptrs[R_COUNT];
    size_t n = 0, len = 0;
    for (int r = 0; r < R_COUNT; r++) {
        if (!counts[r] && !(zero_too & (1u << r)))
            continue;
        char *p = put_uint(items[n], counts[r]);
        *p++ = '/';
        p = put_uint(p, total);
        *p++ = ' ';
        size_t wl = strlen(vs_reason_words[r]);
        memcpy(p, vs_reason_words[r], wl + 1);
        len += (size_t)(p - items[n]) + wl + 2;
        /* insertion sort (at most R_COUNT distinct items) */
        size_t k = n;
        while (k > 0 && strcmp(ptrs[k - 1], items[n]) > 0) {
            ptrs[k] = ptrs[k - 1];
            k--;
        }
        ptrs[k] = items[n];
        n++;
    }
    char *out = malloc(len + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (i) {
            *o++ = ',';
            *o++ = ' ';
        }
        size_t l = strlen(ptrs[i]);
        memcpy(o, ptrs[i], l);
        o += l;
    }
    *o = '\0';
    return out;
}

/* ------------------------------------------------------------------ Fit (§4.4) */

static bool type_ok(const struct devpod *dp, const struct vs_card *c)
{
    return !dp->d->ops->type_ok || dp->d->ops->type_ok(dp->d, dp->ctx, c);
}

static bool uuid_ok(const struct devpod *dp, const struct vs_card *c)
{
    if (dp->use_uuid.n && !vs_strlist_has(&dp->use_uuid, c->uuid))
        return false;
    if (dp->nouse_uuid.n && vs_strlist_has(&dp->nouse_uuid, c->uuid))
        return false;
    return true;
}

/* The card's compute total the checks use (Ascend: 100 for hami-core pods). */
static int64_t total_cores(const struct devpod *dp, const struct vs_card *c)
{
    return dp->d->ops->total_cores ? dp->d->ops->total_cores(dp->d, dp->ctx, c) : c->devcore;
}

/* Placements the container's earlier picks on card s would take, appended to a copy of the
 * card's occupancy; then whether one more `mem` instance fits. */
static bool mig_fits(const struct vs_scard *s, const struct pick *chosen, size_t n_chosen,
                     int64_t mem)
{
    size_t cap = s->n_occ + n_chosen + 1;
    struct vs_mig_placement stackbuf[32];
    struct vs_mig_placement *occ = cap <= 32 ? stackbuf : malloc(cap * sizeof(*occ));
    if (!occ)
        return false;
    size_t n = s->n_occ;
    if (n)
        memcpy(occ, s->occ, n * sizeof(*occ));
    bool ok = true;
    const struct vs_mig_profile *prof;
    struct vs_mig_placement pl;
    for (size_t i = 0; i < n_chosen && ok; i++) {
        if (chosen[i].card != s)
            continue;
        ok = vs_mig_choose(s->c, occ, n, chosen[i].mem, &prof, &pl);
        if (ok)
            occ[n++] = pl;
    }
    if (ok)
        ok = vs_mig_choose(s->c, occ, n, mem, &prof, &pl);
    if (occ != stackbuf)
        free(occ);
    return ok;
}

static bool quota_ok(const struct devpod *dp, const struct vs_quota *q, const struct sofar *sf,
                     const struct pick *chosen, size_t n_chosen, int64_t mem, int64_t cores)
{
    if (!dp->quota)
        return true;
    const struct vs_quota_res *qr = &q->res[dp->d->id];
    int64_t m = sf->mem + mem, c = sf->cores + cores;
    for (size_t i = 0; i < n_chosen; i++) {
        m += chosen[i].mem;
        c += chosen[i].cores;
    }
    if (qr->has_mem && dp->q_mem_used + m > qr->mem_limit)
        return false;
    if (qr->has_cores && dp->q_cores_used + c > qr->cores_limit)
        return false;
    return true;
}

/* HAMi's custom filter rule: every card the pod's earlier containers got of this backend is
 * this card. */
static bool same_card_ok(const struct sofar *sf, const struct vs_card *c)
{
    for (size_t i = 0; i < sf->n; i++)
        if (strcmp(sf->uuids[i], c->uuid) != 0)
            return false;
    return true;
}

/* vs_card_tags_fn over the evaluation x (vs_fit_call.card_tags, vs_score_call.card_tags). */
static void card_tags(const void *ectx, const struct vs_node *n, const struct vs_card *c,
                      uint32_t counts[VS_POD_TAGS])
{
    const struct fit_ctx *x = ectx;
    memset(counts, 0, VS_POD_TAGS * sizeof(*counts));
    for (const struct vs_podent *pe = n->pods; pe; pe = pe->next) {
        if (is_gone(&x->gone, pe))
            continue;
        for (size_t i = 0; i < pe->n_usage; i++) {
            const struct vs_usage *u = &pe->usage[i];
            if (u->dev == c->dev && strcmp(u->uuid, c->uuid) == 0)
                counts[u->tag & (VS_POD_TAGS - 1)]++;
        }
    }
}

#define MAX_MIG_REVISITS 64

/* The generic Fit for one container over its backend's candidates (sorted order; walked from
 * the end): NVIDIA's (compat §4.4) and G-Fit (hami-vendors §1.6), told apart by the backend's
 * rules and hooks. On success fills picks (n_picks = Nums). On failure returns the reason text
 * (new string). */
static char *fit(const struct fit_ctx *x, const struct devpod *dp, const struct vs_fit_call *fc,
                 const struct sofar *sf, const int64_t *topo, size_t n_cards, struct pick *picks,
                 bool *nomem)
{
    const struct vs_device *d = dp->d;
    const struct vs_fit_rules *ru = &d->rules;
    const struct vs_req *r = fc->req;
    struct vs_scard **cands = fc->cands;
    size_t n_cands = fc->n_cands;
    size_t counts[R_COUNT] = {0};
    size_t need = (size_t)r->nums, n_chosen = 0;
    int64_t prev_numa = INT64_MIN;
    bool numa = ru->numa && x->numa_bind;
    /* Collect every passing card, then choose: the topology-aware policy, or the backend's own
     * selection (Ascend groups). */
    bool topo_mode = ru->topology && x->gpu.topology;
    bool sel_mode = !topo_mode && d->ops->collects && d->ops->collects(d, dp->ctx, r);
    bool collect = topo_mode || sel_mode;
    /* Picks of this container: one per card, more only for MIG revisits or collect mode.
     * A stack buffer covers the common case (Fit runs per candidate node, so no heap here). */
    struct pick stackbuf[64];
    size_t cap = sizeof(stackbuf) / sizeof(stackbuf[0]);
    struct pick *chosen = stackbuf;
    size_t revisits = 0, revisit_idx = SIZE_MAX;
    for (size_t ii = n_cands; ii-- > 0;) {
        struct vs_scard *sc = cands[ii];
        const struct vs_card *c = sc->c;
        if (ii != revisit_idx)
            revisits = 0;
        if (!c->health || sc->unhealthy) {
            counts[R_HEALTH]++;
            continue;
        }
        if (ru->cordon && c->cordoned) {
            counts[R_CORDON]++;
            continue;
        }
        if (!type_ok(dp, c)) {
            counts[R_TYPE]++;
            continue;
        }
        if (numa && c->numa != prev_numa) {
            if (need != (size_t)r->nums)
                counts[R_NUMA] += n_chosen;
            need = (size_t)r->nums;
            n_chosen = 0;
            prev_numa = c->numa;
        }
        if (!uuid_ok(dp, c)) {
            counts[R_UUID]++;
            continue;
        }
        if (c->count <= sc->used) {
            counts[R_SLICING]++;
            continue;
        }
        if (x->gpu.mutex && sc->used > 0) {
            counts[R_EXCLUSIVE]++;
            continue;
        }
        int64_t cores = ru->clamp_cores && r->cores > 100 ? 100 : r->cores;
        int64_t mem = 0;
        if (r->memreq > 0)
            mem = r->memreq;
        else if (r->pct != VS_PCT_UNSET)
            mem = (int64_t)c->devmem * r->pct / 100;
        if (ru->quota && !quota_ok(dp, x->quota, sf, chosen, n_chosen, mem, cores)) {
            counts[R_QUOTA]++;
            continue;
        }
        if (c->devmem - sc->usedmem < mem) {
            counts[R_MEM]++;
            continue;
        }
        int64_t tc = total_cores(dp, c);
        if (tc - sc->usedcores < cores) {
            counts[R_CORE]++;
            continue;
        }
        if (tc == 100 && cores == 100 && sc->used > 0) {
            counts[R_EXCLUSIVE]++;
            continue;
        }
        if (tc != 0 && sc->usedcores == tc && cores == 0) {
            counts[R_CU_EXHAUSTED]++;
            continue;
        }
        if (ru->same_card && !same_card_ok(sf, c)) {
            counts[R_CUSTOM]++;
            continue;
        }
        if (c->is_mig && !mig_fits(sc, chosen, n_chosen, mem)) {
            counts[R_MIG]++;
            continue;
        }
        if (need > 0 && n_chosen == cap) {
            size_t nc = cap * 2;
            struct pick *g =
                chosen == stackbuf ? malloc(nc * sizeof(*g)) : realloc(chosen, nc * sizeof(*g));
            if (!g) {
                if (chosen != stackbuf)
                    free(chosen);
                *nomem = true;
                return NULL;
            }
            if (chosen == stackbuf)
                memcpy(g, stackbuf, sizeof(stackbuf));
            chosen = g;
            cap = nc;
        }
        if (need > 0) {
            if (!collect)
                need--;
            chosen[n_chosen].card = sc;
            chosen[n_chosen].mem = mem;
            chosen[n_chosen].cores = cores;
            chosen[n_chosen].extra = NULL;
            n_chosen++;
        }
        if (need == 0 && !collect) {
            memcpy(picks, chosen, (size_t)r->nums * sizeof(*picks));
            if (chosen != stackbuf)
                free(chosen);
            return NULL;
        }
        if (c->is_mig && revisits < MAX_MIG_REVISITS) {
            revisits++;
            revisit_idx = ii;
            ii++; /* a MIG card can host several instances: try it again */
        }
    }
    size_t denominator = n_cands;
    uint32_t zero_too = 0; /* reasons written even with a count of 0 */
    if (collect && (n_chosen >= (size_t)r->nums || sel_mode)) {
        size_t *idx = calloc((size_t)r->nums, sizeof(*idx));
        const struct vs_scard **col = topo_mode ? calloc(n_chosen, sizeof(*col)) : NULL;
        if (!idx || (topo_mode && !col)) {
            free(col);
            free(idx);
            if (chosen != stackbuf)
                free(chosen);
            *nomem = true;
            return NULL;
        }
        bool ok = true, report_zero = false;
        size_t got = n_chosen;
        if (n_chosen == (size_t)r->nums && topo_mode) {
            for (size_t i = 0; i < n_chosen; i++)
                idx[i] = i;
        } else if (topo_mode) {
            for (size_t i = 0; i < n_chosen; i++)
                col[i] = chosen[i].card;
            x->gpu.subset(col, n_chosen, (size_t)r->nums, topo, n_cards, idx);
        } else {
            ok = d->ops->select(fc, chosen, n_chosen, idx, &got, &denominator, &report_zero);
        }
        if (ok)
            for (size_t i = 0; i < (size_t)r->nums; i++)
                picks[i] = chosen[idx[i]];
        free(col);
        free(idx);
        if (ok) {
            if (chosen != stackbuf)
                free(chosen);
            return NULL;
        }
        /* The selection found too few: `got` cards of it count as allocated. */
        n_chosen = got;
        if (report_zero)
            zero_too = 1u << R_ALLOC_INSUFF;
    }
    if (n_chosen > 0)
        counts[R_ALLOC_INSUFF] = n_chosen;
    if (chosen != stackbuf)
        free(chosen);
    char *reason = gen_reason(counts, zero_too, denominator);
    if (!reason)
        *nomem = true;
    return reason;
}

/* Fits one container's request of one backend on a node view (§4.3 fitContainer): scores and
 * sorts the cards in place, runs the backend's Fit (its own or the generic one), applies the
 * picks to the view and records the device entry (and MIG entries). */
static char *fit_container(const struct fit_ctx *x, const struct devpod *dp,
                           const struct vs_node *node, struct vs_scard *view, size_t n,
                           const struct vs_req *r, size_t ctr_index, struct sofar *sf,
                           const struct vs_pod_devs *so_far_devs, const int64_t *topo,
                           struct vs_ctr_devs *out, struct vs_mig_allocs *mig, bool *nomem)
{
    const struct vs_device *d = dp->d;
    for (size_t i = 0; i < n; i++)
        card_score(&view[i], r, &x->w);
    if (x->frag_card && n <= VS_FRAG_MAX_CARDS) {
        /* Each card: how much the node's fragmentation grows with one instance there. The node's
         * cpu and memory are the same for every card, so they are left out here. */
        struct vs_frag_card fc[VS_FRAG_MAX_CARDS];
        frag_cards_view(x, view, n, fc);
        struct vs_frag_req q = frag_req_of(r, 0, 0);
        double dd[VS_FRAG_MAX_CARDS];
        vs_frag_delta_cards(x->frag, fc, n, INT64_MAX, INT64_MAX, &q, dd);
        for (size_t i = 0; i < n; i++)
            view[i].frag = dd[i];
    }
    sort_cards(view, n, x);
    /* Stack buffers for the usual sizes; the heap only for unusually large nodes/requests. */
    struct vs_scard *cands_buf[32];
    struct pick picks_buf[16];
    struct vs_scard **cands = n <= 32 ? cands_buf : calloc(n, sizeof(*cands));
    struct pick *picks = r->nums <= 16 ? picks_buf : calloc((size_t)r->nums, sizeof(*picks));
    char *reason = NULL;
    size_t n_picks = 0;
    if (!cands || !picks) {
        *nomem = true;
        goto out;
    }
    memset(picks, 0, (size_t)r->nums * sizeof(*picks));
    size_t nc = 0;
    bool any_mig = false;
    for (size_t i = 0; i < n; i++) {
        if (view[i].c->cand && view[i].c->dev == d->id) {
            cands[nc++] = &view[i];
            any_mig |= view[i].c->is_mig;
        }
    }
    bool mig_request = any_mig && (!d->ops->partitions_ok || d->ops->partitions_ok(d, dp->ctx));
    if ((size_t)r->nums > nc && !mig_request) {
        reason = strdup("NodeInsufficientDevice");
        if (!reason)
            *nomem = true;
        goto out;
    }
    const char *word = d->ops->node_check ? d->ops->node_check(d, dp->ctx, node) : NULL;
    if (word) {
        struct vs_buf b;
        vs_buf_init(&b);
        vs_buf_printf(&b, "1/%zu %s", nc, word);
        if (!(reason = vs_buf_steal(&b)))
            *nomem = true;
        goto out;
    }
    struct vs_fit_call call = {.dev = d,
                               .pod_ctx = dp->ctx,
                               .pod = x->pod,
                               .node = node,
                               .req = r,
                               .cands = cands,
                               .n_cands = nc,
                               .gpu = &x->gpu,
                               .numa_bind = x->numa_bind,
                               .view = view,
                               .n_view = n,
                               .so_far = so_far_devs,
                               .ctr_index = ctr_index,
                               .card_tags = card_tags,
                               .ectx = x};
    if (d->ops->fit)
        reason = d->ops->fit(&call, picks, nomem);
    else
        reason = fit(x, dp, &call, sf, topo, n, picks, nomem);
    if (reason || *nomem)
        goto out;
    n_picks = (size_t)r->nums;
    /* out == NULL: the node cannot become the chosen one; only whether it fits matters. */
    if (out && !(out->devs = calloc((size_t)r->nums, sizeof(*out->devs)))) {
        *nomem = true;
        goto out;
    }
    for (size_t i = 0; i < (size_t)r->nums; i++) {
        struct vs_scard *sc = picks[i].card;
        int64_t mem = picks[i].mem, cores = picks[i].cores;
        if (sc->c->is_mig) {
            const struct vs_mig_profile *prof;
            struct vs_mig_placement pl;
            if (!vs_mig_choose(sc->c, sc->occ, sc->n_occ, mem, &prof, &pl)) {
                struct vs_buf b;
                vs_buf_init(&b);
                vs_buf_printf(&b,
                              "AddResourceUsage failed for device %s: MIG profile and placement "
                              "allocation failed",
                              sc->c->uuid);
                reason = vs_buf_steal(&b);
                if (!reason)
                    *nomem = true;
                goto out;
            }
            mem = prof->memory_mb;
            cores = prof->core;
            picks[i].mem = mem;
            picks[i].cores = cores;
            struct vs_mig_alloc *g = realloc(mig->items, (mig->n + 1) * sizeof(*g));
            if (!g || !occ_push(sc, pl)) {
                if (g)
                    mig->items = g;
                *nomem = true;
                goto out;
            }
            mig->items = g;
            struct vs_mig_alloc *a = &mig->items[mig->n];
            memset(a, 0, sizeof(*a));
            a->container_index = (int32_t)ctr_index;
            a->device_index = (int32_t)i;
            a->gpu_uuid = strdup(sc->c->uuid);
            a->profile = strdup(prof->name ? prof->name : "");
            a->mig_uuid = strdup("");
            a->placement = pl;
            mig->n++;
            if (!a->gpu_uuid || !a->profile || !a->mig_uuid) {
                *nomem = true;
                goto out;
            }
        }
        if (d->ops->add_usage) {
            d->ops->add_usage(d, sc, &picks[i]);
        } else {
            sc->used += 1;
            sc->usedmem += mem;
            sc->usedcores += cores;
        }
        sf->mem += mem;
        sf->cores += cores;
        if (sf->n < sizeof(sf->uuids) / sizeof(sf->uuids[0]))
            sf->uuids[sf->n++] = sc->c->uuid;
        if (!out)
            continue;
        struct vs_cdev *cd = &out->devs[out->n++];
        cd->uuid = strdup(sc->c->uuid);
        cd->type = strdup(d->type_is_model ? sc->c->type : d->word);
        cd->usedmem = (int32_t)mem;
        cd->usedcores = (int32_t)cores;
        cd->extra = picks[i].extra;
        picks[i].extra = NULL;
        if (!cd->uuid || !cd->type) {
            *nomem = true;
            goto out;
        }
    }
out:
    for (size_t i = 0; picks && i < n_picks; i++)
        free(picks[i].extra);
    if (cands != cands_buf)
        free(cands);
    if (picks != picks_buf)
        free(picks);
    return reason;
}

/* ------------------------------------------------------------------ per node (§4.3) */

static enum vs_err set_reason(struct vs_node_fit *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum vs_err set_reason(struct vs_node_fit *f, const char *fmt, ...)
{
    if (!strchr(fmt, '%')) { /* a constant: no formatting (refusals are asked of every node) */
        f->fit = false;
        f->reason = strdup(fmt);
        return f->reason ? VS_OK : VS_ERR_NOMEM;
    }
    char buf[VS_ERRBUF_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    f->fit = false;
    f->reason = strdup(buf);
    return f->reason ? VS_OK : VS_ERR_NOMEM;
}

/* The request quick_scan can decide: a single container asking one backend (none in init
 * containers), a backend whose Fit is the generic one and takes the first cards that pass its
 * per-card checks, and none of the checks whose outcome depends on the order of the walk or on
 * earlier picks (NUMA binding, namespace quota). NULL otherwise. */
static const struct vs_req *quick_request(const struct fit_ctx *x)
{
    if (x->need_devs)
        return NULL;
    for (size_t i = 0; i < x->req.n_init; i++)
        if (x->req.init[i].n)
            return NULL;
    const struct vs_req *r = NULL;
    for (size_t j = 0; j < x->req.n_ctrs; j++) {
        if (!x->req.ctrs[j].n)
            continue;
        if (r || x->req.ctrs[j].n > 1)
            return NULL;
        r = &x->req.ctrs[j].r[0];
    }
    if (!r)
        return NULL;
    const struct devpod *dp = &x->dp[r->dev];
    const struct vs_device_ops *o = dp->d->ops;
    if ((x->numa_bind && dp->d->rules.numa) || dp->quota || dp->d->rules.same_card || o->fit ||
        o->collects || o->node_check || o->add_usage)
        return NULL;
    return r;
}

/* Fit's per-card checks for request r on a node's own card, in fit()'s order: the reason index
 * of the first check the card fails, -1 when it passes them all. */
static int card_check(const struct fit_ctx *x, const struct devpod *dp, const struct vs_req *r,
                      const struct vs_card *c, int64_t cores)
{
    int64_t mem = 0;
    if (r->memreq > 0)
        mem = r->memreq;
    else if (r->pct != VS_PCT_UNSET)
        mem = (int64_t)c->devmem * r->pct / 100;
    if (!c->health || c->mig_unhealthy)
        return R_HEALTH;
    if (dp->d->rules.cordon && c->cordoned)
        return R_CORDON;
    if (!type_ok(dp, c))
        return R_TYPE;
    if (!uuid_ok(dp, c))
        return R_UUID;
    if (c->count <= c->used)
        return R_SLICING;
    if (x->gpu.mutex && c->used > 0)
        return R_EXCLUSIVE;
    if (c->devmem - c->usedmem < mem)
        return R_MEM;
    int64_t tc = total_cores(dp, c);
    if (tc - c->usedcores < cores)
        return R_CORE;
    if (tc == 100 && cores == 100 && c->used > 0)
        return R_EXCLUSIVE;
    if (tc != 0 && c->usedcores == tc && cores == 0)
        return R_CU_EXHAUSTED;
    return -1;
}

/* The cores a request asks per card as Fit counts them. */
static int64_t req_cores(const struct devpod *dp, const struct vs_req *r)
{
    return dp->d->rules.clamp_cores && r->cores > 100 ? 100 : r->cores;
}

/* card_check for x->quick. */
static int card_verdict(const struct fit_ctx *x, const struct devpod *dp, const struct vs_card *c,
                        int64_t cores)
{
    return card_check(x, dp, x->quick, c, cores);
}

static bool capacity_reason(int why)
{
    return why == R_SLICING || why == R_EXCLUSIVE || why == R_MEM || why == R_CORE ||
           why == R_CU_EXHAUSTED;
}

/* Whether the DRA claims holding card c are to blame for refusing it: for some container's
 * request of the pod on c's backend, the card is short of slots, memory or cores and would pass
 * without what the claims hold. */
static bool claims_blamed(const struct fit_ctx *x, const struct vs_card *c)
{
    const struct devpod *dp = &x->dp[c->dev];
    if (!c->dra_holders || !c->cand || !dp->d)
        return false;
    struct vs_card free_of = *c;
    free_of.used -= c->dra_slots;
    free_of.usedmem -= c->dra_mem;
    free_of.usedcores -= c->dra_cores;
    const struct vs_pod_req *pr = &x->req;
    for (size_t k = 0; k < pr->n_init + pr->n_ctrs; k++) {
        const struct vs_ctr_req *cr = k < pr->n_init ? &pr->init[k] : &pr->ctrs[k - pr->n_init];
        const struct vs_req *r = vs_ctr_req_get(cr, c->dev);
        if (!r || r->nums == 0)
            continue;
        int64_t cores = req_cores(dp, r);
        if (capacity_reason(card_check(x, dp, r, c, cores)) &&
            card_check(x, dp, r, &free_of, cores) < 0)
            return true;
    }
    return false;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A card-level refusal of node n, followed by the DRA claims to blame for it (claims_blamed):
 * "<reasons> (held by DRA claim ns/name)" ("claims a/b, c/d" for several, in byte order). Claims
 * on cards refused for other reasons, or on cards that pass, are not named. Takes reason over;
 * NULL when out of memory. */
static char *dra_named(const struct fit_ctx *x, const struct vs_node *n, char *reason)
{
    if (!reason || !n->dra_holders)
        return reason;
    /* every name on a blamed card, as pointers into the cards' lists ("a/b, c/d") */
    size_t cap = 0, nn = 0;
    for (size_t i = 0; i < n->n_cards; i++)
        if (n->cards[i].dra_holders)
            for (const char *p = n->cards[i].dra_holders; p; p = strstr(p + 1, ", "))
                cap++;
    if (!cap)
        return reason;
    const char **names = malloc(cap * sizeof(*names));
    size_t *lens = malloc(cap * sizeof(*lens));
    if (!names || !lens) {
        free(names);
        free(lens);
        free(reason);
        return NULL;
    }
    for (size_t i = 0; i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        if (!claims_blamed(x, c))
            continue;
        for (const char *p = c->dra_holders; *p;) {
            const char *q = strstr(p, ", ");
            size_t l = q ? (size_t)(q - p) : strlen(p);
            bool seen = false;
            for (size_t k = 0; k < nn && !seen; k++)
                seen = lens[k] == l && strncmp(names[k], p, l) == 0;
            if (!seen) {
                names[nn] = p;
                lens[nn++] = l;
            }
            p = q ? q + 2 : p + l;
        }
    }
    if (!nn) {
        free(names);
        free(lens);
        return reason;
    }
    /* each name ends its card's list or is followed by ", ": compare them as whole strings */
    char **own = calloc(nn, sizeof(*own));
    bool ok = own != NULL;
    for (size_t k = 0; ok && k < nn; k++)
        ok = (own[k] = strndup(names[k], lens[k])) != NULL;
    struct vs_buf b;
    vs_buf_init(&b);
    if (ok) {
        qsort(own, nn, sizeof(*own), cmp_cstr);
        ok = vs_buf_puts(&b, reason) &&
             vs_buf_puts(&b, nn > 1 ? " (held by DRA claims " : " (held by DRA claim ");
        for (size_t k = 0; ok && k < nn; k++)
            ok = vs_buf_printf(&b, "%s%s", k ? ", " : "", own[k]);
        ok = ok && vs_buf_puts(&b, ")");
    }
    for (size_t k = 0; own && k < nn; k++)
        free(own[k]);
    free(own);
    free(names);
    free(lens);
    free(reason);
    char *out = ok ? vs_buf_steal(&b) : NULL;
    vs_buf_cleanup(&b);
    return out;
}

/* What quick_scan saw on a node it refused: per reason, the backend's cards that failed that
 * check first; the cards that passed them all; the backend's cards. Enough to word the refusal
 * later without another pass over the cards. */
struct tally {
    uint32_t counts[R_COUNT];
    uint32_t pass, nc;
};

/* The refusals whose reasons are left for later (vs_sched_opts.lazy_reasons): at[i] is 1 + the
 * index in t of candidate i's tally, 0 when it has none. Tallies are kept only for refused
 * nodes, so a Filter where most nodes fit allocates little. */
struct lazy {
    uint32_t *at;
    struct tally *t;
    size_t n, cap;
};

static bool lazy_keep(struct lazy *lz, size_t i, const struct tally *t)
{
    if (lz->n == lz->cap) {
        size_t cap = lz->cap ? lz->cap * 2 : 64;
        struct tally *g = realloc(lz->t, cap * sizeof(*g));
        if (!g)
            return false;
        lz->t = g;
        lz->cap = cap;
    }
    lz->t[lz->n++] = *t;
    lz->at[i] = (uint32_t)lz->n;
    return true;
}

/* One pass over the node's own cards, for a node without MIG cards and without the pod's own
 * reservation (so its cards are exactly what snapshot() would copy): the node score as
 * node_score_of() computes it (from the model's sums of the same values), and whether x->quick
 * fits. Fit takes every card that passes its checks until it has Nums of them (topology mode
 * collects them all first), so the container fits exactly when at least Nums cards pass. A
 * refusal has visited every card, so t (zeroed by the caller) then holds its whole tally. */
static bool quick_scan(const struct fit_ctx *x, const struct vs_node *n, float *score,
                       struct tally *t)
{
    const struct vs_req *r = x->quick;
    const struct devpod *dp = &x->dp[r->dev];
    const struct vs_node_sums *s = &n->sums;
    *score = score_of_sums(s->used, s->count, s->usedcores, s->devcore, s->usedmem, s->devmem);
    int64_t cores = req_cores(dp, r);
    size_t pass = 0, need = (size_t)r->nums, nc = 0;
    for (size_t i = 0; i < n->n_cards && pass < need; i++) {
        const struct vs_card *c = &n->cards[i];
        if (!c->cand || c->dev != r->dev)
            continue;
        nc++;
        int why = card_verdict(x, dp, c, cores);
        if (why < 0)
            pass++;
        else
            t->counts[why]++;
    }
    t->pass = (uint32_t)pass;
    t->nc = (uint32_t)nc;
    return pass >= need;
}

/* Everything card_verdict reads besides the card: x->quick's backend, memory and cores, the
 * mutex policy, the backend's selectors and the uuid selectors. A backend whose selectors cannot
 * be folded gets a key no other Filter has (its node memos are then not replayed). */
static uint64_t req_sig(const struct fit_ctx *x)
{
    static _Atomic uint64_t unique = 1;
    const struct vs_req *r = x->quick;
    const struct devpod *dp = &x->dp[r->dev];
    int64_t f[5] = {r->memreq, r->pct, r->cores, x->gpu.mutex, r->dev};
    uint64_t h = vs_fnv(VS_FNV_OFFSET, f, sizeof(f));
    if (dp->d->ops->pod_sig)
        h = dp->d->ops->pod_sig(dp->ctx, h);
    else if (dp->d->ops->type_ok || dp->d->ops->total_cores)
        h = vs_fnv(h, &(uint64_t){atomic_fetch_add(&unique, 1)}, sizeof(uint64_t));
    h = vs_fnv_strlist(h, &dp->use_uuid);
    return vs_fnv_strlist(h, &dp->nouse_uuid);
}

/* Node policy fragmentation on a node quick_scan() accepted: the growth of the node's
 * fragmentation when x->quick goes on the cards the measure would choose among those Fit
 * accepts. Nodes with more cards than the measure takes score 0. */
static double quick_frag(const struct fit_ctx *x, const struct vs_node *n)
{
    if (n->n_cards > VS_FRAG_MAX_CARDS)
        return 0;
    const struct vs_req *r = x->quick;
    struct vs_frag_req q = frag_req_of(r, x->pod_cpu, x->pod_mem);
    size_t picks[VS_FRAG_MAX_CARDS];
    double d;
    /* The same request on the same node state as the last Filter that measured it: only the
     * weighted sums are redone (which cards Fit allows follows from gen and frag_req_sig). */
    if (vs_frag_memo_replay(x->frag, &((struct vs_node *)n)->frag_memo, n->gen, n->n_cards, &q,
                            x->frag_req_sig, &d, picks))
        return isnan(d) ? 0 : d;
    const struct devpod *dp = &x->dp[r->dev];
    int64_t cores = req_cores(dp, r);
    struct vs_frag_card fc[VS_FRAG_MAX_CARDS];
    uint64_t ok = 0;
    for (size_t i = 0; i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        frag_card_of(x->frag, c, c->used, c->usedmem, c->usedcores, c->mig_unhealthy, &fc[i]);
        if (c->cand && c->dev == r->dev && card_verdict(x, dp, c, cores) < 0)
            ok |= 1ull << i;
    }
    int64_t cpu, mem;
    frag_node_free(n, &cpu, &mem);
    /* The node's own cards and cpu/memory, as the generation stamps them: the sums over them
     * come from the node's memo while neither the node nor the shape set changed. The model is
     * const to Filter but for this cache (atomic pointer, try-locked inside). */
    struct vs_node *mn = (struct vs_node *)n;
    d = vs_frag_pick_memo(x->frag, &mn->frag_memo, n->gen, fc, n->n_cards, cpu, mem, &q, ok,
                          x->frag_req_sig, picks);
    return isnan(d) ? 0 : d;
}

double vs_sched_frag_plain(struct vs_frag_ctx *x, const struct vs_node *n, int64_t cpu, int64_t mem,
                           double *idle)
{
    if (idle)
        *idle = 0;
    if (!n || !n->present || n->error || n->n_cards > VS_FRAG_MAX_CARDS)
        return 0;
    struct vs_frag_card fc[VS_FRAG_MAX_CARDS];
    for (size_t i = 0; i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        frag_card_of(x, c, c->used, c->usedmem, c->usedcores, c->mig_unhealthy, &fc[i]);
    }
    int64_t cpu_free, mem_free;
    frag_node_free(n, &cpu_free, &mem_free);
    /* The model is const to Filter but for this cache, as in quick_frag. */
    struct vs_node *mn = (struct vs_node *)n;
    return vs_frag_delta_cpu_memo(x, &mn->frag_memo, n->gen, fc, n->n_cards, cpu_free, mem_free,
                                  cpu, mem, idle);
}

/* Why x->quick does not fit on a node quick_scan() refused with tally t, worded as Fit words
 * it: every card of the backend counts under the first check it fails; the cards that pass
 * them all were too few (AllocatedCardsInsufficientRequest). Without enough of the backend's
 * cards at all the node answers NodeInsufficientDevice before Fit, as fit_container does. */
static char *quick_reason(const struct fit_ctx *x, const struct tally *t)
{
    if ((size_t)x->quick->nums > t->nc)
        return strdup("NodeInsufficientDevice");
    size_t counts[R_COUNT];
    for (int i = 0; i < R_COUNT; i++)
        counts[i] = t->counts[i];
    counts[R_ALLOC_INSUFF] = t->pass;
    return gen_reason(counts, 0, t->nc);
}

/* The words quick_reason would write, as vs_node_fit.words bits. */
static uint32_t quick_words(const struct fit_ctx *x, const struct tally *t)
{
    if ((size_t)x->quick->nums > t->nc)
        return VS_REASON_NO_DEVICE_BIT;
    uint32_t w = t->pass ? 1u << R_ALLOC_INSUFF : 0;
    for (int i = 0; i < R_COUNT; i++)
        if (t->counts[i])
            w |= 1u << i;
    return w;
}

/* The backends the pod asks for, by position: the order of vs_node_fit.allocs. */
static size_t req_devs(const struct fit_ctx *x, uint16_t *ids)
{
    size_t k = 0;
    for (size_t d = 0; d < x->set->n; d++)
        if (x->req.devs & (1ull << d))
            ids[k++] = (uint16_t)d;
    return k;
}

/* Position of backend dev in the pod's backends (req_devs order). */
static size_t dev_pos(const struct fit_ctx *x, uint16_t dev)
{
    return (size_t)__builtin_popcountll(x->req.devs & ((1ull << dev) - 1));
}

/* Fits one container's requests (one per backend it asks) on a view. */
static char *fit_requests(const struct fit_ctx *x, const struct vs_node *n, struct vs_scard *view,
                          const struct vs_ctr_req *cr, size_t ci, struct sofar *sf,
                          struct vs_node_fit *f, bool devs, bool *nomem)
{
    char *reason = NULL;
    for (size_t k = 0; k < cr->n && !reason && !*nomem; k++) {
        const struct vs_req *r = &cr->r[k];
        size_t pos = dev_pos(x, r->dev);
        struct vs_dev_alloc *al = devs ? &f->allocs[pos] : NULL;
        reason = fit_container(x, &x->dp[r->dev], n, view, n->n_cards, r, ci, &sf[pos],
                               al ? &al->devs : NULL, n->topo, al ? &al->devs.ctrs[ci] : NULL,
                               &f->mig, nomem);
    }
    return reason;
}

/* The backends' node-score terms for the picks in f (before: the node's cards before them). */
static float vendor_terms(const struct fit_ctx *x, const struct vs_node *n,
                          const struct vs_node_fit *f, const struct vs_scard *before,
                          const char *node_policy)
{
    double t = 0;
    for (size_t k = 0; k < f->n_allocs; k++) {
        const struct devpod *dp = &x->dp[f->allocs[k].dev];
        if (!dp->d->ops->score_node)
            continue;
        struct vs_score_call sc = {.dev = dp->d,
                                   .pod_ctx = dp->ctx,
                                   .pod = x->pod,
                                   .node = n,
                                   .devs = &f->allocs[k].devs,
                                   .before = before,
                                   .n_before = n->n_cards,
                                   .node_policy = node_policy,
                                   .card_tags = card_tags,
                                   .ectx = x};
        t += dp->d->ops->score_node(&sc);
    }
    return (float)t;
}

/* Only a node that would become the choice (want_devs(score)) gets its device list built:
 * the others need just fit/no fit, and building 5,000 unused lists dominated a Filter. With
 * `lz` non-NULL a node quick_scan refuses is left without its reason (its tally kept in lz as
 * candidate idx, to word it later). */
static enum vs_err eval_node(const struct fit_ctx *x, const struct vs_node *n,
                             struct vs_node_fit *f, bool (*want_devs)(void *ctx, float score),
                             void *want_ctx, struct lazy *lz, size_t idx)
{
    if (!n || !n->present)
        return set_reason(f, "node unregistered");
    f->gen = n->gen;
    for (size_t d = 0; n->dev_error && d < x->set->n; d++)
        if ((x->req.devs & (1ull << d)) && n->dev_error[d])
            return set_reason(f, "node unregistered: %s", n->dev_error[d]);
    if (n->n_cards == 0)
        return set_reason(f, "node unregistered");
    if (n->n_bad_pods) {
        for (const struct vs_podent *pe = n->pods; pe; pe = pe->next)
            if (pe->malformed)
                return set_reason(f, "node usage unavailable: pod %s/%s: %s", pe->ns, pe->name,
                                  pe->error);
    }
    if (x->quick && !n->has_mig && !(x->own && x->own->on == n) && !x->gone.n &&
        !(x->gone.n_extra && has_extra(&x->gone, n))) {
        /* Decided by counting on the node's own cards, unless the node could become the choice
         * (then its devices are needed) or does not fit and its reason is wanted now. */
        float score;
        struct tally t = {0};
        bool fits = quick_scan(x, n, &score, &t);
        if (fits && !want_devs(want_ctx, score)) {
            f->score = score;
            f->fit = true;
            if (x->frag_node)
                f->frag = quick_frag(x, n) + pod_strand(x, n) + pod_type_term(x, n);
            return VS_OK;
        }
        if (!fits && lz)
            return lazy_keep(lz, idx, &t) ? VS_OK : VS_ERR_NOMEM;
        if (!fits) {
            f->reason = dra_named(x, n, quick_reason(x, &t));
            return f->reason ? VS_OK : VS_ERR_NOMEM;
        }
    }
    size_t nc = n->n_cards;
    struct vs_scard base_buf[SCARD_STACK], view_buf[SCARD_STACK], before_buf[SCARD_STACK];
    struct vs_scard *base = snapshot(n, &x->gone, base_buf);
    if (!base)
        return VS_ERR_NOMEM;
    size_t n_init = x->req.n_init, n_ctrs = x->req.n_ctrs;
    enum vs_err err = VS_OK;
    bool nomem = false;
    char *reason = NULL;
    struct vs_scard *view = NULL, *before = NULL;
    uint16_t ids[VS_MAX_DEVICES];
    size_t nd = req_devs(x, ids);
    struct sofar sf_buf[4], *sf = nd <= 4 ? sf_buf : calloc(nd, sizeof(*sf));
    if (!sf) {
        scards_free(base, nc, base_buf);
        return VS_ERR_NOMEM;
    }
    memset(sf, 0, (nd <= 4 ? 4 : nd) * sizeof(*sf));
    f->score = node_score_of(base, nc);
    bool devs = x->need_devs || want_devs(want_ctx, f->score);
    if (devs) {
        if (!(f->allocs = calloc(nd ? nd : 1, sizeof(*f->allocs)))) {
            err = VS_ERR_NOMEM;
            goto out;
        }
        f->n_allocs = nd;
        for (size_t k = 0; k < nd; k++) {
            f->allocs[k].dev = ids[k];
            f->allocs[k].devs.ctrs =
                calloc(n_init + n_ctrs ? n_init + n_ctrs : 1, sizeof(*f->allocs[k].devs.ctrs));
            if (!f->allocs[k].devs.ctrs) {
                err = VS_ERR_NOMEM;
                goto out;
            }
            f->allocs[k].devs.n = n_init + n_ctrs;
        }
    }
    for (size_t i = 0; i < n_init && !reason; i++) {
        if (x->req.init[i].n == 0)
            continue;
        /* Init containers run one at a time: each sees the node without the pod. */
        view = clone(base, nc, view_buf);
        if (!view) {
            err = VS_ERR_NOMEM;
            goto out;
        }
        reason = fit_requests(x, n, view, &x->req.init[i], i, sf, f, devs, &nomem);
        scards_free(view, nc, view_buf);
        view = NULL;
        if (nomem) {
            err = VS_ERR_NOMEM;
            goto out;
        }
    }
    if (x->need_devs && !reason && !(before = clone(base, nc, before_buf))) {
        err = VS_ERR_NOMEM;
        goto out;
    }
    /* The app containers work on the base view itself: nothing reads it afterwards. */
    view = base;
    for (size_t k = 0; k < nd; k++)
        sf[k].mem = sf[k].cores = 0;
    double frag0 = 0;
    int64_t cpu_free = INT64_MAX, mem_free = INT64_MAX;
    struct vs_frag_card fc[VS_FRAG_MAX_CARDS];
    bool frag = x->frag_node && !x->frag_known && nc <= VS_FRAG_MAX_CARDS;
    if (frag) {
        frag_node_free(n, &cpu_free, &mem_free);
        frag_cards_view(x, base, nc, fc);
        frag0 = vs_frag_node(x->frag, fc, nc, cpu_free, mem_free);
    }
    for (size_t j = 0; j < n_ctrs && !reason; j++) {
        if (x->req.ctrs[j].n == 0)
            continue;
        reason = fit_requests(x, n, view, &x->req.ctrs[j], n_init + j, sf, f, devs, &nomem);
        if (nomem) {
            err = VS_ERR_NOMEM;
            goto out;
        }
    }
    if (reason) {
        f->fit = false;
        if (!(f->reason = dra_named(x, n, reason)))
            err = VS_ERR_NOMEM;
        reason = NULL;
        vs_dev_allocs_free(f->allocs, f->n_allocs);
        f->allocs = NULL;
        f->n_allocs = 0;
        vs_mig_allocs_cleanup(&f->mig);
    } else {
        f->fit = true;
        if (before)
            f->score += vendor_terms(x, n, f, before, x->node_policy->name);
        if (frag) {
            frag_cards_view(x, view, nc, fc);
            int64_t cpu1 = cpu_free == INT64_MAX ? cpu_free : cpu_free - x->pod_cpu;
            int64_t mem1 = mem_free == INT64_MAX ? mem_free : mem_free - x->pod_mem;
            f->frag = vs_frag_node(x->frag, fc, nc, cpu1, mem1) - frag0 + pod_strand(x, n) +
                      pod_type_term(x, n);
        }
    }
out:
    free(reason);
    if (sf != sf_buf)
        free(sf);
    if (before)
        scards_free(before, nc, before_buf);
    if (view != base)
        scards_free(view, nc, view_buf);
    scards_free(base, nc, base_buf);
    return err;
}

/* ------------------------------------------------------------------ Filter */

static void ctx_cleanup(struct fit_ctx *x)
{
    free(x->frag);
    vs_pod_req_cleanup(&x->req);
    for (size_t d = 0; d < VS_MAX_DEVICES; d++) {
        struct devpod *dp = &x->dp[d];
        if (!dp->d)
            continue;
        if (dp->ctx && dp->d->ops->pod_end)
            dp->d->ops->pod_end(dp->ctx);
        vs_strlist_cleanup(&dp->use_uuid);
        vs_strlist_cleanup(&dp->nouse_uuid);
    }
}

struct best_ctx {
    const struct vs_filter_result *r;
    const struct vs_node_policy *policy;
    const struct vs_sched_opts *o;
    unsigned cur_busy;  /* the candidate being evaluated: its busy rank (0: not busy) */
    unsigned best_busy; /* the best so far: its busy rank */
};

/* The busy nodes of one Filter as an open-addressing set of the model's node pointers with
 * their ranks: a candidate's rank is then a pointer probe, not a search of names (a Filter over
 * thousands of candidates while hundreds of nodes are busy spent more on that than on the fit). */
struct busy_set {
    size_t mask; /* slots - 1; slots a power of two, at least twice the busy nodes */
    const struct vs_node **node;
    unsigned *rank;
};

static size_t busy_slot(const struct busy_set *b, const struct vs_node *n)
{
    return (size_t)(((uintptr_t)n >> 4) * 0x9e3779b97f4a7c15ULL >> 20) & b->mask;
}

static enum vs_err busy_set_build(struct busy_set *b, const struct vs_model *m,
                                  const struct vs_sched_opts *o)
{
    memset(b, 0, sizeof(*b));
    if (!o->n_busy)
        return VS_OK;
    size_t slots = 16;
    while (slots < 2 * o->n_busy)
        slots *= 2;
    b->node = calloc(slots, sizeof(*b->node) + sizeof(*b->rank));
    if (!b->node)
        return VS_ERR_NOMEM;
    b->rank = (unsigned *)(b->node + slots);
    b->mask = slots - 1;
    for (size_t i = 0; i < o->n_busy; i++) {
        const struct vs_node *n = vs_model_node(m, o->busy[i]);
        if (!n)
            continue; /* not in the model: no candidate resolves to it */
        size_t k = busy_slot(b, n);
        while (b->node[k] && b->node[k] != n)
            k = (k + 1) & b->mask;
        b->node[k] = n;
        b->rank[k] = o->busy_rank ? o->busy_rank[i] : 1;
    }
    return VS_OK;
}

/* 0: not busy; else its rank in o->busy_rank (1 without ranks). */
static unsigned busy_set_rank(const struct busy_set *b, const struct vs_node *n)
{
    if (!b->node || !n)
        return 0;
    for (size_t k = busy_slot(b, n);; k = (k + 1) & b->mask) {
        if (b->node[k] == n)
            return b->rank[k];
        if (!b->node[k])
            return 0;
    }
}

/* Whether a fitting node with `score` beats the best so far: a node with a lower busy rank
 * beats one with a higher (not busy, busy by layer, then saturated ones by their queue), then
 * the node policy. */
static bool beats_best(const struct best_ctx *b, float score)
{
    if (b->r->best < 0)
        return true;
    if (b->cur_busy != b->best_busy)
        return b->cur_busy < b->best_busy;
    return b->policy->better(score, b->r->nodes[b->r->best].score);
}

static bool would_be_best(void *ctx, float score)
{
    const struct best_ctx *b = ctx;
    /* Fragmentation is known only after the fit: the chosen node gets its devices at the end. */
    if (b->policy->fragmentation)
        return false;
    return beats_best(b, score);
}

static bool always(void *ctx, float score)
{
    (void)ctx;
    (void)score;
    return true;
}

/* Whether fit a is a better choice than the best so far, b (NULL = none yet). */
static bool node_better(const struct vs_node_policy *p, const struct vs_node_fit *a,
                        const struct vs_node_fit *b)
{
    if (!b)
        return true;
    if (p->fragmentation) {
        if (a->frag < b->frag - VS_FRAG_TIE)
            return true;
        if (a->frag > b->frag + VS_FRAG_TIE)
            return false;
    }
    return p->better(a->score, b->score);
}

/* The request that stands for the pod in the workload: the first app container's first
 * request, else the first init container's. */
static const struct vs_req *shape_request(const struct vs_pod_req *q)
{
    for (size_t j = 0; j < q->n_ctrs; j++)
        if (q->ctrs[j].n)
            return &q->ctrs[j].r[0];
    for (size_t i = 0; i < q->n_init; i++)
        if (q->init[i].n)
            return &q->init[i].r[0];
    return NULL;
}

static enum vs_err pod_error(struct vs_filter_result *r, const char *msg)
{
    r->error = strdup(msg);
    return r->error ? VS_OK : VS_ERR_NOMEM;
}

enum vs_err vs_sched_filter(const struct vs_model *m, const struct vs_pod *pod,
                            const char *const *cands, size_t n_cands, const struct vs_sched_opts *o,
                            struct vs_filter_result *r)
{
    struct fit_ctx x;
    struct vs_errbuf eb;
    enum vs_err err = VS_OK;
    struct lazy lazy = {0}, *lz = o->lazy_reasons ? &lazy : NULL;
    const struct vs_node **nodes = NULL;
    struct busy_set busy = {0};
    memset(r, 0, sizeof(*r));
    memset(&x, 0, sizeof(x));
    r->best = -1;
    x.pod = pod;
    x.set = o->cfg->devices;
    if ((err = vs_request_build(pod, o->cfg, &x.req, &eb))) {
        if (err == VS_ERR_NOMEM)
            return err;
        r->managed = true;
        return pod_error(r, eb.msg);
    }
    if (!x.req.any) {
        ctx_cleanup(&x);
        return VS_OK;
    }
    r->managed = true;
    r->any_regular = x.req.any_regular;
    r->devs = x.req.devs;
    const struct vs_device *stamps[VS_MAX_DEVICES];
    vs_sched_locks(x.set, &x.req, &r->lock_shared, stamps);
    const struct vs_kvlist *an = &pod->annotations;
    const char *np = vs_kv_get(an, VS_ANNO_NODE_POLICY);
    const char *gp = vs_kv_get(an, VS_ANNO_GPU_POLICY);
    const struct vs_node_policy *node_policy;
    if (np ? vs_policy_parse_node(np, VS_ANNO_NODE_POLICY, &node_policy, &eb)
           : vs_policy_parse_node(o->node_policy ? o->node_policy : "binpack",
                                  "--node-scheduler-policy", &node_policy, &eb)) {
        err = pod_error(r, eb.msg);
        goto out;
    }
    if (gp ? vs_policy_parse_gpu(gp, VS_ANNO_GPU_POLICY, &x.gpu, &eb)
           : vs_policy_parse_gpu(o->gpu_policy ? o->gpu_policy : "spread", "--gpu-scheduler-policy",
                                 &x.gpu, &eb)) {
        err = pod_error(r, eb.msg);
        goto out;
    }
    if (vs_annot_parse_weights(vs_kv_get(an, VS_ANNO_WEIGHTS), &x.w, &eb)) {
        char msg[VS_ERRBUF_SIZE + 128];
        snprintf(msg, sizeof(msg), "calcScore failed %s for pod %s", eb.msg,
                 pod->name ? pod->name : "");
        err = pod_error(r, msg);
        goto out;
    }
    const char *nb = vs_kv_get(an, VS_ANNO_NUMA_BIND);
    if (nb && vs_annot_parse_bool(nb, &x.numa_bind))
        x.numa_bind = false;
    struct vs_strlist ut, nt;
    if (vs_annot_parse_list(vs_kv_get(an, VS_ANNO_USE_TYPE), &ut) ||
        vs_annot_parse_list(vs_kv_get(an, VS_ANNO_NOUSE_TYPE), &nt)) {
        err = VS_ERR_NOMEM;
        goto out;
    }
    x.names_use = ut.n > 0;
    x.names_types = ut.n > 0 || nt.n > 0;
    vs_strlist_cleanup(&ut);
    vs_strlist_cleanup(&nt);
    /* Each backend the pod asks for reads what it needs of the pod once. */
    for (size_t d = 0; d < x.set->n; d++) {
        if (!(x.req.devs & (1ull << d)))
            continue;
        struct devpod *dp = &x.dp[d];
        dp->d = x.set->dev[d];
        const struct vs_fit_rules *ru = &dp->d->rules;
        if ((ru->use_uuid && vs_annot_parse_list(vs_kv_get(an, ru->use_uuid), &dp->use_uuid)) ||
            (ru->nouse_uuid &&
             vs_annot_parse_list(vs_kv_get(an, ru->nouse_uuid), &dp->nouse_uuid))) {
            err = VS_ERR_NOMEM;
            goto out;
        }
        if (dp->d->ops->pod_begin && (err = dp->d->ops->pod_begin(dp->d, pod, &dp->ctx, &eb))) {
            if (err == VS_ERR_NOMEM)
                goto out;
            err = pod_error(r, eb.msg);
            goto out;
        }
        x.need_devs |= dp->d->ops->score_node != NULL;
    }
    x.node_policy = node_policy;
    x.frag_node = node_policy->fragmentation;
    x.frag_card = x.gpu.fragmentation;
    const struct vs_req *sr = shape_request(&x.req);
    if (o->frag_stats || x.frag_node) {
        /* The node cpu and memory the pod asks for (0 when they do not parse: the in-tree
         * filters refuse such a pod before the extender). Shapes keep the cpu only, as the
         * paper's do; the pod's memory still counts against the node's. */
        struct vs_podres pr;
        struct vs_errbuf peb;
        if (vs_podres_compute(pod, &pr, &peb) == VS_OK) {
            x.pod_cpu = pr.cpu;
            x.pod_mem = pr.mem;
        }
    }
    struct vs_frag_req shape = frag_req_of(sr ? sr : &(struct vs_req){0}, x.pod_cpu, 0);
    if (o->frag_stats && sr && !o->what_if &&
        (err = vs_frag_stats_add(o->frag_stats, &shape, vs_kv_get(an, VS_ANNO_USE_TYPE),
                                 vs_kv_get(an, VS_ANNO_NOUSE_TYPE))))
        goto out;
    if (x.frag_node || x.frag_card) {
        if (!(x.frag = malloc(sizeof(*x.frag)))) {
            err = VS_ERR_NOMEM;
            goto out;
        }
        if (o->frag_stats) {
            vs_frag_ctx_init(x.frag, o->frag_stats);
        } else {
            double w = 1;
            vs_frag_ctx_set(x.frag, &shape, &w, 1);
        }
    }
    x.own = pod->uid && *pod->uid ? vs_model_pod(m, pod->uid) : NULL;
    x.gone = (struct gone){
        .own = x.own, .v = o->without, .n = o->n_without, .extra = o->extra, .n_extra = o->n_extra};
    x.quota = vs_model_quota(m, pod->ns ? pod->ns : "");
    for (size_t d = 0; x.quota && d < x.set->n && d < x.quota->n; d++) {
        struct devpod *dp = &x.dp[d];
        const struct vs_quota_res *qr = &x.quota->res[d];
        if (!dp->d || !dp->d->rules.quota || (!qr->has_mem && !qr->has_cores))
            continue;
        dp->quota = true;
        dp->q_mem_used = qr->mem_used;
        dp->q_cores_used = qr->cores_used;
        r->quota_checked |= 1ull << d;
        r->quota_mem_used[d] = qr->mem_used;
        r->quota_cores_used[d] = qr->cores_used;
        for (size_t k = 0; k <= o->n_without; k++) {
            const struct vs_podent *pe = k < o->n_without ? o->without[k] : x.own;
            if (!pe || (k < o->n_without && pe == x.own) ||
                strcmp(pe->ns, pod->ns ? pod->ns : "") != 0)
                continue;
            for (size_t i = 0; i < pe->n_usage; i++) {
                if (pe->usage[i].dev != d)
                    continue;
                dp->q_mem_used -= pe->usage[i].mem;
                dp->q_cores_used -= pe->usage[i].cores;
            }
        }
    }
    r->nodes = calloc(n_cands ? n_cands : 1, sizeof(*r->nodes));
    if (!r->nodes) {
        err = VS_ERR_NOMEM;
        goto out;
    }
    r->n = n_cands;
    x.quick = o->full_walk ? NULL : quick_request(&x);
    if (x.frag_node && x.quick)
        x.frag_req_sig = req_sig(&x);
    if ((lz && !(lazy.at = calloc(n_cands ? n_cands : 1, sizeof(*lazy.at)))) ||
        !(nodes = malloc((n_cands ? n_cands : 1) * sizeof(*nodes)))) {
        err = VS_ERR_NOMEM;
        goto out;
    }
    vs_model_nodes(m, cands, n_cands, nodes);
    if ((err = busy_set_build(&busy, m, o)))
        goto out;
    if (x.frag_node)
        type_pressure(&x, o->frag_stats, m);
    struct best_ctx bc = {.r = r, .policy = node_policy, .o = o};
    const bool spreads = vs_gpu_policy_spreads(&x.gpu);
    for (size_t i = 0; i < n_cands; i++) {
        /* Most of a large Filter is waiting for nodes' memory: ask for it a few nodes ahead. */
        if (i + 8 < n_cands && nodes[i + 8]) {
            __builtin_prefetch(&nodes[i + 8]->name);
            __builtin_prefetch(&nodes[i + 8]->sums);
        }
        if (i + 4 < n_cands && nodes[i + 4]) {
            __builtin_prefetch(nodes[i + 4]->cards);
            if (x.frag_node)
                vs_frag_memo_prefetch(&((struct vs_node *)nodes[i + 4])->frag_memo);
        }
        r->nodes[i].node = cands[i];
        bc.cur_busy = busy_set_rank(&busy, nodes[i]);
        if (spreads && o->idle_cards_wanted && bc.cur_busy > 1 &&
            bc.cur_busy < VS_SCHED_RANK_SATURATED)
            bc.cur_busy = 1; /* busy is busy: see vs_sched_opts.busy_rank */
        if ((err = eval_node(&x, nodes[i], &r->nodes[i], would_be_best, &bc, lz, i)))
            goto out;
        /* The lower busy rank first; then the node policy (fragmentation first). */
        if (r->nodes[i].fit && (r->best < 0 ? true
                                : bc.cur_busy != bc.best_busy
                                    ? bc.cur_busy < bc.best_busy
                                    : node_better(node_policy, &r->nodes[i], &r->nodes[r->best]))) {
            r->best = (long)i;
            bc.best_busy = bc.cur_busy;
        }
    }
    if (x.frag_node && r->best >= 0) {
        /* The chosen node's devices, now that the fragmentation has chosen it. */
        struct vs_node_fit *f = &r->nodes[r->best];
        double fr = f->frag;
        float score = f->score;
        memset(f, 0, sizeof(*f));
        f->node = cands[r->best];
        x.frag_known = true;
        if ((err = eval_node(&x, nodes[r->best], f, always, NULL, NULL, 0)))
            goto out;
        f->frag = fr;
        f->score = score;
    }
    /* No node fits: the refusals left pending get their reasons now, from their tallies. */
    for (size_t i = 0; lz && r->best < 0 && i < n_cands; i++) {
        if (!lazy.at[i])
            continue;
        const struct tally *t = &lazy.t[lazy.at[i] - 1];
        if (o->reason_words) {
            r->nodes[i].words = quick_words(&x, t);
            continue;
        }
        if (!(r->nodes[i].reason = dra_named(&x, nodes[i], quick_reason(&x, t)))) {
            err = VS_ERR_NOMEM;
            goto out;
        }
    }
out:
    free(busy.node);
    free(nodes);
    free(lazy.at);
    free(lazy.t);
    ctx_cleanup(&x);
    return err;
}

void vs_filter_result_cleanup(struct vs_filter_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        /* Most entries hold nothing (quick refusals and fits): skip the calls. */
        struct vs_node_fit *f = &r->nodes[i];
        if (f->reason)
            free(f->reason);
        if (f->allocs)
            vs_dev_allocs_free(f->allocs, f->n_allocs);
        if (f->mig.items)
            vs_mig_allocs_cleanup(&f->mig);
    }
    free(r->nodes);
    free(r->error);
    free(r->bind_node);
    json_decref(r->annotations);
    memset(r, 0, sizeof(*r));
    r->best = -1;
}

enum vs_err vs_sched_commit(struct vs_model *m, const struct vs_pod *pod,
                            const struct vs_filter_result *r, int64_t now, struct vs_errbuf *eb)
{
    if (r->best < 0)
        return vs_err_set(eb, VS_ERR_INVAL, "no node was chosen");
    const struct vs_node_fit *f = &r->nodes[r->best];
    const struct vs_node *n = vs_model_node(m, f->node);
    if (!n || n->gen != f->gen)
        return vs_err_set(eb, VS_ERR_CONFLICT, "node %s changed during filter", f->node);
    if (r->quota_checked) {
        const struct vs_quota *q = vs_model_quota(m, pod->ns ? pod->ns : "");
        for (size_t d = 0; d < VS_MAX_DEVICES; d++) {
            if (!(r->quota_checked & (1ull << d)))
                continue;
            if (!q || d >= q->n || q->res[d].mem_used != r->quota_mem_used[d] ||
                q->res[d].cores_used != r->quota_cores_used[d])
                return vs_err_set(eb, VS_ERR_CONFLICT,
                                  "quota of namespace %s changed during filter", pod->ns);
        }
    }
    if (vs_model_reserve(m, pod, f->node, f->allocs, f->n_allocs, &f->mig, now))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    return VS_OK;
}

size_t vs_sched_locks(const struct vs_devices *set, const struct vs_pod_req *req, bool *shared,
                      const struct vs_device **out)
{
    size_t n = 0;
    *shared = false;
    for (size_t d = 0; d < set->n; d++) {
        if (!(req->regular & (1ull << d)))
            continue;
        *shared |= set->dev[d]->lock == VS_LOCK_SHARED;
        if (set->dev[d]->lock == VS_LOCK_STAMP)
            out[n++] = set->dev[d];
    }
    return n;
}

const struct vs_pod_devs *vs_node_fit_devs(const struct vs_node_fit *f, uint16_t dev)
{
    for (size_t k = 0; k < f->n_allocs; k++)
        if (f->allocs[k].dev == dev)
            return &f->allocs[k].devs;
    return NULL;
}

/* Whether a backend's picks hold any device (a padding-only list writes nothing). */
static bool any_device(const struct vs_pod_devs *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->ctrs[i].n)
            return true;
    return false;
}

enum vs_err vs_sched_annotations(const struct vs_devices *set, const struct vs_pod *pod,
                                 const struct vs_node *n, const struct vs_node_fit *f,
                                 int64_t now_ns, json_t *out)
{
    if (json_object_set_new(out, VS_ANNO_VGPU_NODE, json_string(f->node)))
        return VS_ERR_NOMEM;
    if (now_ns > 0) {
        char ts[32];
        snprintf(ts, sizeof(ts), "%lld", (long long)(now_ns / 1000000000));
        if (json_object_set_new(out, VS_ANNO_VGPU_TIME, json_string(ts)))
            return VS_ERR_NOMEM;
    }
    for (size_t k = 0; k < f->n_allocs; k++) {
        const struct vs_dev_alloc *a = &f->allocs[k];
        if (a->dev >= set->n || !any_device(&a->devs))
            continue;
        const struct vs_device *d = set->dev[a->dev];
        enum vs_err err = d->ops->annotate
                              ? d->ops->annotate(d, pod, n, &a->devs, &f->mig, now_ns, out)
                              : vs_device_annotate_generic(d, &a->devs, out);
        if (err)
            return err;
    }
    return VS_OK;
}
