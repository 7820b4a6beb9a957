/* whatif: the dashboard's "what if I submitted this?". A request names a shape (cards x memory
 * x cores, card type, mode, policies) or carries a pod (JSON or YAML text). The live model is
 * copied under the store's read lock (nodes with their registered cards, topology and cordons,
 * every tracked pod's usage and MIG placements, namespace quotas, each node's cpu and memory);
 * outside the lock the copy becomes a cluster of Kubernetes objects again and the pods are
 * scheduled on it by `simulate`'s own code (vs_simulate_run): nothing is reserved, nothing is
 * patched, the service's state is only read. The service keeps no node labels or taints, so a
 * pod's nodeSelector, affinity and tolerations are not evaluated (the answer says so). */
#ifndef VS_WHATIF_H
#define VS_WHATIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devcfg.h"
#include "err.h"
#include "loader.h"
#include "model.h"

#define VS_WHATIF_MAX_BODY  (256u << 10) /* request body; 413 past it */
#define VS_WHATIF_MAX_PODS  100          /* pods one request schedules (count included) */
#define VS_WHATIF_MAX_CARDS 64           /* cards of a shape */

struct vs_whatif_req {
    struct vs_objset pods;  /* what to schedule, in order */
    char *node_policy;      /* NULL: the service's */
    char *gpu_policy;       /* NULL: the service's */
    bool dropped_selectors; /* a pod's nodeSelector/affinity/tolerations were left out */
    bool dropped_placement; /* a pod's spec.nodeName or vgpu-sched decision was left out */
};

/* Decodes a request body (docs/dashboard-api.json, WhatIfRequest): {"shape":{...}} or
 * {"pod":"<text>"}, with optional "count", "nodePolicy", "gpuPolicy". cfg names the resources a
 * shape asks for. VS_ERR_INVAL / VS_ERR_PARSE with a message naming the field; nothing is
 * returned then. Clean up with vs_whatif_req_cleanup. */
enum vs_err vs_whatif_parse(const char *body, size_t len, const struct vs_devcfg *cfg,
                            struct vs_whatif_req *out, struct vs_errbuf *eb);
void vs_whatif_req_cleanup(struct vs_whatif_req *r);

/* The copy of the live state (opaque). vs_whatif_copy runs under the model's read lock. */
struct vs_whatif_state;
enum vs_err vs_whatif_copy(const struct vs_model *m, struct vs_whatif_state **out);
void vs_whatif_state_free(struct vs_whatif_state *st);

/* The cluster of the copy as Kubernetes objects (nodes, placed pods, quotas), what
 * vs_simulate_run takes. cfg: the resource names and memory factor of quotas. */
enum vs_err vs_whatif_objects(const struct vs_whatif_state *st, const struct vs_devcfg *cfg,
                              struct vs_objset *out);

struct vs_frag_stats;
struct vs_whatif_opts {
    const struct vs_devcfg *cfg;
    const char *node_policy, *gpu_policy; /* the service's defaults */
    struct vs_frag_stats *frag_stats;     /* the service's workload (read only); may be NULL */
    const char *version;                  /* the state's version, echoed */
    int64_t now;
};

/* Schedules req on a cluster built from st and returns the answer document (new string, NULL
 * when out of memory). */
char *vs_whatif_run(const struct vs_whatif_state *st, struct vs_whatif_req *req,
                    const struct vs_whatif_opts *o);

#endif
