/* async: the API writes nobody waits for at once. When Filter's decision cannot travel in the
 * pod's Binding (--patch-at-filter, or it removes an annotation the pod carries), Filter commits
 * its reservation, queues the pod patch here and answers kube-scheduler at once; Bind waits for
 * that patch (by pod UID) before it creates the binding, so a binding never precedes the device
 * annotations. Quiet patches (a bound pod's missing label) and Events are queued here too (best
 * effort; Events held while Binds are active). Patches of different pods go out in parallel,
 * those of one pod in order. */
#ifndef VS_ASYNC_H
#define VS_ASYNC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "kube.h"

struct vs_async;

/* on_patch_failed(ctx, uid, reservation) runs on the worker when a pod patch failed (the caller
 * drops that reservation). */
struct vs_async *
vs_async_new(struct vs_kube *k,
             void (*on_patch_failed)(void *ctx, const char *uid, uint64_t reservation), void *ctx);
/* Stops the workers (a patch in progress finishes; on_patch_failed is not called after this
 * returns); vs_async_forget still works. vs_async_free stops them too. */
void vs_async_stop(struct vs_async *a);
void vs_async_free(struct vs_async *a); /* drains nothing: pending jobs are dropped */

/* Queues a merge patch of path for pod uid. Takes ownership of patch (also on failure): the
 * caller must not touch it afterwards. `reservation` names the Filter decision the patch
 * writes (vs_filter_result.reservation, handed to on_patch_failed). */
enum vs_err vs_async_patch_pod(struct vs_async *a, const char *uid, const char *path, json_t *patch,
                               uint64_t reservation);
/* Pod uid was deleted: its patch state (kept STATE_TTL for a Bind that asks for the patch's
 * outcome) is dropped now, or when its last queued patch is done, so the states never outnumber
 * the pods that exist plus those deleted in the last STATE_TTL whose patches were still queued.
 * Its posted Warning keys (kept STATE_TTL to class a repeated refusal's Event) go now too, and
 * its Events queued or being posted are not remembered once posted. */
void vs_async_forget(struct vs_async *a, const char *uid);
/* Per-pod patch states held (tests assert the bound). */
size_t vs_async_states(struct vs_async *a);
/* Posted Warning keys remembered (pod, reason, message shape; tests assert the bound). */
size_t vs_async_posted_keys(struct vs_async *a);
/* Queues a merge patch of path that nothing waits for and whose failure only is logged (debug,
 * or with warn a warning, pod_patch_failed): no per-pod state, no on_patch_failed. Takes
 * ownership of patch. */
enum vs_err vs_async_patch_quiet(struct vs_async *a, const char *path, json_t *patch, bool warn);
/* Queues an Event POST (best effort: dropped when too many are pending). Takes ownership of
 * event. */
void vs_async_event(struct vs_async *a, const char *ns, json_t *event);

/* The same for an Event whose message is costly to write (thousands of nodes): the worker calls
 * build(ctx) just before posting and sets its result (a malloc'ed string) as the message, so
 * the request path only pays for taking ctx. `shape` stands in for the message in the
 * one-pending-event-per-pod-and-reason key; ctx_bytes is what ctx holds (queued Events are
 * bounded in count and in bytes, and dropped beyond). Takes ownership of event and ctx. */
void vs_async_event_lazy(struct vs_async *a, const char *ns, json_t *event, const char *shape,
                         size_t ctx_bytes, char *(*build)(void *ctx), void *ctx,
                         void (*ctx_free)(void *ctx));

/* Before the worker sends a pod patch that names a reservation, superseded(ctx, uid, reservation)
 * may say a later decision replaced it (a Filter of the pod that committed after this one but
 * queued its patch first): the patch is then not sent, counts as done (VS_OK, no pod kept for
 * vs_async_take_pod), and a debug line says so. Set before the first patch; NULL: always sent. */
void vs_async_set_patch_gate(struct vs_async *a,
                             bool (*superseded)(void *ctx, const char *uid, uint64_t reservation),
                             void *ctx);

/* Events are queued only while allowed(ctx) says so (the events API may be forbidden:
 * access.h); the others are dropped as a full queue drops them. Set before the first event. */
void vs_async_set_event_gate(struct vs_async *a, bool (*allowed)(void *ctx), void *ctx);

/* Events wait while busy(ctx) says Binds are active (bindq.h vs_bindq_active: a Bind waits for
 * a node lock or holds one), so a burst's allocation chain does not share the API server with
 * them; not new Warnings (a refused pod's first FilteringFailed keeps its pace); bounded: an Event
 * goes once it waited 1 s (then one every 500 ms while the Binds go on), and the queue drains at
 * the usual pace once 256 are queued (until it is empty) or the Binds end (vs_async_kick). busy is
 * called with the queue's mutex held: it must not block or call into this module. Set before
 * the first event. */
void vs_async_set_busy(struct vs_async *a, bool (*busy)(void *ctx), void *ctx);
/* busy(ctx) became false: held Events may go now (any thread; NULL is ignored). */
void vs_async_kick(struct vs_async *a);
/* The hold's bounds: ms per Event, and the queued Events and their bytes (vs_async_event_lazy)
 * that end it (tests). */
void vs_async_set_event_hold(struct vs_async *a, int ms, size_t max, size_t max_bytes);
/* Whether the Event worker is holding queued Events for active Binds now (tests). */
bool vs_async_events_holding(struct vs_async *a);

/* Events queued and not yet taken by the worker, and their bytes (see vs_async_event_lazy). */
size_t vs_async_events_pending(struct vs_async *a, size_t *bytes);
/* Pod patches queued, not yet taken by a worker. */
size_t vs_async_patches_pending(struct vs_async *a);

/* Waits until no patch of uid is queued or in flight, at most timeout_ms; uid's queued patches
 * move to the front of the queue first (someone waits for them). VS_OK when the last
 * patch of uid succeeded (or none was queued), VS_ERR_KUBE with its error otherwise,
 * VS_ERR_TIMEOUT on timeout. */
enum vs_err vs_async_wait(struct vs_async *a, const char *uid, int timeout_ms,
                          struct vs_errbuf *eb);

/* The pod as the answer to uid's last patch showed it (a new reference, the caller's; given out
 * once), NULL when none is kept: a patch of uid still queued or failed, no patch, or none taken
 * within 60 s (the sweep, once a minute, drops older ones). Saves a Bind its GET of the pod; a
 * changed pod shows as a 409 on the next conditional write. */
json_t *vs_async_take_pod(struct vs_async *a, const char *uid);
/* Workers exit after this long without a job (default 500 ms; tests shorten it). */
void vs_async_set_idle_ms(struct vs_async *a, int ms);
/* Worker threads running now, and (if started is set) started since vs_async_new (tests). */
size_t vs_async_threads(struct vs_async *a, size_t *started);
/* The next n worker thread starts fail as if pthread_create had (tests). */
void vs_async_fail_thread_starts(struct vs_async *a, int n);
/* Pods kept for vs_async_take_pod (tests). */
size_t vs_async_pods_kept(struct vs_async *a);

#endif
