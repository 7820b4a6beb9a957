/* policy: the interface node and card policies implement (spec/hami-compat.md §5: binpack,
 * spread, topology-aware, numa, mutex; our `fragmentation`) and the parsing of policy names and
 * HAMi's comma chains. Each policy is a plug-in under policies/, listed in that folder's
 * registry (policies/registry.c defines vs_card_policies and vs_node_policies); the core knows a
 * policy only through the fields below, never by name or identity. Names match
 * case-insensitively; an unknown name is an error carrying the name (never a silent fallback). */
#ifndef VS_POLICY_H
#define VS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "model.h"

/* A card as one Filter evaluation sees it: registration plus usage that already includes the
 * earlier containers of the pod being placed. */
struct vs_scard {
    const struct vs_card *c;
    int64_t used;
    int64_t usedmem;
    int64_t usedcores;
    float score;
    double frag;                  /* fragmentation growth of one instance here (policy
                                   * `fragmentation`, set by the caller) */
    bool unhealthy;               /* MIG bookkeeping fail-closed */
    struct vs_mig_placement *occ; /* occupied placements (owned by the evaluation) */
    size_t n_occ;
    size_t cap_occ;
    size_t pos; /* index in the node's card array (topology matrix row) */
};

/* ---- card policies ---- */

enum vs_card_policy_kind {
    VS_CARD_SORT,   /* a sort key usable in a chain: binpack, spread, numa */
    VS_CARD_SELECT, /* a selection mode: topology-aware, mutex */
};

/* How a card policy orders shares by usage (vs_gpu_policy_spreads). */
enum vs_card_usage {
    VS_USAGE_NONE,   /* not by usage (numa, mutex, fragmentation) */
    VS_USAGE_SPREAD, /* the least used card first (spread; topology-aware alone) */
    VS_USAGE_PACK,   /* the most used card first (binpack) */
};

/* Topology-aware subset choice (§5.4): from n collected cards (in collection order) choose
 * `nums` of them; writes their indices (into the collected array) to out in output order. */
struct vs_scard;
typedef void (*vs_card_subset_fn)(const struct vs_scard *const *collected, size_t n, size_t nums,
                                  const int64_t *topo, size_t n_cards, size_t *out);

struct vs_card_policy {
    const char *name;
    enum vs_card_policy_kind kind;
    enum vs_card_usage usage;
    bool numa;          /* the NUMA key: one word alone is still a chain; numa-bind puts it first */
    bool exclusive;     /* a card some pod uses is not eligible (mutex) */
    bool fragmentation; /* ordered by the growth of the fragmentation measure (frag.h): the
                         * evaluation fills vs_scard.frag for it */
    vs_card_subset_fn subset; /* a selection mode that collects every fitting card, then picks a
                               * subset (topology-aware); NULL = first fitting cards in order */
    /* Chain key: <0 when a sorts before b (is tried later), 0 when equal under this key. */
    int (*key_cmp)(const struct vs_scard *a, const struct vs_scard *b);
    /* Order when this policy is the whole (single-word) policy; NULL = use key_cmp then NUMA. */
    int (*single_cmp)(const struct vs_scard *a, const struct vs_scard *b, bool numa_bind);
    /* Selection: whether a card is eligible at all (NULL = all). */
    bool (*eligible)(const struct vs_scard *c);
};

/* The registry (policies/registry.c): every card policy, in the order error messages list them. */
extern const struct vs_card_policy *const vs_card_policies[];
extern const size_t vs_n_card_policies;

/* Lower score sorts first (binpack: the highest score is tried first). */
static inline int vs_cmp_score_asc(const struct vs_scard *a, const struct vs_scard *b)
{
    return a->score < b->score ? -1 : (a->score > b->score ? 1 : 0);
}

/* Lower NUMA id sorts first. */
static inline int vs_cmp_numa_asc(const struct vs_scard *a, const struct vs_scard *b)
{
    return a->c->numa < b->c->numa ? -1 : (a->c->numa > b->c->numa ? 1 : 0);
}

/* A parsed hami.io/gpu-scheduler-policy value. */
#define VS_MAX_KEYS 3
struct vs_gpu_policy {
    bool chain; /* comma list or "numa": compare by keys, then card index */
    const struct vs_card_policy *keys[VS_MAX_KEYS];
    size_t n_keys;
    const struct vs_card_policy *single; /* the one word when !chain */
    bool topology;                       /* some word selects a subset: `subset` is its function */
    vs_card_subset_fn subset;
    bool mutex;         /* some word is exclusive */
    bool fragmentation; /* some word orders by the fragmentation measure */
};

/* Parses a policy string; `key` names the source in errors (annotation key or flag name).
 * Error: `invalid <key> "<val>": unknown policy "<word>" (want binpack, spread, ...)`, listing
 * every card policy of the registry in its order. */
enum vs_err vs_policy_parse_gpu(const char *val, const char *key, struct vs_gpu_policy *out,
                                struct vs_errbuf *eb);
/* Whether the policy puts a share on the least used card first: `spread` or `topology-aware`
 * alone, or a chain whose first usage key (spread or binpack) is spread. */
bool vs_gpu_policy_spreads(const struct vs_gpu_policy *p);
/* Orders two cards for Fit (sort ascending; Fit walks from the end): <0 when a sorts first. */
int vs_policy_card_cmp(const struct vs_gpu_policy *p, bool numa_bind, const struct vs_scard *a,
                       const struct vs_scard *b);

/* ---- node policies ---- */

struct vs_node_policy {
    const char *name;
    /* true when score a is strictly better than score b */
    bool (*better)(float a, float b);
    /* Scored by the growth of the node's fragmentation (frag.h), not by the node score:
     * vs_sched measures it; `better` compares the node score as a tie-break. */
    bool fragmentation;
};

/* The registry (policies/registry.c): every node policy, in the order error messages list them. */
extern const struct vs_node_policy *const vs_node_policies[];
extern const size_t vs_n_node_policies;

/* Error: `invalid <key> "<val>": unknown policy "<word>" (want binpack, spread or ...)`,
 * listing every node policy of the registry in its order. */
enum vs_err vs_policy_parse_node(const char *val, const char *key,
                                 const struct vs_node_policy **out, struct vs_errbuf *eb);

#endif
