/* dash_snap: copying the model into flat arrays (under the read lock) and the figures derived
 * from the copy (outside it). Strings live in an arena of fixed chunks, so pointers stay valid
 * while the copy grows; card types and modes, one string per type in the model, are copied
 * once per snapshot. */
#include "dash_snap.h"

#include "annot.h"
#include "buf.h"
#include "sorted.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CHUNK (64u << 10)

struct chunk {
    struct chunk *next;
    size_t used, cap;
    char data[];
};

struct vs_dash_arena {
    struct chunk *head;
    /* the model's type and mode strings (one copy each there) and their copies here */
    const char *from[32];
    const char *to[32];
    size_t n_map;
};

static const char *arena_dup(struct vs_dash_arena *a, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    struct chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK ? n : CHUNK;
        c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    char *d = c->data + c->used;
    memcpy(d, s, n);
    c->used += n;
    return d;
}

/* A string the model keeps one copy of (card type, mode): copied once per snapshot. */
static const char *arena_intern(struct vs_dash_arena *a, const char *s)
{
    if (!s)
        return NULL;
    for (size_t i = 0; i < a->n_map; i++)
        if (a->from[i] == s)
            return a->to[i];
    const char *d = arena_dup(a, s);
    if (d && a->n_map < sizeof(a->from) / sizeof(a->from[0])) {
        a->from[a->n_map] = s;
        a->to[a->n_map++] = d;
    }
    return d;
}

struct vs_dash_arena *vs_dash_arena_new(void)
{
    return calloc(1, sizeof(struct vs_dash_arena));
}

const char *vs_dash_arena_dup(struct vs_dash_arena *a, const char *s)
{
    return arena_dup(a, s ? s : "");
}

void vs_dash_arena_free(struct vs_dash_arena *a)
{
    if (!a)
        return;
    for (struct chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

const char *vs_dash_state_name(enum vs_dash_state s)
{
    switch (s) {
    case VS_DASH_BOUND:
        return "bound";
    case VS_DASH_PLACED:
        return "placed";
    case VS_DASH_RESERVED:
        return "reserved";
    case VS_DASH_EXPIRED:
        return "expired";
    case VS_DASH_TERMINATING:
        return "terminating";
    case VS_DASH_MALFORMED:
        return "malformed";
    }
    return "unknown";
}

void vs_dash_snap_free(struct vs_dash_snap *s)
{
    if (!s)
        return;
    vs_dash_arena_free(s->arena);
    free(s->nodes);
    free(s->cards);
    free(s->shares);
    free(s->pods);
    free(s->nss);
    free(s);
}

static struct vs_dash_snap *snap_new(uint64_t version, int64_t now)
{
    struct vs_dash_snap *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    if (!(s->arena = calloc(1, sizeof(*s->arena)))) {
        free(s);
        return NULL;
    }
    s->version = version;
    s->taken_at = now;
    return s;
}

/* The one place a model card is read: today every card is NVIDIA's (vs_card.type is the model
 * string); a vendor field in the model is read here when it comes. */
static bool card_view(struct vs_dash_arena *a, const struct vs_devices *set,
                      const struct vs_card *c, struct vs_dash_card *out)
{
    memset(out, 0, sizeof(*out));
    out->uuid = arena_dup(a, c->uuid ? c->uuid : "");
    out->type = arena_intern(a, c->type ? c->type : "");
    out->mode = c->mode && *c->mode ? arena_intern(a, c->mode) : NULL;
    /* The backend's word (the set outlives every snapshot: it is the service's configuration). */
    out->vendor = c->dev < set->n ? set->dev[c->dev]->word : "";
    out->index = c->index;
    out->numa = c->numa;
    out->count = c->count;
    out->devmem = c->devmem;
    out->devcore = c->devcore;
    out->health = c->health;
    out->cordoned = c->cordoned;
    out->is_mig = c->is_mig;
    out->mig_unhealthy = c->mig_unhealthy;
    out->used = c->used;
    out->usedmem = c->usedmem;
    out->usedcores = c->usedcores;
    return out->uuid && out->type && (!c->mode || !*c->mode || out->mode);
}

static enum vs_dash_state state_of(const struct vs_podent *pe)
{
    if (pe->malformed)
        return VS_DASH_MALFORMED;
    if (pe->terminating)
        return VS_DASH_TERMINATING;
    if (pe->expired)
        return VS_DASH_EXPIRED;
    if (pe->reservation)
        return VS_DASH_RESERVED;
    return pe->bound ? VS_DASH_BOUND : VS_DASH_PLACED;
}

static long add_pod(struct vs_dash_snap *s, const struct vs_podent *pe, uint32_t node)
{
    if (!vs_grow_one((void **)&s->pods, s->n_pods, &s->cap_pods, sizeof(*s->pods)))
        return -1;
    struct vs_dash_pod *d = &s->pods[s->n_pods];
    d->ns = arena_dup(s->arena, pe->ns ? pe->ns : "");
    d->name = arena_dup(s->arena, pe->name ? pe->name : "");
    d->uid = arena_dup(s->arena, pe->uid ? pe->uid : "");
    d->node_name = arena_dup(s->arena, pe->node ? pe->node : "");
    d->node = node;
    d->state = state_of(pe);
    d->priority = pe->priority;
    d->filtered_at = pe->filtered_at;
    if (!d->ns || !d->name || !d->uid || !d->node_name)
        return -1;
    return (long)s->n_pods++;
}

struct copy_ctx {
    struct vs_dash_snap *s;
    const struct vs_devices *set;
    const struct vs_device *nv; /* the quota view's backend: NVIDIA (gpumem, gpucores) */
    const struct vs_dash_copy_opts *o;
    bool detail;
    enum vs_dash_cards cards; /* DETAIL resolved: ALL with detail, else DETAIL (none) */
    bool oom;
};

/* Each pod's share of each of the node's cards, pods in the node's list order. */
static bool copy_shares(struct vs_dash_snap *s, const struct vs_node *n, uint32_t ni)
{
    size_t first_pod = s->n_pods;
    for (const struct vs_podent *pe = n->pods; pe; pe = pe->next)
        if (add_pod(s, pe, ni) < 0)
            return false;
    struct vs_dash_card *cards = &s->cards[s->nodes[ni].first_card];
    for (size_t c = 0; c < n->n_cards; c++) {
        cards[c].first_share = (uint32_t)s->n_shares;
        size_t k = first_pod;
        for (const struct vs_podent *pe = n->pods; pe; pe = pe->next, k++) {
            for (size_t u = 0; u < pe->n_usage; u++) {
                if (strcmp(pe->usage[u].uuid, n->cards[c].uuid) != 0)
                    continue;
                if (!vs_grow_one((void **)&s->shares, s->n_shares, &s->cap_shares,
                                 sizeof(*s->shares)))
                    return false;
                s->shares[s->n_shares++] = (struct vs_dash_share){
                    (uint32_t)k, pe->usage[u].mem, pe->usage[u].cores, pe->usage[u].slots};
            }
        }
        cards[c].n_shares = (uint32_t)(s->n_shares - cards[c].first_share);
    }
    return true;
}

static void copy_node(void *ctx, const struct vs_node *n)
{
    struct copy_ctx *x = ctx;
    struct vs_dash_snap *s = x->s;
    if (x->oom || (x->o->only_node && strcmp(x->o->only_node, n->name) != 0))
        return;
    if (!vs_grow_one((void **)&s->nodes, s->n_nodes, &s->cap_nodes, sizeof(*s->nodes))) {
        x->oom = true;
        return;
    }
    struct vs_dash_node *d = &s->nodes[s->n_nodes];
    memset(d, 0, sizeof(*d));
    d->name = arena_dup(s->arena, n->name);
    /* no register annotation: a node without GPUs, not a broken one */
    d->registered = !(n->error && strncmp(n->error, "annos not found", 15) == 0);
    d->error = n->error && d->registered ? arena_dup(s->arena, n->error) : NULL;
    d->unschedulable = n->unschedulable;
    d->first_card = (uint32_t)s->n_cards;
    d->n_cards = (uint32_t)n->n_cards;
    d->n_pods = (uint32_t)n->n_pods;
    for (size_t c = 0; c < n->n_cards; c++) {
        const struct vs_card *k = &n->cards[c];
        d->mem_total += k->devmem;
        d->mem_used += k->usedmem;
        d->cores_total += k->devcore;
        d->cores_used += k->usedcores;
        d->slots_total += k->count;
        d->slots_used += k->used;
        d->cards_used += k->used > 0;
        d->cards_unusable += !k->health || k->cordoned || k->mig_unhealthy;
    }
    d->alloc_cpu = n->res.alloc_cpu;
    d->alloc_mem = n->res.alloc_mem;
    d->cpu = n->res.cpu;
    d->mem = n->res.mem;
    if (!d->name || (n->error && d->registered && !d->error)) {
        x->oom = true;
        return;
    }
    for (size_t c = 0; x->cards != VS_DASH_CARDS_DETAIL && c < n->n_cards; c++) {
        const struct vs_card *k = &n->cards[c];
        if (x->cards == VS_DASH_CARDS_UNUSABLE && k->health && !k->cordoned && !k->mig_unhealthy)
            continue;
        if (!vs_grow_one((void **)&s->cards, s->n_cards, &s->cap_cards, sizeof(*s->cards)) ||
            !card_view(s->arena, x->set, k, &s->cards[s->n_cards])) {
            x->oom = true;
            return;
        }
        s->n_cards++;
    }
    d->n_copied = (uint32_t)(s->n_cards - d->first_card);
    s->n_nodes++;
    if (x->detail && !copy_shares(s, n, (uint32_t)(s->n_nodes - 1)))
        x->oom = true;
}

static void copy_ns(void *ctx, const struct vs_quota *q)
{
    struct copy_ctx *x = ctx;
    struct vs_dash_snap *s = x->s;
    if (x->oom)
        return;
    if (!vs_grow_one((void **)&s->nss, s->n_nss, &s->cap_nss, sizeof(*s->nss))) {
        x->oom = true;
        return;
    }
    struct vs_dash_ns *d = &s->nss[s->n_nss];
    static const struct vs_quota_res none;
    const struct vs_quota_res *qr = x->nv && x->nv->id < q->n ? &q->res[x->nv->id] : &none;
    *d = (struct vs_dash_ns){.ns = arena_dup(s->arena, q->ns),
                             .has_mem = qr->has_mem,
                             .has_cores = qr->has_cores,
                             .mem_limit = qr->mem_limit,
                             .cores_limit = qr->cores_limit,
                             .mem_used = qr->mem_used,
                             .cores_used = qr->cores_used,
                             .pods = x->detail ? 0 : -1};
    if (!d->ns)
        x->oom = true;
    else
        s->n_nss++;
}

static int ns_cmp(const void *a, const void *b)
{
    return strcmp(((const struct vs_dash_ns *)a)->ns, ((const struct vs_dash_ns *)b)->ns);
}

enum vs_err vs_dash_snap_copy(const struct vs_model *m, const struct vs_dash_copy_opts *o,
                              uint64_t version, int64_t now, struct vs_dash_snap **out)
{
    *out = NULL;
    struct vs_dash_snap *s = snap_new(version, now);
    if (!s)
        return VS_ERR_NOMEM;
    const struct vs_devices *set = vs_model_devices(m);
    struct copy_ctx x = {.s = s, .o = o, .set = set, .nv = vs_devices_find(set, VS_VENDOR)};
    x.detail =
        o->only_node || (o->detail_max_nodes && vs_model_node_count(m) <= o->detail_max_nodes);
    x.cards = o->cards == VS_DASH_CARDS_DETAIL && x.detail ? VS_DASH_CARDS_ALL : o->cards;
    if (o->only_node)
        x.cards = VS_DASH_CARDS_ALL;
    s->detail = x.detail && x.cards == VS_DASH_CARDS_ALL;
    x.detail = s->detail;
    s->tracked_pods = vs_model_pod_count(m);
    if (o->only_node) {
        const struct vs_node *n = vs_model_node(m, o->only_node);
        if (n && n->present)
            copy_node(&x, n);
    } else {
        vs_model_each_node(m, copy_node, &x);
        vs_model_each_quota(m, copy_ns, &x);
    }
    if (x.oom) {
        vs_dash_snap_free(s);
        return VS_ERR_NOMEM;
    }
    /* pods per namespace, from the copied pods (detail) */
    if (s->n_nss > 1)
        qsort(s->nss, s->n_nss, sizeof(*s->nss), ns_cmp);
    for (size_t i = 0; x.detail && s->n_nss && i < s->n_pods; i++) {
        struct vs_dash_ns key = {.ns = s->pods[i].ns};
        struct vs_dash_ns *e = bsearch(&key, s->nss, s->n_nss, sizeof(*s->nss), ns_cmp);
        if (e)
            e->pods++;
    }
    *out = s;
    return VS_OK;
}

long vs_dash_snap_find(const struct vs_dash_snap *s, const char *name)
{
    bool found;
    size_t i = vs_sorted_find(s->nodes, s->n_nodes, sizeof(*s->nodes),
                              offsetof(struct vs_dash_node, name), name, &found);
    return found ? (long)i : -1;
}

bool vs_dash_card_usable(const struct vs_dash_card *c)
{
    return c->health && !c->cordoned && !c->mig_unhealthy;
}

void vs_dash_totals(const struct vs_dash_snap *s, struct vs_dash_totals *t)
{
    memset(t, 0, sizeof(*t));
    t->nodes = s->n_nodes;
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct vs_dash_node *n = &s->nodes[i];
        t->gpu_nodes += n->registered;
        t->cards += n->n_cards;
        t->cards_used += n->cards_used;
        t->cards_idle += n->n_cards - n->cards_used;
        t->unusable_cards += n->cards_unusable;
        t->mem_total += n->mem_total;
        t->mem_used += n->mem_used;
        t->cores_total += n->cores_total;
        t->cores_used += n->cores_used;
        t->slots_total += n->slots_total;
        t->slots_used += n->slots_used;
    }
}

bool vs_dash_largest_slice(const struct vs_dash_snap *s, size_t i, size_t *card, int64_t *mem,
                           int64_t *cores)
{
    const struct vs_dash_node *n = &s->nodes[i];
    bool found = false;
    for (size_t k = 0; k < n->n_copied; k++) {
        const struct vs_dash_card *c = &s->cards[n->first_card + k];
        if (!vs_dash_card_usable(c) || c->used >= c->count)
            continue;
        int64_t fm = c->devmem - c->usedmem, fc = c->devcore - c->usedcores;
        if (fm < 0)
            fm = 0;
        if (fc < 0)
            fc = 0;
        if (!found || fm > *mem || (fm == *mem && fc > *cores)) {
            found = true;
            *card = n->first_card + k;
            *mem = fm;
            *cores = fc;
        }
    }
    return found;
}

bool vs_dash_frag_node(const struct vs_dash_snap *s, struct vs_frag_ctx *x, size_t i, double *idle,
                       double *stranded)
{
    const struct vs_dash_node *n = &s->nodes[i];
    if (x->k == 0 || n->n_cards == 0 || n->n_copied != n->n_cards ||
        n->n_cards > VS_FRAG_MAX_CARDS || n->error)
        return false;
    struct vs_frag_card fc[VS_FRAG_MAX_CARDS];
    double id = 0;
    for (size_t k = 0; k < n->n_cards; k++) {
        const struct vs_dash_card *c = &s->cards[n->first_card + k];
        fc[k] = (struct vs_frag_card){.count = c->count,
                                      .devmem = c->devmem,
                                      .devcore = c->devcore,
                                      .used = c->used,
                                      .usedmem = c->usedmem,
                                      .usedcores = c->usedcores,
                                      .accept = vs_frag_accept(x, c->type),
                                      .usable = vs_dash_card_usable(c)};
        if (fc[k].usable)
            id += vs_frag_idle(&fc[k]);
    }
    int64_t cpu_free = n->alloc_cpu < 0 ? INT64_MAX : n->alloc_cpu - n->cpu;
    int64_t mem_free = n->alloc_mem < 0 ? INT64_MAX : n->alloc_mem - n->mem;
    *idle = id;
    *stranded = vs_frag_node(x, fc, n->n_cards, cpu_free, mem_free);
    return true;
}

void vs_dash_format_mib(int64_t mib, char *out, size_t len)
{
    if (mib < 1024 && mib > -1024) {
        snprintf(out, len, "%lld MiB", (long long)mib);
        return;
    }
    double g = (double)mib / 1024.0;
    if (fabs(g - round(g)) < 0.05)
        snprintf(out, len, "%.0f GiB", g);
    else
        snprintf(out, len, "%.1f GiB", g);
}

/* A pod's card type selectors, parsed once, with the verdicts of the types met so far (the
 * snapshot keeps one string per type, so a type is its pointer). */
struct type_accept {
    struct vs_strlist use, nouse;
    bool any; /* no selector: every type */
    const char *seen[16];
    bool ok[16];
    size_t n_seen;
};

static void types_init(struct type_accept *t, const char *use, const char *nouse)
{
    memset(t, 0, sizeof(*t));
    if ((use && *use && vs_annot_parse_list(use, &t->use)) ||
        (nouse && *nouse && vs_annot_parse_list(nouse, &t->nouse))) {
        vs_strlist_cleanup(&t->use);
        vs_strlist_cleanup(&t->nouse);
        t->any = true; /* cannot tell: weigh every card */
        return;
    }
    t->any = !t->use.n && !t->nouse.n;
}

static bool types_accept(struct type_accept *t, const char *type)
{
    if (t->any)
        return true;
    for (size_t i = 0; i < t->n_seen; i++)
        if (t->seen[i] == type)
            return t->ok[i];
    bool any_use = false, any_nouse = false;
    for (size_t i = 0; i < t->use.n; i++)
        any_use |= strcasestr(type, t->use.items[i]) != NULL;
    for (size_t i = 0; i < t->nouse.n; i++)
        any_nouse |= strcasestr(type, t->nouse.items[i]) != NULL;
    bool ok = !((t->use.n && !any_use) || any_nouse);
    if (t->n_seen < 16) {
        t->seen[t->n_seen] = type;
        t->ok[t->n_seen++] = ok;
    }
    return ok;
}

static void types_cleanup(struct type_accept *t)
{
    vs_strlist_cleanup(&t->use);
    vs_strlist_cleanup(&t->nouse);
}

struct want {
    int32_t nums;
    int64_t memreq; /* MiB, 0 = pct */
    int32_t pct;
    int64_t cores;
};

/* How far card c is from hosting one instance of w: shares of the card it lacks. */
static double shortfall(const struct vs_dash_card *c, const struct want *w, int64_t *mem,
                        int64_t *cores, bool *slot)
{
    int64_t need_mem = w->memreq > 0            ? w->memreq
                       : w->pct != VS_PCT_UNSET ? (int64_t)c->devmem * w->pct / 100
                                                : 0;
    int64_t need_cores = w->cores > 100 ? 100 : w->cores;
    int64_t fm = c->devmem - c->usedmem, fc = c->devcore - c->usedcores;
    *mem = need_mem > fm ? need_mem - (fm > 0 ? fm : 0) : 0;
    *cores = need_cores > fc ? need_cores - (fc > 0 ? fc : 0) : 0;
    *slot = c->used >= c->count;
    double d = (c->devmem > 0 ? (double)*mem / c->devmem : (*mem > 0)) +
               (c->devcore > 0 ? (double)*cores / c->devcore : (*cores > 0)) + (*slot ? 1.0 : 0);
    return d;
}

bool vs_dash_nearest_miss(const struct vs_dash_snap *s, const struct vs_pending_entry *e,
                          struct vs_dash_miss *out)
{
    memset(out, 0, sizeof(*out));
    if (e->error)
        return false;
    /* the container asking most: most cards, then most memory, then cores */
    struct want w = {0};
    for (size_t i = 0; i < e->n_ctrs; i++) {
        const struct vs_req *r = &e->ctrs[i].req;
        if (r->nums <= 0)
            continue;
        int64_t mem = r->memreq > 0 ? r->memreq : r->pct != VS_PCT_UNSET ? r->pct * 1000000LL : 0;
        int64_t wmem = w.memreq > 0 ? w.memreq : w.pct != VS_PCT_UNSET ? w.pct * 1000000LL : 0;
        if (w.nums == 0 || r->nums > w.nums || (r->nums == w.nums && mem > wmem) ||
            (r->nums == w.nums && mem == wmem && r->cores > w.cores))
            w = (struct want){r->nums, r->memreq, r->pct, r->cores};
    }
    if (w.nums == 0)
        return false;
    bool all = e->n_detail == 0 || e->n_detail < e->n_nodes;
    size_t n_walk = all ? s->n_nodes : e->n_detail;
    double best = INFINITY;
    struct type_accept ta;
    types_init(&ta, e->use_type, e->nouse_type);
    for (size_t k = 0; k < n_walk; k++) {
        long ni = all ? (long)k : vs_dash_snap_find(s, e->detail[k].node);
        if (ni < 0)
            continue;
        const struct vs_dash_node *n = &s->nodes[ni];
        if (n->error || n->n_copied < (uint32_t)w.nums)
            continue;
        /* the node's w.nums cards with the least shortfall; its miss is the worst of them */
        double d[VS_FRAG_MAX_CARDS];
        size_t idx[VS_FRAG_MAX_CARDS], m = 0;
        for (size_t c = 0; c < n->n_copied && m < VS_FRAG_MAX_CARDS; c++) {
            const struct vs_dash_card *cd = &s->cards[n->first_card + c];
            if (!vs_dash_card_usable(cd) || !types_accept(&ta, cd->type))
                continue;
            int64_t a, b;
            bool sl;
            d[m] = shortfall(cd, &w, &a, &b, &sl);
            idx[m++] = n->first_card + c;
        }
        if (m < (size_t)w.nums)
            continue;
        /* partial selection sort of the w.nums smallest */
        for (size_t i = 0; i < (size_t)w.nums; i++) {
            size_t mi = i;
            for (size_t j = i + 1; j < m; j++)
                if (d[j] < d[mi])
                    mi = j;
            double td = d[i];
            size_t ti = idx[i];
            d[i] = d[mi];
            idx[i] = idx[mi];
            d[mi] = td;
            idx[mi] = ti;
        }
        size_t worst = (size_t)w.nums - 1;
        if (d[worst] <= 0 || d[worst] >= best)
            continue; /* fits by capacity (refused for another reason), or not nearer */
        best = d[worst];
        out->node = (size_t)ni;
        out->card = idx[worst];
        shortfall(&s->cards[idx[worst]], &w, &out->mem, &out->cores, &out->slot);
    }
    types_cleanup(&ta);
    if (!isfinite(best))
        return false;
    const struct vs_dash_card *c = &s->cards[out->card];
    char parts[3][64];
    size_t np = 0;
    if (out->mem > 0) {
        vs_dash_format_mib(out->mem, parts[np], sizeof(parts[np]));
        np++;
    }
    if (out->cores > 0)
        snprintf(parts[np++], sizeof(parts[0]), "%lld%% of its cores", (long long)out->cores);
    if (out->slot)
        snprintf(parts[np++], sizeof(parts[0]), "a free slot");
    char what[200] = "";
    for (size_t i = 0; i < np; i++) {
        size_t l = strlen(what);
        snprintf(what + l, sizeof(what) - l, "%s%s",
                 i == 0        ? ""
                 : i + 1 == np ? " and "
                               : ", ",
                 parts[i]);
    }
    snprintf(out->text, sizeof(out->text), "%s card %u lacks %s", s->nodes[out->node].name,
             c->index, what);
    return true;
}

static bool icontains(const char *hay, const char *needle)
{
    return !*needle || strcasestr(hay, needle) != NULL;
}

struct find_ctx {
    struct vs_dash_snap *s;
    const char *q;
    size_t max;
    bool more, oom;
};

static void find_pod(void *ctx, const struct vs_podent *pe)
{
    struct find_ctx *f = ctx;
    if (f->oom || f->more)
        return;
    if (!icontains(pe->name ? pe->name : "", f->q) && !icontains(pe->ns ? pe->ns : "", f->q))
        return;
    if (f->s->n_pods >= f->max) {
        f->more = true;
        return;
    }
    if (add_pod(f->s, pe, UINT32_MAX) < 0)
        f->oom = true;
}

enum vs_err vs_dash_find_pods(const struct vs_model *m, const char *q, size_t max,
                              struct vs_dash_snap **out, bool *more)
{
    *out = NULL;
    *more = false;
    struct vs_dash_snap *s = snap_new(0, 0);
    if (!s)
        return VS_ERR_NOMEM;
    struct find_ctx f = {.s = s, .q = q, .max = max};
    vs_model_each_pod(m, find_pod, &f);
    if (f.oom) {
        vs_dash_snap_free(s);
        return VS_ERR_NOMEM;
    }
    *more = f.more;
    *out = s;
    return VS_OK;
}

enum vs_err vs_dash_pod_copy(const struct vs_model *m, const char *uid, uint64_t version,
                             int64_t now, struct vs_dash_snap **out, bool *found)
{
    *out = NULL;
    *found = false;
    const struct vs_podent *pe = vs_model_pod(m, uid);
    struct vs_dash_snap *s = snap_new(version, now);
    if (!s)
        return VS_ERR_NOMEM;
    if (pe && pe->on && pe->on->present) {
        struct vs_dash_copy_opts o = {.only_node = pe->on->name};
        const struct vs_devices *set = vs_model_devices(m);
        struct copy_ctx x = {.s = s,
                             .o = &o,
                             .set = set,
                             .nv = vs_devices_find(set, VS_VENDOR),
                             .detail = false,
                             .cards = VS_DASH_CARDS_ALL};
        copy_node(&x, pe->on);
        /* only this pod's shares */
        long k = x.oom ? -1 : add_pod(s, pe, 0);
        if (k < 0) {
            vs_dash_snap_free(s);
            return VS_ERR_NOMEM;
        }
        for (size_t c = 0; c < s->n_cards; c++) {
            s->cards[c].first_share = (uint32_t)s->n_shares;
            for (size_t u = 0; u < pe->n_usage; u++) {
                if (strcmp(pe->usage[u].uuid, s->cards[c].uuid) != 0)
                    continue;
                if (!vs_grow_one((void **)&s->shares, s->n_shares, &s->cap_shares,
                                 sizeof(*s->shares))) {
                    vs_dash_snap_free(s);
                    return VS_ERR_NOMEM;
                }
                s->shares[s->n_shares++] = (struct vs_dash_share){
                    (uint32_t)k, pe->usage[u].mem, pe->usage[u].cores, pe->usage[u].slots};
            }
            s->cards[c].n_shares = (uint32_t)(s->n_shares - s->cards[c].first_share);
        }
        s->detail = true;
        *found = true;
    } else if (pe) {
        /* tracked on a node without a Node object (yet): the pod alone */
        if (add_pod(s, pe, UINT32_MAX) < 0) {
            vs_dash_snap_free(s);
            return VS_ERR_NOMEM;
        }
        *found = true;
    }
    *out = s;
    return VS_OK;
}
