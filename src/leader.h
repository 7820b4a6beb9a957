/* leader: which replica may schedule (spec/hami-compat.md §9.3). Like HAMi, vgpu-sched does not
 * campaign: the kube-scheduler in the same pod holds the Lease, and this replica is leader iff
 * the Lease's holderIdentity belongs to this pod (the part before '_' equals POD_NAME exactly —
 * HAMi's prefix match is a known bug) and the Lease was renewed within its duration as observed
 * locally. The leader labels its own pod hami.io/scheduler-role=leader and the other scheduler
 * pods follower, so the Service (which selects the leader) has the right endpoint. */
#ifndef VS_LEADER_H
#define VS_LEADER_H

#include <stdbool.h>

#include "err.h"
#include "kube.h"

struct vs_leader_opts {
    bool enabled;           /* --leader-elect; false = always leader */
    const char *lease_name; /* --leader-elect-resource-name */
    const char *lease_ns;   /* --leader-elect-resource-namespace */
    const char *pod_name;   /* $POD_NAME (labelling is skipped when empty) */
    const char *pod_ns;     /* $POD_NAMESPACE */
};

struct vs_leader;

struct vs_leader *vs_leader_new(struct vs_kube *k, const struct vs_leader_opts *o,
                                struct vs_errbuf *eb);
enum vs_err vs_leader_start(struct vs_leader *l, struct vs_errbuf *eb);
void vs_leader_free(struct vs_leader *l);
bool vs_leader_is(struct vs_leader *l);

/* Pure decision used by the watcher (exposed for tests): holder "pod_uuid" vs pod name, and
 * whether observed_at + duration is still ahead of now. */
bool vs_leader_decide(const char *holder, const char *pod_name, long long observed_at,
                      long long duration_s, long long now);

#endif
