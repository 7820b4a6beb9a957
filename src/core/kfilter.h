/* kfilter: the in-tree filters of kube-scheduler v1.36's default profile that run before the
 * extender (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit, in that order)
 * and its least-allocated score, for `simulate`. In `serve` kube-scheduler runs them itself. */
#ifndef VS_KFILTER_H
#define VS_KFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kobj.h"
#include "model.h"
#include "podres.h"

/* kube-scheduler's reason texts (pkg/scheduler/framework/plugins). */
#define VS_KF_UNSCHEDULABLE "node(s) were unschedulable"
#define VS_KF_TAINT         "node(s) had untolerated taint(s)"
#define VS_KF_AFFINITY      "node(s) didn't match Pod's node affinity/selector"
#define VS_KF_TOO_MANY_PODS "Too many pods"
#define VS_KF_CPU           "Insufficient cpu"
#define VS_KF_MEMORY        "Insufficient memory"
#define VS_KF_EPHEMERAL     "Insufficient ephemeral-storage"

/* Room for a NodeResourcesFit reason (the four shortfalls and scalar ones joined; a longer one
 * is cut). */
#define VS_KF_REASON_SIZE 512

/* The scalar resources (vs_podres_scalar) a pod asks for and what the pods on a node already
 * request of them, both name -> decimal text. */
struct vs_kf_scalar {
    const struct vs_kvlist *req;
    const struct vs_kvlist *used; /* NULL: nothing requested on the node */
};

/* Runs the four filters on node kn (its Node object) for pod p with request r; n is the model's
 * entry for the node (its vs_node.res), NULL when the model has none (resources unchecked); sc
 * (may be NULL) adds the scalar resources to NodeResourcesFit, each checked against kn's
 * status.allocatable (absent = 0) minus what the node's pods request, as kube-scheduler does.
 * Returns NULL when the node passes, else the first failing plugin's reason: a static string,
 * or for NodeResourcesFit its shortfalls joined with ", " written into buf (pods, cpu, memory,
 * ephemeral-storage, then the scalar resources by name). */
const char *vs_kfilter_node(const struct vs_pod *p, const struct vs_podres *r,
                            const struct vs_knode *kn, const struct vs_node *n,
                            const struct vs_kf_scalar *sc, char buf[VS_KF_REASON_SIZE]);

/* NodeResourcesFit's LeastAllocated score (0..100, cpu and memory weighted 1:1) of node n for a
 * pod with request r, over the non-zero requests. A resource the node does not report is left
 * out of the mean (as one with allocatable 0 is). */
int64_t vs_kfilter_least_allocated(const struct vs_node *n, const struct vs_podres *r);

/* Whether one toleration tolerates the taint (key, value, effect) (v1 Toleration.ToleratesTaint).
 */
bool vs_kfilter_tolerates(const struct vs_toleration *t, const char *key, const char *value,
                          const char *effect);

#endif
