/* leader: which replica may schedule (spec/hami-compat.md §9.3). Like HAMi, vgpu-sched does not
 * campaign: the kube-scheduler in the same pod holds the Lease, and this replica is leader iff
 * the Lease's holderIdentity belongs to this pod (the part before '_' equals POD_NAME exactly —
 * HAMi's prefix match is a known bug) and the Lease was renewed within its duration as observed
 * locally. The leader labels its own pod hami.io/scheduler-role=leader and the other scheduler
 * pods follower, so the Service (which selects the leader) has the right endpoint. */
#ifndef VS_LEADER_H
#define VS_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "kube.h"

struct vs_leader_opts {
    bool enabled;           /* --leader-elect; false = always leader */
    const char *lease_name; /* --leader-elect-resource-name */
    const char *lease_ns;   /* --leader-elect-resource-namespace */
    const char *pod_name;   /* $POD_NAME (labelling is skipped when empty) */
    const char *pod_ns;     /* $POD_NAMESPACE */
    /* The optional APIs' state (access.h; may be NULL). With --leader-elect the Lease is
     * optional: while it cannot be read (403, or the API is not served) this replica acts as the
     * leader, as without --leader-elect — kube-scheduler's own election still decides which
     * replica is called — and follows the Lease again once a LIST of it succeeds. */
    struct vs_access *access;
};

struct vs_leader;

/* Leadership terms. A term starts when this replica becomes leader and ends when it stops being
 * leader; everything a term made (reservations, readiness, queued work) belongs to it. All hooks
 * run on the leader's monitor thread (or the caller of vs_leader_tick), one at a time and in
 * order: start(t), ready(t) until it returns true, end(t), start(t+1), ... */
struct vs_leader_hooks {
    void *ctx;
    void (*start)(void *ctx, uint64_t term);   /* drop the old state, begin rebuilding it */
    bool (*ready)(void *ctx, uint64_t term);   /* polled: true once rebuilt; the term then serves */
    void (*serving)(void *ctx, uint64_t term); /* once, after ready (repairs; may call the API) */
    void (*end)(void *ctx, uint64_t term);     /* drop what the term made */
};

enum vs_term_state {
    VS_TERM_FOLLOWER, /* not the leader */
    VS_TERM_STARTING, /* leader, rebuilding state: Filter and Bind are refused */
    VS_TERM_SERVING,  /* leader with a rebuilt state */
};

struct vs_leader *vs_leader_new(struct vs_kube *k, const struct vs_leader_opts *o,
                                struct vs_errbuf *eb);
/* Hooks are copied; set them before vs_leader_start. */
void vs_leader_set_hooks(struct vs_leader *l, const struct vs_leader_hooks *h);
/* Starts the Lease watcher (with --leader-elect), the term monitor and the role labeller. */
enum vs_err vs_leader_start(struct vs_leader *l, struct vs_errbuf *eb);
void vs_leader_free(struct vs_leader *l);
/* Whether the Lease names this pod now (always true without --leader-elect). */
bool vs_leader_is(struct vs_leader *l);
/* The term this replica serves in: its number (from 1) when SERVING and the Lease still names
 * this pod, else 0 with *state (may be NULL) saying why. A Bind that started in term t checks
 * vs_leader_term(l, NULL) == t before each step that changes the cluster. NULL l: term 1. */
uint64_t vs_leader_term(struct vs_leader *l, enum vs_term_state *state);

/* The monitor's step, exposed for tests: decides leadership at `now` and runs the hooks of a
 * transition. vs_leader_observe records a Lease as the watcher does (holder NULL: deleted). */
void vs_leader_tick(struct vs_leader *l, long long now);
void vs_leader_observe(struct vs_leader *l, const char *holder, long long duration_s,
                       long long observed_at);

/* Pure decision used by the watcher (exposed for tests): holder "pod_uuid" vs pod name, and
 * whether observed_at + duration is still ahead of now. */
bool vs_leader_decide(const char *holder, const char *pod_name, long long observed_at,
                      long long duration_s, long long now);

#endif
