/* store: the cluster source behind the engine. It owns the model and its lock, keeps it current
 * from list+watch of Nodes, Pods and ResourceQuotas (one informer thread each; PodDisruptionBudgets
 * too for preemption, optional), reports readiness (initial lists applied, no relist in
 * progress) and runs Filter's
 * evaluate-then-commit under the right locks. The embedded `--cluster` mode uses the same store
 * against an in-process API server, so both modes share every code path. */
#ifndef VS_STORE_H
#define VS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devcfg.h"
#include "err.h"
#include "kube.h"
#include "model.h"
#include "sched.h"

struct vs_store_opts {
    const char *node_label_selector; /* "k=v,k2=v2" or NULL */
    const struct vs_devcfg *cfg;     /* borrowed for the store's lifetime */
    int64_t reservation_ttl;         /* seconds; unbound Filter reservations expire after it */
    bool watch_pdbs; /* also list/watch PodDisruptionBudgets (preemption plans rank by them) */
    /* The optional APIs' state (access.h; NULL: none kept). The PodDisruptionBudget informer is
     * optional: readiness never waits for it, a LIST or WATCH refused (403) or not served (404)
     * is reported here instead of logged each time, the PDBs known are dropped (preemption then
     * ignores PDBs), and it is tried again every vs_access_retry_s. */
    struct vs_access *access;
    /* Also list/watch DeviceClasses (resource.k8s.io/v1) for the DRA guard (dra.h): optional
     * like the PodDisruptionBudgets (reported to access as VS_API_DRA_CLASSES). */
    bool watch_dra;
    /* Also list/watch ResourceSlices and ResourceClaims for the DRA ledger (model.h): optional
     * the same way (VS_API_DRA_SLICES, VS_API_DRA_CLAIMS); refused or not served, the ledger
     * is off and what it held is dropped. */
    bool watch_dra_ledger;
};

struct vs_store_stats {
    uint64_t malformed_pods;   /* pods whose allocation annotation could not be decoded */
    uint64_t malformed_nodes;  /* node annotation parse failures */
    uint64_t expired;          /* reservations dropped by the TTL */
    uint64_t commit_conflicts; /* Filter commits retried because the node changed */
    uint64_t relists;
};

struct vs_store;

struct vs_store *vs_store_new(struct vs_kube *k, const struct vs_store_opts *o,
                              struct vs_errbuf *eb);
/* Called on informer threads after an event is applied, outside the store's lock (the bind
 * queue's wake-ups). node: every Node event, with its hami.io/mutex.lock value (NULL when
 * none), deleted for DELETED and for nodes a relist no longer shows, relist for objects of a
 * list; pod: a Pod DELETED (also by a relist sweep) or in phase Succeeded/Failed; expired: the
 * expiry thread dropped reservations; freed: see below. Each may be NULL. */
struct vs_store_hooks {
    /* rv: the node's metadata.resourceVersion in that event (NULL when deleted) */
    void (*node)(void *ctx, const char *name, const char *lock, const char *rv, bool deleted,
                 bool relist);
    void (*pod)(void *ctx, const char *uid, const char *ns, const char *name, bool deleted);
    /* a Pod event (not DELETED, not terminal) with hami.io/bind-phase=success or failed: the
     * device plugin has answered (allocated or failed) and releases its node's lock */
    void (*pod_allocated)(void *ctx, const char *ns, const char *name);
    /* a Pod event (not DELETED, not terminal) of a bound pod carrying hami.io/vgpu-node;
     * labeled: it carries the label hami.io/vgpu-node too */
    void (*pod_bound)(void *ctx, const char *uid, const char *ns, const char *name, bool labeled);
    void (*expired)(void *ctx);
    /* capacity may have been freed: a pod's usage left the model (deleted, terminal, its
     * reservation expired or was dropped), or a node appeared or changed its register */
    void (*freed)(void *ctx);
    void *ctx;
};
/* Before vs_store_start; h is copied. */
void vs_store_set_hooks(struct vs_store *s, const struct vs_store_hooks *h);

/* Starts the informer threads and the reservation-expiry thread. */
enum vs_err vs_store_start(struct vs_store *s, struct vs_errbuf *eb);
void vs_store_free(struct vs_store *s); /* stops threads first */

/* True once the informers Filter needs (Nodes, Pods, ResourceQuotas) applied their initial list
 * and none is relisting. The optional PodDisruptionBudget informer is not waited for. */
bool vs_store_synced(const struct vs_store *s);
/* True when the ResourceSlice and ResourceClaim informers are on and have applied their lists
 * (since the last relist began): the model's slices can tell which mirrors should exist. */
bool vs_store_dra_synced(const struct vs_store *s);

/* Filter: evaluates under the read lock, commits the chosen node under the write lock if the
 * node and quota are unchanged (else re-evaluates). While a Bind holds the pod's reservation
 * (vs_store_bind_begin) nothing is evaluated or committed: r->bind_node says so. r need not be
 * initialized; it must be cleaned up by the caller. */
enum vs_err vs_store_filter(struct vs_store *s, const struct vs_pod *pod, const char *const *cands,
                            size_t n, const struct vs_sched_opts *o, int64_t now,
                            struct vs_filter_result *r);
/* Drops every reservation Filter made that no API event has confirmed yet (a leadership term
 * ended: its decisions are void). Returns how many. */
size_t vs_store_drop_reservations(struct vs_store *s);
/* Rebuilds usage from the API for a new leadership term: drops unconfirmed reservations and
 * makes the node and pod informers list again (the store is not synced until they have).
 * Returns the request number for vs_store_resynced. */
uint64_t vs_store_resync(struct vs_store *s);
/* True once both lists that began after resync request `req` have been applied. */
bool vs_store_resynced(const struct vs_store *s, uint64_t req);

/* A preemption decision: the node and the victims (copies). */
struct vs_store_victim {
    char *ns, *name, *uid;
};
struct vs_store_plan {
    char *node;
    struct vs_store_victim *victims;
    size_t n;
    uint64_t reservation; /* the vs_podent.resv_id of what is held for the preemptor on node */
};
void vs_store_plan_cleanup(struct vs_store_plan *p);

/* Filter-time preemption for a pod no candidate fits: the best plan over cands (only bound,
 * lower-priority pods as victims), committed as the pod's reservation on the plan's node while
 * the victims still count, so no other pod takes the capacity they free; the reservation expires
 * like any (--reservation-ttl). A concurrent change of that node re-plans. *found false: no
 * plan. Returns VS_ERR_NOMEM only. */
enum vs_err vs_store_preempt(struct vs_store *s, const struct vs_pod *pod, const char *const *cands,
                             size_t n, const struct vs_sched_opts *o, int64_t now,
                             struct vs_store_plan *out, bool *found);
/* Drops the pod's reservation if it is still unconfirmed and is the one Filter's commit named
 * `reservation` (vs_filter_result.reservation, vs_store_plan.reservation); 0 = whichever. A
 * later Filter of the same pod may make an identical decision (same node, same cards), so the
 * allocation string does not tell an earlier decision's failed patch from the current one.
 * True when it dropped one. */
bool vs_store_unreserve(struct vs_store *s, const char *uid, uint64_t reservation);

/* True when the watch (or a relist) has shown pod uid deleted, within --reservation-ttl (see
 * vs_filter_result.gone). The pod hooks run after the store records a deletion: state keyed by
 * the pod that a Filter records after its evaluation is dropped by the hook, or, when recorded
 * after the hook ran, seen gone here. */
bool vs_store_gone(struct vs_store *s, const char *uid);
/* True when the pod's entry comes from a later Filter decision than `reservation` (its
 * vs_podent.resv_id is higher): a patch writing `reservation` is stale. Two Filters
 * of one pod commit in one order under the write lock but may queue their patches in the
 * other; the stale one must not land last. Read lock. */
bool vs_store_superseded(struct vs_store *s, const char *uid, uint64_t reservation);

enum vs_reservation_state {
    VS_RES_OK,
    VS_RES_MISSING,
    VS_RES_EXPIRED,
    VS_RES_BOUND,
    VS_RES_MOVED,   /* vs_store_reservation_on: the pod's reservation is on another node now */
    VS_RES_BUSY,    /* vs_store_bind_begin: another Bind of the pod holds its reservation */
    VS_RES_CHANGED, /* vs_store_bind_check: on the node still, but not the reservation the Bind
                     * began with (the pod's allocation was replaced) */
    VS_RES_NOMEM
};
/* Whether the pod still holds the capacity Filter gave it (Bind refuses otherwise); BOUND: the
 * watch shows it bound already (spec.nodeName), e.g. by an earlier Bind of the same pod whose
 * caller gave up waiting — a second Bind must not touch it. */
enum vs_reservation_state vs_store_reservation(struct vs_store *s, const char *uid);
/* The same for a Bind to `node`: MOVED when a later Filter of the pod placed it on another node
 * before a Bind held it (below). BOUND also when a Bind of it posted the binding and the watch
 * has not shown it yet. */
enum vs_reservation_state vs_store_reservation_on(struct vs_store *s, const char *uid,
                                                  const char *node);

/* A Bind's hold on the pod's reservation. kube-scheduler gives up on a Bind after its extender
 * timeout, filters the pod again and sends a new Bind while the first may still be working: the
 * hold keeps the pod where the first Bind is putting it.
 *
 * vs_store_bind_begin, under the write lock: when the pod's reservation is on `node` (VS_RES_OK)
 * and no Bind holds it, marks it held and sets *token (never 0) for this Bind; otherwise *token is
 * 0, nothing is marked and the answer says why: BUSY (another Bind holds it; *holder, when not
 * NULL, is a copy of that Bind's node, free it), BOUND (a Bind of it posted the binding, or the
 * watch shows it bound), MOVED, EXPIRED, MISSING (no reservation: a pod Filter passed through, or
 * one this process never filtered), NOMEM. While held: vs_store_filter makes no new decision for
 * the pod (vs_filter_result.bind_node), vs_store_preempt commits none, and the reservation does
 * not expire. */
enum vs_reservation_state vs_store_bind_begin(struct vs_store *s, const char *uid, const char *node,
                                              uint64_t *token, char **holder);
/* Whether hold `token` still names the reservation its Bind began with, on node: OK, or
 * CHANGED (the pod's allocation was replaced), EXPIRED, BOUND, MISSING (dropped: the pod was
 * deleted, its patch failed, a leadership term ended). Read lock. */
enum vs_reservation_state vs_store_bind_check(struct vs_store *s, const char *uid, const char *node,
                                              uint64_t token);
/* The reservation id (vs_filter_result.reservation) hold `token` began with; 0 when the hold
 * is gone. Read lock. */
uint64_t vs_store_bind_resv(struct vs_store *s, const char *uid, uint64_t token);
/* Ends hold `token` (0: nothing to do; a hold the pod watch already ended stays ended). posted:
 * the Bind created the binding; the pod stays pinned to the node (Filter makes no decision for
 * it, Binds and vs_store_reservation_on see it BOUND) until the pod watch shows it bound, deleted
 * or terminal, or a pod relist does not list it. Otherwise the mark goes and the reservation
 * stays as it is (it expires as any). */
void vs_store_bind_end(struct vs_store *s, const char *uid, uint64_t token, bool posted);

/* Runs fn with the model under the read lock. */
void vs_store_read(struct vs_store *s, void (*fn)(void *ctx, const struct vs_model *m), void *ctx);
struct vs_pdb;
/* Same, with the PodDisruptionBudgets too (none unless watch_pdbs). */
void vs_store_read_pdbs(struct vs_store *s,
                        void (*fn)(void *ctx, const struct vs_model *m, const struct vs_pdb *pdbs,
                                   size_t n_pdbs),
                        void *ctx);
void vs_store_stats(const struct vs_store *s, struct vs_store_stats *out);
/* A number that changes whenever the model does (the dashboard's ETag): read inside a
 * vs_store_read callback it is the version of the model that callback sees. */
uint64_t vs_store_version(const struct vs_store *s);

/* Applies one decoded object event directly (used by tests and by the informer handlers):
 * kind "Node" / "Pod" / "ResourceQuota" / "PodDisruptionBudget" / "DeviceClass" /
 * "ResourceSlice" / "ResourceClaim", type "ADDED" /
 * "MODIFIED" / "DELETED". */
/* A Pod LIST item the informer's needle skipped (no hami.io/vgpu-node), as raw JSON text:
 * only its cpu/memory/ephemeral-storage requests are counted on its node (vs_model_account_pod).
 * Takes the write lock. VS_ERR_PARSE when the text is not a pod (nothing counted). */
enum vs_err vs_store_apply_pod_text(struct vs_store *s, const char *text, size_t len,
                                    struct vs_errbuf *eb);
enum vs_err vs_store_apply(struct vs_store *s, const char *kind, const char *type,
                           const json_t *obj, struct vs_errbuf *eb);

/* The DRA guard's findings: [{"deviceclass","resource"}] for every DeviceClass whose
 * spec.extendedResourceName is a resource a configured backend counts, by class name; [] when
 * none or not watched. New reference (NULL when out of memory). */
json_t *vs_store_dra_conflicts(struct vs_store *s);

#endif
