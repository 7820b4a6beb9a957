/* model: the cluster as the scheduler sees it — nodes with their cards, and every tracked pod's
 * collapsed per-card usage — kept current incrementally from events (node upsert/remove, pod
 * upsert/remove, Filter reservations). Per-card counters are always the sum of the tracked pods
 * on that node, so a Filter reads O(cards) per candidate and never rescans the cluster.
 *
 * Locking: the model itself is not thread-safe. The owner (store) wraps it in a rwlock: event
 * application and commits take the write lock, Filter evaluation the read lock. `gen` fields
 * let a commit detect that what a Filter read has changed in between. */
#ifndef VS_MODEL_H
#define VS_MODEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "annot.h"
#include "device.h"
#include "dra.h"
#include "err.h"
#include "kobj.h"
#include "podres.h"

#include <uthash.h>

struct vs_podent;
struct vs_frag_memo; /* frag.h */

/* A tracked pod's labels, interned: every tracked pod with the same labels in the same order
 * (the replicas of one Deployment, as the API server writes them sorted) shares one immutable
 * set, counted by refs. Changed only under the model's write lock. A set whose hash collides
 * with a different interned set stays private (not in the table). */
struct vs_labelset {
    struct vs_kvlist kv;
    uint64_t hash;
    size_t refs;
    bool interned;
    UT_hash_handle hh; /* model-private: interned sets by hash */
};

/* An occupied MIG placement on a card and the pod holding it. */
struct vs_mig_occ {
    struct vs_mig_placement placement;
    const struct vs_podent *owner;
};

struct vs_card {
    /* registration (from the backend's inventory: hami.io/node-nvidia-register, ...) */
    uint16_t dev; /* the backend that registered it (vs_device.id) */
    bool cand;    /* a candidate for its backend's requests (vs_device_ops.candidate) */
    char *uuid;
    const char *type; /* the model's copy, one per type (vs_model_card_types) */
    const char *mode; /* the model's copy, one per mode */
    int32_t type_id;  /* index of type in vs_model_card_types, -1 if none (out of memory) */
    uint32_t index;
    int32_t numa;
    int32_t count;
    int32_t devmem;
    int32_t devcore;
    bool health;
    bool is_mig;
    bool cordoned;
    json_t *custom;                  /* custominfo (vendor facts), NULL when none */
    struct vs_mig_profile *profiles; /* sorted by (memoryMB, sliceCount) for profile choice */
    size_t n_profiles;
    /* usage: sums over the tracked pods of this node and the DRA claims on the card */
    int64_t used;
    int64_t usedmem;
    int64_t usedcores;
    /* the part of used/usedmem/usedcores that DRA claims hold (vs_model_set_claim) */
    int64_t dra_slots, dra_mem, dra_cores;
    /* MIG occupancy, rebuilt for the node whenever one of its pods changes */
    struct vs_mig_occ *occ;
    size_t n_occ;
    bool mig_unhealthy; /* fail-closed: MIG bookkeeping of some pod does not add up */
};

/* One card's share of a pod's collapsed usage (spec §3.2 step 5), per backend. */
struct vs_usage {
    uint16_t dev; /* the backend whose annotation it came from */
    uint8_t tag;  /* the backend's pod_tag of the pod (vs_device_ops.pod_tag), 0 without one */
    char *uuid;
    int64_t mem;
    int64_t cores;
    int64_t slots;
};

struct vs_podent {
    char *uid;
    const char *ns; /* the namespace's quota entry's (vs_quota.ns) */
    char *name;
    char *node; /* from hami.io/vgpu-node */
    size_t n_init;
    struct vs_mig_allocs mig;
    struct vs_usage *usage; /* collapsed; what is counted on the cards */
    size_t n_usage;
    bool released;       /* init containers finished: only the app part is counted */
    bool malformed;      /* allocation annotation unusable: node is fail-closed */
    char *error;         /* why malformed */
    bool reservation;    /* made by Filter here, not yet confirmed by an API event */
    bool bound;          /* spec.nodeName is set */
    bool expired;        /* filtered long ago and never bound: usage no longer counted */
    int64_t filtered_at; /* hami.io/vgpu-time (or the reservation time); 0 = unknown */
    int32_t priority;    /* spec.priority: who may preempt this pod */
    bool terminating;    /* deletionTimestamp set: still counted, never a preemption victim */
    int64_t start_time;  /* status.startTime (Unix seconds, 0 = unknown) */
    struct vs_labelset *labels;          /* for PodDisruptionBudget selectors; NULL = none */
    struct vs_podent *ub_prev, *ub_next; /* list of unbound pods that may expire */
    bool on_ub;
    struct vs_node *on;            /* node entry the usage is applied to */
    struct vs_podent *prev, *next; /* list of pods on `on` */
    uint64_t alloc_fp; /* vs_model_alloc_fp of the allocation string the usage came from */
    uint64_t resv_id;  /* which vs_model_reserve made it (unique in the model; 0: from the API):
                        * a failed patch of an earlier, identical decision must not drop it */
};

struct vs_node {
    /* Cold: read when the node or its pods change. */
    bool unschedulable; /* spec.unschedulable */
    /* Fingerprint of everything the backends' inventories read (vs_device_ops.inventory_fp;
     * 0 = nothing), to skip re-parsing unchanged annotations without keeping a copy of each. */
    uint64_t inv_fp;
    /* Per backend (vs_device.id), NULL unless some backend has one: why its inventory failed
     * (the node is then unusable for that backend's requests), and its node-level facts. */
    char **dev_error;
    json_t **dev_info;
    char *raw_cordon;
    /* The DRA claims holding some of this node's cards, "ns/name" in byte order joined with
     * ", "; NULL when none. n_dra_holders: how many. */
    char *dra_holders;
    size_t n_dra_holders;
    int64_t *topo; /* n_cards x n_cards pair scores, topo[i*n+j] = cards[i] toward cards[j];
                    * NULL when the node has no score annotation (all pairs 0) */
    struct vs_podent *pods;
    size_t n_pods;
    UT_hash_handle hh; /* model-private: nodes by name */
    /* Hot: what Filter reads for every candidate, together and right before the name (stored
     * just after the struct), so a lookup and the evaluation share a few cache lines. */
    char *name;
    bool present; /* a Node object exists (else only a bucket for pods naming it) */
    bool has_mig; /* some card is in mig mode */
    size_t n_cards;
    size_t n_bad_pods;     /* pods here with a malformed allocation */
    char *error;           /* the first backend's inventory error (dev_error), NULL if none */
    struct vs_card *cards; /* register annotation order */
    uint64_t gen;          /* bumped on every change of this node's cards or usage */
    /* Policy fragmentation's sums over the cards for (gen, shape set), made on first use by a
     * Filter under the read lock (atomic pointer, try-locked inside); freed with the node. */
    struct vs_frag_memo *_Atomic frag_memo;
    /* Sums over the cards, refreshed with every gen bump: the node score's inputs (§5.1). */
    struct vs_node_sums {
        int64_t used, count, usedcores, devcore, usedmem, devmem;
    } sums;
    /* kube-scheduler's view of the node's other resources (NodeResourcesFit); see
     * vs_model_account. Policies may read it; changes bump gen. */
    struct vs_node_res {
        /* status.allocatable: cpu in millicores, memory and ephemeral-storage in bytes, pods.
         * A resource the Node object does not list is -1 and is not checked (hand-written
         * cluster files; kubelet always reports all four). */
        int64_t alloc_cpu, alloc_mem, alloc_eph, alloc_pods;
        /* Sums over every pod counted on this node, GPU or not (vs_podres): requests, the
         * non-zero requests least-allocated scoring uses, and the number of pods. */
        int64_t cpu, mem, eph, nz_cpu, nz_mem, pods;
    } res;
};

/* One backend's quota in a namespace: limits.<memory resource>, limits.<core resource>. */
struct vs_quota_res {
    bool has_mem, has_cores;
    int64_t mem_limit; /* already multiplied by the backend's memory factor */
    int64_t cores_limit;
    int64_t mem_used;
    int64_t cores_used;
};

struct vs_quota {
    char *ns;
    struct vs_quota_res *res; /* one per backend (vs_device.id) */
    size_t n;
    UT_hash_handle hh; /* model-private: quotas by namespace */
};

struct vs_model;

/* A model of the cluster for the backends of set (borrowed: it must outlive the model; NULL =
 * HAMi's default configuration, made and owned by the model). Returns NULL on OOM. */
struct vs_model *vs_model_new(const struct vs_devices *set);
/* A deep copy of src (every node, card, tracked pod, quota and accounted request; src's
 * backends are shared, borrowed as src borrows them). NULL when out of memory. For a private
 * what-if: the copy can be changed and freed without src. */
struct vs_model *vs_model_clone(const struct vs_model *src);
/* The backends the model was made for. */
const struct vs_devices *vs_model_devices(const struct vs_model *m);
void vs_model_free(struct vs_model *m);

/* Applies a Node add/update: parses register, score and cordon annotations only when they
 * changed; a malformed one makes the node unusable with a reason (vs_node.error) and is logged
 * by the caller from the returned message. Usage of pods on the node is re-applied to the new
 * card list. Returns VS_ERR_NOMEM only; a parse problem is VS_OK with node->error set. */
enum vs_err vs_model_upsert_node(struct vs_model *m, const struct vs_knode *kn,
                                 struct vs_errbuf *eb);
void vs_model_remove_node(struct vs_model *m, const char *name);

/* Applies a Pod add/update with HAMi's tracking rules (spec §3.2): pods without
 * hami.io/vgpu-node are ignored, terminal pods removed, terminating pods counted until their
 * delete event (also when first seen terminating, unlike HAMi: their containers hold the card
 * for the grace period),
 * malformed allocations tracked as `malformed` (their node becomes unusable with a reason, never
 * silently under-counted), init usage released when every init container exited 0. */
enum vs_err vs_model_upsert_pod(struct vs_model *m, const struct vs_pod *p, struct vs_errbuf *eb);
void vs_model_remove_pod(struct vs_model *m, const char *uid);

/* The DRA ledger (resource.k8s.io/v1). A claim's allocated result names (driver, pool, device);
 * the ResourceSlice of that driver and pool listing the device gives its node and its uuid (or
 * parentUUID); the card with that id on that node, of any backend, holds the result: the whole
 * card (all slots, memory and cores) without a shareID, else one slot with the consumed memory
 * and cores (the whole card when it consumes neither). adminAccess results and results no
 * slice or card resolves hold nothing. What each claim adds is kept, so removing or changing it
 * takes away exactly that; a slice change or a node's new card list applies every claim again.
 *
 * vs_model_set_slice / vs_model_set_claim take *s / *c over (zeroed; on error untouched).
 * Return VS_ERR_NOMEM only. */
enum vs_err vs_model_set_slice(struct vs_model *m, struct vs_dra_slice *s);
void vs_model_remove_slice(struct vs_model *m, const char *name);
enum vs_err vs_model_set_claim(struct vs_model *m, struct vs_dra_claim *c);
void vs_model_remove_claim(struct vs_model *m, const char *uid);
/* Visits every slice's name and every claim's uid (fn may be NULL); they must not change the
 * model. */
void vs_model_each_dra(const struct vs_model *m, void (*slice)(void *ctx, const char *name),
                       void (*claim)(void *ctx, const char *uid), void *ctx);
/* Visits every device of a node-local slice on `node` whose uuid (by_parent false) or, failing
 * that, parentUUID (by_parent true) is `uuid`, in no particular order. fn must not change the
 * model. Claims labelled as mirrors (vs_dra_claim.mirror_of) are never in the ledger:
 * vs_model_set_claim drops them (and what an earlier version of the claim held). */
void vs_model_dra_devices(const struct vs_model *m, const char *node, const char *uuid,
                          void (*fn)(void *ctx, const struct vs_dra_slice *s,
                                     const struct vs_dra_slice_dev *d, bool by_parent),
                          void *ctx);
/* How many slices and claims the ledger has, and how many claim results hold a card. */
void vs_model_dra_counts(const struct vs_model *m, size_t *slices, size_t *claims, size_t *held);

/* One backend's picks for a pod: one entry per container, init containers first. */
struct vs_dev_alloc {
    uint16_t dev;
    struct vs_pod_devs devs;
};

/* Records a Filter decision: replaces any entry for the pod's UID with the picks of each
 * backend (n allocs) on node, with MIG allocations mig (may be NULL). Takes copies. */
enum vs_err vs_model_reserve(struct vs_model *m, const struct vs_pod *p, const char *node,
                             const struct vs_dev_alloc *allocs, size_t n,
                             const struct vs_mig_allocs *mig, int64_t now);
void vs_dev_allocs_free(struct vs_dev_alloc *a, size_t n);
/* Pods filtered more than ttl seconds ago that are still not bound stop counting: an
 * unconfirmed reservation is dropped, an annotated pod is marked expired (its usage counts again
 * only if it gets bound or re-filtered). Returns how many expired. Costs O(unbound pods). */
size_t vs_model_expire(struct vs_model *m, int64_t now, int64_t ttl);

/* ResourceQuota spec.hard for one namespace/name: limits.<memory and core resource of every
 * backend> (spec/hami-vendors.md §1.13); quotas of a namespace combine by taking the smallest
 * limit per resource. */
enum vs_err vs_model_set_quota(struct vs_model *m, const struct vs_kquota *q);
void vs_model_remove_quota(struct vs_model *m, const char *ns, const char *name);

/* Non-GPU resources (kube-scheduler's NodeResourcesFit view, vs_node.res).
 *
 * vs_model_account counts pod uid's request r on node (created as a bucket if unknown),
 * replacing what the same uid counted before; node NULL or "" counts it nowhere (same as
 * vs_model_unaccount). Every pod that is on a node and neither Succeeded nor Failed should be
 * counted, GPU or not. A request's cpu above INT32_MAX millicores counts as that much. Entries are
 * keyed by a 64-bit hash of the uid (two UIDs colliding would share one entry; about 1e-9 at
 * 150,000 pods). Returns VS_ERR_NOMEM only. */
enum vs_err vs_model_account(struct vs_model *m, const char *uid, const char *node,
                             const struct vs_podres *r);
void vs_model_unaccount(struct vs_model *m, const char *uid);
/* Accounts p the way kube-scheduler's cache holds it: on spec.nodeName (else on
 * hami.io/vgpu-node, a pod the extender placed that is not bound yet), nowhere when it is
 * Succeeded or Failed or on no node. VS_ERR_PARSE (message in eb) when its requests do not parse:
 * the pod is then counted nowhere. */
enum vs_err vs_model_account_pod(struct vs_model *m, const struct vs_pod *p, struct vs_errbuf *eb);
/* A relist's sweep: vs_model_account_mark before the list, vs_model_account_sweep after it
 * drops every entry not accounted since the mark (pods deleted while the watch was down) and
 * returns how many. */
void vs_model_account_mark(struct vs_model *m);
size_t vs_model_account_sweep(struct vs_model *m);
/* How many pods are accounted (for tests and memory figures). */
size_t vs_model_account_count(const struct vs_model *m);

/* A 64-bit fingerprint of an allocation annotation's value (0 for NULL, never 0 otherwise):
 * what a tracked pod keeps of the string its usage was decoded from (vs_podent.alloc_fp). */
uint64_t vs_model_alloc_fp(const char *alloc);

/* Lookups: borrowed pointers valid until the next change of the model. */
const struct vs_node *vs_model_node(const struct vs_model *m, const char *name);
/* out[i] = vs_model_node(m, names[i]) for n names at once (their memory accesses overlap). */
void vs_model_nodes(const struct vs_model *m, const char *const *names, size_t n,
                    const struct vs_node **out);
const struct vs_podent *vs_model_pod(const struct vs_model *m, const char *uid);
/* The node's terminating pods (deletionTimestamp set: still counted until they are gone) in a
 * new array the caller frees (never NULL unless out of memory), their number in *n. */
const struct vs_podent **vs_node_terminating(const struct vs_node *nd, size_t *n);
/* A tracked pod's labels (an empty list when it has none). */
const struct vs_kvlist *vs_podent_labels(const struct vs_podent *pe);
/* How many distinct label sets the tracked pods share (for tests and memory figures). */
size_t vs_model_labelset_count(const struct vs_model *m);
const struct vs_quota *vs_model_quota(const struct vs_model *m, const char *ns);
/* Visits every node that has a Node object, in name order. */
void vs_model_each_node(const struct vs_model *m, void (*fn)(void *ctx, const struct vs_node *n),
                        void *ctx);
/* Visits every namespace's combined quota entry, in namespace order: a namespace has one once a
 * ResourceQuota or a tracked pod was seen there (it stays, with zero usage, after both are gone).
 * fn must not change the model. */
void vs_model_each_quota(const struct vs_model *m, void (*fn)(void *ctx, const struct vs_quota *q),
                         void *ctx);
/* Visits every tracked pod (in the order of the model's index). fn must not change the
 * model. */
void vs_model_each_pod(const struct vs_model *m, void (*fn)(void *ctx, const struct vs_podent *pe),
                       void *ctx);
size_t vs_model_node_count(const struct vs_model *m);
/* The card types registered so far, in order of first appearance (vs_card.type_id indexes
 * them; a type stays once seen), and how many cards of each the nodes have now. Returns their
 * number; the arrays are the model's, valid until its next change. */
size_t vs_model_card_types(const struct vs_model *m, const char *const **types,
                           const int64_t **cards);
size_t vs_model_pod_count(const struct vs_model *m);
struct vs_slab_stats;
/* The slab holding the tracked pods' entries and usage (slab.h): blocks mapped, objects. */
void vs_model_slab_stats(const struct vs_model *m, struct vs_slab_stats *out);

/* Collapses backend dev's decoded device list into per-card usage (spec §3.2 step 5): init part
 * by max, app part by sum, slots = max(init, app, 1). With released, only the app part. Result
 * is sorted by UUID; free with vs_usage_free. */
enum vs_err vs_usage_collapse(uint16_t dev, const struct vs_pod_devs *devs, size_t n_init,
                              bool released, struct vs_usage **out, size_t *n_out);
/* The same over several backends' picks, concatenated in allocs order. */
enum vs_err vs_usage_collapse_all(const struct vs_dev_alloc *allocs, size_t n, size_t n_init,
                                  struct vs_usage **out, size_t *n_out);
void vs_usage_free(struct vs_usage *u, size_t n);

#endif
