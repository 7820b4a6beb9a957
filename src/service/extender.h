/* extender: kube-scheduler's extender protocol (spec/k8s-protocols.md §1–2, hami-compat.md §4
 * and §6): Filter (choose one node, reserve atomically, record the decision on the pod) and
 * Bind (HAMi node lock, bind-phase, then the binding), plus /healthz, /readyz, /webhook and
 * /metrics handlers. Wire keys are matched case-insensitively; JSON null equals absent. */
#ifndef VS_EXTENDER_H
#define VS_EXTENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "async.h"
#include "bindq.h"
#include "devcfg.h"
#include "extargs.h"
#include "kube.h"
#include "leader.h"
#include "metrics.h"
#include "nodelock.h"
#include "sched.h"
#include "server.h"
#include "store.h"

struct vs_pdb;

struct vs_webhook_opts;
struct vs_holds;

/* --gpu-preemption after `auto` is resolved. */
enum vs_gpu_preemption { VS_GPU_PREEMPT_OFF, VS_GPU_PREEMPT_VERB, VS_GPU_PREEMPT_FILTER };
struct vs_frag_stats;

struct vs_requeue;
struct vs_pending;
struct vs_mirrors;

struct vs_app {
    struct vs_store *store;
    struct vs_kube *kube;
    struct vs_nodelock *lock;
    struct vs_bindq *bindq; /* per-node bind queue; NULL: one lock try, fail on contention */
    struct vs_async *async;
    struct vs_leader *leader;
    struct vs_metrics *metrics;
    const struct vs_devcfg *cfg;
    const char *scheduler_name; /* event source; "" -> "hami-scheduler" */
    const char *node_policy;    /* defaults (flags) */
    const char *gpu_policy;
    int bind_wait_ms; /* how long Bind waits for Filter's pod patch (--patch-at-filter) */
    /* Filter's decisions for their Binds (decision.h); NULL with --patch-at-filter: Filter
     * patches the pod as HAMi does and Bind reads the decision from the pod */
    struct vs_decisions *decisions;
    bool legacy_metrics;
    const struct vs_webhook_opts *webhook; /* NULL: /webhook answers 404 */
    int64_t (*now)(void);                  /* unix seconds */
    enum vs_gpu_preemption preemption;
    struct vs_holds *holds; /* filter-mode preemptors holding freed capacity (NULL: none) */
    struct vs_frag_stats *frag_stats; /* request shapes seen (policy fragmentation) */
    struct vs_requeue *requeue;       /* refused pods to nudge when capacity frees (NULL: none) */
    struct vs_pending *pending;       /* refused pods the dashboard lists (NULL: none) */
    struct vs_access *access;         /* optional APIs' state (NULL: all available): filter-mode
                                       * preemption needs pods/eviction; /readyz and /metrics report */
    struct vs_mirrors *mirrors;       /* --dra-mirror (mirrors.h); NULL when off */
    /* connections the main listener accepted (its vs_server_opts.accepted) */
    _Atomic unsigned long long http_connections;
};

/* The table of filter-mode preemptors: uid -> node, victims, eviction time. Thread-safe. */
struct vs_holds *vs_holds_new(void);
void vs_holds_free(struct vs_holds *h);
/* The pod's hold: its node and victims ("ns/a, ns/b") as new strings; false (both NULL) when
 * it has none. h may be NULL. */
bool vs_holds_get(struct vs_holds *h, const char *uid, char **node, char **victims);

/* Patches VS_ANNO_REQUEUE on the pod (uid as precondition) so kube-scheduler retries it
 * (requeue.h's nudge; ctx is the app). */
void vs_ext_nudge(void *app, const char *uid, const char *ns, const char *name);
void vs_ext_filter(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_bind(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
/* kube-scheduler's preemptVerb (node-cache mode): per candidate node, kube-scheduler's victims
 * (or an empty placeholder) completed with the fewest lower-priority GPU pods bound there that
 * make the pod fit; nodes where nothing works are omitted. */
void vs_ext_preempt(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
/* kube-scheduler's prioritizeVerb, for pods that ask for no GPU (docs/fragmentation.md: a
 * second extender entry without managedResources): a HostPriorityList scoring each node by
 * vs_ext_prioritize_answer. A pod asking for a GPU (its node was chosen by Filter), or whose
 * requests do not parse, gets Score 0 on every node. 400 for a body that is not ExtenderArgs,
 * 503 while the cache is syncing (kube-scheduler then drops these scores). */
void vs_ext_prioritize(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
/* The HostPriorityList for a pod asking no GPU, with cpu (milli) and mem (bytes) requests, over
 * the named nodes in order (pure; the caller holds the model's read lock), simulate
 * --cpu-pods fragmentation's order in 11 steps: a node's growth and idle GPU capacity are
 * vs_sched_frag_plain's against the workload st. Among the nodes of least growth (within 1e-9)
 * those of least idle capacity score 10 (MaxExtenderPriority), the others
 * 5 + ceil(4 * (most idle - idle) / (most idle - least idle)), 5..9; every node that grows more
 * scores ceil(4 * (largest growth - growth) / (largest - least)), 0..4. */
json_t *vs_ext_prioritize_answer(const struct vs_model *m, struct vs_frag_stats *st,
                                 const char *const *names, size_t n, int64_t cpu, int64_t mem);
void vs_ext_healthz(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_readyz(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_webhook(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);
void vs_ext_metrics(void *app, const struct vs_http_req *req, struct vs_http_resp *resp);

/* The ExtenderPreemptionResult for pa over model m (pure; the caller holds the model's read
 * lock): each node's victims are pa's UIDs as given, then the UIDs of the pods added. A node is
 * kept with no victim only when it came in with none and the pod fits there as it is. Within a
 * node, plans that violate none of the pdbs rank first, and NumPDBViolations is the larger of
 * kube-scheduler's count and the plan's (kube-scheduler ranks candidates by it). */
json_t *vs_ext_preempt_answer(const struct vs_model *m, const struct vs_preempt_args *pa,
                              const struct vs_sched_opts *so, const struct vs_pdb *pdbs,
                              size_t n_pdbs);

/* The pod watch shows pod uid bound with hami.io/vgpu-node (store hook pod_bound): when its
 * Binding carried the label and the API server did not copy it (before kube-apiserver 1.35, or
 * PodTopologyLabelsAdmission off), the label is patched once. */
void vs_ext_pod_bound(void *app, const char *uid, const char *ns, const char *name, bool labeled);
/* Drops a reservation whose pod patch failed (async callback). */
void vs_ext_patch_failed(void *app, const char *uid, uint64_t reservation);
/* Whether a later Filter decision replaced `reservation` (async's patch gate). */
bool vs_ext_patch_superseded(void *app, const char *uid, uint64_t reservation);

#endif
