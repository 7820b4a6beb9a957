/* decision: what Filter decided for a pod, kept in memory for the pod's Bind, whose Binding
 * carries it to the API server. Filter commits its reservation and records the decision here
 * (the annotations it writes, the label hami.io/vgpu-node, the node locks the pod's backends
 * take) instead of patching the pod; Bind finds it by pod UID, and the API server copies the
 * Binding's annotations (always) and labels (kube-apiserver 1.35+, PodTopologyLabelsAdmission)
 * onto the pod in the update that sets spec.nodeName. Where the labels are not copied, the pod
 * watch shows the bound pod without the label and vs_decision_seen_bound asks for one label
 * patch. One mutex guards the table; entries are replaced by a later decision of the same pod
 * (a higher reservation id), dropped when the pod is seen bound, deleted or terminal. The
 * annotations only add (a Binding cannot remove one): Filter patches a pod whose decision
 * removes an annotation it carries, as HAMi does, and records nothing for it. */
#ifndef VS_DECISION_H
#define VS_DECISION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

struct vs_decisions;

struct vs_decision {
    uint64_t resv;       /* the reservation it made (vs_filter_result.reservation) */
    char *node;          /* the node it chose */
    json_t *annotations; /* the annotations it writes (an object) */
    bool managed;        /* a regular container asks for a device (vs_pod_req.any_regular) */
    bool needs_lock;     /* the pod takes hami.io/mutex.lock (vs_sched_locks) */
    size_t n_stamps;     /* the backends' own locks it takes, in backend order */
    const struct vs_device *stamps[VS_MAX_DEVICES];
};

struct vs_decisions *vs_decisions_new(void);
void vs_decisions_free(struct vs_decisions *d);

/* Records d for pod uid (takes d->node and d->annotations, also on failure), unless a decision
 * with a higher reservation id is recorded already (two Filters of one pod may record in the
 * other order than they committed). false: out of memory (nothing recorded). */
bool vs_decisions_put(struct vs_decisions *d, const char *uid, struct vs_decision *dec);
/* A copy of uid's decision into *out (its own node and annotations: vs_decision_cleanup), false
 * when none is recorded or out of memory. */
bool vs_decisions_get(struct vs_decisions *d, const char *uid, struct vs_decision *out);
/* The binding carrying reservation resv of uid is about to be posted (posted true; set before
 * the POST, as the pod watch may show the bound pod before the POST returns), or its POST failed
 * (false). A posted decision stays until the pod watch shows the pod bound
 * (vs_decisions_seen_bound) or gone. */
void vs_decisions_posted(struct vs_decisions *d, const char *uid, uint64_t resv, bool posted);
/* The pod watch shows uid bound. true when its binding was posted here and `labeled` is false
 * (the API server did not copy the Binding's labels): the caller patches the label, once;
 * *node is then the node (malloc'ed, the caller's). The decision is dropped either way. */
bool vs_decisions_seen_bound(struct vs_decisions *d, const char *uid, bool labeled, char **node);
/* Pod uid was deleted or ended: its decision goes. */
void vs_decisions_forget(struct vs_decisions *d, const char *uid);
/* Decisions recorded (tests assert the bound). */
size_t vs_decisions_count(struct vs_decisions *d);

void vs_decision_cleanup(struct vs_decision *dec);

#endif
