/* nodelock: HAMi's node lock `hami.io/mutex.lock` (spec/hami-compat.md §6.2) over the API:
 * value "<RFC3339>,<ns>,<pod>", conditional merge patches carrying the node's resourceVersion
 * (or a JSON patch testing the lock's value, when the watch showed it), owner-checked release. Our
 * fixes: a lock whose owner pod is gone, terminal, already `bind-phase=success` or
 * `bind-phase=failed` (the device plugin answered) is broken (and logged); a malformed lock value
 * is reported and broken once it has been seen unchanged for longer than the timeout, instead of
 * blocking forever. */
#ifndef VS_NODELOCK_H
#define VS_NODELOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "kube.h"

struct vs_nodelock;

struct vs_nodelock_stats {
    uint64_t acquired, contended, broken, released;
    uint64_t acquired_at;     /* of acquired: by vs_nodelock_acquire_seen's JSON patches alone */
    uint64_t at_conflicts;    /* vs_nodelock_acquire_seen's JSON patches refused (the lock was
                               * not as seen: 422) or failed */
    uint64_t release_retries; /* late attempts at releases that had failed */
};

/* timeout_s: --node-lock-timeout. now_fn returns unix seconds (injectable for tests). */
struct vs_nodelock *vs_nodelock_new(struct vs_kube *k, int64_t timeout_s, int64_t (*now_fn)(void));
void vs_nodelock_free(struct vs_nodelock *l);

/* Takes the lock for pod ns/name on node. VS_ERR_CONFLICT (contention) with
 * "node <n> has been locked within <timeout>: node lock contention"; other errors as is. */
enum vs_err vs_nodelock_acquire(struct vs_nodelock *l, const char *node, const char *ns,
                                const char *name, struct vs_errbuf *eb);
/* The same, first as one JSON patch that tests the lock is what the node watch last showed —
 * `seen`, the previous holder's value once that holder was seen allocated, or NULL: no lock —
 * and sets ours (a compare-and-swap of the annotation alone: other changes of the node do not
 * refuse it, as a resourceVersion precondition would). When the test fails and `seen` was a
 * value, the device plugin's release of it may have come first: one more JSON patch takes the
 * lock if none is there. Any other failure falls back to vs_nodelock_acquire, which reads the
 * node and applies every rule (a PATCH that landed although its answer was lost reads as our
 * own lock). */
enum vs_err vs_nodelock_acquire_seen(struct vs_nodelock *l, const char *node, const char *seen,
                                     const char *ns, const char *name, struct vs_errbuf *eb);
/* Releases the lock if it is ours (or unconditionally with force). When a non-forced release
 * fails (the API is down), the error is returned and the release is retried in the background
 * every second until it succeeds or the lock is no longer ours, so a failed Bind never leaves
 * its lock to block the node until the timeout. */
enum vs_err vs_nodelock_release(struct vs_nodelock *l, const char *node, const char *ns,
                                const char *name, bool force, struct vs_errbuf *eb);
void vs_nodelock_stats(struct vs_nodelock *l, struct vs_nodelock_stats *out);

struct vs_nodelock_repair {
    unsigned locked;           /* nodes that carried a lock */
    unsigned broken;           /* locks broken */
    unsigned kept;             /* locks of live owners within the timeout */
    unsigned stuck_allocating; /* expired locks whose owner is still bind-phase=allocating */
    unsigned failed;           /* nodes whose check failed (API errors; logged) */
};

/* What a crashed leader left: lists the nodes and applies acquire's rules to every lock without
 * wanting it — a lock whose owner is gone, terminated or bind-phase=success/failed is broken,
 * as is an expired one (its owner, if still bind-phase=allocating, is reported: the device
 * plugin never answered) and a malformed one seen unchanged for longer than the timeout. One
 * more rule, for a new leadership term that began at `before` (unix seconds): a lock taken
 * before it whose owner pod is not bound is broken — the Bind that took it cannot finish. */
enum vs_err vs_nodelock_repair(struct vs_nodelock *l, int64_t before, struct vs_nodelock_repair *r,
                               struct vs_errbuf *eb);

/* A backend's own lock (Cambricon's cambricon.com/dsmlu.lock, spec/hami-vendors.md §1.10): the
 * node annotation `key` holds the RFC 3339 time it was taken, with no owner. Acquire: absent, or
 * older than ttl_s (then replaced) -> set to now with a patch conditional on the node's
 * resourceVersion (a 409 reads the node again, 5 tries); younger -> VS_ERR_CONFLICT "node <n> has
 * been locked within 2 minutes" (HAMi's words for its 120 s); a value that is not RFC 3339 ->
 * VS_ERR_PARSE naming it. Release: removes the annotation if present (the backend's device
 * plugin normally does). */
enum vs_err vs_nodelock_stamp_acquire(struct vs_nodelock *l, const char *node, const char *key,
                                      int64_t ttl_s, struct vs_errbuf *eb);
enum vs_err vs_nodelock_stamp_release(struct vs_nodelock *l, const char *node, const char *key,
                                      struct vs_errbuf *eb);

/* Go's time.Duration.String() for whole seconds: 300 -> "5m0s", 28 -> "28s", 3600 -> "1h0m0s". */
void vs_duration_string(int64_t secs, char *out, unsigned len);

#endif
