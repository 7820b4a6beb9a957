/* bindq: the per-node bind queue. HAMi's node lock (`hami.io/mutex.lock`, nodelock.c) allows
 * one allocation in flight per node; a Bind for a node whose lock is held waits its turn here,
 * first come first served per node, instead of failing. Only the queue's head tries the lock,
 * and it tries again only when the store's node watch shows the lock removed or replaced (or
 * the lock's owner pod deleted, terminal or allocated, so nodelock may break it): no polling.
 * Every wait is bounded by --node-lock-retry-timeout (0: one try, HAMi's fail-fast). A waiting
 * Bind leaves at once, with a clear error, when its pod is deleted, its reservation expires,
 * its node disappears, or the service stops or loses leadership (vs_bindq_fail_all).
 *
 * The queue also counts, per node, the Binds queued or in flight (Filter chose the node and
 * the lock release of that pod has not been seen yet): Filter ranks a node with
 * --bind-queue-depth of them after every fitting node with fewer, and (with
 * --bind-queue-saturation) a saturated node, where a new Bind would wait that share of
 * --node-lock-retry-timeout, after those (vs_bindq_busy).
 *
 * The lock itself is taken through a callback, so the queue is tested without an API. */
#ifndef VS_BINDQ_H
#define VS_BINDQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vs_metrics;

struct vs_bindq_opts {
    int64_t wait_ms; /* longest wait of one Bind; 0 = one try, fail at once */
    int depth;       /* queued + in-flight Binds that make a node busy; 0 = never busy */
    /* A busy node is saturated when a new Bind there would wait this share of wait_ms or more
     * (its Binds x vs_bindq_service_s); 0 = never saturated. */
    double saturation;
    int64_t expect_ttl_s;       /* a Filter decision whose Bind never came is forgotten after it */
    struct vs_metrics *metrics; /* may be NULL; borrowed */
    /* Once the holder of a node's lock is allocated or its allocation failed
     * (vs_bindq_pod_allocated) the device plugin releases the lock; if the release is not seen
     * within this time (the plugin's PATCH failed, e.g. during an API outage), the head of the
     * node's queue tries the lock anyway, and the owner rules (owner allocated or failed:
     * broken) free the node. */
    int64_t handoff_grace_ms;
    /* May be NULL. Called when vs_bindq_active drops to 0 (the last waiting or holding Bind is
     * done), with the queue's mutex held: it must not call into the queue (async.h
     * vs_async_kick does not). */
    void (*on_idle)(void *ctx);
    void *idle_ctx;
};

struct vs_bindq;

struct vs_bindq *vs_bindq_new(const struct vs_bindq_opts *o);
/* No Bind may be inside vs_bindq_lock any more (close, then stop the callers first). */
void vs_bindq_free(struct vs_bindq *q);

/* One Bind's request to lock its node. `take` tries the node lock once: VS_OK when taken,
 * VS_ERR_CONFLICT when another pod holds it, anything else is final. `check` (may be NULL)
 * runs on the waiting thread when reservations expired while it waited; an error makes the
 * Bind leave with check's message. Both run without the queue's mutex. */
struct vs_bindq_req {
    const char *node, *uid, *ns, *name;
    enum vs_err (*take)(void *ctx, struct vs_errbuf *eb);
    /* May be NULL. Used instead of take when the node watch's last event (vs_bindq_node_event_rv)
     * showed the node unlocked (seen NULL) or locked by a pod seen allocated since (seen: that
     * lock's value), or when no event of the node came since the queue's entry for it was made
     * for a pod (seen NULL: the watch makes an entry for every lock it sees): the lock is written
     * conditional on that value, so no read of the node is needed. Same results as take. */
    enum vs_err (*take_seen)(void *ctx, const char *seen, struct vs_errbuf *eb);
    enum vs_err (*check)(void *ctx, struct vs_errbuf *eb);
    void *ctx;
    /* CLOCK_MONOTONIC seconds when the Bind arrived (0: when it joins the queue): the wait_ms
     * bound counts from then, so the steps before the queue are part of it. */
    double since;
};

/* Waits for the node's turn and takes its lock. VS_OK: the lock is ours; a Bind that succeeds
 * keeps the pod in flight on the node until the watch shows the lock released or replaced, one
 * that fails and releases the lock itself calls vs_bindq_released. Else the Bind is out of the
 * queue and the error says why: the wait timed out ("timed out after <wait> waiting for node <n> to
 * be unlocked: node lock contention", HAMi's words), take's own error (with wait_ms 0: its
 * contention message), check's error, or the reason the Bind was made to leave. *waited_s (may be
 * NULL) is the time spent in the queue. */
enum vs_err vs_bindq_lock(struct vs_bindq *q, const struct vs_bindq_req *r, double *waited_s,
                          struct vs_errbuf *eb);
/* The Bind that took node's lock failed and released the lock itself: the next Bind may try. */
void vs_bindq_released(struct vs_bindq *q, const char *node, const char *uid);

/* Filter chose node for pod uid (moves the pod if it was expected elsewhere); whole: the pod
 * takes cards to itself (100 % of their cores or memory), counted by vs_bindq_whole. */
void vs_bindq_expect(struct vs_bindq *q, const char *node, const char *uid, bool whole);
/* Pods on their way (filtered, their allocation not seen yet) that take cards to themselves. */
size_t vs_bindq_whole(struct vs_bindq *q);
/* The pod's Bind ended without holding a lock: it is no longer expected anywhere. */
void vs_bindq_forget(struct vs_bindq *q, const char *uid);

/* Watch events (from the store, outside its lock). lock is the node's hami.io/mutex.lock value
 * or NULL; relist is true for objects of a (re)list. */
void vs_bindq_node_event(struct vs_bindq *q, const char *node, const char *lock, bool deleted,
                         bool relist);
/* The same with the event's resourceVersion (NULL: unknown), for take_seen. */
void vs_bindq_node_event_rv(struct vs_bindq *q, const char *node, const char *lock, const char *rv,
                            bool deleted, bool relist);
/* A pod was deleted (deleted) or reached phase Succeeded/Failed (!deleted): a lock it owns may
 * now be broken (the head tries again), and a deleted pod's waiting Bind leaves. */
void vs_bindq_pod_event(struct vs_bindq *q, const char *uid, const char *ns, const char *name,
                        bool deleted);
/* Pod ns/name carries hami.io/bind-phase=success or failed (the device plugin answered): if it
 * holds a node's lock taken here, that lock is due for release; after handoff_grace_ms without the
 * release, the next Bind tries. */
void vs_bindq_pod_allocated(struct vs_bindq *q, const char *ns, const char *name);
/* Entries of the indexes pod events look up: the pods ("ns/name") a lock seen or held on some
 * node names, and the UIDs of the pods whose Binds wait (tests assert they empty as the locks
 * and the Binds go). */
size_t vs_bindq_pod_keys(struct vs_bindq *q);
/* Reservations expired: every waiting Bind runs its check. */
void vs_bindq_recheck(struct vs_bindq *q);

/* Every waiting Bind leaves with `why` (leadership lost). */
void vs_bindq_fail_all(struct vs_bindq *q, const char *why);
/* fail_all, and every later Bind fails at once with `why` (shutdown) until vs_bindq_open. */
void vs_bindq_close(struct vs_bindq *q, const char *why);
void vs_bindq_open(struct vs_bindq *q);

/* Names of the nodes with at least `depth` Binds queued or in flight, sorted (strcmp), as one
 * allocation: free(*names) frees all (ranks included). Returns the count (0 and *names NULL
 * when none). If ranks is set, (*ranks)[i] ranks names[i] (lower first): a busy node's layer,
 * its Binds / depth (>= 1), so a burst fills every node to `depth` before any node gets more;
 * VS_SCHED_RANK_SATURATED + its Binds for a saturated one, where a new Bind would wait
 * `saturation` of wait_ms or more (Binds queued or in flight times the measured time per
 * allocation, vs_bindq_service_s), so a burst that saturates every node goes to the shortest
 * queue instead of timing out. vs_sched_filter counts every layer as 1 for pods whose card
 * policy spreads (see vs_sched_opts.busy_rank). */
size_t vs_bindq_busy(struct vs_bindq *q, char ***names, unsigned **ranks);
/* The moving average (1/4 weight per sample) of one node's time per allocation: from one
 * Bind's lock take to the next one's, when the next was queued before the first took it. 0
 * until one is seen. */
double vs_bindq_service_s(struct vs_bindq *q);
/* Adds a sample to that average (the queue does it; tests). */
void vs_bindq_service_sample(struct vs_bindq *q, double seconds);
/* Binds queued or in flight on node (queued: waiting; in flight: chosen by Filter, or holding
 * the lock until its release is seen). */
size_t vs_bindq_load(struct vs_bindq *q, const char *node);
/* Binds waiting in any queue now. */
size_t vs_bindq_waiting(struct vs_bindq *q);
/* Binds waiting in a queue plus node locks taken here whose release (or the holder's failure)
 * has not been seen yet: the allocations under way. Lock-free (atomics): safe from any thread
 * and under other modules' locks. */
size_t vs_bindq_active(struct vs_bindq *q);

/* One node's lock and queue as the dashboard shows them. */
struct vs_bindq_node_view {
    char *node;
    char *owner;        /* "ns/name" of the lock's owner the watch shows, NULL when unlocked */
    bool owner_done;    /* that owner was seen allocated: its release is due */
    double owner_age_s; /* since this process first saw that owner; -1 when unlocked */
    char *holder;       /* "ns/name" whose Bind took the lock here, NULL when none */
    double held_s;      /* since it took it; -1 when none */
    size_t waiting;     /* Binds waiting in the node's queue */
    size_t in_flight;   /* Binds chosen for the node (Filter) and not released yet */
};
/* Every node with a lock, a waiting Bind or a Bind in flight, by name, in a new array
 * (*out; free with vs_bindq_nodes_free). Returns the count (0 also when out of memory). */
size_t vs_bindq_nodes(struct vs_bindq *q, struct vs_bindq_node_view **out);
void vs_bindq_nodes_free(struct vs_bindq_node_view *v, size_t n);

#endif
