/* sched: the Filter decision, pure and deterministic: derive the pod's requests, fit every
 * container on every candidate node (spec/hami-compat.md §4.3–4.5), score nodes and cards
 * (§5), choose one node, and commit the choice into the model atomically (compare the node's
 * generation read during evaluation; a changed node means "recompute"). No I/O, no clock. */
#ifndef VS_SCHED_H
#define VS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "annot.h"
#include "devcfg.h"
#include "device.h"
#include "err.h"
#include "kobj.h"
#include "model.h"

struct vs_frag_stats;
struct vs_pod_req;
struct vs_frag_ctx;

/* A pod nominated to a node (status.nominatedNodeName) that the evaluated pod must leave room
 * for, as kube-scheduler does for in-tree resources: its usage as Fit would place it there,
 * counted on that node on top of the model's. */
struct vs_sched_extra {
    const char *node;
    const struct vs_usage *usage; /* collapsed, as vs_usage_collapse makes it */
    size_t n_usage;
};

struct vs_sched_opts {
    const struct vs_devcfg *cfg;
    const char *node_policy; /* default node policy (flag), "binpack" when NULL */
    const char *gpu_policy;  /* default card policy (flag), "spread" when NULL */
    /* When some node fits, a node that does not may be left without its reason text (reason
     * NULL, fit false): the reasons are only worked out when no node fits. For callers that
     * read reasons only then (the extender's Filter, simulate). */
    bool lazy_reasons;
    /* With lazy_reasons, for callers that only count reason words (simulate --reasons summary):
     * a refusal decided by counting on the node's cards gets vs_node_fit.words, not text. */
    bool reason_words;
    /* For tests: evaluate every node the long way (no counting shortcut for plain requests),
     * the reference the shortcut is checked against. */
    bool full_walk;
    /* Busy nodes (the serve-time bind queue: --bind-queue-depth Binds queued or in flight),
     * in any order; may be NULL. A busy node that fits ranks after every fitting node that
     * is not busy; among busy nodes by busy_rank, then (and among the others) the node policy
     * decides as usual. With none, the choice is exactly the policy's. */
    const char *const *busy;
    /* May be NULL (every busy node ranks 1). Else busy_rank[i] ranks busy[i]: a fitting node
     * with a lower rank beats one with a higher (not busy = 0), then the policy decides.
     * vs_bindq_busy ranks a busy node by its layer (its Binds / depth, >= 1) and a saturated
     * one VS_SCHED_RANK_SATURATED + its Binds. Exception, with idle_cards_wanted: for a pod
     * whose card policy spreads shares (vs_gpu_policy_spreads) every layer counts as 1, so
     * among busy nodes its node policy decides (it piles): spilling spread shares over every
     * node touches every node's idle cards, which the pods taking whole cards need. */
    const unsigned *busy_rank;
    size_t n_busy;
    /* Pods that take cards to themselves (100 % of their cores or memory) are on their way
     * (filtered, their allocation not seen yet): see busy_rank. */
    bool idle_cards_wanted;
    /* Preemption what-if: evaluate as if these tracked pods were gone (their usage, MIG
     * placements and namespace quota usage left out). The result must not be committed. */
    const struct vs_podent *const *without;
    size_t n_without;
    /* Nominated pods held on their nodes (see vs_sched_extra); NULL when none. */
    const struct vs_sched_extra *extra;
    size_t n_extra;
    /* A what-if evaluation (a preemption plan's fit check): frag_stats is read but the pod's
     * shape is not counted again, so one Filter counts its pod once however many sets it tries. */
    bool what_if;
    /* The request shapes seen so far (policy `fragmentation`); every evaluated pod is counted
     * here. NULL: the policy measures against the pod's own shape only. */
    struct vs_frag_stats *frag_stats;
};

/* busy_rank of a saturated node: this plus its Binds queued or in flight (layers stay below). */
#define VS_SCHED_RANK_SATURATED (1u << 24)

struct vs_node_fit {
    const char *node; /* borrowed from the candidate list */
    bool fit;
    char *reason; /* FailedNodes text when !fit (NULL: not worked out, see
                   * vs_sched_opts.lazy_reasons) */
    /* With vs_sched_opts.reason_words, instead of reason: bit i set = vs_reason_words[i] is
     * part of the refusal; VS_REASON_NO_DEVICE_BIT = NodeInsufficientDevice. 0 = see reason. */
    uint32_t words;
    float score; /* node score (§5.1) when fit */
    double frag; /* node policy fragmentation: growth of the node's fragmentation
                  * if the pod goes there (lower is better) */
    /* The picks of each backend the pod asks for (backend id order), one entry per container,
     * init first; built only for nodes that were the best so far when evaluated (always for
     * `best`, and for every fitting node when a backend scores nodes by its picks). */
    struct vs_dev_alloc *allocs;
    size_t n_allocs;
    struct vs_mig_allocs mig;
    uint64_t gen; /* node generation the decision was computed on */
};

struct vs_filter_result {
    bool managed; /* the pod asks for a HAMi device; false = pass NodeNames through */
    char *error;  /* pod-level problem no node could fix (bad annotation or quantity) */
    struct vs_node_fit *nodes; /* one per candidate, in candidate order */
    size_t n;
    long best;        /* index into nodes of the chosen node, -1 when none fits */
    bool any_regular; /* a regular container asks for a device */
    uint64_t devs;    /* bit per backend the pod asks for */
    /* The node locks Bind takes: a regular container asks a backend with the shared
     * hami.io/mutex.lock (spec/hami-vendors.md §1.10). Stamp locks: vs_sched_stamp_locks. */
    bool lock_shared;
    uint64_t reservation; /* vs_store_filter: the vs_podent.resv_id its commit made */
    json_t *annotations;  /* vs_store_filter: the decision's annotations (vs_sched_annotations) */
    /* vs_store_filter: a Bind of the pod holds its reservation (vs_store_bind_begin), or posted
     * its binding and the watch has not shown the pod bound yet. Then nothing was evaluated or
     * committed (n 0, best -1): bind_node is that Bind's node (a copy; NULL otherwise),
     * bind_posted says the binding was posted, bind_keep that the Bind is still under way, the
     * reservation on bind_node still holds and bind_node is among the candidates. */
    char *bind_node;
    bool bind_keep, bind_posted;
    /* vs_store_filter: the pod was seen deleted (a Filter kube-scheduler began before it saw the
     * deletion). Nothing was evaluated or committed (managed, n 0, best -1). */
    bool gone;
    /* namespace quota usage the decision relied on, per backend (compared at commit) */
    uint64_t quota_checked;
    int64_t quota_mem_used[VS_MAX_DEVICES];
    int64_t quota_cores_used[VS_MAX_DEVICES];
};

/* Evaluates `pod` on the candidates. Returns VS_ERR_NOMEM only; pod-level problems are in
 * r->error, per-node ones in r->nodes[i].reason. r must be cleaned up. */
enum vs_err vs_sched_filter(const struct vs_model *m, const struct vs_pod *pod,
                            const char *const *cands, size_t n_cands, const struct vs_sched_opts *o,
                            struct vs_filter_result *r);
void vs_filter_result_cleanup(struct vs_filter_result *r);

/* Commits r's chosen node into the model as the pod's reservation (replacing any previous one).
 * VS_ERR_CONFLICT when the node or the namespace quota changed since evaluation: recompute. */
enum vs_err vs_sched_commit(struct vs_model *m, const struct vs_pod *pod,
                            const struct vs_filter_result *r, int64_t now, struct vs_errbuf *eb);

/* Policy fragmentation for a pod that asks for no GPU (simulate --cpu-pods fragmentation, the
 * extender's prioritize): how much node n's fragmentation under the workload x grows when the
 * pod's cpu (milli) and memory (bytes) requests are taken there (vs_frag_delta_cpu on the
 * node's cards and free cpu/memory; lower is better, 0 when no shape loses the node). A node
 * without usable registered cards, or with more than the measure takes, gives 0. *idle (may be
 * NULL) receives the node's idle GPU capacity in cards (0 for such a node). Call under the
 * model's read lock; x is the caller's (its card-type cache is written). */
double vs_sched_frag_plain(struct vs_frag_ctx *x, const struct vs_node *n, int64_t cpu, int64_t mem,
                           double *idle);

/* The card-level reason words of spec §4.5, in a fixed order (for events and metrics). */
#define VS_REASON_COUNT 14
extern const char *const vs_reason_words[VS_REASON_COUNT];
#define VS_REASON_NO_DEVICE_BIT (1u << VS_REASON_COUNT)

/* The node score of §5.1 over a node's current usage (float32, HAMi's operation order). */
float vs_sched_node_score(const struct vs_node *n);

/* The node locks a pod's Bind takes (spec/hami-vendors.md §1.10): whether it takes the shared
 * hami.io/mutex.lock, and the backends with a lock of their own (VS_LOCK_STAMP) it takes, in
 * backend order (out holds VS_MAX_DEVICES; returns their number). From the regular containers'
 * requests. */
size_t vs_sched_locks(const struct vs_devices *set, const struct vs_pod_req *req, bool *shared,
                      const struct vs_device **out);

/* The picks of backend dev in f (NULL when the pod has none of it or they were not built). */
const struct vs_pod_devs *vs_node_fit_devs(const struct vs_node_fit *f, uint16_t dev);

/* Every pod annotation the decision f writes (the Filter's patch): hami.io/vgpu-node, with
 * now_ns > 0 hami.io/vgpu-time (seconds), and each backend's (vs_device_ops.annotate) into out
 * (null values remove an annotation). now_ns 0 leaves timestamps out (simulate). */
enum vs_err vs_sched_annotations(const struct vs_devices *set, const struct vs_pod *pod,
                                 const struct vs_node *n, const struct vs_node_fit *f,
                                 int64_t now_ns, json_t *out);

#endif
