/* dash_snap: the dashboard's copy of the model. vs_dash_snap_copy runs under the store's read
 * lock and only copies (nodes, cards, and with detail each pod's share of each card) into flat
 * arrays and one string arena; everything the dashboard derives (totals, the largest slice that
 * still fits, the fragmentation measure, a pending pod's nearest miss) is computed from the
 * copy afterwards, outside the lock, so a dashboard poll never holds the model longer than a
 * copy. Cards are read through one function (card_view in dash_snap.c), the place where a
 * card's vendor is decided. */
#ifndef VS_DASH_SNAP_H
#define VS_DASH_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "frag.h"
#include "model.h"
#include "pending.h"

enum vs_dash_state {
    VS_DASH_BOUND,       /* spec.nodeName set */
    VS_DASH_PLACED,      /* Filter's decision is on the pod, not bound yet */
    VS_DASH_RESERVED,    /* Filter reserved it here; the API has not shown the patch yet */
    VS_DASH_EXPIRED,     /* filtered long ago, never bound: its usage no longer counts */
    VS_DASH_TERMINATING, /* deletionTimestamp set: counted until it is gone */
    VS_DASH_MALFORMED    /* its allocation annotation does not decode: its node is fail-closed */
};
const char *vs_dash_state_name(enum vs_dash_state s);

/* One pod's share of one card. */
struct vs_dash_share {
    uint32_t pod; /* index into vs_dash_snap.pods */
    int64_t mem, cores, slots;
};

struct vs_dash_card {
    const char *uuid, *type, *mode, *vendor;
    uint32_t index;
    int32_t numa, count, devmem, devcore;
    bool health, cordoned, is_mig, mig_unhealthy;
    int64_t used, usedmem, usedcores;
    uint32_t first_share, n_shares; /* into shares (detail only) */
};

struct vs_dash_node {
    const char *name;
    const char *error; /* why its devices are unusable, NULL when fine (or unregistered) */
    bool registered;   /* it carries hami.io/node-nvidia-register (a GPU node) */
    bool unschedulable;
    uint32_t n_cards;    /* registered cards (whether copied or not) */
    uint32_t first_card; /* into cards, when cards were copied */
    uint32_t n_copied;   /* cards copied: n_cards, or only the unusable ones, or 0 */
    uint32_t n_pods;     /* tracked GPU pods on it */
    uint32_t cards_used, cards_unusable;
    /* sums over its cards, as /metrics' hami_gpu_* gauges */
    int64_t mem_total, mem_used, cores_total, cores_used, slots_total, slots_used;
    /* allocatable cpu (milli) and memory (bytes), -1 when unknown; requests of its pods */
    int64_t alloc_cpu, alloc_mem, cpu, mem;
};

struct vs_dash_pod {
    const char *ns, *name, *uid;
    const char *node_name;
    uint32_t node; /* index into nodes (UINT32_MAX: not copied) */
    enum vs_dash_state state;
    int32_t priority;
    int64_t filtered_at; /* unix seconds, 0 = unknown */
};

struct vs_dash_ns {
    const char *ns;
    bool has_mem, has_cores;
    int64_t mem_limit, cores_limit; /* MiB (memoryFactor applied), percent */
    int64_t mem_used, cores_used;
    int64_t pods; /* tracked GPU pods; -1 when not counted (snapshot without detail) */
};

/* A string arena: copies live until vs_dash_arena_free (never moved). */
struct vs_dash_arena;
struct vs_dash_arena *vs_dash_arena_new(void);                         /* NULL: out of memory */
const char *vs_dash_arena_dup(struct vs_dash_arena *a, const char *s); /* NULL: out of memory */
void vs_dash_arena_free(struct vs_dash_arena *a);

struct vs_dash_snap {
    uint64_t version;
    int64_t taken_at;           /* unix seconds */
    bool detail;                /* pods and shares were copied */
    struct vs_dash_node *nodes; /* name order */
    size_t n_nodes;
    struct vs_dash_card *cards;
    size_t n_cards;
    struct vs_dash_share *shares;
    size_t n_shares;
    struct vs_dash_pod *pods;
    size_t n_pods;
    struct vs_dash_ns *nss; /* namespace order */
    size_t n_nss;
    size_t tracked_pods; /* tracked GPU pods in the whole model */
    size_t cap_nodes, cap_cards, cap_shares, cap_pods, cap_nss;
    struct vs_dash_arena *arena;
};

enum vs_dash_cards {
    VS_DASH_CARDS_ALL,     /* every card */
    VS_DASH_CARDS_DETAIL,  /* every card when detail applies, else none (the node sums only) */
    VS_DASH_CARDS_UNUSABLE /* only the unusable cards (unhealthy, cordoned, MIG bookkeeping) */
};

struct vs_dash_copy_opts {
    /* Copy every pod's share of every card when the model has at most this many nodes with a
     * Node object (0: never). */
    size_t detail_max_nodes;
    enum vs_dash_cards cards;
    /* Copy only this node (with detail, whatever its size); NULL: every node. */
    const char *only_node;
};

/* The copy; call under the model's read lock. version and now are recorded as given. Free
 * with vs_dash_snap_free. VS_ERR_NOMEM only. */
enum vs_err vs_dash_snap_copy(const struct vs_model *m, const struct vs_dash_copy_opts *o,
                              uint64_t version, int64_t now, struct vs_dash_snap **out);
void vs_dash_snap_free(struct vs_dash_snap *s);

/* The node named name, or -1 (binary search: nodes are in name order). */
long vs_dash_snap_find(const struct vs_dash_snap *s, const char *name);

struct vs_dash_totals {
    size_t nodes, gpu_nodes, cards, cards_used, cards_idle, unusable_cards;
    int64_t mem_total, mem_used, cores_total, cores_used, slots_total, slots_used;
};
/* Sums over every card (as /metrics' hami_gpu_* gauges add up), from the nodes' sums: right
 * whether the cards were copied or not. */
void vs_dash_totals(const struct vs_dash_snap *s, struct vs_dash_totals *t);

/* A card the scheduler may hand out: healthy, not cordoned, MIG bookkeeping sound. */
bool vs_dash_card_usable(const struct vs_dash_card *c);

/* The largest one-card slice that still fits on node i: the usable card with a free slot and
 * the most free memory (then the most free cores). False when no card has room. The functions
 * below read cards: take the copy with VS_DASH_CARDS_ALL. */
bool vs_dash_largest_slice(const struct vs_dash_snap *s, size_t i, size_t *card, int64_t *mem,
                           int64_t *cores);

/* The fragmentation measure (frag.h) of node i under x's workload: its idle capacity in cards
 * and the part of it no shape of the workload can use (stranded). False (both unset) when the
 * measure does not apply: no workload seen yet (x->k == 0), or more cards than it takes. */
bool vs_dash_frag_node(const struct vs_dash_snap *s, struct vs_frag_ctx *x, size_t i, double *idle,
                       double *stranded);

/* A refused pod's nearest miss: the node and card short of the least (memory and cores in
 * shares of the card, a missing slot as a whole card), among the usable cards of an accepted
 * type on the nodes of its last Filter's per-node detail (every node when the detail was cut
 * or there is none). Only capacity is weighed: a node whose best cards have room refused the
 * pod for another reason and is skipped. */
struct vs_dash_miss {
    size_t node, card;  /* indices into the snapshot */
    int64_t mem, cores; /* MiB and percent the card lacks (0: enough) */
    bool slot;          /* the card has no free slot */
    char text[256];     /* e.g. "node-7 card 2 lacks 1.5 GiB" */
};
bool vs_dash_nearest_miss(const struct vs_dash_snap *s, const struct vs_pending_entry *e,
                          struct vs_dash_miss *out);

/* Memory for people: "512 MiB", "1.5 GiB", "40 GiB". */
void vs_dash_format_mib(int64_t mib, char *out, size_t len);

/* Pods whose namespace or name contains q (ASCII case-insensitive), at most max, in the
 * model's order; call under the read lock. *more is set when there were more. Free with
 * vs_dash_snap_free. */
enum vs_err vs_dash_find_pods(const struct vs_model *m, const char *q, size_t max,
                              struct vs_dash_snap **out, bool *more);

/* One tracked pod by UID with its usage per card (a snapshot holding its node, its cards, the
 * pod and its shares); *found false when the model does not track it. Under the read lock. */
enum vs_err vs_dash_pod_copy(const struct vs_model *m, const char *uid, uint64_t version,
                             int64_t now, struct vs_dash_snap **out, bool *found);

#endif
