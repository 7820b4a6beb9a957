/* frag: the fragmentation measure and the workload statistics it is taken against (see
 * frag.h); the policies named `fragmentation` that use it are in policies/fragmentation.c. */
#include "frag.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

/* ------------------------------------------------------------------ statistics */

/* Shapes are kept for the process's life and made in the middle of a Filter's short-lived
 * memory: they come SHAPE_BLOCK at a time (one allocation for 64 shapes, not three per shape),
 * and a shape without type lists copies no string. (Tried as the cause of the soak's early RSS
 * rise, which it did not change: docs/reliability.md "Soak", "Ruled out".) */
#define SHAPE_BLOCK 64
struct shape_block {
    struct shape_block *next;
    struct vs_frag_shape s[SHAPE_BLOCK];
};

struct vs_frag_stats {
    pthread_mutex_t mu;
    struct vs_frag_shape **shapes; /* most frequent first */
    size_t n, cap;
    struct shape_block *blocks; /* the newest first; its first `block_used` shapes are taken */
    size_t block_used;
    uint64_t total;            /* all recorded pods (also those past VS_FRAG_MAX_SHAPES) */
    double sum_cpu, sum_cards; /* cpu (milli) and GPU capacity (cards) of all recorded pods */
    /* GPU capacity asked by the pods that name card types, per distinct pair of type lists
     * (the first VS_FRAG_MAX_GROUPS pairs; later new ones are not counted) */
    struct vs_frag_group {
        char *use_raw, *nouse_raw;
        struct vs_strlist use, nouse;
        double cards;
    } groups[VS_FRAG_MAX_GROUPS];
    size_t n_groups;
    /* vs_frag_type_pressure's last card types (copies) and which of them each of the first
     * acc_groups groups accepts (bit t): recomputed only when the types change. */
    char *acc_type[VS_FRAG_MAX_TYPES];
    size_t acc_n, acc_groups;
    uint32_t acc[VS_FRAG_MAX_GROUPS];
};

struct vs_frag_stats *vs_frag_stats_new(void)
{
    struct vs_frag_stats *st = calloc(1, sizeof(*st));
    if (st)
        pthread_mutex_init(&st->mu, NULL);
    return st;
}

static char no_types[1]; /* a shape's use_raw/nouse_raw when it names no types: not a copy */

static char *raw_dup(const char *v)
{
    return *v ? strdup(v) : no_types;
}

static void raw_free(char *v)
{
    if (v != no_types)
        free(v);
}

static void shape_clear(struct vs_frag_shape *s)
{
    raw_free(s->use_raw);
    raw_free(s->nouse_raw);
    vs_strlist_cleanup(&s->use);
    vs_strlist_cleanup(&s->nouse);
}

void vs_frag_stats_free(struct vs_frag_stats *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++)
        shape_clear(st->shapes[i]);
    free(st->shapes);
    while (st->blocks) {
        struct shape_block *b = st->blocks;
        st->blocks = b->next;
        free(b);
    }
    for (size_t i = 0; i < st->n_groups; i++) {
        free(st->groups[i].use_raw);
        free(st->groups[i].nouse_raw);
        vs_strlist_cleanup(&st->groups[i].use);
        vs_strlist_cleanup(&st->groups[i].nouse);
    }
    for (size_t i = 0; i < st->acc_n; i++)
        free(st->acc_type[i]);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

static bool req_eq(const struct vs_frag_req *a, const struct vs_frag_req *b)
{
    return a->nums == b->nums && a->cores == b->cores && a->mempct == b->mempct &&
           a->memmib == b->memmib && a->cpu_milli == b->cpu_milli && a->mem_bytes == b->mem_bytes;
}

/* Counts `cards` of GPU capacity asked under the type lists (use, nouse) (st->mu held). Out of
 * memory or past VS_FRAG_MAX_GROUPS lists, the pressure just misses them. */
static void group_add(struct vs_frag_stats *st, const char *use, const char *nouse, double cards)
{
    size_t i = 0;
    while (i < st->n_groups &&
           (strcmp(st->groups[i].use_raw, use) != 0 || strcmp(st->groups[i].nouse_raw, nouse) != 0))
        i++;
    if (i == st->n_groups) {
        if (i == VS_FRAG_MAX_GROUPS)
            return;
        struct vs_frag_group *g = &st->groups[i];
        memset(g, 0, sizeof(*g));
        if (!(g->use_raw = strdup(use)) || !(g->nouse_raw = strdup(nouse)) ||
            vs_annot_parse_list(use, &g->use) || vs_annot_parse_list(nouse, &g->nouse)) {
            free(g->use_raw);
            free(g->nouse_raw);
            vs_strlist_cleanup(&g->use);
            vs_strlist_cleanup(&g->nouse);
            return;
        }
        st->n_groups++;
    }
    st->groups[i].cards += cards;
}

enum vs_err vs_frag_stats_add(struct vs_frag_stats *st, const struct vs_frag_req *r,
                              const char *use, const char *nouse)
{
    use = use ? use : "";
    nouse = nouse ? nouse : "";
    enum vs_err err = VS_OK;
    pthread_mutex_lock(&st->mu);
    st->total++;
    if (r->nums > 0) {
        /* As a card of 100 cores and 100 MiB sees it (a MiB request counts as its cores). */
        struct vs_frag_req q = *r;
        if (q.mempct < 0)
            q.mempct = q.cores > 100 ? 100 : q.cores;
        double cards = q.nums * vs_frag_req_idle(&q, 100, 100);
        st->sum_cards += cards;
        st->sum_cpu += (double)r->cpu_milli;
        if (*use || *nouse)
            group_add(st, use, nouse, cards);
    }
    size_t i = 0;
    for (; i < st->n; i++) {
        const struct vs_frag_shape *s = st->shapes[i];
        if (req_eq(&s->r, r) && strcmp(s->use_raw, use) == 0 && strcmp(s->nouse_raw, nouse) == 0)
            break;
    }
    if (i == st->n) {
        if (st->n == VS_FRAG_MAX_SHAPES)
            goto out;
        if (st->n == st->cap) {
            size_t nc = st->cap ? st->cap * 2 : 16;
            struct vs_frag_shape **g = realloc(st->shapes, nc * sizeof(*g));
            if (!g) {
                err = VS_ERR_NOMEM;
                goto out;
            }
            st->shapes = g;
            st->cap = nc;
        }
        if (!st->blocks || st->block_used == SHAPE_BLOCK) {
            struct shape_block *b = calloc(1, sizeof(*b));
            if (!b) {
                err = VS_ERR_NOMEM;
                goto out;
            }
            b->next = st->blocks;
            st->blocks = b;
            st->block_used = 0;
        }
        struct vs_frag_shape *s = &st->blocks->s[st->block_used];
        if (!(s->use_raw = raw_dup(use)) || !(s->nouse_raw = raw_dup(nouse)) ||
            vs_annot_parse_list(use, &s->use) || vs_annot_parse_list(nouse, &s->nouse)) {
            shape_clear(s);
            memset(s, 0, sizeof(*s));
            err = VS_ERR_NOMEM;
            goto out;
        }
        s->r = *r;
        st->block_used++;
        st->shapes[st->n++] = s;
    }
    /* Keep the array sorted by count, most frequent first (earlier shapes win ties). */
    st->shapes[i]->count++;
    while (i > 0 && st->shapes[i - 1]->count < st->shapes[i]->count) {
        struct vs_frag_shape *t = st->shapes[i - 1];
        st->shapes[i - 1] = st->shapes[i];
        st->shapes[i] = t;
        i--;
    }
out:
    pthread_mutex_unlock(&st->mu);
    return err;
}

/* ------------------------------------------------------------------ context */

/* The shapes' signature and fitmask's layout of them (after the shapes are in place). */
static void ctx_finish(struct vs_frag_ctx *x)
{
    x->c100 = x->c0 = 0;
    for (size_t s = 0; s < x->k; s++) {
        const struct vs_frag_req *r = &x->s[s].r;
        int64_t f[6] = {r->nums, r->cores, r->mempct, r->memmib, r->cpu_milli, r->mem_bytes};
        uint64_t h = vs_fnv(VS_FNV_OFFSET, f, sizeof(f));
        h = vs_fnv_strlist(h, x->s[s].use);
        x->sh[s] = vs_fnv_strlist(h, x->s[s].nouse);
        x->f_cores[s] = r->cores > 100 ? 100 : r->cores;
        x->f_pct[s] = r->mempct >= 0 ? r->mempct : 0;
        x->f_mib[s] = r->mempct >= 0 ? 0 : r->memmib;
        if (x->f_cores[s] == 100)
            x->c100 |= 1u << s;
        if (x->f_cores[s] == 0)
            x->c0 |= 1u << s;
    }
    uint64_t h = vs_fnv(VS_FNV_OFFSET, &x->k, sizeof(x->k));
    h = vs_fnv(h, x->sh, x->k * sizeof(x->sh[0]));
    x->sig = h ? h : 1;
    for (size_t s = 0; s < VS_FRAG_K; s++)
        x->w2[s] = s < x->k ? (vs_frag_v2d){x->w[s], x->w[s]} : (vs_frag_v2d){0, 0};
}

void vs_frag_ctx_init(struct vs_frag_ctx *x, struct vs_frag_stats *st)
{
    memset(x, 0, sizeof(*x));
    if (!st)
        return;
    pthread_mutex_lock(&st->mu);
    double sum = 0;
    for (size_t i = 0; i < st->n && x->k < VS_FRAG_K; i++) {
        const struct vs_frag_shape *s = st->shapes[i];
        x->s[x->k].r = s->r;
        x->s[x->k].use = &s->use;
        x->s[x->k].nouse = &s->nouse;
        x->w[x->k] = (double)s->count;
        if (s->use.n || s->nouse.n)
            x->typed |= 1u << x->k;
        sum += (double)s->count;
        x->k++;
    }
    x->cpu_per_card = st->sum_cards > 0 ? st->sum_cpu / st->sum_cards : 0;
    pthread_mutex_unlock(&st->mu);
    for (size_t i = 0; i < x->k; i++)
        x->w[i] /= sum;
    ctx_finish(x);
}

void vs_frag_ctx_set(struct vs_frag_ctx *x, const struct vs_frag_req *rs, const double *weights,
                     size_t n)
{
    memset(x, 0, sizeof(*x));
    double sum = 0;
    for (size_t i = 0; i < n && i < VS_FRAG_K; i++)
        sum += weights[i];
    for (size_t i = 0; i < n && i < VS_FRAG_K; i++) {
        x->s[i].r = rs[i];
        x->w[i] = sum > 0 ? weights[i] / sum : 0;
        x->k++;
    }
    ctx_finish(x);
}

void vs_frag_ctx_weights(struct vs_frag_ctx *x, const double *weights)
{
    double sum = 0;
    for (size_t i = 0; i < x->k; i++)
        sum += weights[i];
    for (size_t i = 0; i < x->k; i++) {
        x->w[i] = sum > 0 ? weights[i] / sum : 0;
        x->w2[i] = (vs_frag_v2d){x->w[i], x->w[i]};
    }
}

/* Fit's type rule (spec §4.4 checkType): some use-gputype item is a substring of the card's
 * type (any case) and no nouse-gputype item is. */
static bool type_accepts(const struct vs_strlist *use, const struct vs_strlist *nouse,
                         const char *type)
{
    bool any_use = false;
    for (size_t i = 0; use && i < use->n && !any_use; i++)
        any_use = strcasestr(type, use->items[i]) != NULL;
    if (use && use->n && !any_use)
        return false;
    for (size_t i = 0; nouse && i < nouse->n; i++)
        if (strcasestr(type, nouse->items[i]))
            return false;
    return true;
}

bool vs_frag_stats_typed(struct vs_frag_stats *st)
{
    pthread_mutex_lock(&st->mu);
    bool r = st->n_groups > 0;
    pthread_mutex_unlock(&st->mu);
    return r;
}

/* The accept masks of st's groups over the n types (st->mu held): from the cache when the
 * types are the last call's; false when out of memory. */
static bool group_masks(struct vs_frag_stats *st, const char *const *types, size_t n)
{
    bool same = st->acc_n == n;
    for (size_t t = 0; t < n && same; t++)
        same = strcmp(st->acc_type[t], types[t]) == 0;
    if (!same) {
        for (size_t t = 0; t < st->acc_n; t++)
            free(st->acc_type[t]);
        st->acc_n = st->acc_groups = 0;
        for (size_t t = 0; t < n; t++) {
            if (!(st->acc_type[t] = strdup(types[t]))) {
                for (size_t u = 0; u < t; u++)
                    free(st->acc_type[u]);
                return false;
            }
        }
        st->acc_n = n;
    }
    for (; st->acc_groups < st->n_groups; st->acc_groups++) {
        const struct vs_frag_group *g = &st->groups[st->acc_groups];
        uint32_t m = 0;
        for (size_t t = 0; t < n; t++)
            if (type_accepts(&g->use, &g->nouse, types[t]))
                m |= 1u << t;
        st->acc[st->acc_groups] = m;
    }
    return true;
}

void vs_frag_type_pressure(struct vs_frag_stats *st, const char *const *types, const double *caps,
                           size_t n, double *out)
{
    double c = 0;
    for (size_t t = 0; t < n; t++) {
        out[t] = 0;
        c += caps[t];
    }
    if (n > VS_FRAG_MAX_TYPES)
        return;
    pthread_mutex_lock(&st->mu);
    double total = st->sum_cards;
    if (total > 0 && c > 0 && group_masks(st, types, n)) {
        for (size_t i = 0; i < st->n_groups; i++) {
            double ca = 0;
            for (size_t t = 0; t < n; t++)
                if (st->acc[i] >> t & 1u)
                    ca += caps[t];
            if (ca <= 0)
                continue;
            double p = c / total * st->groups[i].cards / ca;
            for (size_t t = 0; t < n; t++)
                if (st->acc[i] >> t & 1u)
                    out[t] += p;
        }
    }
    pthread_mutex_unlock(&st->mu);
    for (size_t t = 0; t < n; t++)
        out[t] = out[t] > 1 ? 1 : out[t];
}

uint32_t vs_frag_accept(struct vs_frag_ctx *x, const char *type)
{
    uint32_t all = x->k >= 32 ? ~0u : (1u << x->k) - 1;
    if (!x->typed)
        return all;
    type = type ? type : "";
    for (size_t i = 0; i < x->tc_n; i++)
        if (x->tc_type[i] == type || strcmp(x->tc_type[i], type) == 0)
            return x->tc_mask[i];
    uint32_t m = all & ~x->typed;
    for (size_t s = 0; s < x->k; s++)
        if ((x->typed >> s & 1u) && type_accepts(x->s[s].use, x->s[s].nouse, type))
            m |= 1u << s;
    if (x->tc_n < sizeof(x->tc_type) / sizeof(x->tc_type[0])) {
        x->tc_type[x->tc_n] = type;
        x->tc_mask[x->tc_n++] = m;
    }
    return m;
}

/* ------------------------------------------------------------------ the measure */

static int64_t mem_need(const struct vs_frag_card *c, const struct vs_frag_req *r)
{
    return r->mempct >= 0 ? (int64_t)c->devmem * r->mempct / 100 : r->memmib;
}

bool vs_frag_card_fits(const struct vs_frag_card *c, const struct vs_frag_req *r)
{
    int64_t cores = r->cores > 100 ? 100 : r->cores;
    if (!c->usable || c->count <= c->used)
        return false;
    if (c->devmem - c->usedmem < mem_need(c, r))
        return false;
    if (c->devcore - c->usedcores < cores)
        return false;
    if (c->devcore == 100 && cores == 100 && c->used > 0)
        return false;
    if (c->devcore != 0 && c->usedcores == c->devcore && cores == 0)
        return false;
    return true;
}

double vs_frag_idle(const struct vs_frag_card *c)
{
    if (!c->usable || c->devcore <= 0 || c->devmem <= 0)
        return 0;
    double fc = (double)(c->devcore - c->usedcores) / c->devcore;
    double fm = (double)(c->devmem - c->usedmem) / c->devmem;
    return 0.5 * ((fc > 0 ? fc : 0) + (fm > 0 ? fm : 0));
}

double vs_frag_req_idle(const struct vs_frag_req *r, int32_t devmem, int32_t devcore)
{
    if (devmem <= 0 || devcore <= 0)
        return 0;
    struct vs_frag_card c = {.devmem = devmem, .devcore = devcore};
    int64_t cores = r->cores > 100 ? 100 : r->cores;
    return 0.5 * ((double)cores / devcore + (double)mem_need(&c, r) / devmem);
}

double vs_frag_strand(const struct vs_frag_ctx *x, double idle, int64_t cpu_free)
{
    if (x->cpu_per_card <= 0 || cpu_free == INT64_MAX)
        return 0;
    double feed = (cpu_free > 0 ? (double)cpu_free : 0) / x->cpu_per_card;
    return idle > feed ? idle - feed : 0;
}

double vs_frag_strand_growth(const struct vs_frag_ctx *x, double idle, int64_t cpu_free,
                             double cards, int64_t cpu)
{
    if (x->cpu_per_card <= 0 || cpu_free == INT64_MAX)
        return 0;
    double d = vs_frag_strand(x, idle - cards, cpu_free - cpu) - vs_frag_strand(x, idle, cpu_free);
    return d > VS_FRAG_TIE ? VS_FRAG_STRAND_W * d : 0;
}

/* Which shapes one instance fits on card c (bit s): vs_frag_card_fits for every shape, with
 * the card's part worked out once and the percentage compared without a division
 * (floor(devmem * pct / 100) <= free  <=>  devmem * pct <= 100 * free + 99). A shape asking a
 * percentage has f_mib 0 and one asking MiB has f_pct 0, so both memory tests hold for each
 * (0 <= free and 0 <= 100 * free + 99 are the same condition on an integer). */
static uint32_t fitmask(const struct vs_frag_ctx *x, const struct vs_frag_card *c)
{
    if (!c->usable || c->count <= c->used)
        return 0;
    int64_t fm = c->devmem - c->usedmem, fc = c->devcore - c->usedcores;
    int64_t fm100 = 100 * fm + 99, dm = c->devmem;
    uint32_t m = 0;
    for (size_t s = 0; s < x->k; s++)
        m |= (uint32_t)((fc >= x->f_cores[s]) & (dm * x->f_pct[s] <= fm100) & (x->f_mib[s] <= fm))
             << s;
    m &= c->accept;
    if (c->devcore == 100 && c->used > 0)
        m &= ~x->c100;
    if (c->devcore != 0 && c->usedcores == c->devcore)
        m &= ~x->c0;
    return m;
}

/* fitmask(x, c) & within, looking only at the shapes in `within`. */
static uint32_t fitmask_in(const struct vs_frag_ctx *x, const struct vs_frag_card *c,
                           uint32_t within)
{
    within &= c->accept;
    if (!within || !c->usable || c->count <= c->used)
        return 0;
    int64_t fm = c->devmem - c->usedmem, fc = c->devcore - c->usedcores;
    int64_t fm100 = 100 * fm + 99, dm = c->devmem;
    if (c->devcore == 100 && c->used > 0)
        within &= ~x->c100;
    if (c->devcore != 0 && c->usedcores == c->devcore)
        within &= ~x->c0;
    uint32_t m = 0;
    for (uint32_t b = within; b; b &= b - 1) {
        int s = __builtin_ctz(b);
        if ((fc >= x->f_cores[s]) & (dm * x->f_pct[s] <= fm100) & (x->f_mib[s] <= fm))
            m |= 1u << s;
    }
    return m;
}

static bool same_state(const struct vs_frag_card *a, const struct vs_frag_card *b)
{
    return a->used == b->used && a->usedmem == b->usedmem && a->usedcores == b->usedcores &&
           a->devmem == b->devmem && a->devcore == b->devcore && a->count == b->count &&
           a->accept == b->accept && a->usable == b->usable;
}

/* Per-shape sums over a node's cards, so one card's change is re-scored in O(k): the idle
 * capacity of all cards, per shape the idle capacity of the cards that cannot host one
 * instance and the number that can, and the shape's term of the measure (v0: nonfit when the
 * node hosts the shape, else all). */
struct agg {
    double all;
    double nonfit[VS_FRAG_K];
    double v0[VS_FRAG_K];
    int nfit[VS_FRAG_K];
    uint32_t hosted; /* shapes the node hosts (bit s: v0[s] is nonfit[s]) */
    int64_t cpu_free, mem_free;
};

static bool hosts(const struct vs_frag_req *r, int nfit, int64_t cpu_free, int64_t mem_free)
{
    return nfit >= r->nums && cpu_free >= r->cpu_milli && mem_free >= r->mem_bytes;
}

/* Builds the sums; masks/idles receive each card's fit mask and idle capacity. Cards in the
 * same state as the card before them (idle cards, mostly) reuse its values. */
static void agg_build(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                      int64_t cpu_free, int64_t mem_free, struct agg *a, uint32_t *masks,
                      double *idles)
{
    memset(a, 0, sizeof(*a));
    a->cpu_free = cpu_free;
    a->mem_free = mem_free;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && same_state(&cards[i], &cards[i - 1])) {
            masks[i] = masks[i - 1];
            idles[i] = idles[i - 1];
        } else {
            masks[i] = fitmask(x, &cards[i]);
            idles[i] = vs_frag_idle(&cards[i]);
        }
        a->all += idles[i];
        for (size_t s = 0; s < x->k; s++) {
            if (masks[i] >> s & 1u)
                a->nfit[s]++;
            else
                a->nonfit[s] += idles[i];
        }
    }
    for (size_t s = 0; s < x->k; s++) {
        bool h = hosts(&x->s[s].r, a->nfit[s], cpu_free, mem_free);
        a->v0[s] = h ? a->nonfit[s] : a->all;
        a->hosted |= (uint32_t)h << s;
    }
}

static double agg_value(const struct vs_frag_ctx *x, const struct agg *a)
{
    double f = 0;
    for (size_t s = 0; s < x->k; s++)
        f += x->w[s] * a->v0[s];
    return f;
}

double vs_frag_node(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                    int64_t cpu_free, int64_t mem_free)
{
    if (n > VS_FRAG_MAX_CARDS)
        return 0;
    struct agg a;
    uint32_t masks[VS_FRAG_MAX_CARDS];
    double idles[VS_FRAG_MAX_CARDS];
    agg_build(x, cards, n, cpu_free, mem_free, &a, masks, idles);
    return agg_value(x, &a);
}

/* Card c after one instance of r. */
static struct vs_frag_card card_plus(const struct vs_frag_card *c, const struct vs_frag_req *r)
{
    struct vs_frag_card d = *c;
    d.used += 1;
    d.usedmem += mem_need(c, r);
    d.usedcores += r->cores > 100 ? 100 : r->cores;
    return d;
}

/* The shapes whose cpu and memory a node with cpu/mem left would still have (bit s). */
static uint32_t cpu_mem_mask(const struct vs_frag_ctx *x, int64_t cpu, int64_t mem)
{
    uint32_t m = 0;
    for (size_t s = 0; s < x->k; s++)
        m |= (uint32_t)(cpu >= x->s[s].r.cpu_milli && mem >= x->s[s].r.mem_bytes) << s;
    return m;
}

/* Growth of the fragmentation when a card goes from (m0, u0) to (m1, u1) (fit mask, idle
 * capacity) and the node's free cpu/memory become cpu1/mem1, which leave the node the cpu and
 * memory of the shapes in cm1 (cpu_mem_mask); with `apply` the sums follow. A shape the card
 * fits before and after, on a node that hosts it before and after, keeps its term exactly
 * (nonfit - 0 + 0): it adds 0 and is skipped. */
static double agg_change(const struct vs_frag_ctx *x, const struct agg *a, uint32_t m0, double u0,
                         uint32_t m1, double u1, uint32_t cm1, int64_t cpu1, int64_t mem1,
                         struct agg *out, uint32_t *todo_out, double *delta_out)
{
    bool apply = out != NULL;
    uint32_t all_k = x->k >= 32 ? ~0u : (1u << x->k) - 1;
    uint32_t todo = all_k & ~(m0 & m1 & a->hosted & cm1);
    if (todo_out)
        *todo_out = todo;
    double all1 = a->all - u0 + u1, d = 0;
    uint32_t hosted1 = a->hosted & ~todo;
    for (uint32_t b = todo; b; b &= b - 1) {
        int s = __builtin_ctz(b);
        int f0 = (int)(m0 >> s & 1u), f1 = (int)(m1 >> s & 1u);
        int nfit1 = a->nfit[s] - f0 + f1;
        double nonfit1 = a->nonfit[s] - (f0 ? 0 : u0) + (f1 ? 0 : u1);
        bool h1 = (cm1 >> s & 1u) && nfit1 >= x->s[s].r.nums;
        double v1 = h1 ? nonfit1 : all1;
        double delta = v1 - a->v0[s];
        d += x->w[s] * delta;
        if (delta_out)
            delta_out[s] = delta;
        if (apply) {
            out->nfit[s] = nfit1;
            out->nonfit[s] = nonfit1;
            out->v0[s] = v1;
            hosted1 |= (uint32_t)h1 << s;
        }
    }
    if (apply) {
        out->hosted = hosted1;
        out->all = all1;
        out->cpu_free = cpu1;
        out->mem_free = mem1;
    }
    return d;
}

static int64_t sub_sat(int64_t free, int64_t take)
{
    return free == INT64_MAX ? free : free - take;
}

double vs_frag_delta_card(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                          int64_t cpu_free, int64_t mem_free, const struct vs_frag_req *r, size_t i)
{
    if (n > VS_FRAG_MAX_CARDS || i >= n)
        return 0;
    struct agg a;
    uint32_t masks[VS_FRAG_MAX_CARDS];
    double idles[VS_FRAG_MAX_CARDS];
    agg_build(x, cards, n, cpu_free, mem_free, &a, masks, idles);
    struct vs_frag_card to = card_plus(&cards[i], r);
    int64_t cpu1 = sub_sat(cpu_free, r->cpu_milli), mem1 = sub_sat(mem_free, r->mem_bytes);
    return agg_change(x, &a, masks[i], idles[i], fitmask(x, &to), vs_frag_idle(&to),
                      cpu_mem_mask(x, cpu1, mem1), cpu1, mem1, NULL, NULL, NULL);
}

void vs_frag_delta_cards(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                         int64_t cpu_free, int64_t mem_free, const struct vs_frag_req *r,
                         double *out)
{
    if (n > VS_FRAG_MAX_CARDS)
        return;
    struct agg a;
    uint32_t masks[VS_FRAG_MAX_CARDS];
    double idles[VS_FRAG_MAX_CARDS];
    agg_build(x, cards, n, cpu_free, mem_free, &a, masks, idles);
    int64_t cpu1 = sub_sat(cpu_free, r->cpu_milli), mem1 = sub_sat(mem_free, r->mem_bytes);
    uint32_t cm1 = cpu_mem_mask(x, cpu1, mem1);
    for (size_t i = 0; i < n; i++) {
        if (!vs_frag_card_fits(&cards[i], r)) {
            out[i] = HUGE_VAL;
            continue;
        }
        struct vs_frag_card to = card_plus(&cards[i], r);
        out[i] = agg_change(x, &a, masks[i], idles[i], fitmask(x, &to), vs_frag_idle(&to), cm1,
                            cpu1, mem1, NULL, NULL, NULL);
    }
}

/* vs_frag_delta_cpu on sums already built: the shapes hosted before and not after. */
static double cpu_change(const struct vs_frag_ctx *x, const struct agg *a, int64_t cpu, int64_t mem,
                         double *idle)
{
    if (idle)
        *idle = a->all;
    uint32_t lost =
        a->hosted & ~cpu_mem_mask(x, sub_sat(a->cpu_free, cpu), sub_sat(a->mem_free, mem));
    double d = 0;
    for (uint32_t b = lost; b; b &= b - 1) {
        int s = __builtin_ctz(b);
        d += x->w[s] * (a->all - a->nonfit[s]);
    }
    return d;
}

double vs_frag_delta_cpu(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                         int64_t cpu_free, int64_t mem_free, int64_t cpu, int64_t mem, double *idle)
{
    if (idle)
        *idle = 0;
    if (n > VS_FRAG_MAX_CARDS)
        return 0;
    struct agg a;
    uint32_t masks[VS_FRAG_MAX_CARDS];
    double idles[VS_FRAG_MAX_CARDS];
    agg_build(x, cards, n, cpu_free, mem_free, &a, masks, idles);
    return cpu_change(x, &a, cpu, mem, idle);
}

/* Whether card_plus(c, r) can only lose shapes c fits (then its fitmask lies within c's): r
 * takes no negative amount (and the card's memory is not negative). */
static bool plus_shrinks(const struct vs_frag_req *r)
{
    return r->cores >= 0 && r->memmib >= 0 && r->mempct >= -1;
}

/* What a one-card pick tried, for replaying it under other weights: per card state tried (in
 * order), the card, the shapes whose term changed and each such term's change (v1 - v0). The
 * growth under weights w is then the same sum, term by term in the same order, bit for bit. */
struct pick_rec {
    size_t n_tried;
    uint32_t *idx, *todo; /* n_tried of them */
    double *delta;        /* VS_FRAG_K per tried state */
};

/* vs_frag_pick on sums already built (a, masks, idles: read only; a request for more than one
 * card works on copies). With rec (one-card requests only) the tried states are recorded. */
static double pick(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                   const struct agg *a, const uint32_t *masks, const double *idles,
                   const struct vs_frag_req *r, uint64_t ok, size_t *picks, struct pick_rec *rec)
{
    if (r->nums != 1)
        rec = NULL;
    struct vs_frag_card view[VS_FRAG_MAX_CARDS];
    uint32_t vmasks[VS_FRAG_MAX_CARDS];
    double vidles[VS_FRAG_MAX_CARDS];
    struct agg va;
    if (r->nums > 1) {
        memcpy(view, cards, n * sizeof(*view));
        memcpy(vmasks, masks, n * sizeof(*vmasks));
        memcpy(vidles, idles, n * sizeof(*vidles));
        va = *a;
        cards = view;
        masks = vmasks;
        idles = vidles;
        a = &va;
    }
    bool shrinks = plus_shrinks(r);
    uint64_t taken = 0;
    double total = 0;
    for (int32_t k = 0; k < r->nums; k++) {
        /* The node's cpu and memory go with the first card (same for every choice). */
        int64_t cpu1 = k == 0 ? sub_sat(a->cpu_free, r->cpu_milli) : a->cpu_free;
        int64_t mem1 = k == 0 ? sub_sat(a->mem_free, r->mem_bytes) : a->mem_free;
        uint32_t cm1 = cpu_mem_mask(x, cpu1, mem1);
        long best = -1;
        double bd = 0, bidle = 0, bu1 = 0;
        uint32_t bmask = 0;
        /* Cards in the same state give the same growth: each state is tried once (the lowest
         * index keeps it, as the tie-break would). */
        size_t tried[VS_FRAG_MAX_CARDS], n_tried = 0;
        for (size_t i = 0; i < n; i++) {
            if (!(ok >> i & 1u) || (taken >> i & 1u) || !vs_frag_card_fits(&cards[i], r))
                continue;
            bool seen = false;
            for (size_t t = 0; t < n_tried && !seen; t++)
                seen = same_state(&cards[tried[t]], &cards[i]);
            if (seen)
                continue;
            tried[n_tried++] = i;
            if (rec)
                rec->idx[n_tried - 1] = (uint32_t)i;
            struct vs_frag_card to = card_plus(&cards[i], r);
            uint32_t m1 =
                shrinks && cards[i].devmem >= 0 ? fitmask_in(x, &to, masks[i]) : fitmask(x, &to);
            double u1 = vs_frag_idle(&to);
            double d = agg_change(x, a, masks[i], idles[i], m1, u1, cm1, cpu1, mem1, NULL,
                                  rec ? &rec->todo[n_tried - 1] : NULL,
                                  rec ? &rec->delta[(n_tried - 1) * VS_FRAG_K] : NULL);
            if (best < 0 || d < bd - VS_FRAG_TIE ||
                (d <= bd + VS_FRAG_TIE && idles[i] < bidle - VS_FRAG_TIE)) {
                best = (long)i;
                bd = d;
                bidle = idles[i];
                bmask = m1;
                bu1 = u1;
            }
        }
        if (rec)
            rec->n_tried = n_tried;
        if (best < 0)
            return NAN;
        picks[k] = (size_t)best;
        total += bd;
        if (k + 1 == r->nums)
            break;
        agg_change(x, a, masks[best], idles[best], bmask, bu1, cm1, cpu1, mem1, &va, NULL, NULL);
        view[best] = card_plus(&view[best], r);
        vmasks[best] = bmask;
        vidles[best] = bu1;
        taken |= 1ull << best;
    }
    return total;
}

double vs_frag_pick(const struct vs_frag_ctx *x, const struct vs_frag_card *cards, size_t n,
                    int64_t cpu_free, int64_t mem_free, const struct vs_frag_req *r, uint64_t ok,
                    size_t *picks)
{
    if (n > VS_FRAG_MAX_CARDS)
        return NAN;
    uint32_t masks[VS_FRAG_MAX_CARDS];
    double idles[VS_FRAG_MAX_CARDS];
    struct agg a;
    agg_build(x, cards, n, cpu_free, mem_free, &a, masks, idles);
    return pick(x, cards, n, &a, masks, idles, r, ok, picks, NULL);
}

/* ------------------------------------------------------------------ memo */

/* What vs_frag_memo_prefetch asks for: the header, the states of 8 cards and the terms of 6
 * of them. */
#define VS_FRAG_PREFETCH_BYTES 1024

/* One card state a recorded pick tried: the card and its idle capacity (the pick's
 * tie-break). */
struct rec_state {
    double idle;
    uint32_t idx;
};

/* Two recorded states' term changes for one shape, side by side: a replay sums two states'
 * growths at once (each lane the same additions in the same order as pick()'s scalar sum). */
typedef vs_frag_v2d v2d;

/* A memo is one block laid out for the replay, which is what almost every Filter of a node
 * does: this header, then the recorded states and their terms (read in order, so a replay
 * reads a few consecutive cache lines), then what only a rebuild or a full pick reads (the
 * sums, each card's idle capacity and fit mask). */
struct vs_frag_memo {
    _Alignas(16) atomic_flag busy; /* (the block's parts after it stay 16-byte aligned) */
    /* The last one-card pick on the sums, valid for a request with the same card part, the
     * same cpu/memory mask after it and the same cards allowed: under new weights only the
     * weighted sums are redone. */
    bool rec_valid;
    int32_t rec_cores, rec_mempct, rec_memmib;
    uint32_t rec_cm1, rec_n_tried;
    /* The recorded terms are rows of VS_FRAG_K v2d, one row per two states, a state's terms
     * in shape order and 0 where its term did not change or past the shapes (adding 0 leaves
     * a sum as it is). */
    uint64_t rec_ok, rec_req_sig;
    int64_t rec_cpu, rec_mem;   /* the request's node cpu and memory (then cm1 is rec_cm1) */
    uint64_t gen, sig;          /* what the sums are for; sig 0: nothing yet */
    int64_t cpu_free, mem_free; /* the node's, as in the sums */
    uint32_t n, cap;            /* cards in the sums, room for them */
    uint32_t k;                 /* shapes in the sums (memo_sh: which) */
};

/* The parts of the block (cap cards). */
static struct rec_state *memo_states(const struct vs_frag_memo *m)
{
    return (struct rec_state *)(m + 1);
}

/* Rows of the recorded terms: room for (cap + 1) / 2 rows of VS_FRAG_K. */
static v2d *memo_terms(const struct vs_frag_memo *m)
{
    return (v2d *)(memo_states(m) + m->cap);
}

static size_t terms_cap(size_t cap)
{
    return (cap + 1) / 2 * VS_FRAG_K;
}

static struct agg *memo_agg(const struct vs_frag_memo *m)
{
    return (struct agg *)(memo_terms(m) + terms_cap(m->cap));
}

/* The shapes of the sums, in their order (vs_frag_ctx.sh). */
static uint64_t *memo_sh(const struct vs_frag_memo *m)
{
    return (uint64_t *)(memo_agg(m) + 1);
}

static double *memo_idles(const struct vs_frag_memo *m)
{
    return (double *)(memo_sh(m) + VS_FRAG_K);
}

static uint32_t *memo_masks(const struct vs_frag_memo *m)
{
    return (uint32_t *)(memo_idles(m) + m->cap);
}

static size_t memo_size(size_t cap)
{
    return sizeof(struct vs_frag_memo) + cap * sizeof(struct rec_state) +
           terms_cap(cap) * sizeof(v2d) + sizeof(struct agg) + VS_FRAG_K * sizeof(uint64_t) +
           cap * (sizeof(double) + sizeof(uint32_t));
}

static struct vs_frag_memo *memo_get(struct vs_frag_memo *_Atomic *slot, size_t n)
{
    struct vs_frag_memo *m = atomic_load_explicit(slot, memory_order_acquire);
    if (m)
        return m->cap >= n ? m : NULL; /* a node that grew cards goes without */
    size_t cap = n < 8 ? 8 : n;
    m = aligned_alloc(16, (memo_size(cap) + 15) / 16 * 16); /* the rows are v2d */
    if (!m)
        return NULL; /* the sums are computed without it */
    atomic_flag_clear(&m->busy);
    m->gen = m->sig = 0;
    m->n = m->k = 0;
    m->cap = (uint32_t)cap;
    m->rec_valid = false;
    struct vs_frag_memo *expect = NULL;
    if (!atomic_compare_exchange_strong_explicit(slot, &expect, m, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free(m);
        return expect->cap >= n ? expect : NULL;
    }
    return m;
}

/* Where each of x's shapes is in a memo's sums: at[s], its index there (-1: not there); the
 * shapes that keep their index (kept), that have another (moved), that are not there (fresh). */
struct shape_map {
    int8_t at[VS_FRAG_K];
    uint32_t kept, moved, fresh;
};

static void memo_map(const struct vs_frag_ctx *x, const struct vs_frag_memo *m,
                     struct shape_map *mp)
{
    const uint64_t *sh = memo_sh(m);
    mp->kept = mp->moved = mp->fresh = 0;
    for (size_t s = 0; s < x->k; s++) {
        mp->at[s] = -1;
        if (s < m->k && sh[s] == x->sh[s]) { /* most shapes keep their place */
            mp->at[s] = (int8_t)s;
            mp->kept |= 1u << s;
            continue;
        }
        for (uint32_t o = 0; o < m->k && mp->at[s] < 0; o++)
            if (sh[o] == x->sh[s])
                mp->at[s] = (int8_t)o;
        if (mp->at[s] >= 0)
            mp->moved |= 1u << s;
        else
            mp->fresh |= 1u << s;
    }
}

/* A mask of the memo's shapes as one of x's (fresh shapes' bits 0). Equal shapes may share a
 * memo index, so this goes by x's shapes. */
static uint32_t remap_bits(uint32_t old, const struct shape_map *mp)
{
    uint32_t m = old & mp->kept;
    for (uint32_t b = mp->moved; b; b &= b - 1) {
        int s = __builtin_ctz(b);
        m |= (old >> mp->at[s] & 1u) << s;
    }
    return m;
}

/* The memo's sums, made for other shapes on the same node state, carried over to x's: every
 * per-shape value depends on its shape alone, so a shape both have keeps its values (moved to
 * its index in x) and the recorded pick keeps its terms (in x's order, which is the order a
 * pick under x sums them in). Shapes new to the memo (fresh) get their values from the cards
 * as agg_build computes them (the same operations in the same card order); the recorded pick
 * is then dropped. cards may be NULL only when no shape is fresh. The caller holds m->busy. */
static void memo_remap(const struct vs_frag_ctx *x, struct vs_frag_memo *m,
                       const struct shape_map *mp, const struct vs_frag_card *cards)
{
    struct agg *a = memo_agg(m), o = *a;
    uint32_t *masks = memo_masks(m);
    const double *idles = memo_idles(m);
    for (uint32_t b = mp->moved; b; b &= b - 1) {
        int s = __builtin_ctz(b);
        a->nfit[s] = o.nfit[mp->at[s]];
        a->nonfit[s] = o.nonfit[mp->at[s]];
        a->v0[s] = o.v0[mp->at[s]];
    }
    a->hosted = remap_bits(o.hosted, mp);
    for (uint32_t i = 0; i < m->n; i++)
        masks[i] = remap_bits(masks[i], mp);
    if (mp->fresh) {
        for (uint32_t i = 0; i < m->n; i++)
            masks[i] |= fitmask_in(x, &cards[i], mp->fresh);
        for (uint32_t b = mp->fresh; b; b &= b - 1) {
            int s = __builtin_ctz(b);
            a->nfit[s] = 0;
            a->nonfit[s] = 0;
            for (uint32_t i = 0; i < m->n; i++) {
                if (masks[i] >> s & 1u)
                    a->nfit[s]++;
                else
                    a->nonfit[s] += idles[i];
            }
            bool h = hosts(&x->s[s].r, a->nfit[s], a->cpu_free, a->mem_free);
            a->v0[s] = h ? a->nonfit[s] : a->all;
            a->hosted |= (uint32_t)h << s;
        }
        m->rec_valid = false;
    } else if (m->rec_valid) {
        /* Each row's columns in x's order; the shapes left out go, 0 past x's. */
        v2d *row = memo_terms(m), old[VS_FRAG_K];
        for (uint32_t p = 0; p < (m->rec_n_tried + 1) / 2; p++, row += VS_FRAG_K) {
            memcpy(old, row, sizeof(old));
            for (uint32_t b = mp->moved; b; b &= b - 1) {
                int s = __builtin_ctz(b);
                row[s] = old[mp->at[s]];
            }
            for (size_t s = x->k; s < m->k; s++)
                row[s] = (v2d){0, 0};
        }
        m->rec_cm1 = remap_bits(m->rec_cm1, mp);
    }
    memcpy(memo_sh(m), x->sh, x->k * sizeof(x->sh[0]));
    m->k = (uint32_t)x->k;
    m->sig = x->sig;
}

/* The memo's sums made current for (gen, x's shapes, n cards): carried over from other shapes
 * on the same node state, else rebuilt (the recorded pick goes with them). The caller holds
 * m->busy. */
static void memo_sums(const struct vs_frag_ctx *x, struct vs_frag_memo *m, uint64_t gen,
                      const struct vs_frag_card *cards, size_t n, int64_t cpu_free,
                      int64_t mem_free)
{
    if (m->sig == x->sig && m->gen == gen && m->n == n)
        return;
    if (m->sig && m->gen == gen && m->n == n) {
        struct shape_map mp;
        memo_map(x, m, &mp);
        memo_remap(x, m, &mp, cards);
        return;
    }
    agg_build(x, cards, n, cpu_free, mem_free, memo_agg(m), memo_masks(m), memo_idles(m));
    m->gen = gen;
    m->sig = x->sig;
    memcpy(memo_sh(m), x->sh, x->k * sizeof(x->sh[0]));
    m->k = (uint32_t)x->k;
    m->n = (uint32_t)n;
    m->cpu_free = cpu_free;
    m->mem_free = mem_free;
    m->rec_valid = false;
}

/* The recorded pick under x's weights: pick()'s loop over the same states with each growth
 * summed from the recorded term changes in the same order (so bit for bit the same values;
 * the zeros between them add nothing), two states at a time. */
static double replay(const struct vs_frag_ctx *x, const struct vs_frag_memo *m, size_t *picks)
{
    long best = -1;
    double bd = 0, bidle = 0;
    const struct rec_state *st = memo_states(m);
    const v2d *row = memo_terms(m);
    for (uint32_t t = 0; t < m->rec_n_tried; t += 2, row += VS_FRAG_K) {
        v2d acc = {0, 0};
#pragma GCC unroll 32
        for (size_t j = 0; j < VS_FRAG_K; j++)
            acc += x->w2[j] * row[j];
        for (uint32_t u = t; u < t + 2 && u < m->rec_n_tried; u++) {
            double d = acc[u - t];
            if (best < 0 || d < bd - VS_FRAG_TIE ||
                (d <= bd + VS_FRAG_TIE && st[u].idle < bidle - VS_FRAG_TIE)) {
                best = (long)st[u].idx;
                bd = d;
                bidle = st[u].idle;
            }
        }
    }
    if (best < 0)
        return NAN;
    picks[0] = (size_t)best;
    double total = 0;
    return total + bd;
}

/* The shapes whose cpu and memory the node still has after r's (cm1 of pick()). */
static uint32_t memo_cm1(const struct vs_frag_ctx *x, const struct vs_frag_memo *m,
                         const struct vs_frag_req *r)
{
    return cpu_mem_mask(x, sub_sat(m->cpu_free, r->cpu_milli), sub_sat(m->mem_free, r->mem_bytes));
}

/* Whether the recorded pick serves r (sums current for x, gen and n): the same card part and
 * the same shapes left with the node's cpu and memory (the same request's cpu and memory
 * leave the same, without working it out). */
static bool rec_serves(const struct vs_frag_ctx *x, const struct vs_frag_memo *m,
                       const struct vs_frag_req *r)
{
    return m->rec_valid && m->rec_cores == r->cores && m->rec_mempct == r->mempct &&
           m->rec_memmib == r->memmib &&
           ((m->rec_cpu == r->cpu_milli && m->rec_mem == r->mem_bytes) ||
            m->rec_cm1 == memo_cm1(x, m, r));
}

double vs_frag_pick_memo(const struct vs_frag_ctx *x, struct vs_frag_memo *_Atomic *slot,
                         uint64_t gen, const struct vs_frag_card *cards, size_t n, int64_t cpu_free,
                         int64_t mem_free, const struct vs_frag_req *r, uint64_t ok,
                         uint64_t req_sig, size_t *picks)
{
    if (n > VS_FRAG_MAX_CARDS)
        return NAN;
    struct vs_frag_memo *m = memo_get(slot, n);
    if (!m || atomic_flag_test_and_set_explicit(&m->busy, memory_order_acquire))
        return vs_frag_pick(x, cards, n, cpu_free, mem_free, r, ok, picks);
    memo_sums(x, m, gen, cards, n, cpu_free, mem_free);
    double d;
    if (r->nums == 1 && rec_serves(x, m, r) && m->rec_ok == ok) {
        d = replay(x, m, picks);
    } else if (r->nums == 1) {
        uint32_t idx[VS_FRAG_MAX_CARDS], todo[VS_FRAG_MAX_CARDS];
        double delta[VS_FRAG_MAX_CARDS * VS_FRAG_K];
        struct pick_rec rec = {.idx = idx, .todo = todo, .delta = delta};
        const double *idles = memo_idles(m);
        d = pick(x, cards, n, memo_agg(m), memo_masks(m), idles, r, ok, picks, &rec);
        m->rec_valid = rec.n_tried <= m->cap;
        if (m->rec_valid) {
            struct rec_state *st = memo_states(m);
            v2d *rows = memo_terms(m);
            memset(rows, 0, (rec.n_tried + 1) / 2 * VS_FRAG_K * sizeof(*rows));
            for (size_t t = 0; t < rec.n_tried; t++)
                for (uint32_t b = todo[t]; b; b &= b - 1) {
                    int sh = __builtin_ctz(b);
                    rows[t / 2 * VS_FRAG_K + (size_t)sh][t % 2] = delta[t * VS_FRAG_K + (size_t)sh];
                }
            for (size_t t = 0; t < rec.n_tried; t++) {
                st[t].idx = idx[t];
                st[t].idle = idles[idx[t]];
            }
            m->rec_n_tried = (uint32_t)rec.n_tried;
            m->rec_cores = r->cores;
            m->rec_mempct = r->mempct;
            m->rec_memmib = r->memmib;
            m->rec_cpu = r->cpu_milli;
            m->rec_mem = r->mem_bytes;
            m->rec_cm1 = memo_cm1(x, m, r);
            m->rec_ok = ok;
            m->rec_req_sig = req_sig;
        }
    } else {
        d = pick(x, cards, n, memo_agg(m), memo_masks(m), memo_idles(m), r, ok, picks, NULL);
    }
    atomic_flag_clear_explicit(&m->busy, memory_order_release);
    return d;
}

double vs_frag_delta_cpu_memo(const struct vs_frag_ctx *x, struct vs_frag_memo *_Atomic *slot,
                              uint64_t gen, const struct vs_frag_card *cards, size_t n,
                              int64_t cpu_free, int64_t mem_free, int64_t cpu, int64_t mem,
                              double *idle)
{
    if (idle)
        *idle = 0;
    if (n > VS_FRAG_MAX_CARDS)
        return 0;
    struct vs_frag_memo *m = memo_get(slot, n);
    if (!m || atomic_flag_test_and_set_explicit(&m->busy, memory_order_acquire))
        return vs_frag_delta_cpu(x, cards, n, cpu_free, mem_free, cpu, mem, idle);
    memo_sums(x, m, gen, cards, n, cpu_free, mem_free);
    double d = cpu_change(x, memo_agg(m), cpu, mem, idle);
    atomic_flag_clear_explicit(&m->busy, memory_order_release);
    return d;
}

bool vs_frag_memo_replay(const struct vs_frag_ctx *x, struct vs_frag_memo *_Atomic *slot,
                         uint64_t gen, size_t n, const struct vs_frag_req *r, uint64_t req_sig,
                         double *d, size_t *picks)
{
    struct vs_frag_memo *m = atomic_load_explicit(slot, memory_order_acquire);
    if (!m || r->nums != 1 || atomic_flag_test_and_set_explicit(&m->busy, memory_order_acquire))
        return false;
    bool hit = false;
    if (m->rec_valid && m->gen == gen && m->n == n && m->rec_req_sig == req_sig) {
        /* Other shapes, all of them among the memo's (the top shapes changed order, or one
         * left): carried over, the recorded pick with them. */
        if (m->sig != x->sig) {
            struct shape_map mp;
            memo_map(x, m, &mp);
            if (!mp.fresh)
                memo_remap(x, m, &mp, NULL);
        }
        hit = m->sig == x->sig && rec_serves(x, m, r);
    }
    if (hit)
        *d = replay(x, m, picks);
    atomic_flag_clear_explicit(&m->busy, memory_order_release);
    return hit;
}

void vs_frag_memo_prefetch(struct vs_frag_memo *_Atomic *slot)
{
    const char *m = (const char *)atomic_load_explicit(slot, memory_order_relaxed);
    if (!m)
        return;
        /* The header, the states of a node of 8 cards and the first terms. */
#pragma GCC unroll 32
    for (size_t off = 0; off < VS_FRAG_PREFETCH_BYTES; off += 64)
        __builtin_prefetch(m + off);
}
