/* policy: the node policies (binpack, spread) and card policies (spread, binpack,
 * topology-aware, numa, mutex) of spec/hami-compat.md §5, and our `fragmentation` (both kinds),
 * each defined in its own file under policies/ and registered in one table here. Names match
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

struct vs_card_policy {
    const char *name;
    enum vs_card_policy_kind kind;
    /* Chain key: <0 when a sorts before b (is tried later), 0 when equal under this key. */
    int (*key_cmp)(const struct vs_scard *a, const struct vs_scard *b);
    /* Order when this policy is the whole (single-word) policy; NULL = use key_cmp then NUMA. */
    int (*single_cmp)(const struct vs_scard *a, const struct vs_scard *b, bool numa_bind);
    /* Selection: whether a card is eligible at all (NULL = all). */
    bool (*eligible)(const struct vs_scard *c);
};

extern const struct vs_card_policy vs_card_policy_spread;
extern const struct vs_card_policy vs_card_policy_binpack;
extern const struct vs_card_policy vs_card_policy_numa;
extern const struct vs_card_policy vs_card_policy_mutex;
extern const struct vs_card_policy vs_card_policy_topology;
extern const struct vs_card_policy vs_card_policy_fragmentation;

/* Topology-aware subset choice (§5.4): from n collected cards (in collection order) choose
 * `nums` of them; writes their indices (into the collected array) to out in output order. */
void vs_topology_select(const struct vs_scard *const *collected, size_t n, size_t nums,
                        const int64_t *topo, size_t n_cards, size_t *out);

/* A parsed hami.io/gpu-scheduler-policy value. */
#define VS_MAX_KEYS 3
struct vs_gpu_policy {
    bool chain; /* comma list or "numa": compare by keys, then card index */
    const struct vs_card_policy *keys[VS_MAX_KEYS];
    size_t n_keys;
    const struct vs_card_policy *single; /* the one word when !chain */
    bool topology;
    bool mutex;
};

/* Parses a policy string; `key` names the source in errors (annotation key or flag name).
 * Error: `invalid <key> "<val>": unknown policy "<word>" (want binpack, spread, ...)`. */
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
};

extern const struct vs_node_policy vs_node_policy_binpack;
extern const struct vs_node_policy vs_node_policy_spread;
/* Scored by the growth of the node's fragmentation (policies/fragmentation.h), not by the
 * node score: vs_sched handles it; `better` compares the node score as a tie-break. */
extern const struct vs_node_policy vs_node_policy_fragmentation;

enum vs_err vs_policy_parse_node(const char *val, const char *key,
                                 const struct vs_node_policy **out, struct vs_errbuf *eb);

#endif
