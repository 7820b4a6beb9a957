/* metrics: vgpu-sched's own counters and latency histograms, plus HAMi's gauges
 * (spec/hami-compat.md §9.2: per card, per realized MIG instance, per namespace quota, per pod;
 * optionally also under their pre-v2.8 names) computed from the model at scrape time, in the
 * Prometheus text format. Counters are lock-free atomics. */
#ifndef VS_METRICS_H
#define VS_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

enum vs_filter_outcome {
    VS_FILTER_SCHEDULED,
    VS_FILTER_UNSCHEDULABLE,
    VS_FILTER_ERROR,
    VS_FILTER_PASSTHROUGH,
    VS_FILTER_OUTCOMES
};

enum vs_api_verb {
    VS_VERB_GET,
    VS_VERB_LIST,
    VS_VERB_WATCH,
    VS_VERB_PATCH,
    VS_VERB_POST,
    VS_VERB_PUT
};

struct vs_metrics;

struct vs_metrics *vs_metrics_new(void);
void vs_metrics_free(struct vs_metrics *m);

void vs_metrics_filter(struct vs_metrics *m, enum vs_filter_outcome o, double seconds);
/* Counts one failed node of an unschedulable Filter by its reason words ("1/2 X, 1/2 Y" ->
 * X and Y; node-level strings by their text up to ':'). */
void vs_metrics_node_reasons(struct vs_metrics *m, const char *reason);
void vs_metrics_bind(struct vs_metrics *m, bool ok, double seconds);
/* Time one Bind spent in its node's bind queue (bindq.c), and how long a node lock taken by a
 * Bind was held until its release was seen. */
void vs_metrics_bind_wait(struct vs_metrics *m, double seconds);
void vs_metrics_lock_hold(struct vs_metrics *m, double seconds);

/* GPU preemption: one attempt by mode and outcome, victims evicted, and the time from a
 * preemptor's evictions to its successful Bind. */
enum vs_preempt_mode_m { VS_PM_VERB, VS_PM_FILTER, VS_PM_MODES };
enum vs_preempt_outcome {
    VS_PO_PLANNED,     /* verb: some node kept; filter: victims evicted, capacity held */
    VS_PO_NO_PLAN,     /* no set of lower-priority pods makes the pod fit */
    VS_PO_PDB_REFUSED, /* filter: every plan tried was refused by the Eviction API (429) */
    VS_PO_ERROR,
    VS_PO_OUTCOMES
};
void vs_metrics_preemption(struct vs_metrics *m, enum vs_preempt_mode_m mode,
                           enum vs_preempt_outcome o);
void vs_metrics_victims_evicted(struct vs_metrics *m, unsigned n);
/* A refused pod was nudged to be retried (requeue.h). */
void vs_metrics_requeue_nudge(struct vs_metrics *m);
void vs_metrics_preemptor_bound(struct vs_metrics *m, double seconds);

/* The service's own counters as /metrics renders them (for the dashboard). */
#define VS_METRICS_BUCKETS 17
struct vs_metrics_hist {
    double le[VS_METRICS_BUCKETS];       /* upper bounds in seconds */
    uint64_t bucket[VS_METRICS_BUCKETS]; /* cumulative, as Prometheus' le buckets */
    uint64_t count;
    double sum_s;
};
struct vs_metrics_view {
    uint64_t filter[VS_FILTER_OUTCOMES]; /* scheduled, unschedulable, error, passthrough */
    uint64_t binds_ok, binds_failed;
    struct vs_metrics_hist filter_h, bind_h, bind_wait_h, lock_hold_h;
    const char *reason[32]; /* vgpu_sched_filter_node_rejections_total's reason labels */
    uint64_t rejections[32];
    size_t n_reasons;
    uint64_t requeue_nudges;
};
void vs_metrics_read(struct vs_metrics *m, struct vs_metrics_view *v);
/* The upper bound of the bucket holding quantile q (0..1) of h, NaN when h is empty, +Inf past
 * the last bucket. */
double vs_metrics_quantile(const struct vs_metrics_hist *h, double q);

/* Gauges and counters owned by other modules, read at scrape time. */
struct vs_metrics_extra {
    uint64_t lock_acquired, lock_contended, lock_broken, lock_released;
    /* Of lock_acquired: taken by the patch tested against the watch's view; such patches refused
     * (the lock was not as seen) or failed. */
    uint64_t lock_taken_as_seen, lock_seen_refused;
    uint64_t api_requests, api_connections, api_pool_waits, api_errors[6];
    uint64_t http_connections; /* connections the main listener accepted */
    uint64_t malformed_pods, malformed_nodes, reservations_expired, commit_conflicts, relists;
    uint64_t binds_waiting;                 /* Binds waiting in a node's bind queue now */
    uint64_t events_queued, patches_queued; /* Events and pod patches not yet sent */
    double allocation_s; /* the bind queue's moving average of one allocation (0: none yet) */
    bool leader;
    bool synced;
};

/* Renders everything; model may be NULL. With legacy, HAMi's pre-v2.8 family names (with their
 * label names) follow each current family that had one, same values. Returns a new string
 * (NULL when out of memory). The same text as a vs_metrics_stream of the model's snapshot. */
char *vs_metrics_render(struct vs_metrics *m, const struct vs_model *model,
                        const struct vs_metrics_extra *x, bool legacy);

/* A scrape in two steps, so the store's lock is held only while the model is copied: the
 * snapshot (under the lock; model may be NULL) holds what the gauges report, a few dozen bytes
 * per card and per pod allocation; the stream renders the text from it as the client reads,
 * about 64 KiB at a time, so a scrape of 5,000 nodes never holds its tens of MiB at once. */
struct vs_metrics_snap;
struct vs_metrics_snap *vs_metrics_snap_take(const struct vs_model *model, bool legacy);
void vs_metrics_snap_free(struct vs_metrics_snap *s);
/* The memory it holds (bytes allocated, capacity included). */
size_t vs_metrics_snap_bytes(const struct vs_metrics_snap *s);

struct vs_metrics_stream;
/* Takes snap and extra (appended after everything else; may be NULL) over, and frees them when
 * it is freed or cannot be made (NULL: out of memory, or snap NULL). x is copied. */
struct vs_metrics_stream *vs_metrics_stream_new(struct vs_metrics *m, struct vs_metrics_snap *snap,
                                                const struct vs_metrics_extra *x, char *extra);
/* Up to max bytes of the text into buf: how many, 0 at the end, -1 when out of memory. */
long vs_metrics_stream_read(struct vs_metrics_stream *st, char *buf, size_t max);
/* The most text it has held at once so far (its buffer's capacity, bytes). */
size_t vs_metrics_stream_held(const struct vs_metrics_stream *st);
void vs_metrics_stream_free(struct vs_metrics_stream *st);

#endif
