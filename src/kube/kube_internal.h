/* kube_internal: the pieces of the kube client that unit tests and the fuzz target drive
 * directly: the token-bucket limiter (pure clock math, the clock is a parameter) and the
 * incremental watch-stream decoder (newline-delimited JSON events, split anywhere). Not part of
 * the public API; only the kube_*.c files, tests and fuzz targets include it. */
#ifndef VS_KUBE_INTERNAL_H
#define VS_KUBE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "json_prune.h"

/* Token bucket shared by every thread of one client. Reservations may drive `tokens`
 * negative: each caller takes its token at once and then waits out its own debt, so callers
 * are served in arrival order without a condition variable. */
struct vs_kube_limiter {
    pthread_mutex_t mu; /* guards every field below */
    double qps;         /* tokens added per second; <= 0 = unlimited */
    double burst;       /* bucket size (>= 1) */
    double tokens;      /* current balance, negative while callers wait */
    double last;        /* clock reading of the last refill, seconds */
    bool started;       /* false until the first reservation (bucket starts full) */
};

void vs_kube_limiter_init(struct vs_kube_limiter *l, double qps, int burst);
void vs_kube_limiter_cleanup(struct vs_kube_limiter *l);

/* Takes one token at time `now` (seconds on any monotonic clock; a clock that goes backwards
 * adds nothing) and returns how many seconds the caller must wait before sending (0 = now). */
double vs_kube_limiter_reserve(struct vs_kube_limiter *l, double now);

/* Largest single watch event accepted (one JSON line). */
#define VS_WATCH_MAX_EVENT (16u << 20)

/* Splits a watch response body into lines and decodes each as one event. ADDED, MODIFIED
 * and DELETED go to on_event (object borrowed for the call); BOOKMARK only advances rv; ERROR
 * carries a Status and ends decoding with its code mapped (410 -> VS_ERR_GONE). */
struct vs_watch_decoder {
    char *buf; /* bytes of an incomplete line, owned */
    size_t len, cap;
    size_t max_event; /* cap on one line */
    char *rv;         /* last metadata.resourceVersion seen, owned, or NULL */
    uint64_t events;  /* events decoded, bookmarks included */
    int (*on_event)(void *ctx, const char *type, json_t *obj);
    void *ctx;
    /* Events cut down to "type" and these members of "object" (vs_json_load_pruned); an ERROR
     * event, and an event the pruned reader refuses, are decoded whole. ev_keep[0].key NULL:
     * whole events. Set with vs_watch_decoder_keep. */
    struct vs_json_keep ev_keep[3];
};

/* on_event may be NULL; max_event 0 means VS_WATCH_MAX_EVENT. */
void vs_watch_decoder_init(struct vs_watch_decoder *d,
                           int (*on_event)(void *ctx, const char *type, json_t *obj), void *ctx,
                           size_t max_event);
void vs_watch_decoder_cleanup(struct vs_watch_decoder *d);
/* The members of each event's object on_event reads (NULL: whole objects, the default). keep
 * must outlive the decoder and name metadata.resourceVersion, which the decoder tracks; a
 * table without it is ignored (whole objects). */
void vs_watch_decoder_keep(struct vs_watch_decoder *d, const struct vs_json_keep *keep);

/* Feeds len bytes. Returns VS_OK, or the first error: VS_ERR_PARSE (bad JSON, unknown type,
 * line over max_event), VS_ERR_GONE and the other Status mappings for an ERROR event,
 * VS_ERR_INVAL when on_event returned non-zero, VS_ERR_NOMEM. eb then holds
 * "<code> <message>" for ERROR events, a description otherwise. After an error the decoder
 * must not be fed again. */
enum vs_err vs_watch_decoder_feed(struct vs_watch_decoder *d, const char *data, size_t len,
                                  struct vs_errbuf *eb);

/* The stream ended cleanly: decodes a last event that lacked its newline. VS_ERR_PARSE when
 * the remainder is not a whole event. */
enum vs_err vs_watch_decoder_finish(struct vs_watch_decoder *d, struct vs_errbuf *eb);

/* Maps an HTTP status to the error enum (401/403 AUTH, 404 NOTFOUND, 409 CONFLICT, 410 GONE,
 * everything else KUBE). */
enum vs_err vs_kube_status_err(long code);

/* One LIST page read with a needle (vs_kube_list_matching): 1 = handled, items whose text
 * holds the needle decoded and handed to on_item in order, *meta_out the decoded list metadata
 * (or NULL); 0 = not the expected shape, nothing handed over (decode the page whole instead);
 * -1 = a matching item is not valid JSON or on_item stopped (rc/eb set). With on_other, the
 * items without the needle are then handed to it as raw JSON text (not validated), in order. */
int vs_kube_list_page_matching(const char *data, size_t len, const char *needle,
                               int (*on_item)(void *ctx, json_t *item),
                               int (*on_other)(void *ctx, const char *text, size_t len), void *ctx,
                               json_t **meta_out, const char *who, enum vs_err *rc,
                               struct vs_errbuf *eb);
/* The same, with the matching items decoded by vs_json_load_pruned with keep (each falls back
 * to a whole decode when the pruned reader refuses it); keep NULL: whole. */
struct vs_json_keep;
int vs_kube_list_page_kept(const char *data, size_t len, const char *needle,
                           const struct vs_json_keep *keep, int (*on_item)(void *ctx, json_t *item),
                           int (*on_other)(void *ctx, const char *text, size_t len), void *ctx,
                           json_t **meta_out, const char *who, enum vs_err *rc,
                           struct vs_errbuf *eb);

#endif
