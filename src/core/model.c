/* model: nodes, cards and tracked pods with incrementally maintained per-card usage.
 * Invariant: for every present node and card, used/usedmem/usedcores equal the sum of the
 * collapsed usage of the pods in node->pods naming that card. Every mutation of a node's cards
 * or pods bumps node->gen. */
#include "model.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devcfg.h"
#include "hash.h"
#include "quantity.h"
#include "slab.h"

#include <stdio.h>

_Static_assert(sizeof(struct vs_podent) <= VS_SLAB_MAX_SMALL,
               "a tracked pod is a small slab object");

/* One ResourceQuota object's limits, per backend (vs_device.id). */
struct quota_obj {
    char *ns;
    char *name;
    struct quota_lim {
        bool has_mem, has_cores;
        int64_t mem, cores;
    } * lim;
};

/* Open-addressing table of pointers by a 64-bit hash of their name: the nodes by name (for
 * Filter's lookup of every candidate: uthash's chains put several node structs on each
 * lookup's path) and the pods by uid (a 16-byte slot per pod instead of a 56-byte uthash handle
 * and its buckets). Linear probing, backward-shift deletion; the hash is compared before the
 * name. */
struct pslot {
    uint64_t h;
    void *p; /* NULL: empty */
};
struct ptab {
    struct pslot *s;
    size_t cap, n; /* cap: 0 or a power of 2 */
};

/* The DRA ledger: slices by name, claims by uid, and what each claim holds on which card. */
struct dra_slice_ent {
    struct vs_dra_slice s;
    UT_hash_handle hh;
};
struct dra_held {
    char *node, *uuid;
    int64_t slots, mem, cores;
};
struct dra_claim_ent {
    struct vs_dra_claim c;
    char *key; /* "ns/name" */
    struct dra_held *held;
    size_t n_held;
    UT_hash_handle hh;
};

struct vs_model {
    const struct vs_devices *set; /* the backends (device.h) */
    struct vs_devcfg *own_cfg;    /* the default configuration when the caller gave no set */
    struct vs_node *nodes;        /* hash by name (iteration, ownership) */
    struct ptab idx;              /* nodes by name, load at most 1/2 */
    struct ptab pidx;             /* pods by uid, load at most 3/4 */
    struct vs_quota *quotas;      /* hash by namespace */
    struct quota_obj *qobjs;
    size_t n_qobjs;
    size_t n_present;
    size_t n_reservations;
    uint64_t resv_seq;         /* the last vs_podent.resv_id handed out */
    struct vs_podent *unbound; /* pods that may still expire */
    struct res_slot *res;      /* accounted pods, open addressing by uid hash (see res_slot) */
    size_t res_cap, res_n;
    uint32_t res_epoch;            /* stamped on every account; a sweep drops older entries */
    struct vs_labelset *labelsets; /* interned label sets by hash */
    /* card types by first appearance, with the cards of each on the nodes (vs_card.type_id) */
    char **ctypes;
    int64_t *ctype_cards;
    size_t n_ctypes, cap_ctypes;
    char **cmodes; /* card modes, one copy each (vs_card.mode points here) */
    size_t n_cmodes;
    /* tracked pods' entries, their uid/name/node and collapsed usage (slab.h: they live for
     * minutes and would otherwise keep the arenas' pages from the trim) */
    struct vs_slab *slab;
    struct dra_slice_ent *slices; /* by name */
    struct dra_claim_ent *claims; /* by uid */
    size_t n_holder_nodes;        /* nodes with dra_holders set */
};

/* One accounted pod: what it adds to its node's vs_node_res. key 0 marks an empty slot. */
struct res_slot {
    uint64_t key;
    struct vs_node *on;
    int64_t mem, eph, nz_mem;
    int32_t cpu, nz_cpu; /* millicores, saturated at INT32_MAX (2,147,483 cores) */
    uint32_t epoch;
};

struct vs_model *vs_model_new(const struct vs_devices *set)
{
    struct vs_model *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    if (!set) {
        if (!(m->own_cfg = calloc(1, sizeof(*m->own_cfg))) || vs_devcfg_init(m->own_cfg)) {
            free(m->own_cfg);
            free(m);
            return NULL;
        }
        set = m->own_cfg->devices;
    }
    m->set = set;
    if (!(m->slab = vs_slab_new())) {
        if (m->own_cfg) {
            vs_devcfg_cleanup(m->own_cfg);
            free(m->own_cfg);
        }
        free(m);
        return NULL;
    }
    return m;
}

const struct vs_devices *vs_model_devices(const struct vs_model *m)
{
    return m->set;
}

/* ------------------------------------------------------------------ usage collapse */

/* A usage array and its UUIDs come from slab, or from malloc when slab is NULL. */
static void usage_release(struct vs_slab *slab, struct vs_usage *u, size_t n)
{
    for (size_t i = 0; u && i < n; i++)
        slab ? vs_slab_put(slab, u[i].uuid) : free(u[i].uuid);
    slab ? vs_slab_put(slab, u) : free(u);
}

void vs_usage_free(struct vs_usage *u, size_t n)
{
    usage_release(NULL, u, n);
}

static int usage_cmp(const void *a, const void *b)
{
    return strcmp(((const struct vs_usage *)a)->uuid, ((const struct vs_usage *)b)->uuid);
}

static enum vs_err collapse(uint16_t dev, const struct vs_pod_devs *devs, size_t n_init,
                            bool released, struct vs_slab *slab, struct vs_usage **out,
                            size_t *n_out)
{
    /* Per card: init max (mem, cores, slot 1) and app sum (mem, cores, slots = entries). */
    struct acc {
        const char *uuid;
        int64_t imem, icores, islots, amem, acores, aslots;
    } *acc = NULL;
    size_t n = 0, cap = 0;
    *out = NULL;
    *n_out = 0;
    for (size_t ci = 0; ci < devs->n; ci++) {
        bool init = ci < n_init;
        if (init && released)
            continue;
        for (size_t di = 0; di < devs->ctrs[ci].n; di++) {
            const struct vs_cdev *d = &devs->ctrs[ci].devs[di];
            size_t k;
            for (k = 0; k < n; k++)
                if (strcmp(acc[k].uuid, d->uuid) == 0)
                    break;
            if (k == n) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 4;
                    struct acc *g = realloc(acc, cap * sizeof(*g));
                    if (!g) {
                        free(acc);
                        return VS_ERR_NOMEM;
                    }
                    acc = g;
                }
                memset(&acc[n], 0, sizeof(acc[n]));
                acc[n++].uuid = d->uuid;
            }
            if (init) {
                if (d->usedmem > acc[k].imem)
                    acc[k].imem = d->usedmem;
                if (d->usedcores > acc[k].icores)
                    acc[k].icores = d->usedcores;
                acc[k].islots = 1;
            } else {
                acc[k].amem += d->usedmem;
                acc[k].acores += d->usedcores;
                acc[k].aslots++;
            }
        }
    }
    if (n == 0) {
        free(acc);
        return VS_OK;
    }
    struct vs_usage *u = slab ? vs_slab_calloc(slab, n * sizeof(*u)) : calloc(n, sizeof(*u));
    if (!u) {
        free(acc);
        return VS_ERR_NOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        u[k].dev = dev;
        u[k].uuid = slab ? vs_slab_strdup(slab, acc[k].uuid) : strdup(acc[k].uuid);
        if (!u[k].uuid) {
            usage_release(slab, u, n);
            free(acc);
            return VS_ERR_NOMEM;
        }
        u[k].mem = acc[k].imem > acc[k].amem ? acc[k].imem : acc[k].amem;
        u[k].cores = acc[k].icores > acc[k].acores ? acc[k].icores : acc[k].acores;
        int64_t s = acc[k].islots > acc[k].aslots ? acc[k].islots : acc[k].aslots;
        u[k].slots = s > 1 ? s : 1;
    }
    free(acc);
    qsort(u, n, sizeof(*u), usage_cmp);
    *out = u;
    *n_out = n;
    return VS_OK;
}

enum vs_err vs_usage_collapse(uint16_t dev, const struct vs_pod_devs *devs, size_t n_init,
                              bool released, struct vs_usage **out, size_t *n_out)
{
    return collapse(dev, devs, n_init, released, NULL, out, n_out);
}

/* Appends b (n_b entries, its strings moved) to *a (n_a entries); both from slab (or malloc
 * when slab is NULL). b's array is released. */
static enum vs_err usage_append(struct vs_slab *slab, struct vs_usage **a, size_t *n_a,
                                struct vs_usage *b, size_t n_b)
{
    if (!n_b)
        return VS_OK;
    if (!*n_a) {
        *a = b;
        *n_a = n_b;
        return VS_OK;
    }
    size_t n = *n_a + n_b;
    struct vs_usage *u = slab ? vs_slab_calloc(slab, n * sizeof(*u)) : calloc(n, sizeof(*u));
    if (!u)
        return VS_ERR_NOMEM;
    memcpy(u, *a, *n_a * sizeof(*u));
    memcpy(u + *n_a, b, n_b * sizeof(*u));
    slab ? vs_slab_put(slab, *a) : free(*a);
    slab ? vs_slab_put(slab, b) : free(b);
    *a = u;
    *n_a = n;
    return VS_OK;
}

static enum vs_err collapse_all(const struct vs_dev_alloc *allocs, size_t n, size_t n_init,
                                bool released, struct vs_slab *slab, struct vs_usage **out,
                                size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        struct vs_usage *u;
        size_t nu;
        enum vs_err err = collapse(allocs[i].dev, &allocs[i].devs, n_init, released, slab, &u, &nu);
        if (!err && (err = usage_append(slab, out, n_out, u, nu)))
            usage_release(slab, u, nu);
        if (err) {
            usage_release(slab, *out, *n_out);
            *out = NULL;
            *n_out = 0;
            return err;
        }
    }
    return VS_OK;
}

enum vs_err vs_usage_collapse_all(const struct vs_dev_alloc *allocs, size_t n, size_t n_init,
                                  struct vs_usage **out, size_t *n_out)
{
    return collapse_all(allocs, n, n_init, false, NULL, out, n_out);
}

void vs_dev_allocs_free(struct vs_dev_alloc *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++)
        vs_pod_devs_cleanup(&a[i].devs);
    free(a);
}

/* ------------------------------------------------------------------ nodes */

static struct vs_card *find_card(struct vs_node *n, const char *uuid)
{
    for (size_t i = 0; i < n->n_cards; i++)
        if (strcmp(n->cards[i].uuid, uuid) == 0)
            return &n->cards[i];
    return NULL;
}

static struct vs_quota *quota_for(struct vs_model *m, const char *ns, bool create)
{
    struct vs_quota *q = NULL;
    HASH_FIND_STR(m->quotas, ns, q);
    if (q || !create)
        return q;
    q = calloc(1, sizeof(*q));
    if (!q || !(q->ns = strdup(ns)) ||
        !(q->res = calloc(m->set->n ? m->set->n : 1, sizeof(*q->res)))) {
        if (q)
            free(q->ns);
        free(q);
        return NULL;
    }
    q->n = m->set->n;
    HASH_ADD_KEYPTR(hh, m->quotas, q->ns, strlen(q->ns), q);
    return q;
}

/* Every change of a node's cards or usage ends here: new generation, fresh sums. */
static void node_bump(struct vs_node *n)
{
    struct vs_node_sums t = {0};
    for (size_t i = 0; i < n->n_cards; i++) {
        const struct vs_card *c = &n->cards[i];
        t.used += c->used;
        t.count += c->count;
        t.usedcores += c->usedcores;
        t.devcore += c->devcore;
        t.usedmem += c->usedmem;
        t.devmem += c->devmem;
    }
    n->sums = t;
    n->gen++;
}

/* Adds (sign=+1) or removes (sign=-1) a pod's collapsed usage on its node's cards and in its
 * namespace's quota usage. */
static void apply_usage(struct vs_model *m, struct vs_podent *pe, int sign)
{
    struct vs_node *n = pe->on;
    struct vs_quota *q = quota_for(m, pe->ns, sign > 0);
    for (size_t i = 0; i < pe->n_usage; i++) {
        const struct vs_usage *u = &pe->usage[i];
        if (q && u->dev < q->n) {
            q->res[u->dev].mem_used += sign * u->mem;
            q->res[u->dev].cores_used += sign * u->cores;
        }
        struct vs_card *c = n ? find_card(n, u->uuid) : NULL;
        if (!c)
            continue;
        c->used += sign * u->slots;
        c->usedmem += sign * u->mem;
        c->usedcores += sign * u->cores;
    }
    if (n)
        node_bump(n);
}

static void card_clear(struct vs_card *c)
{
    free(c->uuid); /* type and mode are the model's (ctype_id, cmode) */
    free(c->dra_holders);
    for (size_t i = 0; i < c->n_profiles; i++) {
        free(c->profiles[i].name);
        free(c->profiles[i].placements);
    }
    free(c->profiles);
    free(c->occ);
    json_decref(c->custom);
}

/* The id of card type t in m's table, added when new; -1 when out of memory. */
static int32_t ctype_id(struct vs_model *m, const char *t)
{
    t = t ? t : "";
    for (size_t i = 0; i < m->n_ctypes; i++)
        if (strcmp(m->ctypes[i], t) == 0)
            return (int32_t)i;
    if (m->n_ctypes == INT32_MAX)
        return -1;
    if (m->n_ctypes == m->cap_ctypes) {
        size_t nc = m->cap_ctypes ? m->cap_ctypes * 2 : 8;
        char **g = realloc(m->ctypes, nc * sizeof(*g));
        if (!g)
            return -1;
        m->ctypes = g;
        int64_t *h = realloc(m->ctype_cards, nc * sizeof(*h));
        if (!h)
            return -1;
        m->ctype_cards = h;
        m->cap_ctypes = nc;
    }
    if (!(m->ctypes[m->n_ctypes] = strdup(t)))
        return -1;
    m->ctype_cards[m->n_ctypes] = 0;
    return (int32_t)m->n_ctypes++;
}

/* The model's copy of card mode `md` (modes are few: one copy each, kept until the model is
 * freed); NULL when out of memory. */
static const char *cmode(struct vs_model *m, const char *md)
{
    md = md ? md : "";
    for (size_t i = 0; i < m->n_cmodes; i++)
        if (strcmp(m->cmodes[i], md) == 0)
            return m->cmodes[i];
    char **g = realloc(m->cmodes, (m->n_cmodes + 1) * sizeof(*g));
    if (!g)
        return NULL;
    m->cmodes = g;
    return (m->cmodes[m->n_cmodes] = strdup(md)) ? m->cmodes[m->n_cmodes++] : NULL;
}

/* Adds (sign 1) or takes away (-1) the node's cards in the per-type counts. */
static void ctype_count(struct vs_model *m, const struct vs_node *n, int sign)
{
    for (size_t i = 0; i < n->n_cards; i++)
        if (n->cards[i].type_id >= 0)
            m->ctype_cards[n->cards[i].type_id] += sign;
}

size_t vs_model_card_types(const struct vs_model *m, const char *const **types,
                           const int64_t **cards)
{
    *types = (const char *const *)m->ctypes;
    *cards = m->ctype_cards;
    return m->n_ctypes;
}

static void node_clear_cards(const struct vs_model *m, struct vs_node *n)
{
    for (size_t i = 0; i < n->n_cards; i++)
        card_clear(&n->cards[i]);
    free(n->cards);
    free(n->topo);
    n->cards = NULL;
    n->topo = NULL;
    n->n_cards = 0;
    n->has_mig = false;
    for (size_t d = 0; n->dev_error && d < m->set->n; d++)
        free(n->dev_error[d]);
    for (size_t d = 0; n->dev_info && d < m->set->n; d++)
        json_decref(n->dev_info[d]);
    free(n->dev_error);
    free(n->dev_info);
    n->dev_error = NULL;
    n->dev_info = NULL;
    free(n->error);
    n->error = NULL;
}

static bool occ_add(struct vs_card *c, struct vs_mig_placement pl, const struct vs_podent *owner)
{
    struct vs_mig_occ *g = realloc(c->occ, (c->n_occ + 1) * sizeof(*g));
    if (!g)
        return false;
    c->occ = g;
    c->occ[c->n_occ].placement = pl;
    c->occ[c->n_occ].owner = owner;
    c->n_occ++;
    return true;
}

/* Rebuilds MIG occupancy and fail-closed flags of a node from its pods (spec §10.3). */
static void node_rebuild_mig(struct vs_node *n)
{
    for (size_t i = 0; i < n->n_cards; i++) {
        free(n->cards[i].occ);
        n->cards[i].occ = NULL;
        n->cards[i].n_occ = 0;
        n->cards[i].mig_unhealthy = false;
    }
    for (struct vs_podent *pe = n->pods; pe; pe = pe->next) {
        if (pe->expired)
            continue; /* its usage stopped counting, and so do its MIG placements */
        for (size_t i = 0; i < pe->n_usage; i++) {
            struct vs_card *c = find_card(n, pe->usage[i].uuid);
            if (!c || !c->is_mig)
                continue;
            bool any = false;
            for (size_t k = 0; k < pe->mig.n && !any; k++)
                any = strcmp(pe->mig.items[k].gpu_uuid, c->uuid) == 0;
            if (!any)
                c->mig_unhealthy = true;
        }
        for (size_t k = 0; k < pe->mig.n; k++) {
            struct vs_card *c = find_card(n, pe->mig.items[k].gpu_uuid);
            if (!c) {
                for (size_t i = 0; i < n->n_cards; i++)
                    if (n->cards[i].is_mig)
                        n->cards[i].mig_unhealthy = true;
            } else if (!c->is_mig) {
                c->mig_unhealthy = true;
            } else if (!occ_add(c, pe->mig.items[k].placement, pe)) {
                c->mig_unhealthy = true; /* out of memory: fail closed */
            }
        }
    }
}

static void node_rebuild_usage(struct vs_model *m, struct vs_node *n)
{
    for (size_t i = 0; i < n->n_cards; i++) {
        struct vs_card *c = &n->cards[i];
        c->used = c->dra_slots;
        c->usedmem = c->dra_mem;
        c->usedcores = c->dra_cores;
    }
    for (struct vs_podent *pe = n->pods; pe; pe = pe->next) {
        for (size_t i = 0; i < pe->n_usage; i++) {
            struct vs_card *c = find_card(n, pe->usage[i].uuid);
            if (!c)
                continue;
            c->used += pe->usage[i].slots;
            c->usedmem += pe->usage[i].mem;
            c->usedcores += pe->usage[i].cores;
        }
    }
    node_rebuild_mig(n);
    node_bump(n);
}

static uint64_t name_hash(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
    for (; len >= 8; s += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s, len);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static void ptab_place(struct pslot *s, size_t cap, uint64_t h, void *p)
{
    size_t i = (size_t)h & (cap - 1);
    while (s[i].p)
        i = (i + 1) & (cap - 1);
    s[i].h = h;
    s[i].p = p;
}

/* Room for one more entry with the load at most num/den (false: out of memory, nothing
 * changed). */
static bool ptab_room(struct ptab *t, size_t num, size_t den)
{
    if ((t->n + 1) * den <= t->cap * num)
        return true;
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct pslot *s = calloc(cap, sizeof(*s));
    if (!s)
        return false;
    for (size_t i = 0; i < t->cap; i++)
        if (t->s[i].p)
            ptab_place(s, cap, t->s[i].h, t->s[i].p);
    free(t->s);
    t->s = s;
    t->cap = cap;
    return true;
}

/* Adds p under hash h (after ptab_room). */
static void ptab_add(struct ptab *t, uint64_t h, void *p)
{
    ptab_place(t->s, t->cap, h, p);
    t->n++;
}

/* Removes p (stored under hash h), if present. */
static void ptab_del(struct ptab *t, uint64_t h, const void *p)
{
    if (!t->cap)
        return;
    size_t mask = t->cap - 1;
    size_t i = (size_t)h & mask;
    while (t->s[i].p != p) {
        if (!t->s[i].p)
            return;
        i = (i + 1) & mask;
    }
    /* Backward shift: move later entries of the probe run into the hole when their home slot
     * does not lie (cyclically) after the hole. */
    for (size_t j = (i + 1) & mask; t->s[j].p; j = (j + 1) & mask) {
        size_t home = (size_t)t->s[j].h & mask;
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            t->s[i] = t->s[j];
            i = j;
        }
    }
    t->s[i].p = NULL;
    t->s[i].h = 0;
    t->n--;
}

static struct vs_node *idx_find(const struct vs_model *m, const char *name)
{
    if (!m->idx.cap)
        return NULL;
    uint64_t h = name_hash(name, strlen(name));
    size_t mask = m->idx.cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        const struct pslot *sl = &m->idx.s[i];
        if (!sl->p)
            return NULL;
        if (sl->h == h && strcmp(((struct vs_node *)sl->p)->name, name) == 0)
            return sl->p;
    }
}

static bool idx_put(struct vs_model *m, struct vs_node *n)
{
    if (!ptab_room(&m->idx, 1, 2))
        return false;
    ptab_add(&m->idx, name_hash(n->name, strlen(n->name)), n);
    return true;
}

static void idx_del(struct vs_model *m, const struct vs_node *n)
{
    ptab_del(&m->idx, name_hash(n->name, strlen(n->name)), n);
}

static struct vs_podent *pidx_find(const struct vs_model *m, const char *uid)
{
    if (!m->pidx.cap || !uid)
        return NULL;
    uint64_t h = name_hash(uid, strlen(uid));
    size_t mask = m->pidx.cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        const struct pslot *sl = &m->pidx.s[i];
        if (!sl->p)
            return NULL;
        if (sl->h == h && strcmp(((struct vs_podent *)sl->p)->uid, uid) == 0)
            return sl->p;
    }
}

static struct vs_node *node_get(struct vs_model *m, const char *name, bool create)
{
    struct vs_node *n = idx_find(m, name);
    if (n || !create)
        return n;
    /* The name lives right after the struct: a lookup's name comparison then touches memory
     * that evaluating the node reads anyway. */
    size_t len = strlen(name);
    n = calloc(1, sizeof(*n) + len + 1);
    if (!n)
        return NULL;
    n->name = memcpy((char *)(n + 1), name, len + 1);
    n->res.alloc_cpu = n->res.alloc_mem = n->res.alloc_eph = n->res.alloc_pods = -1;
    if (!idx_put(m, n)) {
        free(n);
        return NULL;
    }
    HASH_ADD_KEYPTR(hh, m->nodes, n->name, strlen(n->name), n);
    return n;
}

static void node_free(const struct vs_model *m, struct vs_node *n)
{
    free(atomic_load(&n->frag_memo)); /* a plain block (frag.h) */
    node_clear_cards(m, n);
    free(n->raw_cordon);
    free(n->dra_holders);
    free(n);
}

/* Drops a node bucket that has neither a Node object nor pods. */
static void node_gc(struct vs_model *m, struct vs_node *n)
{
    if (n && !n->present && !n->pods && n->res.pods == 0) {
        idx_del(m, n);
        HASH_DEL(m->nodes, n);
        node_free(m, n);
    }
}

/* ------------------------------------------------------------------ DRA ledger */

/* The card that claim result r names, and its node, or NULL (see vs_model_set_claim). */
static struct vs_card *dra_card(struct vs_model *m, const struct vs_dra_result *r,
                                struct vs_node **on)
{
    for (const struct dra_slice_ent *se = m->slices; se; se = se->hh.next) {
        const struct vs_dra_slice *s = &se->s;
        if (!s->node || strcmp(s->driver, r->driver) != 0 || strcmp(s->pool, r->pool) != 0)
            continue;
        for (size_t i = 0; i < s->n; i++) {
            const struct vs_dra_slice_dev *d = &s->devs[i];
            if (strcmp(d->name, r->device) != 0)
                continue;
            struct vs_node *n = node_get(m, s->node, false);
            if (!n || !n->present)
                return NULL;
            struct vs_card *c = d->uuid ? find_card(n, d->uuid) : NULL;
            if (!c && d->parent)
                c = find_card(n, d->parent);
            *on = n;
            return c;
        }
    }
    return NULL;
}

static void dra_hold(struct vs_node *n, struct vs_card *c, const struct dra_held *h, int sign)
{
    c->used += sign * h->slots;
    c->usedmem += sign * h->mem;
    c->usedcores += sign * h->cores;
    c->dra_slots += sign * h->slots;
    c->dra_mem += sign * h->mem;
    c->dra_cores += sign * h->cores;
    node_bump(n);
}

/* Applies claim ce's results; false when out of memory (what was applied is recorded). */
static bool dra_apply(struct vs_model *m, struct dra_claim_ent *ce)
{
    for (size_t i = 0; i < ce->c.n; i++) {
        const struct vs_dra_result *r = &ce->c.res[i];
        struct vs_node *n = NULL;
        struct vs_card *c = r->admin ? NULL : dra_card(m, r, &n);
        if (!c)
            continue;
        struct dra_held h = {0};
        if (!r->share || (!r->has_mem && !r->has_cores)) {
            h.slots = c->count;
            h.mem = c->devmem;
            h.cores = c->devcore;
        } else {
            h.slots = 1;
            h.mem = r->has_mem ? r->mem_mib : 0;
            h.cores = r->has_cores ? r->cores : 0;
        }
        struct dra_held *g = realloc(ce->held, (ce->n_held + 1) * sizeof(*g));
        if (!g)
            return false;
        ce->held = g;
        if (!(h.node = strdup(n->name)) || !(h.uuid = strdup(c->uuid))) {
            free(h.node);
            return false;
        }
        ce->held[ce->n_held++] = h;
        dra_hold(n, c, &h, 1);
    }
    return true;
}

/* Takes away exactly what claim ce holds. */
static void dra_unapply(struct vs_model *m, struct dra_claim_ent *ce)
{
    for (size_t i = 0; i < ce->n_held; i++) {
        struct dra_held *h = &ce->held[i];
        struct vs_node *n = node_get(m, h->node, false);
        struct vs_card *c = n ? find_card(n, h->uuid) : NULL;
        if (c)
            dra_hold(n, c, h, -1);
        free(h->node);
        free(h->uuid);
    }
    free(ce->held);
    ce->held = NULL;
    ce->n_held = 0;
}

static void dra_unapply_all(struct vs_model *m)
{
    for (struct dra_claim_ent *ce = m->claims; ce; ce = ce->hh.next)
        dra_unapply(m, ce);
}

static int claim_key_cmp(const void *a, const void *b)
{
    return strcmp((*(struct dra_claim_ent *const *)a)->key,
                  (*(struct dra_claim_ent *const *)b)->key);
}

/* Appends key to the holder list *list (", "-joined) unless it is already the last one; *added
 * tells whether it was. False when out of memory. */
static bool holder_append(char **list, const char *key, bool *added)
{
    size_t kl = strlen(key), hl = *list ? strlen(*list) : 0;
    *added = false;
    if (hl >= kl && strcmp(*list + hl - kl, key) == 0 && (hl == kl || (*list)[hl - kl - 1] == ' '))
        return true;
    char *g = realloc(*list, hl + (hl ? 2 : 0) + kl + 1);
    if (!g)
        return false;
    if (hl)
        memcpy(g + hl, ", ", 2);
    memcpy(g + hl + (hl ? 2 : 0), key, kl + 1);
    *list = g;
    *added = true;
    return true;
}

/* Adds key to the holders of node n and of its card with that uuid (when it has one). */
static bool holders_add(struct vs_model *m, struct vs_node *n, const char *uuid, const char *key)
{
    bool had = n->dra_holders != NULL, added;
    if (!holder_append(&n->dra_holders, key, &added))
        return false;
    m->n_holder_nodes += !had;
    n->n_dra_holders += added;
    struct vs_card *c = find_card(n, uuid);
    return !c || holder_append(&c->dra_holders, key, &added);
}

/* Rebuilds every node's dra_holders from the claims' holdings; false when out of memory. */
static bool dra_holders_refresh(struct vs_model *m)
{
    if (m->n_holder_nodes) {
        for (struct vs_node *n = m->nodes; n; n = n->hh.next) {
            if (!n->dra_holders)
                continue;
            free(n->dra_holders);
            n->dra_holders = NULL;
            n->n_dra_holders = 0;
            for (size_t i = 0; i < n->n_cards; i++) {
                free(n->cards[i].dra_holders);
                n->cards[i].dra_holders = NULL;
            }
        }
        m->n_holder_nodes = 0;
    }
    size_t nc = HASH_COUNT(m->claims);
    if (!nc)
        return true;
    struct dra_claim_ent **v = malloc(nc * sizeof(*v));
    if (!v)
        return false;
    size_t k = 0;
    for (struct dra_claim_ent *ce = m->claims; ce; ce = ce->hh.next)
        v[k++] = ce;
    qsort(v, nc, sizeof(*v), claim_key_cmp);
    bool ok = true;
    for (size_t i = 0; i < nc; i++)
        for (size_t j = 0; j < v[i]->n_held; j++) {
            struct vs_node *n = node_get(m, v[i]->held[j].node, false);
            if (n)
                ok &= holders_add(m, n, v[i]->held[j].uuid, v[i]->key);
        }
    free(v);
    return ok;
}

/* Applies every claim again (after dra_unapply_all) and names the holders. */
static bool dra_reapply(struct vs_model *m)
{
    bool ok = true;
    for (struct dra_claim_ent *ce = m->claims; ce; ce = ce->hh.next)
        ok &= dra_apply(m, ce);
    return dra_holders_refresh(m) && ok;
}

static void claim_ent_free(struct dra_claim_ent *ce)
{
    for (size_t i = 0; i < ce->n_held; i++) {
        free(ce->held[i].node);
        free(ce->held[i].uuid);
    }
    free(ce->held);
    vs_dra_claim_cleanup(&ce->c);
    free(ce->key);
    free(ce);
}

enum vs_err vs_model_set_slice(struct vs_model *m, struct vs_dra_slice *s)
{
    struct dra_slice_ent *se = NULL;
    HASH_FIND_STR(m->slices, s->name, se);
    if (!se) {
        if (!(se = calloc(1, sizeof(*se))))
            return VS_ERR_NOMEM;
        dra_unapply_all(m);
        se->s = *s;
        HASH_ADD_KEYPTR(hh, m->slices, se->s.name, strlen(se->s.name), se);
    } else {
        dra_unapply_all(m);
        HASH_DEL(m->slices, se);
        vs_dra_slice_cleanup(&se->s);
        se->s = *s;
        HASH_ADD_KEYPTR(hh, m->slices, se->s.name, strlen(se->s.name), se);
    }
    memset(s, 0, sizeof(*s));
    return dra_reapply(m) ? VS_OK : VS_ERR_NOMEM;
}

void vs_model_remove_slice(struct vs_model *m, const char *name)
{
    struct dra_slice_ent *se = NULL;
    HASH_FIND_STR(m->slices, name, se);
    if (!se)
        return;
    dra_unapply_all(m);
    HASH_DEL(m->slices, se);
    vs_dra_slice_cleanup(&se->s);
    free(se);
    (void)dra_reapply(m); /* out of memory: a claim holds less until its next event */
}

enum vs_err vs_model_set_claim(struct vs_model *m, struct vs_dra_claim *c)
{
    if (c->mirror_of) { /* HAMi usage already counted: never a ledger entry */
        vs_model_remove_claim(m, c->uid);
        vs_dra_claim_cleanup(c);
        return VS_OK;
    }
    size_t kl = strlen(c->ns) + 1 + strlen(c->name) + 1;
    char *key = malloc(kl);
    if (!key)
        return VS_ERR_NOMEM;
    snprintf(key, kl, "%s/%s", c->ns, c->name);
    struct dra_claim_ent *ce = NULL;
    HASH_FIND_STR(m->claims, c->uid, ce);
    if (ce) {
        dra_unapply(m, ce);
        HASH_DEL(m->claims, ce);
        vs_dra_claim_cleanup(&ce->c);
        free(ce->key);
    } else if (!(ce = calloc(1, sizeof(*ce)))) {
        free(key);
        return VS_ERR_NOMEM;
    }
    ce->c = *c;
    ce->key = key;
    memset(c, 0, sizeof(*c));
    HASH_ADD_KEYPTR(hh, m->claims, ce->c.uid, strlen(ce->c.uid), ce);
    bool ok = dra_apply(m, ce);
    return dra_holders_refresh(m) && ok ? VS_OK : VS_ERR_NOMEM;
}

void vs_model_remove_claim(struct vs_model *m, const char *uid)
{
    struct dra_claim_ent *ce = NULL;
    HASH_FIND_STR(m->claims, uid, ce);
    if (!ce)
        return;
    dra_unapply(m, ce);
    HASH_DEL(m->claims, ce);
    claim_ent_free(ce);
    (void)dra_holders_refresh(m); /* out of memory: the names are missing until the next event */
}

void vs_model_dra_devices(const struct vs_model *m, const char *node, const char *uuid,
                          void (*fn)(void *ctx, const struct vs_dra_slice *s,
                                     const struct vs_dra_slice_dev *d, bool by_parent),
                          void *ctx)
{
    for (const struct dra_slice_ent *se = m->slices; se; se = se->hh.next) {
        const struct vs_dra_slice *s = &se->s;
        if (!s->node || strcmp(s->node, node) != 0)
            continue;
        for (size_t i = 0; i < s->n; i++) {
            const struct vs_dra_slice_dev *d = &s->devs[i];
            if (d->uuid && strcmp(d->uuid, uuid) == 0)
                fn(ctx, s, d, false);
            else if (d->parent && strcmp(d->parent, uuid) == 0)
                fn(ctx, s, d, true);
        }
    }
}

void vs_model_each_dra(const struct vs_model *m, void (*slice)(void *ctx, const char *name),
                       void (*claim)(void *ctx, const char *uid), void *ctx)
{
    for (const struct dra_slice_ent *se = m->slices; slice && se; se = se->hh.next)
        slice(ctx, se->s.name);
    for (const struct dra_claim_ent *ce = m->claims; claim && ce; ce = ce->hh.next)
        claim(ctx, ce->c.uid);
}

void vs_model_dra_counts(const struct vs_model *m, size_t *slices, size_t *claims, size_t *held)
{
    *slices = HASH_COUNT(m->slices);
    *claims = HASH_COUNT(m->claims);
    *held = 0;
    for (const struct dra_claim_ent *ce = m->claims; ce; ce = ce->hh.next)
        *held += ce->n_held;
}

/* Copies src's slices and claims with their holdings (the cards' dra_* came with the cards). */
static bool dra_clone(struct vs_model *m, const struct vs_model *src)
{
    for (const struct dra_slice_ent *se = src->slices; se; se = se->hh.next) {
        struct dra_slice_ent *d = calloc(1, sizeof(*d));
        if (!d)
            return false;
        const struct vs_dra_slice *s = &se->s;
        bool ok = (d->s.name = strdup(s->name)) && (!s->node || (d->s.node = strdup(s->node))) &&
                  (d->s.driver = strdup(s->driver)) && (d->s.pool = strdup(s->pool)) &&
                  (!s->n || (d->s.devs = calloc(s->n, sizeof(*d->s.devs))));
        for (size_t i = 0; ok && i < s->n; i++) {
            const struct vs_dra_slice_dev *sd = &s->devs[i];
            struct vs_dra_slice_dev *dd = &d->s.devs[d->s.n++];
            dd->multi = sd->multi;
            ok = (dd->name = strdup(sd->name)) && (!sd->uuid || (dd->uuid = strdup(sd->uuid))) &&
                 (!sd->parent || (dd->parent = strdup(sd->parent)));
        }
        if (!ok) {
            vs_dra_slice_cleanup(&d->s);
            free(d);
            return false;
        }
        HASH_ADD_KEYPTR(hh, m->slices, d->s.name, strlen(d->s.name), d);
    }
    for (const struct dra_claim_ent *ce = src->claims; ce; ce = ce->hh.next) {
        struct dra_claim_ent *d = calloc(1, sizeof(*d));
        if (!d)
            return false;
        const struct vs_dra_claim *c = &ce->c;
        bool ok = (d->c.ns = strdup(c->ns)) && (d->c.name = strdup(c->name)) &&
                  (d->c.uid = strdup(c->uid)) && (d->key = strdup(ce->key)) &&
                  (!c->n || (d->c.res = calloc(c->n, sizeof(*d->c.res)))) &&
                  (!ce->n_held || (d->held = calloc(ce->n_held, sizeof(*d->held))));
        for (size_t i = 0; ok && i < c->n; i++) {
            const struct vs_dra_result *r = &c->res[i];
            struct vs_dra_result *dr = &d->c.res[d->c.n++];
            *dr = *r;
            dr->request = dr->driver = dr->pool = dr->device = dr->share = NULL;
            ok = (dr->request = strdup(r->request)) && (dr->driver = strdup(r->driver)) &&
                 (dr->pool = strdup(r->pool)) && (dr->device = strdup(r->device)) &&
                 (!r->share || (dr->share = strdup(r->share)));
        }
        for (size_t i = 0; ok && i < ce->n_held; i++) {
            struct dra_held *h = &d->held[d->n_held++];
            *h = ce->held[i];
            h->node = h->uuid = NULL;
            ok = (h->node = strdup(ce->held[i].node)) && (h->uuid = strdup(ce->held[i].uuid));
        }
        if (!ok) {
            claim_ent_free(d);
            return false;
        }
        HASH_ADD_KEYPTR(hh, m->claims, d->c.uid, strlen(d->c.uid), d);
    }
    return true;
}

static void dra_free(struct vs_model *m)
{
    struct dra_slice_ent *se, *stmp;
    HASH_ITER(hh, m->slices, se, stmp)
    {
        HASH_DEL(m->slices, se);
        vs_dra_slice_cleanup(&se->s);
        free(se);
    }
    struct dra_claim_ent *ce, *ctmp;
    HASH_ITER(hh, m->claims, ce, ctmp)
    {
        HASH_DEL(m->claims, ce);
        claim_ent_free(ce);
    }
}

static bool str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static int profile_cmp(const void *a, const void *b)
{
    const struct vs_mig_profile *x = a, *y = b;
    if (x->memory_mb != y->memory_mb)
        return x->memory_mb < y->memory_mb ? -1 : 1;
    if (x->slice_count != y->slice_count)
        return x->slice_count < y->slice_count ? -1 : 1;
    return 0;
}

/* Stable insertion sort of profiles by (memoryMB, sliceCount). */
static void sort_profiles(struct vs_mig_profile *p, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct vs_mig_profile t = p[i];
        size_t j = i;
        while (j > 0 && profile_cmp(&p[j - 1], &t) > 0) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = t;
    }
}

/* Records backend d's inventory error on the node (the first one is also n->error). */
static bool set_dev_error(const struct vs_model *m, struct vs_node *n, uint16_t d, const char *msg)
{
    if (!n->dev_error && !(n->dev_error = calloc(m->set->n, sizeof(*n->dev_error))))
        return false;
    if (!(n->dev_error[d] = strdup(msg)))
        return false;
    return n->error || (n->error = strdup(msg)) != NULL;
}

/* Appends the cards of one backend's inventory to the node (strings and profiles moved). */
static enum vs_err add_cards(struct vs_model *m, struct vs_node *n, const struct vs_device *d,
                             struct vs_inventory *inv)
{
    struct vs_register *reg = &inv->reg;
    if (!reg->n)
        return VS_OK;
    struct vs_card *g = realloc(n->cards, (n->n_cards + reg->n) * sizeof(*g));
    if (!g)
        return VS_ERR_NOMEM;
    n->cards = g;
    for (size_t i = 0; i < reg->n; i++) {
        struct vs_card_reg *r = &reg->cards[i];
        struct vs_card *c = &n->cards[n->n_cards];
        memset(c, 0, sizeof(*c));
        c->type_id = ctype_id(m, r->type);
        c->mode = cmode(m, r->mode);
        if (c->type_id < 0 || !c->mode)
            return VS_ERR_NOMEM;
        n->n_cards++;
        c->dev = d->id;
        c->type = m->ctypes[c->type_id];
        c->uuid = r->uuid ? r->uuid : strdup("");
        c->profiles = r->profiles;
        c->n_profiles = r->n_profiles;
        c->custom = r->custom;
        r->uuid = NULL;
        r->profiles = NULL;
        r->n_profiles = 0;
        r->custom = NULL;
        if (!c->uuid)
            return VS_ERR_NOMEM;
        c->index = r->index;
        c->numa = r->numa;
        c->count = r->count;
        c->devmem = r->devmem;
        c->devcore = r->devcore;
        c->health = r->health;
        c->is_mig = d->rules.partitions && strcmp(c->mode, "mig") == 0;
        c->cand = d->ops->candidate ? d->ops->candidate(d, c) : vs_device_candidate(d, c);
        n->has_mig |= c->is_mig;
        sort_profiles(c->profiles, c->n_profiles);
    }
    return VS_OK;
}

/* Replaces the node's cards with every backend's inventory of kn. A backend whose inventory
 * fails leaves the node unusable for its requests, with the reason (eb names the first). */
static enum vs_err node_load_devices(struct vs_model *m, struct vs_node *n,
                                     const struct vs_knode *kn, struct vs_errbuf *eb)
{
    node_clear_cards(m, n);
    /* Each backend's pair scores, placed in the node's matrix once every card is in. */
    int64_t *topo[VS_MAX_DEVICES] = {0};
    size_t first[VS_MAX_DEVICES] = {0}, count[VS_MAX_DEVICES] = {0};
    bool any_topo = false;
    enum vs_err err = VS_OK;
    for (size_t i = 0; i < m->set->n; i++) {
        const struct vs_device *d = m->set->dev[i];
        struct vs_inventory inv;
        struct vs_errbuf pe;
        memset(&inv, 0, sizeof(inv));
        pe.msg[0] = '\0';
        enum vs_err e = d->ops->inventory(d, kn, &inv, &pe);
        if (e == VS_ERR_NOMEM) {
            err = VS_ERR_NOMEM;
        } else if (e) {
            if (!set_dev_error(m, n, d->id, pe.msg[0] ? pe.msg : "invalid device inventory"))
                err = VS_ERR_NOMEM;
            else if (eb && !eb->msg[0])
                vs_err_set(eb, VS_ERR_PARSE, "node %s: %s", n->name, n->dev_error[d->id]);
        } else {
            first[i] = n->n_cards;
            count[i] = inv.reg.n;
            err = add_cards(m, n, d, &inv);
            if (!err && inv.topo && inv.reg.n) {
                topo[i] = inv.topo;
                inv.topo = NULL;
                any_topo = true;
            }
            if (!err && inv.node_info) {
                if (!n->dev_info && !(n->dev_info = calloc(m->set->n, sizeof(*n->dev_info))))
                    err = VS_ERR_NOMEM;
                else {
                    n->dev_info[d->id] = inv.node_info;
                    inv.node_info = NULL;
                }
            }
        }
        vs_register_cleanup(&inv.reg);
        free(inv.topo);
        json_decref(inv.node_info);
        if (err)
            break;
    }
    if (!err && any_topo) {
        size_t nc = n->n_cards;
        if (!(n->topo = calloc(nc * nc, sizeof(*n->topo))))
            err = VS_ERR_NOMEM;
        for (size_t i = 0; !err && i < m->set->n; i++) {
            if (!topo[i])
                continue;
            for (size_t a = 0; a < count[i]; a++)
                for (size_t b = 0; b < count[i]; b++)
                    n->topo[(first[i] + a) * nc + first[i] + b] = topo[i][a * count[i] + b];
        }
    }
    for (size_t i = 0; i < m->set->n; i++)
        free(topo[i]);
    if (err) {
        node_clear_cards(m, n);
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    return VS_OK;
}

static enum vs_err node_apply_cordon(struct vs_node *n)
{
    struct vs_strlist l;
    if (vs_annot_parse_list(n->raw_cordon, &l))
        return VS_ERR_NOMEM;
    for (size_t i = 0; i < n->n_cards; i++)
        n->cards[i].cordoned = vs_strlist_has(&l, n->cards[i].uuid);
    vs_strlist_cleanup(&l);
    return VS_OK;
}

/* 64-bit FNV-1a over the value and its length; never 0 for a present value. */
static uint64_t fingerprint(const char *s)
{
    if (!s)
        return 0;
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t n = 0;
    for (; s[n]; n++)
        h = (h ^ (unsigned char)s[n]) * 0x100000001b3ULL;
    h = (h ^ n) * 0x100000001b3ULL;
    return h ? h : 1;
}

static bool replace_str(char **dst, const char *src)
{
    char *c = src ? strdup(src) : NULL;
    if (src && !c)
        return false;
    free(*dst);
    *dst = c;
    return true;
}

/* status.allocatable into n->res; a quantity that does not parse leaves that resource
 * unchecked (-1) with a message in eb. */
static void node_set_alloc(struct vs_node *n, const struct vs_kvlist *alloc, struct vs_errbuf *eb)
{
    static const char *const names[] = {"cpu", "memory", "ephemeral-storage", "pods"};
    int64_t *dst[] = {&n->res.alloc_cpu, &n->res.alloc_mem, &n->res.alloc_eph, &n->res.alloc_pods};
    bool changed = false;
    for (size_t i = 0; i < 4; i++) {
        const char *v = vs_kv_get(alloc, names[i]);
        int64_t x = -1;
        if (v) {
            enum vs_err e = i == 0 ? vs_quantity_milli_ceil(v, &x) : vs_quantity_ceil(v, &x);
            if (e || x < 0) {
                x = -1;
                if (eb && !eb->msg[0])
                    vs_err_set(eb, VS_ERR_PARSE,
                               "node %s: status.allocatable[\"%s\"]: invalid quantity \"%s\" (not "
                               "checked)",
                               n->name, names[i], v);
            }
        }
        changed |= *dst[i] != x;
        *dst[i] = x;
    }
    if (changed)
        n->gen++;
}

enum vs_err vs_model_upsert_node(struct vs_model *m, const struct vs_knode *kn,
                                 struct vs_errbuf *eb)
{
    struct vs_node *n = node_get(m, kn->name, true);
    if (!n)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    if (eb)
        eb->msg[0] = '\0';
    if (!n->present) {
        n->present = true;
        m->n_present++;
    }
    n->unschedulable = kn->unschedulable;
    node_set_alloc(n, &kn->allocatable, eb);
    const char *cordon = vs_kv_get(&kn->annotations, VS_ANNO_CORDON);
    uint64_t fp = 0;
    for (size_t i = 0; i < m->set->n; i++) {
        const struct vs_device *d = m->set->dev[i];
        uint64_t f = d->ops->inventory_fp(d, kn);
        fp = (fp ^ f) * 0x100000001b3ULL + (f ? i + 1 : 0);
    }
    bool devices_changed = fp != n->inv_fp || (!n->cards && !n->error && fp);
    bool cordon_changed = !str_eq(cordon, n->raw_cordon);
    if (!devices_changed && !cordon_changed)
        return VS_OK;
    if (!replace_str(&n->raw_cordon, cordon))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    n->inv_fp = fp;
    if (devices_changed) {
        /* The claims' holdings leave the old cards and are resolved again on the new ones. */
        dra_unapply_all(m);
        ctype_count(m, n, -1);
        enum vs_err err = node_load_devices(m, n, kn, eb);
        ctype_count(m, n, 1);
        if (!err)
            node_rebuild_usage(m, n);
        bool dra_ok = dra_reapply(m);
        if (err)
            return err;
        if (!dra_ok)
            return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    }
    if (node_apply_cordon(n))
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    node_bump(n);
    return VS_OK;
}

void vs_model_remove_node(struct vs_model *m, const char *name)
{
    struct vs_node *n = node_get(m, name, false);
    if (!n || !n->present)
        return;
    n->present = false;
    m->n_present--;
    dra_unapply_all(m);
    ctype_count(m, n, -1);
    node_clear_cards(m, n);
    free(n->raw_cordon);
    n->raw_cordon = NULL;
    n->inv_fp = 0;
    n->res.alloc_cpu = n->res.alloc_mem = n->res.alloc_eph = n->res.alloc_pods = -1;
    node_bump(n);
    node_gc(m, n);
    (void)dra_reapply(m); /* out of memory: a claim holds less until its next event */
}

/* ------------------------------------------------------------------ pods */

const struct vs_podent **vs_node_terminating(const struct vs_node *nd, size_t *n)
{
    size_t k = 0;
    for (const struct vs_podent *pe = nd->pods; pe; pe = pe->next)
        k += pe->terminating;
    const struct vs_podent **v = calloc(k ? k : 1, sizeof(*v));
    *n = 0;
    if (!v)
        return NULL;
    for (const struct vs_podent *pe = nd->pods; pe; pe = pe->next)
        if (pe->terminating)
            v[(*n)++] = pe;
    return v;
}

static const struct vs_kvlist no_labels;

const struct vs_kvlist *vs_podent_labels(const struct vs_podent *pe)
{
    return pe->labels ? &pe->labels->kv : &no_labels;
}

size_t vs_model_labelset_count(const struct vs_model *m)
{
    return HASH_COUNT(m->labelsets);
}

static bool kv_equal(const struct vs_kvlist *a, const struct vs_kvlist *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->items[i].key, b->items[i].key) || strcmp(a->items[i].val, b->items[i].val))
            return false;
    return true;
}

/* The shared set equal to `kv` (a new reference), made and interned when none exists yet;
 * NULL for no labels. *nomem is set when it could not be made. */
static struct vs_labelset *labels_get(struct vs_model *m, const struct vs_kvlist *kv, bool *nomem)
{
    if (!kv->n)
        return NULL;
    uint64_t h = VS_FNV_OFFSET;
    for (size_t i = 0; i < kv->n; i++) {
        h = vs_fnv(h, kv->items[i].key, strlen(kv->items[i].key) + 1);
        h = vs_fnv(h, kv->items[i].val, strlen(kv->items[i].val) + 1);
    }
    struct vs_labelset *ls = NULL;
    HASH_FIND(hh, m->labelsets, &h, sizeof(h), ls);
    if (ls && kv_equal(&ls->kv, kv)) {
        ls->refs++;
        return ls;
    }
    bool collides = ls != NULL;
    if (!(ls = calloc(1, sizeof(*ls))) || vs_kv_copy(&ls->kv, kv)) {
        if (ls)
            vs_kv_cleanup(&ls->kv);
        free(ls);
        *nomem = true;
        return NULL;
    }
    ls->hash = h;
    ls->refs = 1;
    if (!collides) {
        ls->interned = true;
        HASH_ADD(hh, m->labelsets, hash, sizeof(ls->hash), ls);
    }
    return ls;
}

static void labels_put(struct vs_model *m, struct vs_labelset *ls)
{
    if (!ls || --ls->refs)
        return;
    if (ls->interned)
        HASH_DEL(m->labelsets, ls);
    vs_kv_cleanup(&ls->kv);
    free(ls);
}

static void podent_free(struct vs_model *m, struct vs_podent *pe)
{
    vs_slab_put(m->slab, pe->uid);
    vs_slab_put(m->slab, pe->name);
    vs_slab_put(m->slab, pe->node);
    free(pe->error);
    labels_put(m, pe->labels);
    vs_mig_allocs_cleanup(&pe->mig);
    usage_release(m->slab, pe->usage, pe->n_usage);
    vs_slab_put(m->slab, pe);
}

static void ub_add(struct vs_model *m, struct vs_podent *pe)
{
    pe->ub_prev = NULL;
    pe->ub_next = m->unbound;
    if (m->unbound)
        m->unbound->ub_prev = pe;
    m->unbound = pe;
    pe->on_ub = true;
}

static void ub_del(struct vs_model *m, struct vs_podent *pe)
{
    if (!pe->on_ub)
        return;
    if (pe->ub_prev)
        pe->ub_prev->ub_next = pe->ub_next;
    else
        m->unbound = pe->ub_next;
    if (pe->ub_next)
        pe->ub_next->ub_prev = pe->ub_prev;
    pe->on_ub = false;
}

/* Unlinks a tracked pod from its node and the hash, undoing its usage, and frees it. */
static void pod_drop(struct vs_model *m, struct vs_podent *pe)
{
    struct vs_node *n = pe->on;
    apply_usage(m, pe, -1);
    if (n) {
        if (pe->prev)
            pe->prev->next = pe->next;
        else
            n->pods = pe->next;
        if (pe->next)
            pe->next->prev = pe->prev;
        n->n_pods--;
        if (pe->malformed)
            n->n_bad_pods--;
        if (n->has_mig || pe->mig.n)
            node_rebuild_mig(n);
    }
    if (pe->reservation)
        m->n_reservations--;
    ub_del(m, pe);
    ptab_del(&m->pidx, name_hash(pe->uid, strlen(pe->uid)), pe);
    podent_free(m, pe);
    node_gc(m, n);
}

/* Links a fully built entry into the hash and its node, applying its usage. */
static enum vs_err pod_link(struct vs_model *m, struct vs_podent *pe)
{
    struct vs_node *n = ptab_room(&m->pidx, 3, 4) ? node_get(m, pe->node, true) : NULL;
    if (!n)
        return VS_ERR_NOMEM;
    pe->on = n;
    pe->prev = NULL;
    pe->next = n->pods;
    if (n->pods)
        n->pods->prev = pe;
    n->pods = pe;
    n->n_pods++;
    if (pe->malformed)
        n->n_bad_pods++;
    ptab_add(&m->pidx, name_hash(pe->uid, strlen(pe->uid)), pe);
    if (pe->reservation)
        m->n_reservations++;
    if (!pe->bound && !pe->expired && pe->filtered_at > 0)
        ub_add(m, pe);
    apply_usage(m, pe, +1);
    if (n->has_mig || pe->mig.n)
        node_rebuild_mig(n);
    return VS_OK;
}

static struct vs_podent *podent_new(struct vs_model *m, const struct vs_pod *p, const char *node)
{
    struct vs_podent *pe = vs_slab_calloc(m->slab, sizeof(*pe));
    if (!pe)
        return NULL;
    pe->uid = vs_slab_strdup(m->slab, p->uid ? p->uid : "");
    /* The namespace's quota entry stays until the model is freed: its copy of the name is
     * shared by all the namespace's pods. */
    struct vs_quota *q = quota_for(m, p->ns ? p->ns : "", true);
    pe->ns = q ? q->ns : NULL;
    pe->name = vs_slab_strdup(m->slab, p->name ? p->name : "");
    pe->node = vs_slab_strdup(m->slab, node);
    pe->n_init = p->n_init;
    pe->priority = p->priority;
    pe->start_time = p->start_time;
    pe->terminating = p->deleting;
    bool nomem = false;
    pe->labels = labels_get(m, &p->labels, &nomem);
    if (!pe->uid || !pe->ns || !pe->name || !pe->node || nomem) {
        podent_free(m, pe);
        return NULL;
    }
    return pe;
}

static bool init_done(const struct vs_pod *p)
{
    if (p->n_init_status == 0)
        return false;
    for (size_t i = 0; i < p->n_init_status; i++)
        if (!p->init_status[i].terminated || p->init_status[i].exit_code != 0)
            return false;
    return true;
}

/* A fingerprint of the allocation values of every backend (values[i] NULL when absent): what
 * a tracked pod keeps of the annotations its usage was decoded from. 0 when all are absent. */
static uint64_t allocs_fp(const char *const *values, size_t n)
{
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++)
        if (values[i])
            h = (h ^ fingerprint(values[i])) * 0x100000001b3ULL + i + 1;
    return h;
}

/* Each backend's allocation annotation of p (NULL when absent), by backend id. */
static void alloc_values(const struct vs_model *m, const struct vs_pod *p, const char **out)
{
    for (size_t i = 0; i < m->set->n; i++) {
        const char *key = m->set->dev[i]->allocated_key;
        out[i] = key ? vs_kv_get(&p->annotations, key) : NULL;
    }
}

/* Tags pe's usage entries with the pod_tag of their backend (vs_device_ops.pod_tag) for pod p.
 * Returns whether a tag changed. */
static bool podent_tag(const struct vs_model *m, struct vs_podent *pe, const struct vs_pod *p)
{
    bool changed = false;
    for (size_t i = 0; i < pe->n_usage; i++) {
        struct vs_usage *u = &pe->usage[i];
        const struct vs_device *d = u->dev < m->set->n ? m->set->dev[u->dev] : NULL;
        uint8_t t = d && d->ops->pod_tag ? d->ops->pod_tag(d, p) & (VS_POD_TAGS - 1) : 0;
        changed |= u->tag != t;
        u->tag = t;
    }
    return changed;
}

/* Decodes every backend's allocation and the MIG annotation into pe; a malformed value marks
 * pe malformed. */
static enum vs_err podent_decode(struct vs_model *m, struct vs_podent *pe, const char *const *alloc,
                                 const char *mig)
{
    struct vs_errbuf e;
    enum vs_err err = VS_OK;
    pe->alloc_fp = allocs_fp(alloc, m->set->n);
    for (size_t i = 0; i < m->set->n && !err; i++) {
        if (!alloc[i])
            continue;
        struct vs_pod_devs devs = {0}; /* only the collapsed usage is kept */
        if ((err = vs_annot_parse_devices(m->set->dev[i]->allocated_key, alloc[i], &devs, &e))) {
            if (err == VS_ERR_NOMEM)
                return err;
            usage_release(m->slab, pe->usage, pe->n_usage);
            pe->usage = NULL;
            pe->n_usage = 0;
            pe->malformed = true;
            return (pe->error = strdup(e.msg)) ? VS_OK : VS_ERR_NOMEM;
        }
        struct vs_usage *u;
        size_t nu;
        err = collapse((uint16_t)i, &devs, pe->n_init, pe->released, m->slab, &u, &nu);
        vs_pod_devs_cleanup(&devs);
        if (!err && (err = usage_append(m->slab, &pe->usage, &pe->n_usage, u, nu)))
            usage_release(m->slab, u, nu);
    }
    if (err)
        return err;
    if (mig && (err = vs_annot_parse_mig(mig, &pe->mig, &e))) {
        /* HAMi ignores the whole annotation; the MIG cards it names then fail closed. */
        if (err == VS_ERR_NOMEM)
            return err;
    }
    return VS_OK;
}

enum vs_err vs_model_upsert_pod(struct vs_model *m, const struct vs_pod *p, struct vs_errbuf *eb)
{
    if (eb)
        eb->msg[0] = '\0';
    const char *node = vs_kv_get(&p->annotations, VS_ANNO_VGPU_NODE);
    if (!node || !*node || !p->uid || !*p->uid)
        return VS_OK;
    struct vs_podent *old = NULL;
    old = pidx_find(m, p->uid);
    if (strcmp(p->phase ? p->phase : "", "Succeeded") == 0 ||
        strcmp(p->phase ? p->phase : "", "Failed") == 0) {
        if (old)
            pod_drop(m, old);
        return VS_OK;
    }
    if (p->deleting && old) {
        old->terminating = true; /* usage kept until the delete event */
        return VS_OK;
    }
    const char *alloc[VS_MAX_DEVICES];
    alloc_values(m, p, alloc);
    const char *mig = vs_kv_get(&p->annotations, VS_ANNO_MIG_ALLOC);
    bool release = init_done(p) && p->n_init > 0;
    bool bound = p->node_name && *p->node_name;
    int64_t filtered_at = 0;
    const char *vt = vs_kv_get(&p->annotations, VS_ANNO_VGPU_TIME);
    if (vt) {
        char *end;
        long long t = strtoll(vt, &end, 10);
        if (!*end && end != vt && t > 0)
            filtered_at = t;
    }
    if (old) {
        bool same = old->alloc_fp == allocs_fp(alloc, m->set->n) && strcmp(old->node, node) == 0;
        if (old->reservation && !same)
            return VS_OK; /* our newer Filter decision wins until its patch is seen or expires */
        if (same && old->expired && !bound)
            return VS_OK; /* still not bound: stays expired */
        if (same && (old->released || !release) && old->bound == bound) {
            /* Labels may change after placement (kubectl label, a controller adopting the pod):
             * PodDisruptionBudgets select victims by them. */
            bool nomem = false;
            struct vs_labelset *labels = labels_get(m, &p->labels, &nomem);
            if (nomem)
                return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
            labels_put(m, old->labels);
            old->labels = labels;
            /* A backend's tag of the pod (its annotations) may change without its allocation. */
            if (podent_tag(m, old, p) && old->on)
                node_bump(old->on);
            old->priority = p->priority;
            old->start_time = p->start_time;
            if (old->reservation) {
                old->reservation = false;
                m->n_reservations--;
            }
            return VS_OK;
        }
    }
    struct vs_podent *pe = podent_new(m, p, node);
    if (!pe)
        return vs_err_set(eb, VS_ERR_NOMEM, "out of memory");
    pe->released = release;
    pe->bound = bound;
    pe->filtered_at = old && old->reservation ? old->filtered_at : filtered_at;
    enum vs_err err = podent_decode(m, pe, alloc, mig);
    if (err) {
        podent_free(m, pe);
        return vs_err_set(eb, err, "out of memory");
    }
    podent_tag(m, pe, p);
    if (pe->malformed)
        vs_err_set(eb, VS_ERR_PARSE, "pod %s/%s: %s", pe->ns, pe->name, pe->error);
    if (old)
        pod_drop(m, old);
    if ((err = pod_link(m, pe))) {
        podent_free(m, pe);
        return vs_err_set(eb, err, "out of memory");
    }
    return pe->malformed ? VS_ERR_PARSE : VS_OK;
}

void vs_model_remove_pod(struct vs_model *m, const char *uid)
{
    struct vs_podent *pe = NULL;
    pe = pidx_find(m, uid);
    if (pe)
        pod_drop(m, pe);
}

static enum vs_err mig_copy(struct vs_mig_allocs *dst, const struct vs_mig_allocs *src)
{
    memset(dst, 0, sizeof(*dst));
    if (!src || !src->n)
        return VS_OK;
    dst->items = calloc(src->n, sizeof(*dst->items));
    if (!dst->items)
        return VS_ERR_NOMEM;
    dst->n = src->n;
    for (size_t i = 0; i < src->n; i++) {
        dst->items[i] = src->items[i];
        dst->items[i].gpu_uuid = strdup(src->items[i].gpu_uuid);
        dst->items[i].profile = strdup(src->items[i].profile);
        dst->items[i].mig_uuid = strdup(src->items[i].mig_uuid ? src->items[i].mig_uuid : "");
        if (!dst->items[i].gpu_uuid || !dst->items[i].profile || !dst->items[i].mig_uuid)
            return VS_ERR_NOMEM;
    }
    return VS_OK;
}

enum vs_err vs_model_reserve(struct vs_model *m, const struct vs_pod *p, const char *node,
                             const struct vs_dev_alloc *allocs, size_t n,
                             const struct vs_mig_allocs *mig, int64_t now)
{
    struct vs_podent *pe = podent_new(m, p, node);
    if (!pe)
        return VS_ERR_NOMEM;
    pe->reservation = true;
    pe->resv_id = ++m->resv_seq;
    pe->filtered_at = now;
    /* The fingerprint of the annotations the decision's patch writes (each backend's allocated
     * value is the generic device list of its picks). */
    char *text[VS_MAX_DEVICES] = {0};
    bool formatted = true;
    for (size_t i = 0; i < n && formatted; i++)
        if (allocs[i].dev < m->set->n && m->set->dev[allocs[i].dev]->allocated_key)
            formatted = (text[allocs[i].dev] = vs_annot_format_devices(&allocs[i].devs)) != NULL;
    pe->alloc_fp = allocs_fp((const char *const *)text, m->set->n);
    for (size_t i = 0; i < m->set->n; i++)
        free(text[i]);
    if (!formatted || mig_copy(&pe->mig, mig) ||
        collapse_all(allocs, n, pe->n_init, false, m->slab, &pe->usage, &pe->n_usage)) {
        podent_free(m, pe);
        return VS_ERR_NOMEM;
    }
    podent_tag(m, pe, p);
    struct vs_podent *old = NULL;
    old = pidx_find(m, pe->uid);
    if (old)
        pod_drop(m, old);
    if (pod_link(m, pe)) {
        podent_free(m, pe);
        return VS_ERR_NOMEM;
    }
    return VS_OK;
}

size_t vs_model_expire(struct vs_model *m, int64_t now, int64_t ttl)
{
    return vs_model_expire_keep(m, now, ttl, NULL, NULL);
}

size_t vs_model_expire_keep(struct vs_model *m, int64_t now, int64_t ttl,
                            bool (*keep)(void *ctx, const struct vs_podent *pe), void *ctx)
{
    size_t dropped = 0;
    struct vs_podent *pe = m->unbound, *next;
    for (; pe; pe = next) {
        next = pe->ub_next;
        if (now - pe->filtered_at <= ttl || (keep && keep(ctx, pe)))
            continue;
        dropped++;
        if (pe->reservation) {
            pod_drop(m, pe);
            continue;
        }
        apply_usage(m, pe, -1);
        usage_release(m->slab, pe->usage, pe->n_usage);
        pe->usage = NULL;
        pe->n_usage = 0;
        pe->expired = true;
        ub_del(m, pe);
        if (pe->on && (pe->on->has_mig || pe->mig.n))
            node_rebuild_mig(pe->on);
    }
    return dropped;
}

/* ------------------------------------------------------------------ quotas */

static void quota_recompute(struct vs_model *m, const char *ns)
{
    struct vs_quota *q = quota_for(m, ns, true);
    if (!q)
        return;
    for (size_t d = 0; d < q->n; d++) {
        struct vs_quota_res *r = &q->res[d];
        r->has_mem = r->has_cores = false;
        r->mem_limit = r->cores_limit = 0;
        for (size_t i = 0; i < m->n_qobjs; i++) {
            const struct quota_obj *o = &m->qobjs[i];
            if (strcmp(o->ns, ns) != 0)
                continue;
            if (o->lim[d].has_mem && (!r->has_mem || o->lim[d].mem < r->mem_limit)) {
                r->has_mem = true;
                r->mem_limit = o->lim[d].mem;
            }
            if (o->lim[d].has_cores && (!r->has_cores || o->lim[d].cores < r->cores_limit)) {
                r->has_cores = true;
                r->cores_limit = o->lim[d].cores;
            }
        }
    }
}

static void qobj_free(struct quota_obj *o)
{
    free(o->ns);
    free(o->name);
    free(o->lim);
}

enum vs_err vs_model_set_quota(struct vs_model *m, const struct vs_kquota *kq)
{
    char key[256];
    struct quota_obj o = {0};
    if (!(o.lim = calloc(m->set->n ? m->set->n : 1, sizeof(*o.lim))))
        return VS_ERR_NOMEM;
    for (size_t d = 0; d < m->set->n; d++) {
        const struct vs_device *dev = m->set->dev[d];
        int64_t x, f = dev->mem_factor > 1 ? dev->mem_factor : 1;
        const char *v;
        if (dev->res_mem) {
            snprintf(key, sizeof(key), "limits.%s", dev->res_mem);
            if ((v = vs_kv_get(&kq->hard, key)) && vs_quantity_ceil(v, &x) == VS_OK) {
                o.lim[d].has_mem = true;
                o.lim[d].mem = x > INT64_MAX / f ? INT64_MAX : x * f;
            }
        }
        if (dev->res_cores) {
            snprintf(key, sizeof(key), "limits.%s", dev->res_cores);
            if ((v = vs_kv_get(&kq->hard, key)) && vs_quantity_ceil(v, &x) == VS_OK) {
                o.lim[d].has_cores = true;
                o.lim[d].cores = x;
            }
        }
    }
    vs_model_remove_quota(m, kq->ns, kq->name);
    struct quota_obj *g = realloc(m->qobjs, (m->n_qobjs + 1) * sizeof(*g));
    if (!g) {
        free(o.lim);
        return VS_ERR_NOMEM;
    }
    m->qobjs = g;
    o.ns = strdup(kq->ns);
    o.name = strdup(kq->name);
    if (!o.ns || !o.name) {
        qobj_free(&o);
        return VS_ERR_NOMEM;
    }
    m->qobjs[m->n_qobjs++] = o;
    quota_recompute(m, kq->ns);
    return VS_OK;
}

void vs_model_remove_quota(struct vs_model *m, const char *ns, const char *name)
{
    for (size_t i = 0; i < m->n_qobjs; i++) {
        if (strcmp(m->qobjs[i].ns, ns) == 0 && strcmp(m->qobjs[i].name, name) == 0) {
            qobj_free(&m->qobjs[i]);
            memmove(&m->qobjs[i], &m->qobjs[i + 1], (m->n_qobjs - i - 1) * sizeof(*m->qobjs));
            m->n_qobjs--;
            quota_recompute(m, ns);
            return;
        }
    }
}

/* ------------------------------------------------------------------ lookups */

/* ------------------------------------------------------------------ non-GPU resources */

static uint64_t res_key(const char *uid)
{
    uint64_t h = name_hash(uid, strlen(uid));
    return h ? h : 1;
}

static struct res_slot *res_find(const struct vs_model *m, uint64_t key)
{
    if (!m->res_cap)
        return NULL;
    size_t mask = m->res_cap - 1;
    for (size_t i = (size_t)key & mask;; i = (i + 1) & mask) {
        if (m->res[i].key == key)
            return &m->res[i];
        if (!m->res[i].key)
            return NULL;
    }
}

static void res_apply(struct vs_node *n, const struct res_slot *s, int sign)
{
    n->res.cpu += sign * s->cpu;
    n->res.mem += sign * s->mem;
    n->res.eph += sign * s->eph;
    n->res.nz_cpu += sign * s->nz_cpu;
    n->res.nz_mem += sign * s->nz_mem;
    n->res.pods += sign;
    n->gen++;
}

/* Removes slot i (backward-shift deletion, as idx_del). */
static void res_del(struct vs_model *m, size_t i)
{
    size_t mask = m->res_cap - 1;
    for (size_t j = (i + 1) & mask; m->res[j].key; j = (j + 1) & mask) {
        size_t home = (size_t)m->res[j].key & mask;
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            m->res[i] = m->res[j];
            i = j;
        }
    }
    memset(&m->res[i], 0, sizeof(m->res[i]));
    m->res_n--;
}

static bool res_grow(struct vs_model *m)
{
    if ((m->res_n + 1) * 4 <= m->res_cap * 3)
        return true;
    size_t cap = m->res_cap ? m->res_cap * 2 : 256;
    struct res_slot *tab = calloc(cap, sizeof(*tab));
    if (!tab)
        return false;
    for (size_t i = 0; i < m->res_cap; i++) {
        if (!m->res[i].key)
            continue;
        size_t j = (size_t)m->res[i].key & (cap - 1);
        while (tab[j].key)
            j = (j + 1) & (cap - 1);
        tab[j] = m->res[i];
    }
    free(m->res);
    m->res = tab;
    m->res_cap = cap;
    return true;
}

void vs_model_unaccount(struct vs_model *m, const char *uid)
{
    struct res_slot *s = res_find(m, res_key(uid));
    if (!s)
        return;
    struct vs_node *n = s->on;
    res_apply(n, s, -1);
    res_del(m, (size_t)(s - m->res));
    node_gc(m, n);
}

enum vs_err vs_model_account(struct vs_model *m, const char *uid, const char *node,
                             const struct vs_podres *r)
{
    if (!node || !*node) {
        vs_model_unaccount(m, uid);
        return VS_OK;
    }
    uint64_t key = res_key(uid);
    struct res_slot *s = res_find(m, key);
    struct vs_node *n = s && strcmp(s->on->name, node) == 0 ? s->on : node_get(m, node, true);
    if (!n)
        return VS_ERR_NOMEM;
    if (s) {
        struct vs_node *old = s->on;
        res_apply(old, s, -1);
        s->on = n;
        if (old != n)
            node_gc(m, old);
    } else {
        if (!res_grow(m)) {
            node_gc(m, n);
            return VS_ERR_NOMEM;
        }
        size_t mask = m->res_cap - 1, i = (size_t)key & mask;
        while (m->res[i].key)
            i = (i + 1) & mask;
        s = &m->res[i];
        s->key = key;
        s->on = n;
        m->res_n++;
    }
    s->cpu = r->cpu > INT32_MAX ? INT32_MAX : (int32_t)r->cpu;
    s->mem = r->mem;
    s->eph = r->eph;
    s->nz_cpu = r->nz_cpu > INT32_MAX ? INT32_MAX : (int32_t)r->nz_cpu;
    s->nz_mem = r->nz_mem;
    s->epoch = m->res_epoch;
    res_apply(n, s, +1);
    return VS_OK;
}

void vs_model_account_mark(struct vs_model *m)
{
    m->res_epoch++;
}

size_t vs_model_account_sweep(struct vs_model *m)
{
    size_t dropped = 0;
    for (size_t i = 0; i < m->res_cap;) {
        struct res_slot *s = &m->res[i];
        if (!s->key || s->epoch == m->res_epoch) {
            i++;
            continue;
        }
        /* res_del may shift a later entry into slot i: look at i again. */
        struct vs_node *n = s->on;
        res_apply(n, s, -1);
        res_del(m, i);
        node_gc(m, n);
        dropped++;
    }
    return dropped;
}

enum vs_err vs_model_account_pod(struct vs_model *m, const struct vs_pod *p, struct vs_errbuf *eb)
{
    if (eb)
        eb->msg[0] = '\0';
    if (!p->uid || !*p->uid)
        return VS_OK;
    const char *phase = p->phase ? p->phase : "";
    const char *node = p->node_name && *p->node_name
                           ? p->node_name
                           : vs_kv_get(&p->annotations, VS_ANNO_VGPU_NODE);
    if (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0 || !node || !*node) {
        vs_model_unaccount(m, p->uid);
        return VS_OK;
    }
    struct vs_podres r;
    struct vs_errbuf e;
    enum vs_err err = vs_podres_compute(p, &r, &e);
    if (err) {
        vs_model_unaccount(m, p->uid);
        return vs_err_set(eb, err, "pod %s/%s: %s", p->ns, p->name, e.msg);
    }
    return vs_model_account(m, p->uid, node, &r);
}

size_t vs_model_account_count(const struct vs_model *m)
{
    return m->res_n;
}

const struct vs_node *vs_model_node(const struct vs_model *m, const char *name)
{
    return idx_find(m, name);
}

void vs_model_nodes(const struct vs_model *m, const char *const *names, size_t n,
                    const struct vs_node **out)
{
    enum { BLOCK = 32 };
    uint64_t h[BLOCK];
    size_t mask = m->idx.cap ? m->idx.cap - 1 : 0;
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t k = n - b < BLOCK ? n - b : BLOCK;
        /* Hash a block and prefetch its slots, then probe: the slots' cache misses overlap. */
        for (size_t i = 0; i < k && m->idx.cap; i++) {
            h[i] = name_hash(names[b + i], strlen(names[b + i]));
            __builtin_prefetch(&m->idx.s[(size_t)h[i] & mask]);
        }
        for (size_t i = 0; i < k; i++) {
            out[b + i] = NULL;
            if (!m->idx.cap)
                continue;
            for (size_t j = (size_t)h[i] & mask; m->idx.s[j].p; j = (j + 1) & mask) {
                if (m->idx.s[j].h == h[i] &&
                    strcmp(((const struct vs_node *)m->idx.s[j].p)->name, names[b + i]) == 0) {
                    out[b + i] = m->idx.s[j].p;
                    break;
                }
            }
        }
    }
}

const struct vs_podent *vs_model_pod(const struct vs_model *m, const char *uid)
{
    return pidx_find(m, uid);
}

const struct vs_quota *vs_model_quota(const struct vs_model *m, const char *ns)
{
    struct vs_quota *q = NULL;
    HASH_FIND_STR(m->quotas, ns, q);
    return q;
}

static int node_ptr_cmp(const void *a, const void *b)
{
    return strcmp((*(struct vs_node *const *)a)->name, (*(struct vs_node *const *)b)->name);
}

void vs_model_each_node(const struct vs_model *m, void (*fn)(void *ctx, const struct vs_node *n),
                        void *ctx)
{
    size_t n = HASH_COUNT(m->nodes), k = 0;
    struct vs_node **v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return;
    struct vs_node *it, *tmp;
    HASH_ITER(hh, m->nodes, it, tmp)
    {
        if (it->present)
            v[k++] = it;
    }
    qsort(v, k, sizeof(*v), node_ptr_cmp);
    for (size_t i = 0; i < k; i++)
        fn(ctx, v[i]);
    free(v);
}

static int quota_ptr_cmp(const void *a, const void *b)
{
    return strcmp((*(struct vs_quota *const *)a)->ns, (*(struct vs_quota *const *)b)->ns);
}

void vs_model_each_quota(const struct vs_model *m, void (*fn)(void *ctx, const struct vs_quota *q),
                         void *ctx)
{
    size_t n = HASH_COUNT(m->quotas), k = 0;
    struct vs_quota **v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return;
    struct vs_quota *it, *tmp;
    HASH_ITER(hh, m->quotas, it, tmp)
    {
        v[k++] = it;
    }
    qsort(v, k, sizeof(*v), quota_ptr_cmp);
    for (size_t i = 0; i < k; i++)
        fn(ctx, v[i]);
    free(v);
}

void vs_model_each_pod(const struct vs_model *m, void (*fn)(void *ctx, const struct vs_podent *pe),
                       void *ctx)
{
    for (size_t i = 0; i < m->pidx.cap; i++)
        if (m->pidx.s[i].p)
            fn(ctx, m->pidx.s[i].p);
}

size_t vs_model_node_count(const struct vs_model *m)
{
    return m->n_present;
}

void vs_model_slab_stats(const struct vs_model *m, struct vs_slab_stats *out)
{
    vs_slab_stats(m->slab, out);
}

size_t vs_model_pod_count(const struct vs_model *m)
{
    return m->pidx.n;
}

/* ------------------------------------------------------------------ clone */

static bool clone_card(struct vs_model *m, struct vs_card *d, const struct vs_card *c)
{
    *d = *c;
    /* the cloned pods add theirs back to the DRA claims' part */
    d->used = c->dra_slots;
    d->usedmem = c->dra_mem;
    d->usedcores = c->dra_cores;
    d->occ = NULL;
    d->n_occ = 0;
    d->mig_unhealthy = false;
    d->profiles = NULL;
    d->n_profiles = 0;
    d->custom = json_incref(c->custom);
    d->type_id = ctype_id(m, c->type);
    d->mode = cmode(m, c->mode);
    d->dra_holders = NULL;
    if (!(d->uuid = strdup(c->uuid)) || d->type_id < 0 || !d->mode)
        return false;
    d->type = m->ctypes[d->type_id];
    if (c->dra_holders && !(d->dra_holders = strdup(c->dra_holders)))
        return false;
    if (c->n_profiles && !(d->profiles = calloc(c->n_profiles, sizeof(*d->profiles))))
        return false;
    for (size_t i = 0; i < c->n_profiles; i++) {
        const struct vs_mig_profile *sp = &c->profiles[i];
        struct vs_mig_profile *dp = &d->profiles[i];
        *dp = *sp;
        dp->name = NULL;
        dp->placements = NULL;
        d->n_profiles++;
        if ((sp->name && !(dp->name = strdup(sp->name))) ||
            (sp->n_placements &&
             !(dp->placements = malloc(sp->n_placements * sizeof(*dp->placements)))))
            return false;
        if (sp->n_placements)
            memcpy(dp->placements, sp->placements, sp->n_placements * sizeof(*dp->placements));
    }
    return true;
}

static bool clone_node(struct vs_model *m, const struct vs_model *src, const struct vs_node *n)
{
    struct vs_node *d = node_get(m, n->name, true);
    if (!d)
        return false;
    d->present = n->present;
    m->n_present += n->present;
    d->unschedulable = n->unschedulable;
    d->inv_fp = n->inv_fp;
    d->res = n->res; /* the accounted pods' sums: their entries are copied as they are */
    d->n_dra_holders = n->n_dra_holders;
    m->n_holder_nodes += n->dra_holders != NULL;
    if ((n->dra_holders && !(d->dra_holders = strdup(n->dra_holders))) ||
        (n->raw_cordon && !(d->raw_cordon = strdup(n->raw_cordon))) ||
        (n->error && !(d->error = strdup(n->error))))
        return false;
    if (n->n_cards && !(d->cards = calloc(n->n_cards, sizeof(*d->cards))))
        return false;
    for (size_t i = 0; i < n->n_cards; i++) {
        d->n_cards++;
        if (!clone_card(m, &d->cards[i], &n->cards[i]))
            return false;
    }
    d->has_mig = n->has_mig;
    size_t nc = n->n_cards;
    if (n->topo && nc) {
        if (!(d->topo = malloc(nc * nc * sizeof(*d->topo))))
            return false;
        memcpy(d->topo, n->topo, nc * nc * sizeof(*d->topo));
    }
    size_t nd = src->set->n;
    if (n->dev_error) {
        if (!(d->dev_error = calloc(nd, sizeof(*d->dev_error))))
            return false;
        for (size_t k = 0; k < nd; k++)
            if (n->dev_error[k] && !(d->dev_error[k] = strdup(n->dev_error[k])))
                return false;
    }
    if (n->dev_info) {
        if (!(d->dev_info = calloc(nd, sizeof(*d->dev_info))))
            return false;
        for (size_t k = 0; k < nd; k++)
            d->dev_info[k] = json_incref(n->dev_info[k]);
    }
    ctype_count(m, d, 1);
    return true;
}

static bool clone_pod(struct vs_model *m, const struct vs_podent *pe)
{
    struct vs_podent *d = vs_slab_calloc(m->slab, sizeof(*d));
    if (!d)
        return false;
    struct vs_quota *q = quota_for(m, pe->ns, true);
    bool nomem = false;
    d->uid = vs_slab_strdup(m->slab, pe->uid);
    d->ns = q ? q->ns : NULL;
    d->name = vs_slab_strdup(m->slab, pe->name);
    d->node = vs_slab_strdup(m->slab, pe->node);
    d->labels = labels_get(m, vs_podent_labels(pe), &nomem);
    d->error = pe->error ? strdup(pe->error) : NULL;
    if (!d->uid || !d->ns || !d->name || !d->node || nomem || (pe->error && !d->error) ||
        mig_copy(&d->mig, &pe->mig)) {
        podent_free(m, d);
        return false;
    }
    if (pe->n_usage) {
        d->usage = vs_slab_calloc(m->slab, pe->n_usage * sizeof(*d->usage));
        if (!d->usage) {
            podent_free(m, d);
            return false;
        }
        for (size_t i = 0; i < pe->n_usage; i++) {
            d->usage[i] = pe->usage[i];
            if (!(d->usage[i].uuid = vs_slab_strdup(m->slab, pe->usage[i].uuid))) {
                d->n_usage = i;
                podent_free(m, d);
                return false;
            }
        }
        d->n_usage = pe->n_usage;
    }
    d->n_init = pe->n_init;
    d->released = pe->released;
    d->malformed = pe->malformed;
    d->reservation = pe->reservation;
    d->bound = pe->bound;
    d->expired = pe->expired;
    d->filtered_at = pe->filtered_at;
    d->priority = pe->priority;
    d->terminating = pe->terminating;
    d->start_time = pe->start_time;
    d->alloc_fp = pe->alloc_fp;
    d->resv_id = pe->resv_id;
    if (pod_link(m, d)) {
        podent_free(m, d);
        return false;
    }
    return true;
}

struct vs_model *vs_model_clone(const struct vs_model *src)
{
    struct vs_model *m = vs_model_new(src->set);
    if (!m)
        return NULL;
    bool ok = true;
    for (const struct vs_node *n = src->nodes; ok && n; n = n->hh.next)
        ok = clone_node(m, src, n);
    for (size_t i = 0; ok && i < src->pidx.cap; i++)
        if (src->pidx.s[i].p)
            ok = clone_pod(m, src->pidx.s[i].p);
    m->resv_seq = src->resv_seq;
    if (ok && src->n_qobjs && !(m->qobjs = calloc(src->n_qobjs, sizeof(*m->qobjs))))
        ok = false;
    for (size_t i = 0; ok && i < src->n_qobjs; i++) {
        const struct quota_obj *o = &src->qobjs[i];
        struct quota_obj *d = &m->qobjs[m->n_qobjs];
        size_t nl = src->set->n ? src->set->n : 1;
        d->ns = strdup(o->ns);
        d->name = strdup(o->name);
        d->lim = malloc(nl * sizeof(*d->lim));
        m->n_qobjs++;
        if (!d->ns || !d->name || !d->lim)
            ok = false;
        else
            memcpy(d->lim, o->lim, nl * sizeof(*d->lim));
    }
    for (size_t i = 0; ok && i < m->n_qobjs; i++)
        quota_recompute(m, m->qobjs[i].ns);
    /* The accounted pods, their nodes found by name in the copy. */
    if (ok && src->res_cap && !(m->res = calloc(src->res_cap, sizeof(*m->res))))
        ok = false;
    if (ok && src->res_cap) {
        m->res_cap = src->res_cap;
        m->res_n = src->res_n;
        m->res_epoch = src->res_epoch;
        for (size_t i = 0; ok && i < src->res_cap; i++) {
            m->res[i] = src->res[i];
            if (src->res[i].key && src->res[i].on &&
                !(m->res[i].on = node_get(m, src->res[i].on->name, true)))
                ok = false;
        }
    }
    ok = ok && dra_clone(m, src);
    for (struct vs_node *n = m->nodes; ok && n; n = n->hh.next)
        node_bump(n);
    if (!ok) {
        vs_model_free(m);
        return NULL;
    }
    return m;
}

void vs_model_free(struct vs_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->pidx.cap; i++)
        if (m->pidx.s[i].p)
            podent_free(m, m->pidx.s[i].p);
    free(m->pidx.s);
    struct vs_node *n, *ntmp;
    HASH_ITER(hh, m->nodes, n, ntmp)
    {
        HASH_DEL(m->nodes, n);
        node_free(m, n);
    }
    free(m->idx.s);
    free(m->res);
    struct vs_quota *q, *qtmp;
    HASH_ITER(hh, m->quotas, q, qtmp)
    {
        HASH_DEL(m->quotas, q);
        free(q->ns);
        free(q->res);
        free(q);
    }
    for (size_t i = 0; i < m->n_qobjs; i++)
        qobj_free(&m->qobjs[i]);
    free(m->qobjs);
    for (size_t i = 0; i < m->n_ctypes; i++)
        free(m->ctypes[i]);
    free(m->ctypes);
    free(m->ctype_cards);
    for (size_t i = 0; i < m->n_cmodes; i++)
        free(m->cmodes[i]);
    free(m->cmodes);
    dra_free(m);
    vs_slab_free(m->slab);
    if (m->own_cfg) {
        vs_devcfg_cleanup(m->own_cfg);
        free(m->own_cfg);
    }
    free(m);
}
