/* requeue: the queueing hint kube-scheduler cannot have for an extender's resources.
 *
 * kube-scheduler keeps a pod an extender refused in its unschedulable pool and moves it back on
 * the next cluster event it sees (the pod's rejector is "Extender", which every event matches),
 * else after podMaxInUnschedulablePodsDuration (5 min). Its watch and ours are two streams: on a
 * GPU holder's deletion kube-scheduler may retry a refused pod before this process has applied
 * the same deletion, get the stale refusal, and park the pod again with no event left to wake
 * it. Capacity freed without any cluster event (a reservation expired or dropped) wakes nobody.
 *
 * This table closes both gaps. Filter records each pod it refused with the time it began
 * reading usage; the store reports every applied change that may free capacity. `delay` after
 * such a change at time T, every pod still recorded with a refusal read before T (and within
 * `window` of it) is nudged once: the caller patches an annotation on it, a Pod/Update event
 * that moves it back to kube-scheduler's active queue. A pod Filter placed, refused again after
 * T, or that was deleted is not nudged. The delay lets kube-scheduler's own retry on the same
 * event land first, so a nudge is only spent on a refusal that read stale usage. */
#ifndef VS_REQUEUE_H
#define VS_REQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vs_requeue_opts {
    double delay_s;  /* after a freeing change, before nudging (kube-scheduler's retry first) */
    double window_s; /* refusals older than this before the change are left to kube-scheduler */
    size_t max_pods; /* refused pods recorded at most (further refusals are not recorded) */
    bool thread;     /* run the nudges on a thread of its own (else the caller calls run) */
    /* Called without the table's lock, once per pod to nudge. */
    void (*nudge)(void *ctx, const char *uid, const char *ns, const char *name);
    void *ctx;
};

struct vs_requeue;

struct vs_requeue *vs_requeue_new(const struct vs_requeue_opts *o);
/* Stops the thread (pending nudges are dropped); the table still records calls after it. */
void vs_requeue_stop(struct vs_requeue *q);
void vs_requeue_free(struct vs_requeue *q); /* stops first */

/* Filter refused the pod; t: when it began reading usage (monotonic seconds). */
void vs_requeue_refused(struct vs_requeue *q, const char *uid, const char *ns, const char *name,
                        double t);
/* Filter placed the pod, or it is gone: it is no longer nudged. */
void vs_requeue_forget(struct vs_requeue *q, const char *uid);
/* A change that may free capacity was applied at t (monotonic seconds). */
void vs_requeue_freed(struct vs_requeue *q, double t);

/* Nudges what is due at `now` and forgets records older than the window; returns how many pods
 * were nudged. The thread calls it; tests call it with their own clock. */
size_t vs_requeue_run(struct vs_requeue *q, double now);
/* Refused pods recorded, and nudges sent since the start. */
size_t vs_requeue_size(struct vs_requeue *q);
uint64_t vs_requeue_nudged(struct vs_requeue *q);

#endif
