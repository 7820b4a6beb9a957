/* mirrors: writes the mirror ResourceClaims mirror.h says should exist (--dra-mirror), so
 * kube-scheduler's DRA allocator never hands out a card HAMi pods use. A mirror is created in
 * --dra-mirror-namespace, then allocated through the status subresource (allocation is written
 * by whoever allocates; no kubelet prepares it since no pod references it). Bind makes the pod's
 * mirrors before anything else and refuses when a DRA claim took one of its cards after Filter;
 * a reconcile pass (at start, every period, and soon after a pod leaves) deletes orphans and
 * creates what is missing. Only the leader writes. Thread-safe. */
#ifndef VS_MIRRORS_H
#define VS_MIRRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "kube.h"
#include "mirror.h"

struct vs_store;
struct vs_leader;

struct vs_mirrors_opts {
    struct vs_kube *kube;
    struct vs_store *store;   /* the model and its slices (vs_store_dra_synced) */
    struct vs_leader *leader; /* only a serving term writes; NULL: always (see _start) */
    enum vs_mirror_mode mode; /* not VS_MIRROR_OFF */
    const char *ns;           /* where mirrors live (copied) */
    double period_s;          /* a reconcile at least this often */
    double min_gap_s;         /* and at most this often when kicked */
};

struct vs_mirrors;

/* NULL when out of memory. Made before the store starts (its hooks kick it); nothing runs
 * until vs_mirrors_start. */
struct vs_mirrors *vs_mirrors_new(const struct vs_mirrors_opts *o);
/* Sets the leader (NULL: keep opts') and starts the reconcile thread; false when it cannot. */
bool vs_mirrors_start(struct vs_mirrors *m, struct vs_leader *leader);
/* Stops the thread (kicks are still accepted, and ignored). NULL is fine. */
void vs_mirrors_stop(struct vs_mirrors *m);
void vs_mirrors_free(struct vs_mirrors *m); /* stops first; NULL is fine */

/* Something changed that may make a mirror an orphan (a pod left, a reservation expired, a
 * slice changed): reconcile soon (after min_gap_s since the last pass). */
void vs_mirrors_kick(struct vs_mirrors *m);

/* What one reconcile pass did. */
struct vs_mirrors_pass {
    bool skipped; /* not leader, or the store (slices) not synced */
    size_t kept, created, deleted, failed;
};
/* One reconcile pass now: LIST the mirrors (label vgpu-sched.io/mirror-of) in the namespace,
 * compute the wanted set from the model, delete the others and create the missing. An error
 * of the LIST is returned (nothing changed); failures of single creates or deletes are
 * counted in out->failed and logged. */
enum vs_err vs_mirrors_reconcile(struct vs_mirrors *m, struct vs_mirrors_pass *out,
                                 struct vs_errbuf *eb);

/* Bind's step for pod uid (already reserved on its node in the model): makes its mirrors
 * (its cards' mirrors and, in share mode, its own; created and allocated, or kept when already
 * there and the same), then checks that no DRA claim holds one of its cards beyond capacity
 * (vs_mirror_taken). *n_made: mirrors the pod has now. VS_ERR_CONFLICT with why (n bytes) when
 * a claim took a card; another error with eb when a write failed. On either, the pod's own
 * mirrors are deleted and a reconcile is kicked for the cards' mirrors. */
enum vs_err vs_mirrors_bind(struct vs_mirrors *m, const char *uid, size_t *n_made, char *why,
                            size_t n, struct vs_errbuf *eb);
/* Whether a DRA claim took a card of pod uid after Filter (vs_mirror_taken on the store's
 * model); why as there. Bind asks again right before the binding. */
bool vs_mirrors_taken(struct vs_mirrors *m, const char *uid, char *why, size_t n);
/* Deletes the pod's own mirrors (label mirror-of = uid) and kicks a reconcile for the card
 * mirrors it may have been the last user of (a Bind that failed after vs_mirrors_bind). */
void vs_mirrors_release(struct vs_mirrors *m, const char *uid);

/* Deletes every mirror claim (label vgpu-sched.io/mirror-of) in namespace ns: *deleted of
 * them. The first failed LIST or DELETE is returned. */
enum vs_err vs_mirrors_sweep(struct vs_kube *k, const char *ns, size_t *deleted,
                             struct vs_errbuf *eb);

/* `vgpu-sched dra-mirror-sweep [--namespace NS] [--kubeconfig FILE]`: vs_mirrors_sweep, one
 * line on out ("deleted N mirror ResourceClaims in NS"). Exit status: 0, 1 when the API
 * refused, 2 bad flags. The chart's post-delete hook runs it. */
int vs_mirrors_sweep_main(int argc, char **argv, FILE *out, FILE *err);
void vs_mirrors_sweep_usage(FILE *f);

#endif
